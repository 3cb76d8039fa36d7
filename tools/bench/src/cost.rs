//! The cost and capacity model: the measured figures (database CPU and
//! calls per webhook and per delivery, the functions' own CPU) turned into
//! the AWS resources and the monthly bill at a given rate, and the first
//! limit each rate meets.
//!
//! Every price and limit is in [`PRICES`] and [`LIMITS`]: public list
//! prices for us-east-1 as the author knew them (no network here), to be
//! checked before use. Assumptions the measurement cannot give (the Data
//! API's round trip, an ACU's CPU) are in [`ASSUMPTIONS`].
//!
//! The webhook ingress (the template's `Ingress` parameter, docs/ingress.md)
//! changes one line, API Gateway: a REST API request, whatever its size, or
//! an HTTP API request metered in 512 KiB increments, each at its monthly
//! volume tiers ([`Ingress`], [`Scenario`]).

use std::fmt::Write as _;

use crate::report::{count, number, table};

/// A price: what, the unit, dollars per unit.
#[derive(Debug, Clone, Copy)]
pub struct Price {
    pub name: &'static str,
    pub unit: &'static str,
    pub usd: f64,
}

/// When [`PRICES`] and [`LIMITS`] were last read off AWS's public pages.
pub const PRICES_AS_OF: &str = "2025-06 (us-east-1, on-demand list prices; not re-checked since: verify on aws.amazon.com/pricing)";

pub const PRICES: Prices = Prices {
    api_gateway_rest: &[
        Tier {
            up_to_millions: 333.0,
            usd_per_million: 3.50,
        },
        Tier {
            up_to_millions: 1_000.0,
            usd_per_million: 2.80,
        },
        Tier {
            up_to_millions: 20_000.0,
            usd_per_million: 2.38,
        },
        Tier {
            up_to_millions: f64::INFINITY,
            usd_per_million: 1.51,
        },
    ],
    api_gateway_http: &[
        Tier {
            up_to_millions: 300.0,
            usd_per_million: 1.00,
        },
        Tier {
            up_to_millions: f64::INFINITY,
            usd_per_million: 0.90,
        },
    ],
    api_gateway_http_metered_bytes: 512.0 * 1024.0,
    lambda_arm_gb_second: 0.000_013_333_4,
    lambda_per_million_requests: 0.20,
    sqs_standard_per_million: 0.40,
    aurora_io_optimized_acu_hour: 0.16,
    aurora_io_optimized_gb_month: 0.225,
    data_api_per_million: 0.35,
};

/// One volume tier of a monthly price: the requests of the month up to
/// `up_to_millions` (counted from the first of the month, over every tier
/// below) cost `usd_per_million`.
#[derive(Debug, Clone, Copy)]
pub struct Tier {
    pub up_to_millions: f64,
    pub usd_per_million: f64,
}

/// What `millions` requests in a month cost at `tiers` (ascending, the last
/// one open-ended).
pub fn tiered(millions: f64, tiers: &[Tier]) -> f64 {
    let mut usd = 0.0;
    let mut below = 0.0;
    for tier in tiers {
        if millions <= below {
            break;
        }
        usd += (millions.min(tier.up_to_millions) - below) * tier.usd_per_million;
        below = tier.up_to_millions;
    }
    usd
}

/// The API partners POST to (the template's `Ingress` parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ingress {
    /// API Gateway REST API (`rest`, the default): one request per webhook.
    Rest,
    /// API Gateway HTTP API (`http`): metered in 512 KiB increments.
    Http,
}

impl Ingress {
    pub fn label(self) -> &'static str {
        match self {
            Ingress::Rest => "REST",
            Ingress::Http => "HTTP API",
        }
    }

    /// Billed requests per webhook of `body_bytes`.
    pub fn requests_per_webhook(self, body_bytes: f64, p: &Prices) -> f64 {
        match self {
            Ingress::Rest => 1.0,
            Ingress::Http => (body_bytes / p.api_gateway_http_metered_bytes)
                .ceil()
                .max(1.0),
        }
    }

    /// API Gateway's monthly bill for `requests_per_month` billed requests.
    pub fn monthly_usd(self, requests_per_month: f64, p: &Prices) -> f64 {
        let tiers = match self {
            Ingress::Rest => p.api_gateway_rest,
            Ingress::Http => p.api_gateway_http,
        };
        tiered(requests_per_month / 1e6, tiers)
    }
}

/// What the model prices a webhook's ingress by: the API and the body.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    pub ingress: Ingress,
    pub body_bytes: f64,
}

/// The bodies the ingress comparison prices: a typical webhook, and the
/// 1 MiB one (two HTTP API requests).
pub const BODIES: [(&str, f64); 2] = [("2 KB", 2_048.0), ("1 MB", 1_048_576.0)];

impl Scenario {
    /// Today's REST API (the body size does not change its bill).
    pub const REST: Scenario = Scenario {
        ingress: Ingress::Rest,
        body_bytes: 2_048.0,
    };
}

/// The prices the model uses.
#[derive(Debug, Clone, Copy)]
pub struct Prices {
    /// API Gateway REST API, per million requests, by monthly volume (first
    /// 333 M, next 667 M, next 19 B, over 20 B).
    pub api_gateway_rest: &'static [Tier],
    /// API Gateway HTTP API, per million requests, by monthly volume (first
    /// 300 M, over 300 M).
    pub api_gateway_http: &'static [Tier],
    /// The HTTP API bills a request per this many bytes (512 KiB): a 1 MiB
    /// body is two requests.
    pub api_gateway_http_metered_bytes: f64,
    /// Lambda on arm64 (Graviton), per GB-second.
    pub lambda_arm_gb_second: f64,
    /// Lambda, per million requests.
    pub lambda_per_million_requests: f64,
    /// SQS standard queue, per million requests (64 KiB chunks).
    pub sqs_standard_per_million: f64,
    /// Aurora Serverless v2, I/O-Optimized (no per-I/O charge), per ACU-hour.
    pub aurora_io_optimized_acu_hour: f64,
    /// Aurora I/O-Optimized storage, per GB-month.
    pub aurora_io_optimized_gb_month: f64,
    /// RDS Data API, per million requests (first billion a month).
    pub data_api_per_million: f64,
}

impl Prices {
    pub fn table(&self) -> Vec<Price> {
        const REST: [&str; 4] = [
            "per million requests, first 333 M a month",
            "per million requests, next 667 M",
            "per million requests, next 19 B",
            "per million requests, over 20 B",
        ];
        const HTTP: [&str; 2] = [
            "per million requests (512 KiB each), first 300 M a month",
            "per million requests (512 KiB each), over 300 M",
        ];
        let mut out: Vec<Price> = Vec::new();
        for (tier, unit) in self.api_gateway_rest.iter().zip(REST) {
            out.push(Price {
                name: "API Gateway REST API",
                unit,
                usd: tier.usd_per_million,
            });
        }
        for (tier, unit) in self.api_gateway_http.iter().zip(HTTP) {
            out.push(Price {
                name: "API Gateway HTTP API",
                unit,
                usd: tier.usd_per_million,
            });
        }
        out.extend([
            Price {
                name: "Lambda arm64 duration",
                unit: "per GB-second",
                usd: self.lambda_arm_gb_second,
            },
            Price {
                name: "Lambda requests",
                unit: "per million",
                usd: self.lambda_per_million_requests,
            },
            Price {
                name: "SQS standard",
                unit: "per million requests",
                usd: self.sqs_standard_per_million,
            },
            Price {
                name: "Aurora Serverless v2 (I/O-Optimized)",
                unit: "per ACU-hour",
                usd: self.aurora_io_optimized_acu_hour,
            },
            Price {
                name: "Aurora I/O-Optimized storage",
                unit: "per GB-month",
                usd: self.aurora_io_optimized_gb_month,
            },
            Price {
                name: "RDS Data API",
                unit: "per million requests",
                usd: self.data_api_per_million,
            },
        ]);
        out
    }
}

/// Service limits the model checks (defaults of a new account).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// API Gateway account throttle, requests/s per region.
    pub api_gateway_rps: f64,
    /// Lambda concurrent executions per region (default quota).
    pub lambda_concurrency: f64,
    /// Aurora Serverless v2 maximum ACUs per instance.
    pub aurora_max_acu: f64,
    /// Data API requests/s per cluster assumed (the documented figure of the
    /// first Data API; check Service Quotas for yours).
    pub data_api_rps: f64,
    /// The template's ProcessorMaxConcurrency default.
    pub processor_max_concurrency: f64,
}

pub const LIMITS: Limits = Limits {
    api_gateway_rps: 10_000.0,
    lambda_concurrency: 1_000.0,
    aurora_max_acu: 256.0,
    data_api_rps: 1_000.0,
    processor_max_concurrency: 10.0,
};

/// What the model assumes beyond the measurements.
#[derive(Debug, Clone, Copy)]
pub struct Assumptions {
    /// One Data API round trip from Lambda, ms (not measurable here).
    pub data_api_rtt_ms: f64,
    /// vCPU one ACU gives (AWS: "about 2 GiB of memory with corresponding CPU").
    pub vcpu_per_acu: f64,
    /// Target database CPU utilisation (headroom).
    pub db_utilisation: f64,
    /// Minimum ACUs (the template's DbMinCapacity default).
    pub min_acu: f64,
    /// Memory of the functions (template): authorizer, ingest, processor, relay, GB.
    pub memory_gb: [f64; 4],
    /// Outbound deliveries per inbound webhook (the orders example: 1).
    pub deliveries_per_webhook: f64,
    /// Bytes stored per webhook (inbox + outbox row, indexes), for storage.
    pub bytes_per_webhook: f64,
    /// Retention of finished rows, days (template default).
    pub retention_days: f64,
    /// The processor's batching window, s (template: 1): batches fill to 10
    /// at ≥ 10 webhooks/s.
    pub batching_window_s: f64,
    /// Bodies over this many bytes go to the blob store
    /// (`hookbox::inbox::body::DEFAULT_INLINE_MAX_BYTES`), and the processor
    /// forwards them: never at ingest.
    pub inline_max_bytes: f64,
}

pub const ASSUMPTIONS: Assumptions = Assumptions {
    data_api_rtt_ms: 10.0,
    vcpu_per_acu: 0.25,
    db_utilisation: 0.7,
    min_acu: 0.5,
    memory_gb: [0.128, 0.256, 0.512, 0.256],
    deliveries_per_webhook: 1.0,
    bytes_per_webhook: 4_096.0,
    retention_days: 30.0,
    batching_window_s: 1.0,
    inline_max_bytes: 32_768.0,
};

/// The measured inputs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Measured {
    /// PostgreSQL CPU, µs: per webhook ingested, per message processed
    /// (no-op handler), per delivery.
    pub db_cpu_us: [f64; 3],
    /// Functions' own CPU, µs: ingest per webhook, processor per message,
    /// relay per delivery.
    pub own_cpu_us: [f64; 3],
    /// Data API calls: per webhook ingested, per message processed, per
    /// relay batch.
    pub calls: [f64; 3],
    /// Rows per relay batch at full load.
    pub relay_batch_rows: f64,
    /// Forwarding at ingest, when measured: ingest's Data API calls per
    /// webhook (the statement that stores and forwards).
    pub forwarding_ingest_calls: Option<f64>,
}

impl Measured {
    /// The same deployment forwarding every webhook at ingest: no queue
    /// message, no processor run; ingest's calls as measured, and its
    /// database CPU bounded by ingest's plus the processor's (the outbox
    /// row it writes costs less than a processor's claim, transaction and
    /// mark).
    pub fn forwarding_at_ingest(&self) -> Option<Measured> {
        let calls = self.forwarding_ingest_calls?;
        Some(Measured {
            db_cpu_us: [
                self.db_cpu_us[0] + self.db_cpu_us[1],
                0.0,
                self.db_cpu_us[2],
            ],
            own_cpu_us: [self.own_cpu_us[0], 0.0, self.own_cpu_us[2]],
            calls: [calls, 0.0, self.calls[2]],
            relay_batch_rows: self.relay_batch_rows,
            forwarding_ingest_calls: None,
        })
    }

    /// True when every webhook goes through the queue and the processor.
    fn through_processor(&self) -> bool {
        self.calls[1] > 0.0
    }
}

pub const SECONDS_PER_MONTH: f64 = 30.0 * 86_400.0;

/// The model at one rate.
#[derive(Debug, Clone)]
pub struct Estimate {
    pub rate: f64,
    pub acu: f64,
    pub data_api_rps: f64,
    pub lambda_concurrency: f64,
    pub processor_concurrency: f64,
    pub sqs_rps: f64,
    /// Database vCPU busy (measured CPU × rate).
    pub db_vcpu: f64,
    /// Lambda GB-seconds per second.
    pub gb_seconds_per_s: f64,
    /// Lambda invocations per second.
    pub invocations_per_s: f64,
    /// (item, monthly USD)
    pub costs: Vec<(&'static str, f64)>,
    /// (limit, utilisation 0..)
    pub utilisation: Vec<(&'static str, f64)>,
}

impl Estimate {
    pub fn total(&self) -> f64 {
        self.costs.iter().map(|(_, c)| c).sum()
    }

    /// The limit with the highest utilisation.
    pub fn bottleneck(&self) -> (&'static str, f64) {
        self.utilisation
            .iter()
            .copied()
            .fold(("none", 0.0), |a, b| if b.1 > a.1 { b } else { a })
    }
}

/// The model at `rate` webhooks per second through the REST API (the
/// template's default ingress).
pub fn estimate(m: &Measured, rate: f64, p: &Prices, l: &Limits, a: &Assumptions) -> Estimate {
    estimate_for(m, rate, Scenario::REST, p, l, a)
}

/// The model at `rate` webhooks per second through `scenario`'s ingress.
pub fn estimate_for(
    m: &Measured,
    rate: f64,
    scenario: Scenario,
    p: &Prices,
    l: &Limits,
    a: &Assumptions,
) -> Estimate {
    let deliveries = rate * a.deliveries_per_webhook;
    // batch sizes at this rate
    let batch = (rate * a.batching_window_s).clamp(1.0, 10.0);
    let relay_rows = (deliveries / 4.0).clamp(1.0, m.relay_batch_rows.max(1.0));
    // database
    let db_vcpu =
        (rate * m.db_cpu_us[0] + rate * m.db_cpu_us[1] + deliveries * m.db_cpu_us[2]) * 1e-6;
    let acu = (db_vcpu / a.vcpu_per_acu / a.db_utilisation).max(a.min_acu);
    let calls_per_s = rate * m.calls[0] + rate * m.calls[1] + deliveries / relay_rows * m.calls[2];
    // Lambda: durations (s) = own CPU + Data API round trips
    let rtt = a.data_api_rtt_ms / 1e3;
    let authorizer_s = 0.001;
    let ingest_s = m.own_cpu_us[0] * 1e-6 + m.calls[0] * rtt;
    let processor_s = batch * (m.own_cpu_us[1] * 1e-6 + m.calls[1] * rtt);
    let processor_concurrency = rate / batch * processor_s;
    let relay_concurrency =
        1.0_f64.max(deliveries * (m.own_cpu_us[2] * 1e-6 + m.calls[2] / relay_rows * rtt));
    let concurrency = rate * (authorizer_s + ingest_s) + processor_concurrency + relay_concurrency;
    let gb_seconds_per_s = rate * (authorizer_s * a.memory_gb[0] + ingest_s * a.memory_gb[1])
        + processor_concurrency * a.memory_gb[2]
        + relay_concurrency * a.memory_gb[3];
    // forwarded at ingest: no queue message, no processor invocation
    let share = if m.through_processor() { 1.0 } else { 0.0 };
    let invocations_per_s = rate * 2.0 + share * rate / batch + 1.0 / 60.0;
    // SQS: SendMessage per webhook; ReceiveMessage + DeleteMessageBatch per batch
    let sqs_rps = share * (rate + 2.0 * rate / batch);
    let month = SECONDS_PER_MONTH;
    let stored_gb = rate * a.retention_days * 86_400.0 * a.bytes_per_webhook / 1e9;
    let api_requests = rate
        * month
        * scenario
            .ingress
            .requests_per_webhook(scenario.body_bytes, p);
    let costs = vec![
        ("API Gateway", scenario.ingress.monthly_usd(api_requests, p)),
        (
            "Lambda requests",
            invocations_per_s * month * p.lambda_per_million_requests / 1e6,
        ),
        (
            "Lambda duration",
            gb_seconds_per_s * month * p.lambda_arm_gb_second,
        ),
        ("SQS", sqs_rps * month * p.sqs_standard_per_million / 1e6),
        (
            "Data API",
            calls_per_s * month * p.data_api_per_million / 1e6,
        ),
        ("Aurora ACUs", acu * 720.0 * p.aurora_io_optimized_acu_hour),
        ("Aurora storage", stored_gb * p.aurora_io_optimized_gb_month),
    ];
    let utilisation = vec![
        ("Aurora ACUs (max 256)", acu / l.aurora_max_acu),
        ("Data API requests/s", calls_per_s / l.data_api_rps),
        (
            "Lambda concurrency (account)",
            concurrency / l.lambda_concurrency,
        ),
        (
            "processor MaximumConcurrency (template: 10)",
            processor_concurrency / l.processor_max_concurrency,
        ),
        ("API Gateway throttle", rate / l.api_gateway_rps),
    ];
    Estimate {
        rate,
        acu,
        data_api_rps: calls_per_s,
        lambda_concurrency: concurrency,
        processor_concurrency,
        sqs_rps,
        db_vcpu,
        gb_seconds_per_s,
        invocations_per_s,
        costs,
        utilisation,
    }
}

/// The cost section of the report.
pub fn markdown(m: &Measured, rates: &[f64]) -> String {
    let (p, l, a) = (&PRICES, &LIMITS, &ASSUMPTIONS);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Computed from this run's figures: PostgreSQL CPU per webhook ingested {:.0} µs, per \
         message processed {:.0} µs, per delivery {:.0} µs; the functions' own CPU {:.0} / {:.0} \
         / {:.0} µs; Data API calls per webhook {:.2} (ingest) + {:.2} (processor), {:.2} per relay \
         batch of up to {:.0} rows. One outbound delivery per webhook (the orders example). The \
         business handler's own statements are not included (the no-op handler's figures).\n",
        m.db_cpu_us[0],
        m.db_cpu_us[1],
        m.db_cpu_us[2],
        m.own_cpu_us[0],
        m.own_cpu_us[1],
        m.own_cpu_us[2],
        m.calls[0],
        m.calls[1],
        m.calls[2],
        m.relay_batch_rows
    );
    let mut rows = Vec::new();
    let estimates: Vec<Estimate> = rates.iter().map(|r| estimate(m, *r, p, l, a)).collect();
    let header: Vec<String> = std::iter::once("monthly (30 days), USD".to_string())
        .chain(rates.iter().map(|r| format!("{} webhooks/s", count(*r))))
        .collect();
    let items: Vec<&str> = estimates
        .first()
        .map(|e| e.costs.iter().map(|(n, _)| *n).collect())
        .unwrap_or_default();
    for (i, item) in items.iter().enumerate() {
        let mut row = vec![item.to_string()];
        row.extend(estimates.iter().map(|e| format!("{:.2}", e.costs[i].1)));
        rows.push(row);
    }
    let mut total = vec!["**total**".to_string()];
    total.extend(estimates.iter().map(|e| format!("**{:.2}**", e.total())));
    rows.push(total);
    let mut per_million = vec!["per million webhooks".to_string()];
    per_million.extend(
        estimates
            .iter()
            .map(|e| format!("{:.2}", e.total() / (e.rate * SECONDS_PER_MONTH / 1e6))),
    );
    rows.push(per_million);
    let forwarding: Option<Vec<Estimate>> = m
        .forwarding_at_ingest()
        .map(|f| rates.iter().map(|r| estimate(&f, *r, p, l, a)).collect());
    if let Some(forwarding) = &forwarding {
        let mut total = vec!["**total, forwarding at ingest**".to_string()];
        total.extend(forwarding.iter().map(|e| format!("**{:.2}**", e.total())));
        rows.push(total);
        let mut per_million = vec!["per million webhooks, forwarding at ingest".to_string()];
        per_million.extend(
            forwarding
                .iter()
                .map(|e| format!("{:.2}", e.total() / (e.rate * SECONDS_PER_MONTH / 1e6))),
        );
        rows.push(per_million);
    }
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    out.push_str(&table(&header_refs, &rows));

    let mut rows = Vec::new();
    for (name, f) in [
        (
            "Aurora ACUs",
            Box::new(|e: &Estimate| format!("{:.1}", e.acu)) as Box<dyn Fn(&Estimate) -> String>,
        ),
        (
            "Data API requests/s",
            Box::new(|e: &Estimate| number(e.data_api_rps)),
        ),
        (
            "Lambda concurrency",
            Box::new(|e: &Estimate| number(e.lambda_concurrency)),
        ),
        (
            "processor concurrency",
            Box::new(|e: &Estimate| number(e.processor_concurrency)),
        ),
        ("SQS requests/s", Box::new(|e: &Estimate| number(e.sqs_rps))),
        (
            "per webhook: database CPU (ms)",
            Box::new(|e: &Estimate| number(e.db_vcpu * 1e3 / e.rate)),
        ),
        (
            "per webhook: Data API calls",
            Box::new(|e: &Estimate| number(e.data_api_rps / e.rate)),
        ),
        (
            "per webhook: Lambda invocations",
            Box::new(|e: &Estimate| number(e.invocations_per_s / e.rate)),
        ),
        (
            "per webhook: Lambda GB-ms",
            Box::new(|e: &Estimate| number(e.gb_seconds_per_s * 1e3 / e.rate)),
        ),
        (
            "per webhook: SQS requests",
            Box::new(|e: &Estimate| number(e.sqs_rps / e.rate)),
        ),
        (
            "limits over 100%",
            Box::new(|e: &Estimate| {
                let over: Vec<&str> = e
                    .utilisation
                    .iter()
                    .filter(|(_, u)| *u > 1.0)
                    .map(|(n, _)| *n)
                    .collect();
                if over.is_empty() {
                    "none".to_string()
                } else {
                    over.join("; ")
                }
            }),
        ),
        (
            "first bottleneck (utilisation)",
            Box::new(|e: &Estimate| {
                let (name, u) = e.bottleneck();
                format!("{name}: {:.0}%", u * 100.0)
            }),
        ),
    ] {
        let mut row = vec![name.to_string()];
        row.extend(estimates.iter().map(&f));
        rows.push(row);
    }
    let mut header = header.clone();
    header[0] = "capacity".into();
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let _ = write!(out, "\n{}", table(&header_refs, &rows));
    if let Some(forwarding) = &forwarding {
        let _ = writeln!(
            out,
            "\nForwarding at ingest (the template's configuration for partners with routes, \
             ingest {:.2} Data API calls per webhook, section \"Forwarding by routes\"): no SQS \
             request and no processor invocation per webhook; per webhook {} Data API calls, \
             {} Lambda invocations, {} SQS requests at {} webhooks/s (database CPU taken as \
             ingest's plus the processor's: an upper bound).",
            m.forwarding_ingest_calls.unwrap_or_default(),
            forwarding
                .last()
                .map_or("—".into(), |e| number(e.data_api_rps / e.rate)),
            forwarding
                .last()
                .map_or("—".into(), |e| number(e.invocations_per_s / e.rate)),
            forwarding
                .last()
                .map_or("—".into(), |e| number(e.sqs_rps / e.rate)),
            forwarding.last().map_or("—".into(), |e| count(e.rate)),
        );
    }
    out.push_str(&ingress_markdown(m, rates, p, l, a));
    let _ = writeln!(
        out,
        "\nA utilisation over 100% is a limit to raise before that rate (a quota increase, \
         `ProcessorMaxConcurrency`, more ACUs) or a design change (fewer calls per webhook).\n\n\
         Prices, as of {PRICES_AS_OF}; they must be checked before they are relied on \
         (`tools/bench/src/cost.rs`, `PRICES`):\n"
    );
    let rows: Vec<Vec<String>> = p
        .table()
        .iter()
        .map(|x| vec![x.name.to_string(), x.unit.to_string(), format!("{}", x.usd)])
        .collect();
    out.push_str(&table(&["price", "unit", "USD"], &rows));
    let _ = writeln!(
        out,
        "\nAssumptions (not measurable here): a Data API round trip from Lambda of {} ms; {} vCPU \
         per ACU, at most {:.0}% busy, at least {} ACU; function memory {:?} GB (authorizer, ingest, \
         processor, relay: the template); {} bytes stored per webhook, kept {} days; the processor's \
         batching window {} s; the Data API limit of {} requests/s (check Service Quotas). \
         PostgreSQL CPU was measured on this machine's PostgreSQL (see the machine table), not \
         Aurora's storage engine.",
        a.data_api_rtt_ms,
        a.vcpu_per_acu,
        a.db_utilisation * 100.0,
        a.min_acu,
        a.memory_gb,
        a.bytes_per_webhook,
        a.retention_days,
        a.batching_window_s,
        l.data_api_rps,
    );
    out
}

/// Per million webhooks: the whole bill divided by the webhooks of the month.
fn per_million(e: &Estimate) -> f64 {
    e.total() / (e.rate * SECONDS_PER_MONTH / 1e6)
}

/// The ingress comparison: per million webhooks through each ingress, for
/// each body of [`BODIES`], through the processor and forwarding at
/// ingest; then API Gateway's own line.
fn ingress_markdown(
    m: &Measured,
    rates: &[f64],
    p: &Prices,
    l: &Limits,
    a: &Assumptions,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nThe webhook ingress (the template's `Ingress` parameter, docs/ingress.md): the tables \
         above are the REST API (`rest`, the default). Through the HTTP API (`http`) only the API \
         Gateway line changes: both are priced at their monthly volume tiers, the HTTP API per \
         512 KiB of request (a 1 MB body is 2 requests, a 2 KB one 1). Per million webhooks, \
         USD:\n"
    );
    let header: Vec<String> = std::iter::once("per million webhooks, USD".to_string())
        .chain(rates.iter().map(|r| format!("{} webhooks/s", count(*r))))
        .collect();
    let forwarding = m.forwarding_at_ingest();
    let mut rows = Vec::new();
    for (body, bytes) in BODIES {
        // a body over the inline threshold is in the blob store, and the
        // processor forwards it, routes or not (docs/forwarding.md)
        let flows: Vec<(String, &Measured)> = match &forwarding {
            Some(f) if bytes <= a.inline_max_bytes => vec![
                ("through the processor".into(), m),
                ("forwarded at ingest".into(), f),
            ],
            Some(_) => vec![(
                format!(
                    "forwarded or not (over {} KiB: through the blob store and the processor)",
                    a.inline_max_bytes / 1024.0
                ),
                m,
            )],
            None => vec![("through the processor".into(), m)],
        };
        for (flow, measured) in &flows {
            for ingress in [Ingress::Rest, Ingress::Http] {
                let scenario = Scenario {
                    ingress,
                    body_bytes: bytes,
                };
                let mut row = vec![format!("{}, {body}, {flow}", ingress.label())];
                row.extend(rates.iter().map(|r| {
                    format!(
                        "{:.2}",
                        per_million(&estimate_for(measured, *r, scenario, p, l, a))
                    )
                }));
                rows.push(row);
            }
        }
    }
    for (name, scenario) in [
        ("API Gateway alone: REST, any body", Scenario::REST),
        (
            "API Gateway alone: HTTP API, 2 KB",
            Scenario {
                ingress: Ingress::Http,
                body_bytes: BODIES[0].1,
            },
        ),
        (
            "API Gateway alone: HTTP API, 1 MB",
            Scenario {
                ingress: Ingress::Http,
                body_bytes: BODIES[1].1,
            },
        ),
    ] {
        let mut row = vec![name.to_string()];
        row.extend(rates.iter().map(|r| {
            let requests = r
                * SECONDS_PER_MONTH
                * scenario
                    .ingress
                    .requests_per_webhook(scenario.body_bytes, p);
            format!(
                "{:.2}",
                scenario.ingress.monthly_usd(requests, p) / (r * SECONDS_PER_MONTH / 1e6)
            )
        }));
        rows.push(row);
    }
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    out.push_str(&table(&header_refs, &rows));
    let _ = writeln!(
        out,
        "\nA 1 MB body costs the same elsewhere through either ingress, and the model leaves that \
         out: the blob store's S3 requests and storage (bodies over 32 KiB), the functions' time to \
         hash and copy it. A body over the inline threshold is never forwarded at ingest (the \
         processor forwards it from the blob store), so its rows are the processor's figures \
         either way. The tiers are the account's monthly volume in the region: other APIs of the \
         account move them."
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured() -> Measured {
        Measured {
            db_cpu_us: [100.0, 200.0, 100.0],
            own_cpu_us: [50.0, 50.0, 50.0],
            calls: [1.0, 3.1, 1.0],
            relay_batch_rows: 100.0,
            forwarding_ingest_calls: Some(1.0),
        }
    }

    #[test]
    fn forwarding_at_ingest_drops_the_queue_and_the_processor() {
        let f = measured().forwarding_at_ingest().expect("measured");
        let e = estimate(&f, 1_000.0, &PRICES, &LIMITS, &ASSUMPTIONS);
        // 1000 × 1 + 1000 deliveries / 100 rows × 1
        assert!(
            (e.data_api_rps - 1_010.0).abs() < 1e-9,
            "{}",
            e.data_api_rps
        );
        assert_eq!(e.sqs_rps, 0.0);
        assert!((e.invocations_per_s - (2_000.0 + 1.0 / 60.0)).abs() < 1e-9);
        assert_eq!(e.processor_concurrency, 0.0);
        let through = estimate(&measured(), 1_000.0, &PRICES, &LIMITS, &ASSUMPTIONS);
        assert!(e.total() < through.total());
        let md = markdown(&measured(), &[10.0, 1_000.0]);
        assert!(md.contains("**total, forwarding at ingest**"), "{md}");
        let mut without = measured();
        without.forwarding_ingest_calls = None;
        assert!(!markdown(&without, &[10.0]).contains("forwarding at ingest"));
    }

    #[test]
    fn database_capacity_follows_cpu_per_webhook_with_headroom_and_a_floor() {
        let e = estimate(&measured(), 1_000.0, &PRICES, &LIMITS, &ASSUMPTIONS);
        // 1000/s × 400 µs = 0.4 vCPU; / 0.25 vCPU per ACU / 0.7 = 2.29 ACU
        assert!((e.acu - 0.4 / 0.25 / 0.7).abs() < 1e-9, "{}", e.acu);
        let idle = estimate(&measured(), 0.001, &PRICES, &LIMITS, &ASSUMPTIONS);
        assert_eq!(idle.acu, ASSUMPTIONS.min_acu);
    }

    #[test]
    fn data_api_calls_add_ingest_processor_and_relay_batches() {
        let e = estimate(&measured(), 1_000.0, &PRICES, &LIMITS, &ASSUMPTIONS);
        // 1000 × 1 + 1000 × 3.1 + 1000 deliveries / 100 rows × 1
        assert!(
            (e.data_api_rps - 4_110.0).abs() < 1e-9,
            "{}",
            e.data_api_rps
        );
        // at 10/s the relay's batches hold 2.5 rows
        let low = estimate(&measured(), 10.0, &PRICES, &LIMITS, &ASSUMPTIONS);
        assert!(
            (low.data_api_rps - (10.0 + 31.0 + 4.0)).abs() < 1e-9,
            "{}",
            low.data_api_rps
        );
    }

    #[test]
    fn monthly_costs_scale_with_the_rate_and_use_the_price_table() {
        let e = estimate(&measured(), 1_000.0, &PRICES, &LIMITS, &ASSUMPTIONS);
        let api = e
            .costs
            .iter()
            .find(|(n, _)| *n == "API Gateway")
            .map(|(_, c)| *c);
        // 2,592 M requests: 333 M at 3.50, 667 M at 2.80, 1,592 M at 2.38
        let want = 333.0 * 3.5 + 667.0 * 2.8 + 1_592.0 * 2.38;
        assert!((api.expect("API Gateway") - want).abs() < 1e-6, "{api:?}");
        let sqs = e.costs.iter().find(|(n, _)| *n == "SQS").map(|(_, c)| *c);
        // 1 send + (receive + delete) per batch of 10
        assert_eq!(sqs, Some(1_200.0 * SECONDS_PER_MONTH * 0.4 / 1e6));
        let ten = estimate(&measured(), 10_000.0, &PRICES, &LIMITS, &ASSUMPTIONS);
        assert!(ten.total() > 9.0 * e.total() && ten.total() < 11.0 * e.total());
    }

    #[test]
    fn each_slice_of_the_month_is_charged_at_its_tier() {
        let rest = PRICES.api_gateway_rest;
        assert_eq!(tiered(0.0, rest), 0.0);
        assert!((tiered(100.0, rest) - 350.0).abs() < 1e-9);
        assert!((tiered(333.0, rest) - 1_165.5).abs() < 1e-9);
        assert!((tiered(1_000.0, rest) - (1_165.5 + 667.0 * 2.8)).abs() < 1e-9);
        // 10,000 webhooks/s: 25,920 M requests, into the last tier
        let want = 1_165.5 + 667.0 * 2.8 + 19_000.0 * 2.38 + 5_920.0 * 1.51;
        assert!((tiered(25_920.0, rest) - want).abs() < 1e-6);
        let http = PRICES.api_gateway_http;
        assert!((tiered(300.0, http) - 300.0).abs() < 1e-9);
        assert!((tiered(2_592.0, http) - (300.0 + 2_292.0 * 0.9)).abs() < 1e-9);
        // a month at 10 webhooks/s stays in the first tiers: flat prices
        let ten = 10.0 * SECONDS_PER_MONTH / 1e6;
        assert!((Ingress::Rest.monthly_usd(ten * 1e6, &PRICES) - ten * 3.5).abs() < 1e-9);
        assert!((Ingress::Http.monthly_usd(ten * 1e6, &PRICES) - ten).abs() < 1e-9);
    }

    #[test]
    fn the_http_api_bills_a_request_per_512_kib_and_rest_one_per_webhook() {
        let http = |bytes: f64| Ingress::Http.requests_per_webhook(bytes, &PRICES);
        assert_eq!(http(0.0), 1.0);
        assert_eq!(http(2_048.0), 1.0);
        assert_eq!(http(524_288.0), 1.0);
        assert_eq!(http(524_289.0), 2.0);
        assert_eq!(http(1_048_576.0), 2.0);
        assert_eq!(http(1_048_577.0), 3.0);
        assert_eq!(http(10.0 * 1_048_576.0), 20.0);
        assert_eq!(
            Ingress::Rest.requests_per_webhook(10.0 * 1_048_576.0, &PRICES),
            1.0
        );
    }

    #[test]
    fn only_the_api_gateway_line_differs_between_the_ingresses() {
        for m in [
            measured(),
            measured().forwarding_at_ingest().expect("forwarding"),
        ] {
            for rate in [10.0, 1_000.0, 10_000.0] {
                let rest = estimate(&m, rate, &PRICES, &LIMITS, &ASSUMPTIONS);
                let small = Scenario {
                    ingress: Ingress::Http,
                    body_bytes: 2_048.0,
                };
                let large = Scenario {
                    ingress: Ingress::Http,
                    body_bytes: 1_048_576.0,
                };
                let http = estimate_for(&m, rate, small, &PRICES, &LIMITS, &ASSUMPTIONS);
                let http_large = estimate_for(&m, rate, large, &PRICES, &LIMITS, &ASSUMPTIONS);
                for ((a, x), ((b, y), (c, z))) in rest
                    .costs
                    .iter()
                    .zip(http.costs.iter().zip(http_large.costs.iter()))
                {
                    assert!(a == b && b == c);
                    if *a == "API Gateway" {
                        // 1 MiB = two requests of 512 KiB: twice the 2 KB bill
                        // where a single tier holds both months
                        assert!(y < x && z > y, "{rate}: {x} {y} {z}");
                    } else {
                        assert!(x == y && y == z, "{a} at {rate}: {x} {y} {z}");
                    }
                }
                assert!(http.total() < rest.total());
            }
        }
        // 10 webhooks/s, first tiers: the HTTP API's line is 1/3.5 of REST's
        // for a 2 KB body, 2/3.5 for 1 MB
        let api = |s: Scenario| {
            estimate_for(&measured(), 10.0, s, &PRICES, &LIMITS, &ASSUMPTIONS).costs[0].1
        };
        let rest = api(Scenario::REST);
        let http = |bytes| {
            api(Scenario {
                ingress: Ingress::Http,
                body_bytes: bytes,
            })
        };
        assert!((http(2_048.0) * 3.5 - rest).abs() < 1e-9);
        assert!((http(1_048_576.0) * 3.5 - 2.0 * rest).abs() < 1e-9);
    }

    #[test]
    fn the_markdown_compares_the_ingresses_per_million_webhooks() {
        let md = markdown(&measured(), &[10.0, 1_000.0, 10_000.0]);
        for row in [
            "| REST, 2 KB, through the processor |",
            "| HTTP API, 2 KB, through the processor |",
            "| REST, 2 KB, forwarded at ingest |",
            "| HTTP API, 2 KB, forwarded at ingest |",
            "| REST, 1 MB, forwarded or not (over 32 KiB: through the blob store and the processor) |",
            "| HTTP API, 1 MB, forwarded or not (over 32 KiB: through the blob store and the processor) |",
            "| API Gateway alone: REST, any body | 3.50 | 2.63 | 2.21 |",
            "| API Gateway alone: HTTP API, 2 KB | 1.00 | 0.91 | 0.90 |",
            "| API Gateway alone: HTTP API, 1 MB | 2.00 | 1.81 | 1.80 |",
            "| API Gateway REST API | per million requests, over 20 B | 1.51 |",
            "| API Gateway HTTP API | per million requests (512 KiB each), over 300 M | 0.9 |",
        ] {
            assert!(md.contains(row), "{row}\n{md}");
        }
        assert!(!md.contains("1 MB, forwarded at ingest"), "{md}");
        let mut without = measured();
        without.forwarding_ingest_calls = None;
        let md = markdown(&without, &[10.0]);
        assert!(!md.contains("forwarding at ingest"), "{md}");
        assert!(
            md.contains("| HTTP API, 1 MB, through the processor |"),
            "{md}"
        );
    }

    /// The model's inputs back from a report's cost section (its first
    /// sentence, and the forwarding note): to render the section again from
    /// BENCHMARKS.md without measuring (`render_from_benchmarks_md`).
    fn measured_from_report(text: &str) -> Option<Measured> {
        let numbers = |s: &str| -> Vec<f64> {
            s.split(|c: char| !(c.is_ascii_digit() || c == '.'))
                .filter(|w| !w.is_empty() && w.chars().any(|c| c.is_ascii_digit()))
                .filter_map(|w| w.trim_end_matches('.').parse().ok())
                .collect()
        };
        let start = text.find("Computed from this run's figures:")?;
        let sentence = &text[start..start + text[start..].find(" One outbound")?];
        let n = numbers(sentence);
        let [db0, db1, db2, own0, own1, own2, c0, c1, c2, rows] = n[..] else {
            return None;
        };
        let forwarding = text.find("Forwarding at ingest (").and_then(|at| {
            let rest = &text[at..];
            let ingest = rest.find(", ingest ")? + ", ingest ".len();
            rest[ingest..].split(' ').next()?.parse().ok()
        });
        Some(Measured {
            db_cpu_us: [db0, db1, db2],
            own_cpu_us: [own0, own1, own2],
            calls: [c0, c1, c2],
            relay_batch_rows: rows,
            forwarding_ingest_calls: forwarding,
        })
    }

    #[test]
    fn a_report_gives_back_the_inputs_it_was_computed_from() {
        let m = Measured {
            db_cpu_us: [470.0, 423.0, 94.0],
            own_cpu_us: [107.0, 106.0, 140.0],
            calls: [1.0, 3.1, 1.0],
            relay_batch_rows: 100.0,
            forwarding_ingest_calls: Some(1.0),
        };
        let back = measured_from_report(&markdown(&m, &[10.0])).expect("parsed");
        assert_eq!(back.db_cpu_us, m.db_cpu_us);
        assert_eq!(back.own_cpu_us, m.own_cpu_us);
        assert_eq!(back.calls, m.calls);
        assert_eq!(back.relay_batch_rows, m.relay_batch_rows);
        assert_eq!(back.forwarding_ingest_calls, m.forwarding_ingest_calls);
    }

    /// The cost section rendered again from the inputs BENCHMARKS.md
    /// recorded (rounded as printed), without measuring:
    /// `cargo test --profile bench-quick -p hookbox-bench render_from_benchmarks_md -- --ignored --nocapture`
    #[test]
    #[ignore = "prints the cost section from BENCHMARKS.md's recorded inputs"]
    fn render_from_benchmarks_md() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../BENCHMARKS.md");
        let text = std::fs::read_to_string(path).expect("BENCHMARKS.md");
        let m = measured_from_report(&text).expect("the cost section's inputs");
        println!("{}", markdown(&m, &[10.0, 1_000.0, 10_000.0]));
    }

    #[test]
    fn the_bottleneck_is_the_most_used_limit() {
        let e = estimate(&measured(), 1_000.0, &PRICES, &LIMITS, &ASSUMPTIONS);
        // 4110 calls/s against an assumed 1000/s
        assert_eq!(e.bottleneck().0, "Data API requests/s");
        assert!(e.bottleneck().1 > 4.0);
    }

    #[test]
    fn the_markdown_has_a_column_per_rate_and_the_price_date() {
        let md = markdown(&measured(), &[10.0, 1_000.0, 10_000.0]);
        assert!(md.contains(
            "| monthly (30 days), USD | 10 webhooks/s | 1,000 webhooks/s | 10,000 webhooks/s |"
        ));
        assert!(md.contains(PRICES_AS_OF));
        assert!(md.contains("first bottleneck"));
    }
}

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

mod render;

pub use render::markdown;

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

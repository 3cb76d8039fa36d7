//! The cost and capacity model: the measured figures (database CPU and
//! calls per webhook and per delivery, the functions' own CPU) turned into
//! the AWS resources and the monthly bill at a given rate, and the first
//! limit each rate meets.
//!
//! Every price and limit is in [`PRICES`] and [`LIMITS`]: public list
//! prices for us-east-1 as the author knew them (no network here), to be
//! checked before use. Assumptions the measurement cannot give (the Data
//! API's round trip, an ACU's CPU) are in [`ASSUMPTIONS`].

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
    api_gateway_rest_per_million: 3.50,
    lambda_arm_gb_second: 0.000_013_333_4,
    lambda_per_million_requests: 0.20,
    sqs_standard_per_million: 0.40,
    aurora_io_optimized_acu_hour: 0.16,
    aurora_io_optimized_gb_month: 0.225,
    data_api_per_million: 0.35,
};

/// The prices the model uses.
#[derive(Debug, Clone, Copy)]
pub struct Prices {
    /// API Gateway REST API, per million requests (first 333 M a month).
    pub api_gateway_rest_per_million: f64,
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
        vec![
            Price {
                name: "API Gateway REST API",
                unit: "per million requests",
                usd: self.api_gateway_rest_per_million,
            },
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
        ]
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

/// The model at `rate` webhooks per second.
pub fn estimate(m: &Measured, rate: f64, p: &Prices, l: &Limits, a: &Assumptions) -> Estimate {
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
    let costs = vec![
        (
            "API Gateway",
            rate * month * p.api_gateway_rest_per_million / 1e6,
        ),
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
        assert_eq!(api, Some(1_000.0 * SECONDS_PER_MONTH * 3.5 / 1e6));
        let sqs = e.costs.iter().find(|(n, _)| *n == "SQS").map(|(_, c)| *c);
        // 1 send + (receive + delete) per batch of 10
        assert_eq!(sqs, Some(1_200.0 * SECONDS_PER_MONTH * 0.4 / 1e6));
        let ten = estimate(&measured(), 10_000.0, &PRICES, &LIMITS, &ASSUMPTIONS);
        assert!(ten.total() > 9.0 * e.total() && ten.total() < 11.0 * e.total());
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

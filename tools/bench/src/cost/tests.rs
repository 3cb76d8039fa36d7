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
    let api =
        |s: Scenario| estimate_for(&measured(), 10.0, s, &PRICES, &LIMITS, &ASSUMPTIONS).costs[0].1;
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

//! The cost section of the report: the monthly bill and capacity at each
//! rate, and the per-million comparison of the two ingresses.

use std::fmt::Write as _;

use super::*;
use crate::report::{count, number, table};

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
         (`tools/bench/src/cost/mod.rs`, `PRICES`):\n"
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

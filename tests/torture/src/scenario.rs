//! What a scenario throws: its knobs, the partners and destinations, and
//! the webhooks themselves (three per order, some large, some hostile).
//! Partners: `sw` and `gh` drive the example orders domain, `fw` is
//! forwarded by its routes to two HTTP destinations.

use chrono::{DateTime, TimeZone, Utc};
use hmac::{KeyInit, Mac};
use hookbox::config::HookboxConfig;

use crate::receiver::GONE;

pub(crate) const SW_SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";
pub(crate) const GH_SECRET: &str = "It's a Secret to Everybody";
/// The partner whose events are forwarded by routes, and its destinations.
pub(crate) const FORWARDED: &str = "fw";
pub(crate) const FW_A: &str = "fw-a";
pub(crate) const FW_B: &str = "fw-b";

/// The destinations the routes of [`FORWARDED`] send an event of
/// `event_type` to.
pub(crate) fn routed_to(event_type: &str) -> Vec<&'static str> {
    if event_type.starts_with("order.") {
        vec![FW_A, FW_B]
    } else {
        vec![FW_A]
    }
}
/// What to throw at hookbox.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Everything random follows it.
    pub seed: u64,
    /// Unique webhooks (three per order: paid, shipped, delivered).
    pub webhooks: usize,
    /// Percent of webhooks sent more than once (1 to 3 extra copies, later).
    pub duplicate_pct: u8,
    /// Webhooks sent as bursts of 100 concurrent copies.
    pub bursts: usize,
    /// Percent of webhooks with a large body (40 to 300 KB: the blob store).
    pub large_pct: u8,
    /// Chance that a failpoint crashes when hit.
    pub crash_chance: f64,
    /// Outages, in turn: the database (calls fail), the queue, both, and
    /// PostgreSQL itself stopped; the first lasts 25 to 33 minutes, the
    /// others 1 to 5.
    pub outages: usize,
    /// Percent of `erp` delivery attempts that fail.
    pub receiver_fail_pct: u8,
    /// Requests hookbox must refuse with a 4xx (forged, stale, malformed,
    /// ambiguous, unknown partner), sent among the others.
    pub bad_requests: usize,
    /// Changes to tenants' endpoints (added, rotated, disabled, enabled,
    /// deleted), one a step while the database is up, between relay runs.
    pub endpoint_changes: usize,
    /// Events the batched partner sends in POSTs of 1 to 8
    /// ([`crate::batched`]).
    pub batched_events: usize,
}

impl Scenario {
    /// The CI-sized scenario for `seed`.
    pub fn bounded(seed: u64, webhooks: usize) -> Self {
        Self {
            seed,
            webhooks,
            duplicate_pct: 30,
            bursts: 2,
            large_pct: 3,
            crash_chance: 0.02,
            outages: 4,
            receiver_fail_pct: 20,
            bad_requests: webhooks / 20,
            endpoint_changes: webhooks / 20,
            batched_events: webhooks / 4,
        }
    }
}

/// One webhook a partner sends.
#[derive(Debug, Clone)]
pub(crate) struct Webhook {
    pub(crate) partner: &'static str,
    pub(crate) event_id: String,
    pub(crate) body: Vec<u8>,
}

pub(crate) fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0)
        .single()
        .unwrap_or_else(Utc::now)
}

/// The configuration: the partners, the HTTP destinations, and `aws`'s
/// destinations (an object of them) beside those.
pub(crate) fn config(aws: serde_json::Value) -> HookboxConfig {
    let mut config = serde_json::json!({
        "partners": {
            "sw": {
                "signature": {"scheme": "standard-webhooks"},
                "secrets": [SW_SECRET],
                "event_id": {"header": "webhook-id"},
                "event_type": "/type",
                "ordering_key": "/order_id"
            },
            "gh": {
                "signature": {"scheme": "github"},
                "secrets": [GH_SECRET],
                "event_id": {"header": "x-github-delivery"},
                "event_type": "/type"
            },
            // many events per POST, each forwarded by the routes
            crate::batched::BATCHED: crate::batched::partner(),
            // forwarded by routes (at ingest, else by the processor): every
            // event to fw-a, the order.* ones to fw-b too
            FORWARDED: {
                "signature": {"scheme": "standard-webhooks"},
                "secrets": [SW_SECRET],
                "event_id": {"header": "webhook-id"},
                "event_type": "/type",
                "ordering_key": "/order_id",
                "routes": [
                    {"to": FW_A, "event_types": ["*"]},
                    {"to": FW_B, "event_types": ["order.*"]}
                ]
            }
        },
        "destinations": {
            "erp": {"url": "https://erp.torture.invalid/hooks", "secrets": [SW_SECRET], "timeout_secs": 0.25},
            GONE: {"url": "https://legacy.torture.invalid/hooks", "secrets": [SW_SECRET]},
            FW_A: {"url": "https://fw-a.torture.invalid/hooks", "secrets": [SW_SECRET], "timeout_secs": 0.25},
            FW_B: {"url": "https://fw-b.torture.invalid/hooks", "secrets": [SW_SECRET], "timeout_secs": 0.25}
        }
    });
    if let (Some(all), Some(more)) = (config["destinations"].as_object_mut(), aws.as_object()) {
        all.extend(more.clone());
    }
    HookboxConfig::parse(&config.to_string(), "torture")
        .unwrap_or_else(|e| panic!("torture config: {e}"))
}

/// Event id prefixes of the hostile webhooks.
const HOSTILE_ID_PREFIXES: &[&str] = &[
    "'; DROP TABLE inbox; --",
    "../../etc/passwd/",
    "esc:",
    "%00",
    "<script>",
    "\\0",
];

/// The webhooks of the scenario: three per order, bodies sometimes large,
/// some with hostile bytes.
pub(crate) fn webhooks(scenario: &Scenario, rng: &mut fastrand::Rng) -> Vec<Webhook> {
    let mut out = Vec::with_capacity(scenario.webhooks);
    let mut order = 0;
    // the forwarded partner's numbers and ordering keys: a generator of
    // their own, so the rest of the scenario draws what it drew before
    let mut numbers = fastrand::Rng::with_seed(scenario.seed ^ 0x6e75_6d62);
    let mut forwarded = 0usize;
    while out.len() < scenario.webhooks {
        let partner = match rng.u8(0..4) {
            0 => "gh",
            1 => FORWARDED,
            _ => "sw",
        };
        for event_type in ["payment.received", "order.shipped", "order.delivered"] {
            if out.len() == scenario.webhooks {
                break;
            }
            let mut body = serde_json::json!({
                "type": event_type,
                "order_id": format!("ord-{}-{order}", scenario.seed),
                "amount_cents": 1250,
                "currency": "EUR",
            });
            if rng.u8(0..100) < scenario.large_pct {
                let size = rng.usize(40_000..300_000);
                body["pad"] = serde_json::Value::String("x".repeat(size));
            }
            // hostile bytes where partners put them: text PostgreSQL and
            // SQS refuse in the body, ids shaped like SQL, paths and our
            // own escape prefix (GitHub's id header is any visible ASCII)
            if rng.u8(0..100) < 5 {
                body["note"] = serde_json::Value::String(
                    "nul \u{0} nonchar \u{fffe} lone half: see raw; \"quoted\" \u{1f600}".into(),
                );
            }
            let mut edge = None;
            if partner == FORWARDED {
                // an empty or missing ordering key is no key (its
                // aggregate is the event id)
                match numbers.u8(0..10) {
                    0 => body["order_id"] = serde_json::Value::String(String::new()),
                    1 => {
                        if let Some(fields) = body.as_object_mut() {
                            fields.remove("order_id");
                        }
                    }
                    _ => {}
                }
                edge = Some(edge_numbers(&mut numbers, forwarded));
                forwarded += 1;
            }
            let mut event_id = format!("evt-{}-{}", scenario.seed, out.len());
            if partner == "gh" && rng.u8(0..100) < 10 {
                let prefix = HOSTILE_ID_PREFIXES[rng.usize(0..HOSTILE_ID_PREFIXES.len())];
                event_id = format!("{prefix}{event_id}");
            }
            let mut bytes = serde_json::to_vec(&body).unwrap_or_default();
            if let Some(edge) = edge {
                // numbers serde_json would round: written as text
                if let Some(end) = bytes.iter().rposition(|b| *b == b'}') {
                    bytes.splice(end..end, edge.into_bytes());
                }
            }
            if rng.u8(0..100) < 2 {
                // a lone surrogate escape, which serde_json would not write
                if let Some(end) = bytes.iter().rposition(|b| *b == b'}') {
                    bytes.splice(end..end, br#","raw":"\ud800""#.iter().copied());
                }
            }
            out.push(Webhook {
                partner,
                event_id,
                body: bytes,
            });
        }
        order += 1;
    }
    out
}

/// A digit string of a length in `lengths`, the first digit not 0.
fn digits(rng: &mut fastrand::Rng, lengths: std::ops::Range<usize>) -> String {
    let len = rng.usize(lengths);
    (0..len)
        .map(|i| char::from(b'0' + if i == 0 { rng.u8(1..10) } else { rng.u8(0..10) }))
        .collect()
}

/// How many `1e300` make a body of some 6 KB whose jsonb text (each
/// written out in full: 301 digits, then `", "`) passes the 256 KiB an
/// outbox row may hold, so ingest leaves it to the processor, which
/// forwards it through the blob store byte for byte.
const BLOB_E300S: usize = 1_000;
/// And this many a jsonb text over the inline threshold (32 KiB) but under
/// 256 KiB: forwarded at ingest inline, read back in pieces by the relay.
const MID_E300S: usize = 150;

/// The `,"numbers":…` member of the `n`th body of the forwarded partner:
/// numbers `f64` would round or jsonb rewrites (big integers past u64 and
/// f64, 18-digit decimals, `1e20`, `1e300`, `-0`, `1.50e1`, `1e-7`); every
/// 25th body from the 4th with [`BLOB_E300S`] × `1e300`, from the 12th
/// with `1e-20000` (no numeric holds it: the processor's blob path too),
/// from the 18th with [`MID_E300S`] × `1e300`.
fn edge_numbers(rng: &mut fastrand::Rng, n: usize) -> String {
    let big = if n == 0 {
        "123456789012345678901234567890".to_owned()
    } else {
        digits(rng, 20..40)
    };
    let neg_big = format!("-{}", digits(rng, 20..30));
    let dec18 = format!("{}.{}", rng.u32(0..100_000), digits(rng, 18..19));
    let e20 = ["1e20", "1E+20", "1e+20", "10e19"][rng.usize(0..4)];
    let zero = ["-0", "-0.0", "0.000", "-0e5"][rng.usize(0..4)];
    let tiny = ["1e-7", "1E-7", "0.1e-6", "100e-9"][rng.usize(0..4)];
    let mut member = format!(
        r#","numbers":{{"big":{big},"neg_big":{neg_big},"dec18":{dec18},"u64_plus_1":18446744073709551616,"e20":{e20},"e300":1e300,"zero":{zero},"f":1.50e1,"tiny":{tiny},"list":[{big}, 1e20 ,-0,1.50e1,{dec18}]}}"#
    );
    let many = |count: usize| {
        let list = vec!["1e300"; count].join(",");
        format!(r#","many":[{list}]"#)
    };
    match n % 25 {
        3 => member.push_str(&many(BLOB_E300S)),
        11 => member.push_str(r#","unholdable":1e-20000"#),
        17 => member.push_str(&many(MID_E300S)),
        _ => {}
    }
    member
}

pub(crate) fn github_signature(body: &[u8]) -> String {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(GH_SECRET.as_bytes())
        .unwrap_or_else(|e| panic!("hmac key: {e}"));
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

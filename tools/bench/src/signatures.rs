//! Signature verification against a bare HMAC-SHA256 over the same body
//! bytes, in the same run (the method of shared/benches/signature.rs, where
//! docs/signatures.md explains it): short batches of the same iteration
//! count, one round times every case once in a rotated order, and the best
//! batch of each case is compared (the least disturbed by the neighbour on
//! the machine).

use std::hint::black_box;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use hookbox::signature::{Headers, SchemeConfig, SchemeKind, Secret, SignedRequest, Verifier};
use sha2::Sha256;

use crate::report::{Figure, Goal};

pub const SECTION: &str = "Signatures";
const NOW: i64 = 1_700_000_000;
const SAMPLE: Duration = Duration::from_millis(2);

/// A case to time: its name and a closure run once per iteration.
type Case<'a> = (&'a str, Box<dyn Fn() -> bool + 'a>);

/// A scheme to bench: name, scheme, its signed headers, the secret.
type Scenario<'a> = (&'a str, SchemeKind, Vec<(&'a str, String)>, &'a Secret);

fn body(size: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..size)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> anyhow::Result<Vec<u8>> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)?;
    for part in parts {
        mac.update(part);
    }
    Ok(mac.finalize().into_bytes().to_vec())
}

fn time(run: &dyn Fn() -> bool, iterations: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..iterations {
        black_box(run());
    }
    start.elapsed()
}

/// The best rate (bytes/s) of each case over `rounds`; case 0 is the bare
/// HMAC.
fn best_rates(cases: &[Case<'_>], size: usize, rounds: usize) -> Vec<f64> {
    let mut iterations = 1u64;
    while time(&*cases[0].1, iterations) < SAMPLE / 4 {
        iterations *= 2;
    }
    let per_iter = time(&*cases[0].1, iterations).as_secs_f64() / iterations as f64;
    let iterations = ((SAMPLE.as_secs_f64() / per_iter.max(1e-12)) as u64).max(1);
    for (_, run) in cases {
        time(&**run, iterations);
    }
    let mut best = vec![0.0_f64; cases.len()];
    for round in 0..rounds {
        for k in 0..cases.len() {
            let i = (round + k) % cases.len();
            let elapsed = time(&*cases[i].1, iterations).as_secs_f64();
            best[i] = best[i].max(size as f64 * iterations as f64 / elapsed);
        }
    }
    best
}

fn size_figures(size: usize, rounds: usize) -> anyhow::Result<Vec<Figure>> {
    let body = body(size);
    let now = chrono::DateTime::from_timestamp(NOW, 0)
        .ok_or_else(|| anyhow::anyhow!("a valid instant"))?;
    let raw_key = b"benchmark-secret-24bytes".as_slice();
    let whsec = Secret::new(format!("whsec_{}", STANDARD.encode(raw_key)));
    let raw = Secret::new("benchmark-secret-24bytes".to_string());
    let ts = NOW.to_string();
    let t = ts.as_bytes();
    let scenarios: Vec<Scenario<'_>> = vec![
        (
            "standard-webhooks v1",
            SchemeKind::StandardWebhooks,
            vec![
                ("webhook-id", "msg_1".into()),
                ("webhook-timestamp", ts.clone()),
                (
                    "webhook-signature",
                    format!(
                        "v1,{}",
                        STANDARD.encode(hmac_sha256(raw_key, &[b"msg_1.", t, b".", &body])?)
                    ),
                ),
            ],
            &whsec,
        ),
        (
            "stripe v1",
            SchemeKind::Stripe,
            vec![(
                "Stripe-Signature",
                format!(
                    "t={ts},v1={}",
                    hex::encode(hmac_sha256(raw_key, &[t, b".", &body])?)
                ),
            )],
            &raw,
        ),
        (
            "github sha256",
            SchemeKind::Github,
            vec![(
                "X-Hub-Signature-256",
                format!("sha256={}", hex::encode(hmac_sha256(raw_key, &[&body])?)),
            )],
            &raw,
        ),
        (
            "shopify",
            SchemeKind::Shopify,
            vec![(
                "X-Shopify-Hmac-Sha256",
                STANDARD.encode(hmac_sha256(raw_key, &[&body])?),
            )],
            &raw,
        ),
        (
            "slack v0",
            SchemeKind::Slack,
            vec![
                ("X-Slack-Request-Timestamp", ts.clone()),
                (
                    "X-Slack-Signature",
                    format!(
                        "v0={}",
                        hex::encode(hmac_sha256(raw_key, &[b"v0:", t, b":", &body])?)
                    ),
                ),
            ],
            &raw,
        ),
    ];
    let common = [
        ("content-type", "application/json"),
        ("user-agent", "partner/1.0"),
        ("x-forwarded-for", "203.0.113.7"),
    ];
    let mut prepared = Vec::new();
    for (name, kind, headers, secret) in &scenarios {
        let config = SchemeConfig::default_for(*kind)
            .ok_or_else(|| anyhow::anyhow!("no default configuration for {name}"))?;
        let verifier = Verifier::new(config)?;
        let mut pairs: Vec<(&str, &str)> = common.to_vec();
        pairs.extend(headers.iter().map(|(n, v)| (*n, v.as_str())));
        let request = SignedRequest::new(&body, Headers::from_pairs(pairs));
        let secrets = vec![(*secret).clone()];
        verifier
            .verify_at(&request, &secrets, now)
            .map_err(|e| anyhow::anyhow!("{name} does not verify: {e}"))?;
        prepared.push((*name, verifier, request, secrets));
    }
    let mut cases: Vec<Case<'_>> = vec![(
        "bare hmac-sha256",
        Box::new(|| {
            <Hmac<Sha256> as KeyInit>::new_from_slice(black_box(raw_key)).is_ok_and(|mut mac| {
                mac.update(black_box(&body));
                black_box(mac.finalize().into_bytes())[0] != 0
            })
        }),
    )];
    for (name, verifier, request, secrets) in &prepared {
        cases.push((
            name,
            Box::new(move || {
                verifier
                    .verify_at(black_box(request), black_box(secrets), now)
                    .is_ok()
            }),
        ));
    }
    let best = best_rates(&cases, size, rounds);
    let mib = 1024.0 * 1024.0;
    Ok(cases
        .iter()
        .zip(&best)
        .skip(1)
        .map(|((name, _), rate)| {
            Figure::ratio(
                SECTION,
                format!("{name}, {} KiB body", size / 1024),
                "MiB/s",
                rate / mib,
                ("bare HMAC-SHA256", best[0] / mib),
                Goal::RatioAtLeast(0.9),
            )
            .when_missed(
                "At small bodies the header parsing and base64/hex decoding around the MAC \
                 are a visible share; see docs/signatures.md.",
            )
        })
        .collect())
}

/// Every signature figure: 1 KiB and 64 KiB bodies.
pub fn run(rounds: usize) -> anyhow::Result<Vec<Figure>> {
    let mut out = size_figures(1024, rounds)?;
    out.extend(size_figures(64 * 1024, rounds)?);
    Ok(out)
}

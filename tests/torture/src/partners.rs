//! What partners put on the wire: the signed headers of a webhook, and the
//! requests hookbox must refuse with a 4xx (each kind a partner or an
//! attacker really sends), every one under an event id of its own
//! (`bad-<seed>-<n>`) so the ledger can tell that none left a row.
//!
//! A signed body that is not JSON is not among them: where the event id is
//! a header (both partners here), the body is stored as the bytes it is
//! (docs/bad-input.md).

use chrono::{DateTime, TimeDelta, Utc};
use hookbox::signature::{Secret, sign_standard_webhooks};

use crate::scenario::{SW_SECRET, Webhook, github_signature};

/// Headers as a list: a request may repeat one.
pub(crate) type HeaderList = Vec<(String, String)>;

/// The signed headers of `hook`, sent at `now`.
pub(crate) fn signed_headers(hook: &Webhook, now: DateTime<Utc>) -> HeaderList {
    match hook.partner {
        "gh" => vec![
            ("x-github-event".into(), "order".into()),
            ("x-github-delivery".into(), hook.event_id.clone()),
            ("x-hub-signature-256".into(), github_signature(&hook.body)),
            ("content-type".into(), "application/json".into()),
        ],
        _ => standard_webhooks(&hook.event_id, now, &hook.body, SW_SECRET),
    }
}

fn standard_webhooks(id: &str, at: DateTime<Utc>, body: &[u8], secret: &str) -> HeaderList {
    let signed = sign_standard_webhooks(id, at, body, &[Secret::new(secret)])
        .unwrap_or_else(|e| panic!("sign: {e}"));
    vec![
        ("webhook-id".into(), signed.id),
        ("webhook-timestamp".into(), signed.timestamp),
        ("webhook-signature".into(), signed.signature),
        ("content-type".into(), "application/json".into()),
    ]
}

/// A request hookbox must refuse.
#[derive(Debug, Clone)]
pub(crate) struct Refusable {
    /// What is wrong with it.
    pub(crate) kind: &'static str,
    pub(crate) partner: &'static str,
    pub(crate) headers: HeaderList,
    pub(crate) body: Vec<u8>,
}

/// The kinds, in turn.
pub(crate) const KINDS: [&str; 8] = [
    "forged",
    "stale",
    "future",
    "oversize",
    "no_event_id",
    "ambiguous_event_id",
    "unknown_partner",
    "forged_resend",
];

/// The `n`th refusable request of a run (`seed`), sent at `now`;
/// `forged_resend` reuses the id of `victim`, a real webhook.
pub(crate) fn refusable(seed: u64, n: usize, now: DateTime<Utc>, victim: &Webhook) -> Refusable {
    let id = format!("bad-{seed}-{n}");
    let kind = KINDS[n % KINDS.len()];
    let body =
        format!(r#"{{"type":"order.shipped","order_id":"ord-{seed}-bad-{n}"}}"#).into_bytes();
    let gh = |id: &str, body: &[u8]| -> HeaderList {
        vec![
            ("x-github-event".into(), "order".into()),
            ("x-github-delivery".into(), id.into()),
            ("x-hub-signature-256".into(), github_signature(body)),
            ("content-type".into(), "application/json".into()),
        ]
    };
    let (partner, headers, body) = match kind {
        "forged" => (
            "sw",
            standard_webhooks(&id, now, &body, "whsec_bm90LXRoZS1wYXJ0bmVycy1zZWNyZXQ="),
            body,
        ),
        "stale" => (
            "sw",
            standard_webhooks(&id, now - TimeDelta::minutes(30), &body, SW_SECRET),
            body,
        ),
        "future" => (
            "sw",
            standard_webhooks(&id, now + TimeDelta::minutes(30), &body, SW_SECRET),
            body,
        ),
        // one byte over the largest body a partner may send, signed
        "oversize" => {
            let mut big = body;
            big.resize(hookbox::config::MAX_MAX_BODY_BYTES + 1, b' ');
            ("sw", standard_webhooks(&id, now, &big, SW_SECRET), big)
        }
        "no_event_id" => {
            let mut headers = gh(&id, &body);
            headers.retain(|(name, _)| name != "x-github-delivery");
            ("gh", headers, body)
        }
        "ambiguous_event_id" => {
            let mut headers = gh(&id, &body);
            headers.push(("x-github-delivery".into(), format!("{id}-other")));
            ("gh", headers, body)
        }
        "unknown_partner" => ("nope", standard_webhooks(&id, now, &body, SW_SECRET), body),
        // a captured id resent with a body of the attacker's and no valid
        // signature: the stored webhook must stay as it was
        _ => {
            let mut headers = signed_headers(victim, now);
            for (name, value) in &mut headers {
                if name == "webhook-signature" || name == "x-hub-signature-256" {
                    *value = value.replace(|c: char| c.is_ascii_alphanumeric(), "A");
                }
            }
            (victim.partner, headers, body)
        }
    };
    Refusable {
        kind,
        partner,
        headers,
        body,
    }
}

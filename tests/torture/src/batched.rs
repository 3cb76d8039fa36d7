//! The batched partner of the run (`bt`, docs/batches.md): POSTs of 1 to 8
//! events at once, a third of them later resent regrouped (the events of
//! the POST and some of the next one's, under a new id: what providers do
//! on retry), all through the same crashes and outages as single webhooks.
//! Its events are forwarded by its routes to `fw-a` (at ingest, else by the
//! processor). The ledger: every event of every accepted POST is stored
//! exactly once (its own row, `processed`) and forwarded exactly once (one
//! outbox row, delivered); no other row of the partner exists.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use hookbox::signature::{Secret, sign_standard_webhooks};
use hookbox::store::Executor;

use crate::Figures;
use crate::ledger::statement;
use crate::partners::HeaderList;
use crate::scenario::SW_SECRET;

/// The batched partner.
pub(crate) const BATCHED: &str = "bt";

/// Its configuration (a member of the run's partners).
pub(crate) fn partner() -> serde_json::Value {
    serde_json::json!({
        "signature": {"scheme": "standard-webhooks"},
        "secrets": [SW_SECRET],
        "batch": {"events": "", "event_id": "/id", "event_type": "/type",
                  "ordering_key": "/order_id", "max_events": 16},
        "routes": [{"to": crate::scenario::FW_A, "event_types": ["*"]}]
    })
}

/// One POST: its id (the signed `webhook-id`) and its events (indexes).
#[derive(Debug, Clone)]
pub(crate) struct Post {
    pub(crate) id: String,
    pub(crate) events: Vec<usize>,
}

/// The partner's events and POSTs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Batches {
    /// Each event's id and bytes.
    pub(crate) events: Vec<(String, String)>,
    pub(crate) posts: Vec<Post>,
}

impl Batches {
    /// `count` events in POSTs of 1 to 8, and a regrouped resend of one
    /// POST in three.
    pub(crate) fn plan(seed: u64, count: usize) -> Self {
        let mut rng = fastrand::Rng::with_seed(seed ^ 0x0ba7_c4e5);
        let events: Vec<(String, String)> = (0..count)
            .map(|i| {
                let id = format!("bt-{seed}-{i}");
                let kind = ["payment.received", "order.shipped"][i % 2];
                // an order's events share a key: forwarded in order
                let body = format!(
                    r#"{{"id":"{id}","type":"{kind}","order_id":"bt-ord-{seed}-{}","n":{i}}}"#,
                    i / 3
                );
                (id, body)
            })
            .collect();
        let mut posts = Vec::new();
        let mut next = 0;
        while next < count {
            let size = rng.usize(1..=8).min(count - next);
            posts.push(Post {
                id: format!("bt-post-{seed}-{}", posts.len()),
                events: (next..next + size).collect(),
            });
            next += size;
        }
        let originals = posts.len();
        for p in 0..originals {
            if rng.u8(0..3) == 0 {
                let mut events = posts[p].events.clone();
                if let Some(following) = posts.get(p + 1) {
                    let take = rng.usize(0..=following.events.len());
                    events.extend(following.events.iter().take(take));
                }
                rng.shuffle(&mut events);
                posts.push(Post {
                    id: format!("bt-post-{seed}-{p}-regrouped"),
                    events,
                });
            }
        }
        Self { events, posts }
    }

    /// The body of `post`: its events' bytes in a JSON array.
    pub(crate) fn body(&self, post: &Post) -> Vec<u8> {
        let events: Vec<&str> = post
            .events
            .iter()
            .map(|&i| self.events[i].1.as_str())
            .collect();
        format!("[{}]", events.join(",")).into_bytes()
    }
}

/// The signed headers of `post` with `body`, sent at `now`.
pub(crate) fn headers(post: &Post, body: &[u8], now: DateTime<Utc>) -> HeaderList {
    let signed = sign_standard_webhooks(&post.id, now, body, &[Secret::new(SW_SECRET)])
        .unwrap_or_else(|e| panic!("sign: {e}"));
    vec![
        ("webhook-id".into(), signed.id),
        ("webhook-timestamp".into(), signed.timestamp),
        ("webhook-signature".into(), signed.signature),
        ("content-type".into(), "application/json".into()),
    ]
}

/// The ledger of the batched partner: `accepted` holds the events of every
/// POST answered 2xx.
pub(crate) async fn check(
    db: &dyn Executor,
    batches: &Batches,
    accepted: &HashSet<usize>,
    figures: &mut Figures,
    violations: &mut Vec<String>,
) {
    let rows = db
        .execute(
            &statement("SELECT event_id, status, attempts FROM inbox WHERE partner = 'bt'"),
            &hookbox::params! {},
        )
        .await;
    let outbox = db
        .execute(
            &statement(
                "SELECT payload->>'id' AS event, status FROM outbox
                  WHERE aggregate_type = 'partner:bt'",
            ),
            &hookbox::params! {},
        )
        .await;
    let (rows, outbox) = match (rows, outbox) {
        (Ok(rows), Ok(outbox)) => (rows.rows, outbox.rows),
        (Err(e), _) | (_, Err(e)) => {
            violations.push(format!("cannot read the batched partner's rows: {e}"));
            return;
        }
    };
    let mut stored: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // forwarded in the statement that stored them: never claimed
    let at_ingest = rows
        .iter()
        .filter(|r| r.i64("attempts").unwrap_or(-1) == 0)
        .count();
    figures.deliveries.insert(
        format!("{BATCHED} events forwarded at ingest"),
        at_ingest as u64,
    );
    for r in &rows {
        stored
            .entry(r.text("event_id").unwrap_or_default())
            .or_default()
            .push(r.text("status").unwrap_or_default());
    }
    let mut forwarded: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in &outbox {
        forwarded
            .entry(r.opt_text("event").ok().flatten().unwrap_or_default())
            .or_default()
            .push(r.text("status").unwrap_or_default());
    }
    for (i, (id, _)) in batches.events.iter().enumerate() {
        let rows = stored.remove(id).unwrap_or_default();
        let sent = forwarded.remove(id).unwrap_or_default();
        match (accepted.contains(&i), rows.as_slice()) {
            (true, [status]) if status == "processed" => {}
            (true, []) => {
                figures.lost += 1;
                violations.push(format!("{id}: in an accepted batch, no row"));
            }
            (true, [status]) => {
                figures.lost += 1;
                violations.push(format!("{id}: in an accepted batch, ended {status}"));
            }
            (false, []) => violations.push(format!("{id}: in no accepted batch")),
            (false, [_]) => {}
            (_, many) => {
                figures.double_applied += 1;
                violations.push(format!("{id}: {} rows", many.len()));
            }
        }
        match sent.as_slice() {
            [status] if status == "delivered" => {}
            [] if rows.is_empty() => {}
            [] => {
                figures.lost += 1;
                violations.push(format!("{id}: stored, never forwarded"));
            }
            [status] => violations.push(format!("{id}: forwarded, ended {status}")),
            many => {
                figures.double_applied += 1;
                violations.push(format!("{id}: forwarded {} times", many.len()));
            }
        }
    }
    if !stored.is_empty() || !forwarded.is_empty() {
        violations.push(format!(
            "batched partner rows of no event of the run: {:?} stored, {:?} forwarded",
            stored.keys().take(5).collect::<Vec<_>>(),
            forwarded.keys().take(5).collect::<Vec<_>>()
        ));
    }
    figures
        .deliveries
        .insert(format!("{BATCHED} events stored"), rows.len() as u64);
    figures.deliveries.insert(
        format!("{BATCHED} POSTs (regrouped resends included)"),
        batches.posts.len() as u64,
    );
}

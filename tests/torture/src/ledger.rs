//! The ledger check after a run: what the promise says, row by row.

use std::collections::HashMap;

use hookbox::queue::memory::MemoryQueue;
use hookbox::store::{Executor, Statement};

use crate::Figures;
use crate::aws::{Aws, BUS, FIFO};
use crate::exact::same_json;
use crate::receiver::{Body, GONE, Receivers};
use crate::scenario::{FORWARDED, Webhook, routed_to};

pub(crate) fn statement(text: &'static str) -> Statement {
    Statement::new("torture.ledger", text)
}

pub(crate) async fn count(db: &dyn Executor, text: &'static str) -> i64 {
    match hookbox::store::fetch_one(db, &statement(text), &hookbox::params! {}).await {
        Ok(row) => row.i64("n").unwrap_or(-1),
        Err(_) => -1,
    }
}

/// Nothing active in the inbox or the outbox, nothing on the queue.
pub(crate) async fn quiet(db: &dyn Executor, memory: &MemoryQueue) -> bool {
    memory.is_empty()
        && count(
            db,
            "SELECT (SELECT count(*) FROM inbox WHERE status IN ('pending','processing','deferred'))
                  + (SELECT count(*) FROM outbox WHERE status = 'pending') AS n",
        )
        .await
            == 0
}

/// What the destinations saw: the HTTP receivers and the AWS services.
pub(crate) struct Downstream<'a> {
    pub(crate) receivers: &'a Receivers,
    pub(crate) aws: &'a Aws,
}

pub(crate) async fn check_ledger(
    db: &dyn Executor,
    memory: &MemoryQueue,
    hooks: &[Webhook],
    answered: &HashMap<String, Vec<u16>>,
    downstream: Downstream<'_>,
    figures: &mut Figures,
    violations: &mut Vec<String>,
) {
    let Downstream { receivers, aws } = downstream;
    let rows = match db
        .execute(
            &statement(
                "SELECT i.partner, i.event_id, i.status, i.last_error,
                        (SELECT count(*) FROM torture_effects e WHERE e.inbox_id = i.id) AS effects
                   FROM inbox AS i",
            ),
            &hookbox::params! {},
        )
        .await
    {
        Ok(rows) => rows.rows,
        Err(e) => {
            violations.push(format!("cannot read the inbox: {e}"));
            return;
        }
    };
    let mut by_event: HashMap<String, Vec<(String, i64)>> = HashMap::new();
    let mut errors: HashMap<String, String> = HashMap::new();
    // the batched partner's rows have a ledger of their own (batched.rs)
    let mut batched_events: std::collections::HashSet<String> = Default::default();
    let rows: Vec<_> = rows
        .into_iter()
        .filter(|r| {
            let batched = r.text("partner").unwrap_or_default() == "bt";
            if batched {
                batched_events.insert(r.text("event_id").unwrap_or_default());
            }
            !batched
        })
        .collect();
    for r in &rows {
        let event = r.text("event_id").unwrap_or_default();
        if let Ok(Some(error)) = r.opt_text("last_error") {
            errors.insert(event.clone(), error);
        }
        by_event.entry(event).or_default().push((
            r.text("status").unwrap_or_default(),
            r.i64("effects").unwrap_or(-1),
        ));
    }
    // the forwarded partner's accepted events: (aggregate, type) → the
    // routes' destinations and the webhook (the aggregate is the ordering
    // key, or the event id when it is empty or missing)
    let mut forwarded: HashMap<(String, String), Expected<'_>> = HashMap::new();
    for hook in hooks {
        let accepted = answered
            .get(&hook.event_id)
            .is_some_and(|s| s.iter().any(|s| (200..300).contains(s)));
        let routed = hook.partner == FORWARDED;
        // what routing makes of it: JSON jsonb can hold is forwarded; a
        // lone surrogate or U+0000 is quarantined, naming why
        let forwardable = serde_json::from_slice::<serde_json::Value>(&hook.body)
            .ok()
            .filter(|v| !hookbox::processing::routing::holds_nul(v));
        let (want_status, want_effects) = match (routed, &forwardable) {
            (false, _) => ("processed", 1),
            (true, Some(_)) => ("processed", 0),
            (true, None) => ("quarantined", 0),
        };
        // (stored though never acknowledged, when every answer crashed:
        // then forwarded all the same)
        let stored = by_event
            .get(hookbox::inbox::ingest::storable(&hook.event_id).as_ref())
            .is_some_and(|rows| rows.iter().any(|(status, _)| status == "processed"));
        if routed && (accepted || stored) {
            if let Some(body) = &forwardable {
                let aggregate = match body["order_id"].as_str() {
                    Some(order) if !order.is_empty() => order.to_owned(),
                    _ => hookbox::inbox::ingest::storable(&hook.event_id).into_owned(),
                };
                let event_type = body["type"].as_str().unwrap_or_default().to_owned();
                let to = routed_to(&event_type);
                forwarded.insert((aggregate, event_type), Expected { to, hook });
            }
        }
        // (stored as ingest normalises it: `esc:` ids are escaped)
        let stored_id = hookbox::inbox::ingest::storable(&hook.event_id);
        let found = by_event
            .get(stored_id.as_ref())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        match (accepted, found) {
            (true, [(status, effects)]) => {
                if status != want_status {
                    figures.lost += 1;
                    violations.push(format!(
                        "{}: accepted, ended {status} ({})",
                        hook.event_id,
                        errors.get(stored_id.as_ref()).map_or("", String::as_str)
                    ));
                }
                if *effects != want_effects {
                    if *effects > want_effects {
                        figures.double_applied += 1;
                    } else {
                        figures.lost += 1;
                    }
                    violations.push(format!(
                        "{}: its effect applied {effects} times",
                        hook.event_id
                    ));
                }
            }
            (true, []) => {
                figures.lost += 1;
                violations.push(format!("{}: accepted, no row", hook.event_id));
            }
            (true, many) => {
                figures.double_applied += 1;
                violations.push(format!("{}: {} rows", hook.event_id, many.len()));
            }
            (false, []) => violations.push(format!(
                "{}: never accepted (answers {:?})",
                hook.event_id,
                answered.get(&hook.event_id)
            )),
            (false, _) => {}
        }
    }
    if rows.len() != by_event.len() || by_event.len() > hooks.len() {
        violations.push(format!(
            "{} rows for {} distinct events of {} webhooks",
            rows.len(),
            by_event.len(),
            hooks.len()
        ));
    }
    // nothing refused left a row (their ids are `bad-<seed>-<n>`)
    let refused_rows = by_event.keys().filter(|e| e.starts_with("bad-")).count();
    if refused_rows > 0 {
        violations.push(format!("{refused_rows} refused requests left a row"));
    }
    if let Some(answered) = receivers.attempts().get("hang answered") {
        violations.push(format!(
            "the tarpit answered {answered} times: no hang was tested"
        ));
    }
    // A message may reach the DLQ when its row is safe (the sweeper brings
    // the row back); one whose event has no row is lost.
    for dead in memory.dead_letters() {
        figures.dead_lettered += 1;
        let event = hookbox::inbox::InboxMessage::from_body(&dead)
            .map(|m| match m {
                hookbox::inbox::InboxMessage::Stored { event_id, .. } => event_id,
                hookbox::inbox::InboxMessage::Spooled(s) => s.event_id,
            })
            .unwrap_or_default();
        if !by_event.contains_key(&event) && !batched_events.contains(&event) {
            violations.push(format!(
                "a message reached the DLQ and its event has no row: {}",
                dead.chars().take(120).collect::<String>()
            ));
        }
    }

    // outbound: every erp row delivered (the receiver saw its webhook-id),
    // every row for the gone destination dead with 410
    let outbox = match db
        .execute(
            &statement(
                "SELECT id, destination, status, attempts, last_error, aggregate_type,
                        aggregate_id, event_type, payload_key
                   FROM outbox ORDER BY seq",
            ),
            &hookbox::params! {},
        )
        .await
    {
        Ok(rows) => rows.rows,
        Err(e) => {
            violations.push(format!("cannot read the outbox: {e}"));
            return;
        }
    };
    let delivered = receivers.delivered();
    let tried = receivers.tried();
    let mut aws_rows: Vec<AwsRow> = Vec::new();
    let mut fw_rows: HashMap<(String, String), Vec<FwRow>> = HashMap::new();
    let mut tenant_rows = 0;
    // the batched partner's: its ledger (batched.rs); delivered as below
    let mut batched_rows = 0;
    for r in &outbox {
        let id = r.uuid("id").map(|u| u.to_string()).unwrap_or_default();
        if r.text("aggregate_type").unwrap_or_default() == format!("partner:{FORWARDED}") {
            fw_rows
                .entry((
                    r.text("aggregate_id").unwrap_or_default(),
                    r.text("event_type").unwrap_or_default(),
                ))
                .or_default()
                .push(FwRow {
                    id: id.clone(),
                    destination: r.text("destination").unwrap_or_default(),
                    in_blob: r.opt_text("payload_key").ok().flatten().is_some(),
                });
        }
        if r.text("aggregate_type").unwrap_or_default() == "partner:bt" {
            batched_rows += 1;
        }
        let destination = r.text("destination").unwrap_or_default();
        if hookbox::config::is_endpoint(&destination) {
            // a tenant's endpoint: the tenants' ledger
            tenant_rows += 1;
            continue;
        }
        let status = r.text("status").unwrap_or_default();
        let error = r.opt_text("last_error").ok().flatten().unwrap_or_default();
        if destination == BUS || destination == FIFO {
            aws_rows.push(AwsRow {
                id,
                destination,
                status,
                error,
                aggregate_type: r.text("aggregate_type").unwrap_or_default(),
                aggregate: r.text("aggregate_id").unwrap_or_default(),
            });
        } else if destination == GONE {
            if status != "dead" || !error.contains("410") {
                violations.push(format!("outbox {id} for {GONE}: {status} ({error})"));
            }
        } else if status != "delivered" || !delivered.contains_key(&id) {
            violations.push(format!(
                "outbox {id}: {status} after {} attempts, sent {} times, delivered {} times ({error})",
                r.i64("attempts").unwrap_or(-1),
                tried.get(&id).copied().unwrap_or(0),
                delivered.get(&id).copied().unwrap_or(0)
            ));
        }
    }
    check_forwarded(&forwarded, &fw_rows, figures, violations);
    check_payloads(
        &forwarded,
        &fw_rows,
        &receivers.bodies(),
        figures,
        violations,
    );
    // forwarded at ingest (in the statement that stored them: never
    // claimed by a processor)
    let at_ingest = count(
        db,
        "SELECT count(*) AS n FROM inbox
          WHERE partner = 'fw' AND status = 'processed' AND attempts = 0",
    )
    .await;
    figures.deliveries.insert(
        format!("{FORWARDED} events forwarded at ingest"),
        u64::try_from(at_ingest).unwrap_or(0),
    );
    // kept in the row though jsonb's text is over what a statement returns
    // (the relay read them in pieces)
    let long_inline = count(
        db,
        "SELECT count(*) AS n FROM outbox
          WHERE aggregate_type = 'partner:fw' AND payload_key IS NULL
            AND octet_length(CAST(payload AS text)) > 32768",
    )
    .await;
    figures.deliveries.insert(
        format!("{FORWARDED} payloads inline over 32 KiB"),
        u64::try_from(long_inline).unwrap_or(0),
    );
    let fw_count: usize = fw_rows.values().map(Vec::len).sum();
    let transitions = count(db, "SELECT count(*) AS n FROM example_order_transitions").await;
    let http_rows = outbox.len() - aws_rows.len() - fw_count - tenant_rows - batched_rows;
    if transitions != http_rows as i64 {
        violations.push(format!(
            "{transitions} business transitions but {http_rows} outbox rows to HTTP destinations"
        ));
    }
    check_aws(db, aws, &aws_rows, figures, violations).await;
}

/// An accepted event of the forwarded partner: where its routes send it,
/// and what the partner sent.
struct Expected<'a> {
    to: Vec<&'static str>,
    hook: &'a Webhook,
}

/// An outbox row of the forwarded partner.
struct FwRow {
    id: String,
    destination: String,
    /// Its payload is in the blob store (the partner's bytes).
    in_blob: bool,
}

/// Forwarding by routes: every accepted event of the forwarded partner has
/// exactly one delivery per matched route (the HTTP check above saw each
/// delivered under its delivery id), and no delivery exists without its
/// processed inbox row.
fn check_forwarded(
    expected: &HashMap<(String, String), Expected<'_>>,
    rows: &HashMap<(String, String), Vec<FwRow>>,
    figures: &mut Figures,
    violations: &mut Vec<String>,
) {
    for (key, want) in expected {
        let mut got: Vec<&str> = rows
            .get(key)
            .map(|d| d.iter().map(|r| r.destination.as_str()).collect())
            .unwrap_or_default();
        got.sort_unstable();
        let mut want = want.to.clone();
        want.sort_unstable();
        if got != want {
            if got.len() > want.len() {
                figures.double_applied += 1;
            } else {
                figures.lost += 1;
            }
            violations.push(format!(
                "{FORWARDED} {key:?}: forwarded to {got:?}, its routes are {want:?}"
            ));
        }
    }
    let strays = rows.keys().filter(|k| !expected.contains_key(*k)).count();
    if strays > 0 {
        violations.push(format!(
            "{strays} {FORWARDED} events forwarded without an accepted, processed inbox row"
        ));
    }
    figures.deliveries.insert(
        format!("{FORWARDED} deliveries"),
        rows.values().map(|d| d.len() as u64).sum(),
    );
}

/// What the forwarded partner's deliveries carried: every attempt of every
/// delivery POSTed the same bytes, and they are the partner's body as a
/// JSON value exactly ([`same_json`]: every number by its exact decimal
/// value, keys in any order); one whose payload is in the blob store is the
/// partner's bytes, byte for byte.
fn check_payloads(
    expected: &HashMap<(String, String), Expected<'_>>,
    rows: &HashMap<(String, String), Vec<FwRow>>,
    bodies: &HashMap<String, Body>,
    figures: &mut Figures,
    violations: &mut Vec<String>,
) {
    let (mut compared, mut verbatim) = (0u64, 0u64);
    for (key, want) in expected {
        let sent = &want.hook.body;
        for row in rows.get(key).map(Vec::as_slice).unwrap_or(&[]) {
            // never sent: the delivery check above names it
            let Some(body) = bodies.get(&row.id) else {
                continue;
            };
            compared += 1;
            let what = format!(
                "{FORWARDED} {} to {} (outbox {})",
                want.hook.event_id, row.destination, row.id
            );
            if body.changed > 0 {
                violations.push(format!(
                    "{what}: {} attempts sent other bytes than the first",
                    body.changed
                ));
            }
            if row.in_blob {
                verbatim += 1;
                if body.first.as_bytes() != sent.as_slice() {
                    violations.push(format!(
                        "{what}: its payload is in the blob store, yet the {} bytes delivered \
                         are not the partner's {} bytes",
                        body.first.len(),
                        sent.len()
                    ));
                }
            }
            if let Err(difference) = same_json(body.first.as_bytes(), sent) {
                violations.push(format!(
                    "{what}: the delivered payload is not the partner's body: {difference}"
                ));
            }
        }
    }
    figures
        .deliveries
        .insert(format!("{FORWARDED} payloads compared"), compared);
    figures.deliveries.insert(
        format!("{FORWARDED} payloads from the blob store"),
        verbatim,
    );
}

/// An outbox row for an AWS destination.
struct AwsRow {
    id: String,
    destination: String,
    status: String,
    error: String,
    aggregate_type: String,
    aggregate: String,
}

/// The AWS destinations: one row per processed `sw` event that fans out
/// ([`crate::aws::fans_out`]) for each; every
/// row delivered and read from its queue (at least once: the relay may
/// crash after the service accepted an entry), except those failed for
/// good, which are dead with the service's code and never reached it;
/// nothing read that is not a row; each FIFO group read in the order of
/// its aggregate's rows.
async fn check_aws(
    db: &dyn Executor,
    aws: &Aws,
    rows: &[AwsRow],
    figures: &mut Figures,
    violations: &mut Vec<String>,
) {
    let sw_events = match db
        .execute(
            &statement(
                "SELECT ordering_key FROM inbox WHERE partner = 'sw' AND status = 'processed'",
            ),
            &hookbox::params! {},
        )
        .await
    {
        Ok(rows) => rows
            .rows
            .iter()
            .filter(|r| crate::aws::fans_out(r.opt_text("ordering_key").ok().flatten().as_deref()))
            .count() as i64,
        Err(e) => {
            violations.push(format!("cannot read the inbox: {e}"));
            return;
        }
    };
    for destination in [BUS, FIFO] {
        let mine: Vec<&AwsRow> = rows
            .iter()
            .filter(|r| r.destination == destination)
            .collect();
        if mine.len() as i64 != sw_events {
            violations.push(format!(
                "{destination}: {} outbox rows for {sw_events} processed sw events that fan out",
                mine.len()
            ));
        }
        let seen = aws.seen(destination);
        let mut copies: HashMap<&str, u64> = HashMap::new();
        for message in seen {
            *copies.entry(message.id.as_str()).or_default() += 1;
        }
        for row in &mine {
            let read = copies.get(row.id.as_str()).copied().unwrap_or(0);
            match aws.permanent.get(&row.id) {
                Some(code) if row.status != "dead" || !row.error.contains(code) || read > 0 => {
                    violations.push(format!(
                        "{destination} {}: refused for good ({code}), yet {} ({}), read {read} times",
                        row.id, row.status, row.error
                    ));
                }
                Some(_) => {}
                None if row.status != "delivered" || read == 0 => violations.push(format!(
                    "{destination} {}: {} ({}), read {read} times",
                    row.id, row.status, row.error
                )),
                None => {}
            }
        }
        let ids: std::collections::HashSet<&str> = mine.iter().map(|r| r.id.as_str()).collect();
        let strays = copies.keys().filter(|id| !ids.contains(*id)).count();
        if strays > 0 {
            violations.push(format!(
                "{destination}: {strays} messages whose delivery id is no row of it"
            ));
        }
        let duplicates: u64 = copies.values().map(|n| n - 1).sum();
        figures
            .deliveries
            .insert(format!("{destination} read"), seen.len() as u64);
        figures
            .deliveries
            .insert(format!("{destination} duplicates"), duplicates);
    }

    // each FIFO group read in its aggregate's order (first copies)
    let mut expected: HashMap<String, Vec<&str>> = HashMap::new();
    for row in rows.iter().filter(|r| r.destination == FIFO) {
        if !aws.permanent.contains_key(&row.id) {
            expected
                .entry(hookbox::delivery::sqs::group_id(
                    &row.aggregate_type,
                    &row.aggregate,
                ))
                .or_default()
                .push(&row.id);
        }
    }
    let mut read: HashMap<String, Vec<&str>> = HashMap::new();
    let mut first = std::collections::HashSet::new();
    for message in aws.seen(FIFO) {
        if first.insert(message.id.as_str()) {
            read.entry(message.group.clone().unwrap_or_default())
                .or_default()
                .push(&message.id);
        }
    }
    for (group, ids) in &expected {
        let got = read.get(group).map(Vec::as_slice).unwrap_or(&[]);
        if got != ids.as_slice() {
            violations.push(format!(
                "fifo group {group}: read {got:?}, its rows in order are {ids:?}"
            ));
        }
    }
    figures
        .deliveries
        .insert("aws entries failed".into(), aws.failed_entries() as u64);
    figures
        .deliveries
        .insert("aws refused for good".into(), aws.permanent.len() as u64);
}

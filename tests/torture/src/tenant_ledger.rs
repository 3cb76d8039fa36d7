//! The tenants' ledger (issue #41): every processed event of a tenant's
//! order reached exactly that tenant's endpoints that existed and matched
//! when it was published, one delivery each, delivered (at least once:
//! receivers dedupe on `webhook-id`) or, for an endpoint deleted since,
//! counted by its deletion; no endpoint got another tenant's event; every
//! attempt verifies (Standard Webhooks) with a secret its endpoint had at
//! the attempt's time, the newest among them, and with no other; none
//! reached an endpoint while it was disabled or after it was deleted; an
//! `ordered` endpoint got each order's events one at a time in publish
//! order.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use hookbox::signature::sign_standard_webhooks;
use hookbox::store::Executor;

use crate::Figures;
use crate::ledger::statement;
use crate::receiver::EndpointAttempt;
use crate::tenants::{Endpoint, Tenants, matches, tenant_of, tenant_uid};

/// How long the relay's directory may keep an endpoint (its default): a
/// secret whose grace ended may sign for that long after.
const DIRECTORY_TTL: TimeDelta = TimeDelta::seconds(10);

/// A processed event published to its order's tenant.
struct Published {
    tenant: usize,
    event_type: String,
    at: DateTime<Utc>,
}

/// An outbox row for an endpoint.
struct Row {
    id: String,
    endpoint: String,
    status: String,
    event_id: String,
    aggregate: String,
    created: DateTime<Utc>,
    error: String,
}

fn millis(ms: Option<i64>) -> DateTime<Utc> {
    ms.and_then(|ms| Utc.timestamp_millis_opt(ms).single())
        .unwrap_or_default()
}

pub(crate) async fn check_tenants(
    db: &dyn Executor,
    tenants: &Tenants,
    attempts: &[EndpointAttempt],
    figures: &mut Figures,
    violations: &mut Vec<String>,
) {
    let (published, rows) = match read(db).await {
        Ok(read) => read,
        Err(e) => {
            violations.push(e);
            return;
        }
    };
    // what each event should have reached: its tenant's endpoints that
    // existed and matched when it was published
    let mut expected: HashSet<(&str, &str)> = HashSet::new();
    for (event_id, event) in &published {
        for endpoint in tenants.endpoints.iter().filter(|e| {
            e.tenant == event.tenant
                && e.existed_at(event.at)
                && matches(e.filter, &event.event_type)
        }) {
            expected.insert((event_id.as_str(), endpoint.id.as_str()));
        }
    }
    let mut delivered: HashSet<(&str, &str)> = HashSet::new();
    // 2xx answers beyond the first of a webhook-id (at least once: a relay
    // that crashed after the POST sends it again; receivers dedupe)
    let mut duplicates = 0u64;
    for a in attempts.iter().filter(|a| a.ok) {
        if !delivered.insert((a.endpoint.as_str(), a.id.as_str())) {
            duplicates += 1;
        }
    }
    let mut per_pair: HashMap<(&str, &str), u32> = HashMap::new();
    let mut held_sent = 0u64;
    for row in &rows {
        let what = format!(
            "delivery {} of {} to {}",
            row.id, row.event_id, row.endpoint
        );
        *per_pair
            .entry((row.event_id.as_str(), row.endpoint.as_str()))
            .or_default() += 1;
        let Some(endpoint) = tenants.endpoint(&row.endpoint) else {
            violations.push(format!("{what}: an endpoint the run never made"));
            continue;
        };
        let Some(event) = published.get(&row.event_id) else {
            violations.push(format!(
                "{what}: no processed event of a tenant's order published it"
            ));
            continue;
        };
        if endpoint.tenant != event.tenant {
            violations.push(format!(
                "{what}: an endpoint of {}, the event is {}'s",
                tenant_uid(endpoint.tenant),
                tenant_uid(event.tenant)
            ));
        } else if !expected.contains(&(row.event_id.as_str(), row.endpoint.as_str())) {
            violations.push(format!(
                "{what}: published at {}, when the endpoint did not exist or match {}",
                event.at, event.event_type
            ));
        }
        if row.created != event.at {
            violations.push(format!(
                "{what}: written at {}, its event processed at {}",
                row.created, event.at
            ));
        }
        // a deleted endpoint's undelivered rows went with it: what is left
        // was delivered
        let sent = delivered.contains(&(row.endpoint.as_str(), row.id.as_str()));
        if row.status != "delivered" || !sent {
            figures.lost += 1;
            violations.push(format!(
                "{what}: {}, {} ({})",
                row.status,
                if sent {
                    "answered 2xx"
                } else {
                    "never answered 2xx"
                },
                row.error
            ));
        } else if endpoint.disabled_at(row.created) {
            held_sent += 1;
        }
    }
    // one row per expected pair; a deleted endpoint's missing rows are the
    // undelivered ones its deletion counted
    let mut missing: HashMap<&str, i64> = HashMap::new();
    let mut missed: HashMap<&str, Vec<&str>> = HashMap::new();
    for pair in &expected {
        match per_pair.get(pair).copied().unwrap_or(0) {
            1 => {}
            0 => {
                *missing.entry(pair.1).or_default() += 1;
                missed.entry(pair.1).or_default().push(pair.0);
            }
            n => {
                figures.double_applied += 1;
                violations.push(format!("{} published to {} {n} times", pair.0, pair.1));
            }
        }
    }
    for endpoint in &tenants.endpoints {
        let gone = missing.get(endpoint.id.as_str()).copied().unwrap_or(0);
        match endpoint.deleted {
            Some((_, counted)) if counted != gone => violations.push(format!(
                "endpoint {} deleted: {gone} deliveries went with it, its deletion counted {counted}",
                endpoint.id
            )),
            Some(_) => {}
            None if gone > 0 => {
                figures.lost += u64::try_from(gone).unwrap_or(0);
                let events: Vec<String> = missed
                    .get(endpoint.id.as_str())
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
                    .iter()
                    .take(5)
                    .map(|e| format!("{e} at {}", published[*e].at))
                    .collect();
                violations.push(format!(
                    "endpoint {} ({}, created {}, filter {:?}): {gone} events published while it \
                     existed and matched have no delivery: {events:?}",
                    endpoint.id,
                    tenant_uid(endpoint.tenant),
                    endpoint.created,
                    endpoint.filter
                ));
            }
            None => {}
        }
    }
    let rows_by_id: HashMap<&str, &Row> = rows.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut verified = 0u64;
    let mut two_signatures = 0u64;
    for attempt in attempts {
        match check_attempt(attempt, tenants, &expected, &rows_by_id) {
            Ok(signers) => {
                verified += 1;
                two_signatures += u64::from(signers > 1);
            }
            Err(violation) => violations.push(format!(
                "attempt {} at {}: {violation}",
                attempt.id, attempt.endpoint
            )),
        }
    }
    let ordered = check_order(tenants, &rows, attempts, violations);

    let changes = &tenants.changes;
    for (key, value) in [
        ("tenant deliveries", rows.len() as u64),
        ("tenant attempts verified", verified),
        ("tenant attempts with two signatures", two_signatures),
        ("tenant duplicates", duplicates),
        ("tenant deliveries held, sent on enable", held_sent),
        ("tenant ordered deliveries checked", ordered),
        ("tenant endpoints added", changes.added),
        ("tenant rotations", changes.rotated),
        ("tenant rotations through SQL", changes.rotated_through_sql),
        ("tenant endpoints disabled", changes.disabled),
        ("tenant endpoints enabled", changes.enabled),
        ("tenant endpoints deleted", changes.deleted),
        (
            "tenant deliveries deleted undelivered",
            u64::try_from(changes.deleted_undelivered).unwrap_or(0),
        ),
    ] {
        figures.deliveries.insert(key.to_owned(), value);
    }
}

/// The processed events of tenants' orders, and the endpoints' rows.
async fn read(db: &dyn Executor) -> Result<(HashMap<String, Published>, Vec<Row>), String> {
    let events = db
        .execute(
            &statement(
                "SELECT event_id, ordering_key, event_type,
                        CAST(floor(extract(epoch FROM processed_at) * 1000) AS bigint) AS at_ms
                   FROM inbox WHERE partner = 'sw' AND status = 'processed'",
            ),
            &hookbox::params! {},
        )
        .await
        .map_err(|e| format!("cannot read the inbox: {e}"))?;
    let mut published = HashMap::new();
    for r in &events.rows {
        let order = r.opt_text("ordering_key").ok().flatten();
        if let Some(tenant) = tenant_of(order.as_deref()) {
            published.insert(
                r.text("event_id").unwrap_or_default(),
                Published {
                    tenant,
                    event_type: r.opt_text("event_type").ok().flatten().unwrap_or_default(),
                    at: millis(r.opt_i64("at_ms").ok().flatten()),
                },
            );
        }
    }
    let outbox = db
        .execute(
            &statement(
                "SELECT CAST(id AS text) AS id, destination, status, aggregate_id, last_error,
                        payload ->> 'event_id' AS event_id,
                        CAST(floor(extract(epoch FROM created_at) * 1000) AS bigint) AS created_ms
                   FROM outbox WHERE destination LIKE 'ep!_%' ESCAPE '!' ORDER BY seq",
            ),
            &hookbox::params! {},
        )
        .await
        .map_err(|e| format!("cannot read the endpoints' outbox rows: {e}"))?;
    let rows = outbox
        .rows
        .iter()
        .map(|r| Row {
            id: r.text("id").unwrap_or_default(),
            endpoint: r.text("destination").unwrap_or_default(),
            status: r.text("status").unwrap_or_default(),
            event_id: r.opt_text("event_id").ok().flatten().unwrap_or_default(),
            aggregate: r.text("aggregate_id").unwrap_or_default(),
            created: millis(r.opt_i64("created_ms").ok().flatten()),
            error: r.opt_text("last_error").ok().flatten().unwrap_or_default(),
        })
        .collect();
    Ok((published, rows))
}

/// One attempt: its endpoint's own event and delivery, sent while the
/// endpoint existed and was enabled, signed with its secrets valid then
/// (the newest among them) and no other. Returns how many secrets signed.
fn check_attempt(
    attempt: &EndpointAttempt,
    tenants: &Tenants,
    expected: &HashSet<(&str, &str)>,
    rows: &HashMap<&str, &Row>,
) -> Result<usize, String> {
    let endpoint = tenants
        .endpoint(&attempt.endpoint)
        .ok_or("an endpoint the run never made")?;
    let at = attempt
        .timestamp
        .parse::<i64>()
        .ok()
        .and_then(|s| Utc.timestamp_opt(s, 0).single())
        .ok_or_else(|| format!("webhook-timestamp {:?} is no time", attempt.timestamp))?;
    let body: serde_json::Value =
        serde_json::from_str(&attempt.body).map_err(|e| format!("the body is not JSON: {e}"))?;
    let owner = tenant_uid(endpoint.tenant);
    if body["tenant"].as_str() != Some(owner.as_str()) {
        return Err(format!("{owner}'s endpoint got {}'s event", body["tenant"]));
    }
    let event_id = body["event_id"].as_str().unwrap_or_default();
    if !expected.contains(&(event_id, endpoint.id.as_str())) {
        return Err(format!("got {event_id}, not published to it"));
    }
    match rows.get(attempt.id.as_str()) {
        Some(row) if row.endpoint != endpoint.id || row.event_id != event_id => {
            return Err(format!(
                "its webhook-id is the delivery of {} to {}",
                row.event_id, row.endpoint
            ));
        }
        Some(_) => {}
        // its row went with the endpoint's deletion (counted above)
        None if endpoint.deleted.is_some() => {}
        None => return Err("its webhook-id is no delivery".into()),
    }
    if !endpoint.existed_at(at) {
        return Err(format!("sent at {at}, when the endpoint did not exist"));
    }
    if endpoint.disabled_at(at) {
        return Err(format!("sent at {at}, while the endpoint was disabled"));
    }
    signers(attempt, endpoint, tenants, at)
}

/// The secrets of `endpoint` that signed `attempt`: every entry of its
/// `webhook-signature` verifies with one, each valid at `at`, the newest
/// valid one among them.
fn signers(
    attempt: &EndpointAttempt,
    endpoint: &Endpoint,
    tenants: &Tenants,
    at: DateTime<Utc>,
) -> Result<usize, String> {
    let sign = |secret| {
        sign_standard_webhooks(
            &attempt.id,
            at,
            attempt.body.as_bytes(),
            std::slice::from_ref(secret),
        )
        .map(|h| h.signature)
        .unwrap_or_default()
    };
    let mine: BTreeMap<String, &crate::tenants::KnownSecret> = endpoint
        .secrets
        .iter()
        .map(|s| (sign(&s.secret), s))
        .collect();
    let mut signed_by = Vec::new();
    for entry in attempt.signature.split(' ').filter(|e| !e.is_empty()) {
        match mine.get(entry) {
            Some(secret) => signed_by.push(*secret),
            None => {
                let other = tenants
                    .endpoints
                    .iter()
                    .filter(|e| e.id != endpoint.id)
                    .find(|e| e.secrets.iter().any(|s| sign(&s.secret) == entry));
                return Err(match other {
                    Some(other) => format!("signed with a secret of endpoint {}", other.id),
                    None => format!(
                        "a signature that verifies with none of its {} secrets",
                        endpoint.secrets.len()
                    ),
                });
            }
        }
    }
    let valid = |s: &crate::tenants::KnownSecret| {
        s.first_seen <= at && s.expires_at.is_none_or(|end| end > at - DIRECTORY_TTL)
    };
    if let Some(stale) = signed_by.iter().find(|s| !valid(s)) {
        return Err(format!(
            "signed with secret {} (first seen {}, grace until {:?}), not valid at {at}",
            stale.id, stale.first_seen, stale.expires_at
        ));
    }
    let newest = endpoint
        .secrets
        .iter()
        .filter(|s| s.first_seen <= at)
        .max_by_key(|s| (s.first_seen, s.id));
    match newest {
        Some(newest) if !signed_by.iter().any(|s| s.id == newest.id) => Err(format!(
            "not signed with its newest secret {} (first seen {})",
            newest.id, newest.first_seen
        )),
        _ if signed_by.is_empty() => Err("no signature".into()),
        _ => Ok(signed_by.len()),
    }
}

/// An `ordered` endpoint still there: each order's deliveries attempted
/// one at a time in publish order (none before the previous one's first
/// 2xx). Returns how many deliveries it checked.
fn check_order(
    tenants: &Tenants,
    rows: &[Row],
    attempts: &[EndpointAttempt],
    violations: &mut Vec<String>,
) -> u64 {
    let mut checked = 0;
    for endpoint in tenants
        .endpoints
        .iter()
        .filter(|e| e.ordered && e.deleted.is_none())
    {
        let mut first_try: HashMap<&str, usize> = HashMap::new();
        let mut first_ok: HashMap<&str, usize> = HashMap::new();
        for (n, a) in attempts
            .iter()
            .enumerate()
            .filter(|(_, a)| a.endpoint == endpoint.id)
        {
            first_try.entry(a.id.as_str()).or_insert(n);
            if a.ok {
                first_ok.entry(a.id.as_str()).or_insert(n);
            }
        }
        let mut by_order: BTreeMap<&str, Vec<&Row>> = BTreeMap::new();
        for row in rows.iter().filter(|r| r.endpoint == endpoint.id) {
            by_order
                .entry(row.aggregate.as_str())
                .or_default()
                .push(row);
        }
        for (order, in_seq) in &by_order {
            checked += in_seq.len() as u64;
            for pair in in_seq.windows(2) {
                let (before, after) = (pair[0].id.as_str(), pair[1].id.as_str());
                let (Some(done), Some(next)) = (first_ok.get(before), first_try.get(after)) else {
                    continue; // never delivered: named above
                };
                if next < done {
                    violations.push(format!(
                        "ordered endpoint {} ({order}): {after} ({}) attempted before {before} ({}) was delivered",
                        endpoint.id, pair[1].event_id, pair[0].event_id
                    ));
                }
            }
        }
    }
    checked
}

//! Storing a batch's events (one POST carrying many, split by
//! [`super::split`]) in ONE statement, whatever their number: each event its
//! own inbox row and dedupe key, new ones inserted, the others answered
//! with the id already stored. With forwarding at ingest, the statement
//! calls `hookbox_ingest_store` (migration 19) once per event, so each is
//! stored and its deliveries written exactly as a single webhook's are
//! ([`super::routed`]).
//!
//! The events travel as one JSON parameter (the Data API takes no array
//! parameters): an inline body base64, a blob reference as its key, size
//! and hex digest. Ids are UUIDv7 in the events' order, so a key's events
//! are processed and forwarded in the order the provider put them.

use base64::Engine as _;
use chrono::{DateTime, Utc};
use serde_json::json;
use uuid::Uuid;

use super::body::Body;
use super::lease::bounded;
use super::repo::{NewInboxEvent, stored_id};
use super::routed::{AtIngest, Stored};
use super::{InboxStatus, repo::Inserted};
use crate::params;
use crate::store::{DbError, Executor, Row, Statement};

/// An event of a batch, ready to be stored: the event, and its body digest
/// when the partner deduplicates on bodies.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchEvent {
    /// The event (every event of one batch has the same partner, headers
    /// and `signature_verified`).
    pub event: NewInboxEvent,
    /// `dedupe_digest`, as [`super::repo::insert_if_new_deduped`] takes it.
    pub dedupe: Option<[u8; 32]>,
}

/// `n` fresh ids, increasing: rows of one batch share `received_at`, and
/// the processor orders a key's rows by (received_at, id).
pub fn ordered_ids(n: usize) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = (0..n).map(|_| Uuid::now_v7()).collect();
    ids.sort_unstable();
    ids
}

fn event_json(i: usize, id: Uuid, e: &BatchEvent) -> serde_json::Value {
    let b64 = base64::engine::general_purpose::STANDARD;
    let (body, key, size, sha256) = match &e.event.body {
        Body::Inline(bytes) => (Some(b64.encode(bytes)), None, None, None),
        Body::Blob(r) => (
            None,
            Some(r.key.as_str().to_owned()),
            Some(r.size),
            Some(hex::encode(r.sha256)),
        ),
        Body::InlineUnread { .. } => (None, None, None, None),
    };
    json!({
        "i": i,
        "id": id,
        "event_id": e.event.event_id,
        "event_id_derived": e.event.event_id_derived,
        "event_type": e.event.event_type,
        "ordering_key": e.event.ordering_key,
        "body": body,
        "body_key": key,
        "body_size": size,
        "body_sha256": sha256,
        "dedupe_digest": e.dedupe.map(hex::encode),
    })
}

pub const INSERT_BATCH: Statement = Statement::new(
    "inbox.insert_batch",
    "WITH e AS (
        SELECT * FROM pg_catalog.jsonb_to_recordset(CAST(:events AS jsonb))
            AS e(i integer, id uuid, event_id text, event_id_derived boolean, event_type text,
                 ordering_key text, body text, body_key text, body_size bigint,
                 body_sha256 text, dedupe_digest text)
    ), ins AS (
        INSERT INTO inbox (id, partner, event_id, event_id_derived, event_type, ordering_key,
                           body, body_key, body_size, body_sha256, dedupe_digest,
                           headers, signature_verified, status, next_attempt_at,
                           received_at, enqueued_at)
        SELECT e.id, :partner, e.event_id, e.event_id_derived, e.event_type, e.ordering_key,
               pg_catalog.decode(e.body, 'base64'), e.body_key, e.body_size,
               pg_catalog.decode(e.body_sha256, 'hex'), pg_catalog.decode(e.dedupe_digest, 'hex'),
               CAST(:headers AS jsonb), :signature_verified, 'pending',
               CAST(:now AS timestamptz), CAST(:now AS timestamptz), CAST(:now AS timestamptz)
          FROM e ORDER BY e.i
        -- any unique key: (partner, event_id), or (partner, dedupe_digest)
        ON CONFLICT DO NOTHING
        RETURNING id
    )
    -- the statement's snapshot sees no row `ins` inserted: an event
    -- inserted here is found in `ins`, one stored before by its keys
    SELECT e.i, COALESCE(ins.id, old.id) AS id, ins.id IS NOT NULL AS inserted
      FROM e
      LEFT JOIN ins ON ins.id = e.id
      LEFT JOIN LATERAL (
          SELECT x.id FROM inbox AS x
           WHERE ins.id IS NULL AND x.partner = :partner AND x.event_id = e.event_id
          UNION ALL
          SELECT x.id FROM inbox AS x
           WHERE ins.id IS NULL AND x.partner = :partner
             AND x.dedupe_digest = pg_catalog.decode(e.dedupe_digest, 'hex')
             AND x.event_id <> e.event_id
          LIMIT 1) AS old ON true
     ORDER BY e.i",
);

/// Stores every event of `events` (one partner's, distinct keys) that is
/// not stored yet as a `pending` row, in ONE statement; one result per
/// event, in order. An event a concurrent insert stored while the
/// statement ran (invisible to it) costs one more read.
pub async fn insert_batch(
    db: &dyn Executor,
    events: &[BatchEvent],
    now: DateTime<Utc>,
) -> Result<Vec<Inserted>, DbError> {
    let ids = ordered_ids(events.len());
    let payload = events
        .iter()
        .zip(&ids)
        .enumerate()
        .map(|(i, (e, id))| event_json(i, *id, e))
        .collect();
    let Some(rows) = execute(db, &INSERT_BATCH, events, payload, now).await? else {
        return Ok(Vec::new());
    };
    let mut results: Vec<Option<Inserted>> = vec![None; events.len()];
    for row in &rows.rows {
        let i = index(row, events.len(), &INSERT_BATCH)?;
        if let Some(id) = row.opt_uuid("id")? {
            results[i] = Some(if row.bool("inserted")? {
                Inserted::New(id)
            } else {
                Inserted::Duplicate(id)
            });
        }
    }
    fill_missing(db, results, events, Inserted::Duplicate).await
}

/// Runs `statement` over `payload` (one JSON object per event of
/// `events`, which share a partner, headers and `signature_verified`);
/// `None` for no event.
async fn execute(
    db: &dyn Executor,
    statement: &Statement,
    events: &[BatchEvent],
    payload: Vec<serde_json::Value>,
    now: DateTime<Utc>,
) -> Result<Option<crate::store::Rows>, DbError> {
    let Some(first) = events.first() else {
        return Ok(None);
    };
    db.execute(
        statement,
        &params! {
            "events" => serde_json::Value::from(payload).to_string(),
            "partner" => first.event.partner.as_str(),
            "headers" => first.event.headers.clone(),
            "signature_verified" => first.event.signature_verified,
            "now" => now,
        },
    )
    .await
    .map(Some)
}

/// `results` with each event the statement returned nothing for (a
/// concurrent insert of the same key committed while it ran, invisible to
/// it) looked up by its keys: `stored(id)`.
async fn fill_missing<T>(
    db: &dyn Executor,
    results: Vec<Option<T>>,
    events: &[BatchEvent],
    stored: impl Fn(uuid::Uuid) -> T,
) -> Result<Vec<T>, DbError> {
    let mut out = Vec::with_capacity(results.len());
    for (result, e) in results.into_iter().zip(events) {
        out.push(match result {
            Some(result) => result,
            None => stored(stored_id(db, &e.event, e.dedupe.map(|d| d.to_vec()).into()).await?),
        });
    }
    Ok(out)
}

fn index(row: &Row, len: usize, statement: &Statement) -> Result<usize, DbError> {
    usize::try_from(row.i64("i")?)
        .ok()
        .filter(|i| *i < len)
        .ok_or_else(|| DbError::Decode {
            statement: statement.name,
            column: "i".into(),
            detail: format!("not an index of the batch's {len} events"),
        })
}

/// Ingest's one statement for a batch it finishes itself: one call of the
/// function that stores a row and writes its deliveries (migration 19) per
/// event, in the events' order, each argument typed and the function
/// schema-qualified as [`super::routed::INSERT_FORWARDED`] calls it.
pub const INSERT_BATCH_FORWARDED: Statement = Statement::new(
    "inbox.insert_batch_forwarded",
    "SELECT e.i, s.stored_id AS id, s.inserted, s.stored_status AS status, s.deliveries,
            s.refusal
       FROM pg_catalog.jsonb_to_recordset(CAST(:events AS jsonb))
            AS e(i integer, id uuid, event_id text, event_id_derived boolean, event_type text,
                 ordering_key text, body text, dedupe_digest text, status text,
                 last_error text, destinations jsonb, trace_id text)
      CROSS JOIN LATERAL public.hookbox_ingest_store(
            e.id, CAST(:partner AS text), e.event_id, e.event_id_derived, e.event_type,
            e.ordering_key, pg_catalog.decode(e.body, 'base64'),
            pg_catalog.decode(e.dedupe_digest, 'hex'), CAST(:headers AS jsonb),
            CAST(:signature_verified AS boolean), CAST(:now AS timestamptz), e.status,
            e.last_error,
            ARRAY(SELECT pg_catalog.jsonb_array_elements_text(e.destinations)), e.trace_id) AS s
      ORDER BY e.i",
);

/// Stores every event of `events` finished as its `finish` says
/// ([`super::routed::at_ingest`]; inline bodies only), in ONE statement:
/// [`super::routed::insert_forwarded`] for many. One result per event, in
/// order.
pub async fn insert_batch_forwarded(
    db: &dyn Executor,
    events: &[BatchEvent],
    finishes: &[AtIngest],
    now: DateTime<Utc>,
) -> Result<Vec<Stored>, DbError> {
    let ids = ordered_ids(events.len());
    let trace_id = super::routed::invocation_trace_id();
    let payload = events
        .iter()
        .zip(finishes)
        .zip(&ids)
        .enumerate()
        .map(|(i, ((e, finish), id))| {
            let (status, last_error, destinations) = match finish {
                AtIngest::Deliver(deliveries) => (
                    InboxStatus::Processed,
                    None,
                    deliveries.destinations.as_slice(),
                ),
                AtIngest::Drop => (InboxStatus::Processed, None, &[][..]),
                AtIngest::Quarantine(reason) => {
                    (InboxStatus::Quarantined, Some(bounded(reason)), &[][..])
                }
            };
            let mut row = event_json(i, *id, e);
            row["status"] = status.as_str().into();
            row["last_error"] = last_error.into();
            row["destinations"] = destinations.into();
            row["trace_id"] = trace_id.clone().into();
            row
        })
        .collect();
    let Some(rows) = execute(db, &INSERT_BATCH_FORWARDED, events, payload, now).await? else {
        return Ok(Vec::new());
    };
    let mut results: Vec<Option<Stored>> = vec![None; events.len()];
    for row in &rows.rows {
        let i = index(row, events.len(), &INSERT_BATCH_FORWARDED)?;
        let Some(id) = row.opt_uuid("id")? else {
            continue;
        };
        results[i] = Some(if !row.bool("inserted")? {
            Stored::Duplicate(id)
        } else {
            let status = row.text("status")?;
            let status: InboxStatus = status.parse().map_err(|_| DbError::Decode {
                statement: INSERT_BATCH_FORWARDED.name,
                column: "status".into(),
                detail: format!("unknown inbox status {status:?}"),
            })?;
            if status == InboxStatus::Pending {
                Stored::Waiting {
                    id,
                    refusal: row.opt_text("refusal")?,
                }
            } else {
                Stored::Finished {
                    id,
                    status,
                    deliveries: u64::try_from(row.i64("deliveries")?).unwrap_or(0),
                }
            }
        });
    }
    fill_missing(db, results, events, Stored::Duplicate).await
}

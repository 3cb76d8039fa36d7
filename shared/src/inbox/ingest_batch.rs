//! Ingest of a POST carrying many events (a partner with a batch
//! declaration, [`crate::config::batch`]): verified once as the provider
//! signs it, split ([`super::split`]), each event its own row and dedupe
//! key, all of them stored in ONE statement ([`super::batch`]); the POST is
//! answered 200 only when every event is stored (or spooled, 202).
//!
//! - An event repeated inside the POST is stored once (the first copy); an
//!   event stored by an earlier POST is a duplicate (providers regroup
//!   events on retry).
//! - An event over the inline threshold goes to the blob store on its own,
//!   and so do the events past [`BATCH_INLINE_BUDGET`] bytes inline in
//!   total (the statement's parameters stay well under the Data API's
//!   request limit); the blob store down: 503, nothing stored.
//! - New rows are enqueued for the processor in SendMessageBatch calls (10
//!   per call); with forwarding at ingest, rows finished in the statement
//!   need none. A failed send leaves the row to the sweeper.
//! - The database down or late: every event is spooled to the queue (202);
//!   the queue down too: 503 and the provider retries the whole POST (the
//!   events already spooled are then duplicates).

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde_json::json;

use super::InboxMessage;
use super::batch::{BatchEvent, insert_batch, insert_batch_forwarded};
use super::body::{self, Body};
use super::ingest::{Ingest, IngestRequest, IngestResponse, Outcome};
use super::repo::{Inserted, NewInboxEvent};
use super::request::kept_headers;
use super::routed::{self, Stored};
use super::split::{self, SplitEvent};
use crate::config::Partner;
use crate::config::batch::Batch;
use crate::queue::send_all;

/// Most bytes of a batch's events kept inline in their rows, together: the
/// events past it go to the blob store. A batch's statement carries its
/// inline bodies base64 (4/3 larger) in one parameter, so 1 MiB of events
/// stays far below the Data API's request limit.
pub const BATCH_INLINE_BUDGET: usize = 1024 * 1024;

/// What one batch POST came to (the response's body says the same). A
/// batch holds at most [`crate::config::batch::MAX_MAX_BATCH_EVENTS`]
/// events, so every count fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BatchCounts {
    /// Events in the POST.
    pub events: u16,
    /// Events stored now (new rows).
    pub stored: u16,
    /// Events stored before, or repeated inside the POST.
    pub duplicates: u16,
    /// New rows finished at ingest (forwarding at ingest).
    pub forwarded: u16,
    /// Outbox rows written for them.
    pub deliveries: u32,
    /// New rows whose queue message could not be sent (the sweeper
    /// enqueues them).
    pub enqueue_failed: u16,
}

impl Ingest {
    /// Stores the events of a verified batch POST of `partner`.
    pub(super) async fn store_batch(
        &self,
        partner: &Partner,
        batch: &Batch,
        request: &IngestRequest<'_>,
        now: DateTime<Utc>,
    ) -> IngestResponse {
        let events = match split::split(batch, request.body) {
            Ok(events) => events,
            Err(refused) => {
                tracing::info!(
                    partner = %partner.name, reason = refused.code, error = %refused,
                    "batch refused"
                );
                return IngestResponse::rejected(refused.status, refused.code, refused.detail);
            }
        };
        let total = u16::try_from(events.len()).unwrap_or(u16::MAX);
        if events.is_empty() {
            tracing::info!(partner = %partner.name, "empty batch answered: nothing stored");
            return batch_response(
                200,
                "empty",
                BatchCounts::default(),
                Outcome::Batch(BatchCounts::default()),
            );
        }
        // an event repeated inside the POST: its first copy only
        let mut seen_ids = HashSet::new();
        let mut seen_digests = HashSet::new();
        let mut unique: Vec<(SplitEvent, Option<[u8; 32]>)> = Vec::with_capacity(events.len());
        for event in events {
            let digest = partner
                .dedupe_on_body
                .then(|| crate::blob::sha256(&event.bytes));
            let new_id = seen_ids.insert(event.event_id.clone());
            let new_digest = digest.is_none_or(|d| seen_digests.insert(d));
            if new_id && new_digest {
                unique.push((event, digest));
            }
        }
        let repeated = total - u16::try_from(unique.len()).unwrap_or(total);
        let headers = kept_headers(partner, &request.headers);
        let mut inline_total = 0;
        let mut stored: Vec<BatchEvent> = Vec::with_capacity(unique.len());
        for (event, dedupe) in unique {
            let fits = event.bytes.len() <= self.inline_max
                && inline_total + event.bytes.len() <= BATCH_INLINE_BUDGET;
            let body = if fits {
                inline_total += event.bytes.len();
                Body::Inline(event.bytes)
            } else {
                // into the blob store BEFORE the insert, as for one webhook
                match body::store(self.blobs.as_ref(), &partner.name, event.bytes, 0).await {
                    Ok(body) => body,
                    Err(e) => {
                        tracing::error!(
                            error = %e, partner = %partner.name, index = event.index,
                            "cannot store a batch event's body in the blob store"
                        );
                        return IngestResponse::unavailable();
                    }
                }
            };
            stored.push(BatchEvent {
                event: NewInboxEvent {
                    partner: partner.name.clone(),
                    event_id: event.event_id,
                    event_id_derived: event.event_id_derived,
                    event_type: event.event_type,
                    ordering_key: event.ordering_key,
                    body,
                    headers: headers.clone(),
                    signature_verified: true,
                },
                dedupe,
            });
        }
        // forwarded at ingest only when every event can be: else all wait
        // for the processor, as one webhook that cannot be would
        let forward = if self.forward_at_ingest {
            stored
                .iter()
                .map(|e| routed::at_ingest(partner, &e.event))
                .collect::<Option<Vec<_>>>()
        } else {
            None
        };
        let result = tokio::time::timeout(self.db_deadline, async {
            match forward {
                Some(finishes) => {
                    insert_batch_forwarded(self.db.as_ref(), &stored, &finishes, now).await
                }
                None => insert_batch(self.db.as_ref(), &stored, now)
                    .await
                    .map(|inserted| {
                        inserted
                            .into_iter()
                            .map(|i| match i {
                                Inserted::New(id) => Stored::Waiting { id, refusal: None },
                                Inserted::Duplicate(id) => Stored::Duplicate(id),
                            })
                            .collect()
                    }),
            }
        })
        .await;
        let results = match result {
            Ok(Ok(results)) => results,
            Ok(Err(e)) if !e.is_retryable() => {
                tracing::error!(error = %e, partner = %partner.name, "cannot store the batch");
                return IngestResponse::rejected(500, "internal", "the batch could not be stored");
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, partner = %partner.name, events = total, "database unavailable: spooling the batch");
                return self.spool_batch(partner, &stored, now, total).await;
            }
            Err(_) => {
                tracing::warn!(
                    partner = %partner.name, events = total,
                    deadline_ms = self.db_deadline.as_millis() as u64,
                    "the database did not answer in time: spooling the batch"
                );
                return self.spool_batch(partner, &stored, now, total).await;
            }
        };
        crate::failpoint::hit!(crate::failpoint::INGEST_AFTER_INSERT);
        let mut counts = BatchCounts {
            events: total,
            duplicates: repeated,
            ..BatchCounts::default()
        };
        let mut messages = Vec::new();
        let mut ids = Vec::with_capacity(results.len());
        for (result, event) in results.iter().zip(&stored) {
            let event = &event.event;
            ids.push(match result {
                Stored::Duplicate(id)
                | Stored::Finished { id, .. }
                | Stored::Waiting { id, .. } => id.to_string(),
            });
            match result {
                Stored::Duplicate(_) => counts.duplicates += 1,
                Stored::Finished {
                    id,
                    status,
                    deliveries,
                } => {
                    counts.stored += 1;
                    counts.forwarded += 1;
                    counts.deliveries += u32::try_from(*deliveries).unwrap_or(u32::MAX);
                    tracing::info!(
                        inbox_id = %id, partner = %event.partner, event_id = %event.event_id,
                        status = %status, deliveries, "accepted (batch) and forwarded"
                    );
                }
                Stored::Waiting { id, refusal } => {
                    counts.stored += 1;
                    tracing::info!(
                        inbox_id = %id, partner = %event.partner, event_id = %event.event_id,
                        refusal = refusal.as_deref().unwrap_or(""), "accepted (batch)"
                    );
                    match InboxMessage::stored(*id, &event.partner, &event.event_id).to_body() {
                        Ok(body) => messages.push(body),
                        Err(e) => {
                            tracing::warn!(inbox_id = %id, error = %e, "cannot build the queue message");
                            counts.enqueue_failed += 1;
                        }
                    }
                }
            }
        }
        if !messages.is_empty() {
            for sent in send_all(self.queue.as_ref(), messages).await {
                if let Err(e) = sent {
                    // the row is safe; the sweeper enqueues it later
                    tracing::warn!(partner = %partner.name, error = %e, "enqueue after a batch insert failed");
                    counts.enqueue_failed += 1;
                }
            }
            crate::failpoint::hit!(crate::failpoint::INGEST_AFTER_SEND);
        }
        tracing::info!(
            partner = %partner.name, events = counts.events, stored = counts.stored,
            duplicates = counts.duplicates, forwarded = counts.forwarded,
            "batch accepted"
        );
        let mut response = batch_response(200, "accepted", counts, Outcome::Batch(counts));
        response.body["ids"] = ids.into();
        response
    }

    /// Every event of the batch to the queue, for the processor to store:
    /// 202 when all are spooled, else 503 (the provider retries the POST;
    /// the events spooled now are duplicates then).
    async fn spool_batch(
        &self,
        partner: &Partner,
        events: &[BatchEvent],
        now: DateTime<Utc>,
        total: u16,
    ) -> IngestResponse {
        let mut bodies = Vec::with_capacity(events.len());
        for e in events {
            match InboxMessage::spooled_deduped(&e.event, e.dedupe, now).to_body() {
                Ok(body) => bodies.push(body),
                Err(error) => {
                    tracing::warn!(%error, partner = %partner.name, "batch event too large to spool");
                    return IngestResponse::unavailable();
                }
            }
        }
        let failed = send_all(self.queue.as_ref(), bodies)
            .await
            .into_iter()
            .filter(Result::is_err)
            .count();
        if failed > 0 {
            tracing::error!(partner = %partner.name, failed, "database and queue unavailable for a batch");
            return IngestResponse::unavailable();
        }
        let counts = BatchCounts {
            events: total,
            ..BatchCounts::default()
        };
        batch_response(202, "spooled", counts, Outcome::Spooled)
    }
}

fn batch_response(
    status: u16,
    word: &str,
    counts: BatchCounts,
    outcome: Outcome,
) -> IngestResponse {
    IngestResponse::new(
        status,
        json!({
            "status": word,
            "events": counts.events,
            "stored": counts.stored,
            "duplicates": counts.duplicates,
        }),
        outcome,
    )
}

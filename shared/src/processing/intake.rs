//! The first half of a batch: each message read (spooled events stored,
//! unreadable messages kept quarantined) and the batch's rows claimed, a
//! row that cannot be claimed or read being dealt with alone.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use tracing::Instrument as _;
use uuid::Uuid;

use super::json_error;
use super::outcome::MessageOutcome;
use super::processor::{Processor, Slot, UNREADABLE_PARTNER, after};
use crate::inbox::body::{self, DEFAULT_INLINE_MAX_BYTES};
use crate::inbox::{self, Claim, ClaimToken, InboxMessage, NewInboxEvent};
use crate::queue::Received;

use super::clip;

impl Processor<'_> {
    /// Turns the message into an inbox id, or an outcome.
    pub(super) async fn read(&self, slot: &mut Slot<'_>) {
        let message = match serde_json::from_str::<InboxMessage>(&slot.msg.body) {
            Ok(message) => message,
            Err(e) => {
                let reason = format!("not an inbox queue message: {}", json_error(&e));
                return self.store_unreadable(slot, &reason).await;
            }
        };
        let (partner, event_id) = message.key();
        slot.span.record("partner", partner);
        slot.span.record("event_id", event_id);
        match message {
            InboxMessage::Stored { inbox_id, .. } => {
                slot.span
                    .record("inbox_id", tracing::field::display(inbox_id));
                slot.inbox_id = Some(inbox_id);
            }
            InboxMessage::Spooled(spooled) => {
                let (event, dedupe) = match spooled
                    .to_new_event()
                    .and_then(|event| Ok((event, spooled.dedupe_digest()?)))
                {
                    Ok(pair) => pair,
                    Err(e) => return self.store_unreadable(slot, &e.to_string()).await,
                };
                // Stored as received by ingest (the lag stays honest).
                let received_at = spooled.received_at.min(self.clock.now());
                match inbox::insert_if_new_deduped(self.db, &event, received_at, dedupe).await {
                    Ok(inserted) => {
                        slot.span
                            .record("inbox_id", tracing::field::display(inserted.id()));
                        tracing::info!(new = inserted.is_new(), "spooled event stored");
                        slot.inbox_id = Some(inserted.id());
                    }
                    Err(e) if e.is_retryable() => {
                        let error = format!("storing the spooled event failed: {e}");
                        let age = (self.clock.now() - spooled.received_at)
                            .to_std()
                            .unwrap_or_default();
                        slot.spooled_age = Some(age);
                        slot.outcome = Some(self.requeue(slot.msg, error, Some(age)).await);
                    }
                    Err(e) => {
                        let error = format!("storing the spooled event failed: {e}");
                        slot.outcome = Some(self.fail(slot.msg, error).await);
                    }
                }
            }
        }
    }

    /// Keeps an unreadable message as a quarantined row, acknowledged.
    async fn store_unreadable(&self, slot: &mut Slot<'_>, reason: &str) {
        let body = slot.msg.body.as_bytes();
        // a queue message may be 1 MiB: above the threshold it goes to the
        // blob store like any large body
        let stored = match body::store(
            self.blobs,
            UNREADABLE_PARTNER,
            body.to_vec(),
            DEFAULT_INLINE_MAX_BYTES,
        )
        .await
        {
            Ok(stored) => stored,
            Err(e) => {
                let error = format!("storing an unreadable message's body failed: {e}");
                slot.outcome = Some(self.fail(slot.msg, error).await);
                return;
            }
        };
        let event = NewInboxEvent {
            partner: UNREADABLE_PARTNER.into(),
            event_id: format!("sha256:{}", hex::encode(Sha256::digest(body))),
            event_id_derived: true,
            event_type: None,
            ordering_key: None,
            body: stored,
            headers: serde_json::json!({ "sqs-message-id": slot.msg.message_id }),
            signature_verified: false,
        };
        let reason = clip(reason);
        match inbox::insert_quarantined(self.db, &event, self.clock.now(), &reason).await {
            Ok(inserted) => {
                slot.span
                    .record("inbox_id", tracing::field::display(inserted.id()));
                tracing::warn!(
                    reason = %reason,
                    body_bytes = body.len(),
                    "unreadable queue message quarantined"
                );
                slot.inbox_id = Some(inserted.id());
                slot.outcome = Some(MessageOutcome::Quarantined { reason });
            }
            Err(e) => {
                let error = format!("storing an unreadable message failed: {e}");
                slot.outcome = Some(self.fail(slot.msg, error).await);
            }
        }
    }

    /// Claims the rows of every slot that has one and no outcome yet.
    pub(super) async fn claim(&self, slots: &mut [Slot<'_>], deadline: Option<DateTime<Utc>>) {
        let mut ids: Vec<Uuid> = Vec::new();
        for slot in slots.iter_mut().filter(|s| s.outcome.is_none()) {
            let Some(id) = slot.inbox_id else { continue };
            if ids.contains(&id) {
                let _enter = slot.span.enter();
                tracing::info!("the same row is in an earlier message of this batch");
                slot.outcome = Some(MessageOutcome::DuplicateInBatch);
            } else {
                ids.push(id);
            }
        }
        if ids.is_empty() {
            return;
        }
        let now = self.clock.now();
        let mut lease_until = after(now, self.config.lease);
        if let Some(deadline) = deadline {
            lease_until = lease_until.max(after(deadline, self.config.deadline_margin));
        }
        // one token for every claim of this batch: a retried claim takes back
        // the leases a failed one committed
        let claimer = Uuid::new_v4();
        let mut by_id: HashMap<Uuid, Claim> = HashMap::new();
        for chunk in ids.chunks(inbox::MAX_CLAIM_IDS) {
            match inbox::claim_as(self.db, claimer, chunk, now, lease_until).await {
                Ok(claims) => by_id.extend(claims.into_iter().map(|c| (c.id(), c))),
                Err(e) if e.is_retryable() => {
                    let error = format!("claiming the batch's rows failed: {e}");
                    for slot in slots.iter_mut().filter(|s| {
                        s.outcome.is_none() && s.inbox_id.is_some_and(|id| chunk.contains(&id))
                    }) {
                        let span = slot.span.clone();
                        let outcome = self
                            .requeue(slot.msg, error.clone(), None)
                            .instrument(span)
                            .await;
                        slot.outcome = Some(outcome);
                    }
                }
                Err(e) => {
                    // One row can make the whole statement fail (the Data API
                    // refusing a row it cannot return, say): claim each row
                    // alone, so that only that row is held up. The same
                    // claimer takes back the leases the failed statement may
                    // have committed.
                    tracing::warn!(error = %e, rows = chunk.len(), "claim failed; claiming the rows one by one");
                    for id in chunk {
                        match inbox::claim_as(self.db, claimer, &[*id], now, lease_until).await {
                            Ok(claims) => by_id.extend(claims.into_iter().map(|c| (c.id(), c))),
                            Err(e) => {
                                // it may have committed a lease it could not
                                // return: give it back, or the row would wait
                                // for the lease to expire on every receive
                                let due = after(now, self.config.backoff(1));
                                if let Err(release) =
                                    inbox::release_lease(self.db, claimer, *id, due).await
                                {
                                    tracing::warn!(error = %release, inbox_id = %id, "releasing the lease of an unreturnable row failed");
                                }
                                by_id.insert(
                                    *id,
                                    Claim::Unreadable {
                                        id: *id,
                                        token: None,
                                        error: format!("claiming the row failed: {e}"),
                                    },
                                );
                            }
                        }
                    }
                }
            }
        }
        if !by_id.is_empty() {
            crate::failpoint::hit!(crate::failpoint::PROCESSOR_AFTER_CLAIM);
        }
        for slot in slots.iter_mut().filter(|s| s.outcome.is_none()) {
            let Some(id) = slot.inbox_id else { continue };
            let _enter = slot.span.enter();
            slot.outcome = match by_id.remove(&id) {
                Some(Claim::Claimed { row, token }) => {
                    slot.claimed = Some((row, token));
                    None
                }
                Some(Claim::Finished { status, .. }) => {
                    tracing::info!(%status, "row already finished: acknowledged");
                    Some(MessageOutcome::AlreadyFinished(status))
                }
                Some(Claim::Busy { .. }) if self.config.is_last_receive(slot.msg.receive_count) => {
                    tracing::warn!("row held by another worker on the last receive: acknowledged");
                    Some(MessageOutcome::BusyOnLastReceive)
                }
                Some(Claim::Busy { .. }) => {
                    tracing::info!("row held by another worker: retried later");
                    Some(MessageOutcome::Busy)
                }
                Some(Claim::Missing { .. }) | None => {
                    tracing::warn!("no such inbox row: acknowledged");
                    Some(MessageOutcome::Missing)
                }
                Some(Claim::Unreadable { token, error, .. }) => {
                    drop(_enter);
                    let span = slot.span.clone();
                    Some(
                        self.unreadable_row(slot.msg, id, token, &error)
                            .instrument(span)
                            .await,
                    )
                }
            };
        }
    }

    /// A row the database cannot give us: retried like any failure, and
    /// quarantined with the reason on the queue's last receive (retrying it
    /// for ever would help nobody; an operator replays it once fixed).
    async fn unreadable_row(
        &self,
        msg: &Received,
        id: Uuid,
        token: Option<ClaimToken>,
        error: &str,
    ) -> MessageOutcome {
        let now = self.clock.now();
        let error = clip(&format!("the inbox row cannot be read: {error}"));
        if !self.config.is_last_receive(msg.receive_count) {
            return match token {
                Some(token) => self.retry(msg, token, now, error).await,
                None => self.fail(msg, error).await,
            };
        }
        let quarantined = match token {
            Some(token) => inbox::mark_quarantined(self.db, token, now, &error).await,
            None => inbox::quarantine_unreadable(self.db, id, now, &error).await,
        };
        match quarantined {
            Ok(_) => {
                tracing::warn!(reason = %error, "unreadable row quarantined");
                MessageOutcome::Quarantined { reason: error }
            }
            Err(e) => {
                self.fail(msg, format!("{error}; quarantining it failed: {e}"))
                    .await
            }
        }
    }
}

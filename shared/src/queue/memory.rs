//! An in-memory queue with the semantics of an SQS standard queue that has a
//! redrive policy: a received message is invisible for the visibility
//! timeout, comes back if not deleted, counts its receives, and once it has
//! been received `max_receive_count` times, the next receive moves it to the
//! dead-letter queue instead of delivering it (lazily, as SQS does).
//!
//! Time comes from a [`Clock`], so tests move it instead of sleeping.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Queue, QueueConsumer, QueueError, Received, check_body, check_visibility};
use crate::clock::Clock;

#[derive(Debug, Clone)]
struct Message {
    message_id: String,
    body: String,
    sent_at: DateTime<Utc>,
    visible_at: DateTime<Utc>,
    receive_count: u32,
    /// `AWSTraceHeader`, as SQS keeps it.
    trace_header: Option<String>,
    /// The handle of the latest receive; older handles are stale.
    receipt_handle: Option<String>,
}

#[derive(Debug, Default)]
struct State {
    messages: VecDeque<Message>,
    dead: Vec<Message>,
}

/// Settings of a [`MemoryQueue`].
#[derive(Debug, Clone, Copy)]
pub struct MemoryQueueConfig {
    /// Invisibility after a receive.
    pub visibility_timeout: Duration,
    /// Receives before the message goes to the dead-letter queue.
    pub max_receive_count: u32,
}

impl Default for MemoryQueueConfig {
    fn default() -> Self {
        Self {
            visibility_timeout: Duration::from_secs(30),
            max_receive_count: 4,
        }
    }
}

/// The in-memory queue (and its dead-letter queue).
#[derive(Clone)]
pub struct MemoryQueue {
    state: Arc<Mutex<State>>,
    config: MemoryQueueConfig,
    clock: Arc<dyn Clock>,
    /// Woken whenever a message may have become visible (sent, redriven,
    /// visibility changed): consumers wait on it instead of polling.
    arrivals: Arc<tokio::sync::Notify>,
}

impl fmt::Debug for MemoryQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryQueue")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn chrono_duration(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

impl MemoryQueue {
    /// An empty queue.
    pub fn new(config: MemoryQueueConfig, clock: Arc<dyn Clock>) -> Self {
        Self {
            state: Arc::default(),
            config,
            clock,
            arrivals: Arc::default(),
        }
    }

    /// Returns once a message may be visible: at once when one is, else when
    /// one is sent (or redriven, or its visibility changed), when the
    /// earliest invisible one's time comes (by the queue's clock), or after
    /// `at_most`. What SQS long polling gives a consumer: no fixed poll
    /// interval between a send and its receive. It may return with nothing
    /// to receive (another consumer was faster): receive, then wait again.
    pub async fn wait_for_visible(&self, at_most: Duration) {
        // registered before looking, so a send from here on wakes it
        let notified = self.arrivals.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let now = self.clock.now();
        let wait = match self.next_visible_at() {
            Some(at) if at <= now => return,
            Some(at) => (at - now).to_std().unwrap_or(Duration::ZERO).min(at_most),
            None => at_most,
        };
        tokio::select! {
            _ = &mut notified => {}
            _ = tokio::time::sleep(wait) => {}
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Messages in the queue (visible or in flight).
    pub fn len(&self) -> usize {
        self.lock().messages.len()
    }

    /// True when the queue holds no message.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bodies of the messages moved to the dead-letter queue.
    pub fn dead_letters(&self) -> Vec<String> {
        self.lock().dead.iter().map(|m| m.body.clone()).collect()
    }

    /// Moves every dead letter back to the queue as a new message (the
    /// "start DLQ redrive" of SQS: new message ids, receive count 0).
    pub fn redrive_dead_letters(&self) -> usize {
        let now = self.clock.now();
        let mut state = self.lock();
        let dead: Vec<Message> = state.dead.drain(..).collect();
        let n = dead.len();
        for m in dead {
            state.messages.push_back(Message {
                message_id: Uuid::new_v4().to_string(),
                body: m.body,
                sent_at: now,
                visible_at: now,
                receive_count: 0,
                trace_header: m.trace_header,
                receipt_handle: None,
            });
        }
        drop(state);
        self.arrivals.notify_waiters();
        n
    }

    /// When the next invisible message becomes visible again, if any.
    pub fn next_visible_at(&self) -> Option<DateTime<Utc>> {
        self.lock().messages.iter().map(|m| m.visible_at).min()
    }
}

#[async_trait]
impl Queue for MemoryQueue {
    async fn send(&self, body: &str) -> Result<String, QueueError> {
        self.send_delayed(body, Duration::ZERO).await
    }

    async fn send_delayed(&self, body: &str, delay: Duration) -> Result<String, QueueError> {
        check_body(body)?;
        let now = self.clock.now();
        let delay = chrono::Duration::from_std(delay.min(super::MAX_DELAY))
            .unwrap_or(chrono::Duration::zero());
        let id = Uuid::new_v4().to_string();
        self.lock().messages.push_back(Message {
            message_id: id.clone(),
            body: body.to_string(),
            sent_at: now,
            visible_at: now + delay,
            receive_count: 0,
            trace_header: crate::log_format::trace_header(),
            receipt_handle: None,
        });
        self.arrivals.notify_waiters();
        Ok(id)
    }

    async fn change_visibility(
        &self,
        receipt_handle: &str,
        timeout: Duration,
    ) -> Result<(), QueueError> {
        check_visibility("change_visibility", timeout)?;
        let now = self.clock.now();
        let mut state = self.lock();
        let message = state
            .messages
            .iter_mut()
            .find(|m| m.receipt_handle.as_deref() == Some(receipt_handle))
            .ok_or_else(|| QueueError::Rejected {
                operation: "change_visibility",
                reason: "receipt handle is not current (message deleted or received again)".into(),
            })?;
        message.visible_at = now + chrono_duration(timeout);
        drop(state);
        self.arrivals.notify_waiters();
        Ok(())
    }
}

#[async_trait]
impl QueueConsumer for MemoryQueue {
    async fn receive(&self, max: usize) -> Result<Vec<Received>, QueueError> {
        let now = self.clock.now();
        let max = max.clamp(1, 10);
        let mut state = self.lock();
        let mut out = Vec::new();
        let mut i = 0;
        while i < state.messages.len() && out.len() < max {
            if state.messages[i].visible_at > now {
                i += 1;
                continue;
            }
            if state.messages[i].receive_count >= self.config.max_receive_count {
                if let Some(m) = state.messages.remove(i) {
                    state.dead.push(m);
                }
                continue;
            }
            let handle = Uuid::new_v4().to_string();
            let visibility = chrono_duration(self.config.visibility_timeout);
            let m = &mut state.messages[i];
            m.receive_count += 1;
            m.visible_at = now + visibility;
            m.receipt_handle = Some(handle.clone());
            out.push(Received {
                message_id: m.message_id.clone(),
                receipt_handle: handle,
                body: m.body.clone(),
                receive_count: m.receive_count,
                sent_at: m.sent_at,
                trace_header: m.trace_header.clone(),
            });
            i += 1;
        }
        Ok(out)
    }

    async fn delete(&self, receipt_handle: &str) -> Result<(), QueueError> {
        let mut state = self.lock();
        // Like SQS, deleting with a stale handle of a message that still
        // exists succeeds; an unknown handle is an error.
        match state
            .messages
            .iter()
            .position(|m| m.receipt_handle.as_deref() == Some(receipt_handle))
        {
            Some(i) => {
                state.messages.remove(i);
                Ok(())
            }
            None => Err(QueueError::Rejected {
                operation: "delete",
                reason: "receipt handle is not current".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::queue::{MAX_MESSAGE_BYTES, MAX_VISIBILITY};
    use chrono::TimeZone;

    fn queue(visibility_s: u64, max_receive: u32) -> (MemoryQueue, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(
            Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
                .single()
                .expect("valid"),
        ));
        let q = MemoryQueue::new(
            MemoryQueueConfig {
                visibility_timeout: Duration::from_secs(visibility_s),
                max_receive_count: max_receive,
            },
            clock.clone(),
        );
        (q, clock)
    }

    /// How long (tokio's paused time) `wait_for_visible` waited.
    async fn wait_while(
        q: &Arc<MemoryQueue>,
        then: impl std::future::Future<Output = ()>,
    ) -> Duration {
        let waiter = {
            let q = q.clone();
            tokio::spawn(async move {
                let started = tokio::time::Instant::now();
                q.wait_for_visible(Duration::from_secs(3600)).await;
                started.elapsed()
            })
        };
        // the waiter is waiting before `then` runs
        tokio::task::yield_now().await;
        then.await;
        waiter.await.expect("waiter")
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_consumer_wakes_when_a_message_is_sent_not_after_a_poll_interval() {
        let (q, clock) = queue(30, 4);
        let q = Arc::new(q);
        let sender = q.clone();
        let waited = wait_while(&q, async move {
            sender.send("a").await.expect("send");
        })
        .await;
        assert_eq!(waited, Duration::ZERO, "woken by the send");
        assert_eq!(q.receive(10).await.expect("receive").len(), 1);
        // nothing sent: it waits for the received message's visibility
        // timeout, and once that one is deleted, as long as it was told
        let waited = wait_while(&q, async {}).await;
        assert_eq!(waited, Duration::from_secs(30));
        clock.advance(chrono::Duration::seconds(30));
        let again = q.receive(10).await.expect("receive");
        q.delete(&again[0].receipt_handle).await.expect("delete");
        let waited = wait_while(&q, async {}).await;
        assert_eq!(waited, Duration::from_secs(3600));
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_consumer_wakes_when_a_delayed_message_becomes_visible() {
        let (q, _clock) = queue(30, 4);
        let q = Arc::new(q);
        q.send_delayed("later", Duration::from_secs(10))
            .await
            .expect("send");
        let waited = wait_while(&q, async {}).await;
        assert_eq!(waited, Duration::from_secs(10));
        // one visible already: no wait at all
        q.send("now").await.expect("send");
        assert_eq!(waited_now(&q).await, Duration::ZERO);
    }

    async fn waited_now(q: &Arc<MemoryQueue>) -> Duration {
        let started = tokio::time::Instant::now();
        q.wait_for_visible(Duration::from_secs(3600)).await;
        started.elapsed()
    }

    #[tokio::test]
    async fn received_messages_hide_for_the_visibility_timeout_and_come_back() {
        let (q, clock) = queue(30, 4);
        let id = q.send("a").await.expect("send");
        let first = q.receive(10).await.expect("receive");
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].message_id, id);
        assert_eq!(first[0].receive_count, 1);
        assert!(
            q.receive(10).await.expect("receive").is_empty(),
            "in flight"
        );
        clock.advance(chrono::Duration::seconds(29));
        assert!(q.receive(10).await.expect("receive").is_empty());
        clock.advance(chrono::Duration::seconds(1));
        clock.advance(chrono::Duration::seconds(30));
        let again = q.receive(10).await.expect("receive");
        assert_eq!(again[0].receive_count, 2);
        assert_ne!(again[0].receipt_handle, first[0].receipt_handle);
        // the old receipt is stale
        assert!(q.delete(&first[0].receipt_handle).await.is_err());
        q.delete(&again[0].receipt_handle).await.expect("delete");
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn change_visibility_sets_the_next_delivery() {
        let (q, clock) = queue(30, 4);
        q.send("a").await.expect("send");
        let m = q.receive(1).await.expect("receive").remove(0);
        q.change_visibility(&m.receipt_handle, Duration::from_secs(300))
            .await
            .expect("change");
        clock.advance(chrono::Duration::seconds(299));
        assert!(q.receive(1).await.expect("receive").is_empty());
        clock.advance(chrono::Duration::seconds(1));
        assert_eq!(q.receive(1).await.expect("receive").len(), 1);
        let too_long = q
            .change_visibility("x", MAX_VISIBILITY + Duration::from_secs(1))
            .await
            .expect_err("over 12 h");
        assert!(matches!(too_long, QueueError::Rejected { .. }));
    }

    #[tokio::test]
    async fn after_max_receives_the_next_receive_moves_it_to_the_dlq() {
        let (q, clock) = queue(10, 2);
        q.send("poison").await.expect("send");
        q.send("fine").await.expect("send");
        for _ in 0..2 {
            let got = q.receive(10).await.expect("receive");
            assert_eq!(got.len(), 2);
            clock.advance(chrono::Duration::seconds(10));
        }
        // third receive: both exceeded 2 receives
        assert!(q.receive(10).await.expect("receive").is_empty());
        assert_eq!(
            q.dead_letters(),
            vec!["poison".to_string(), "fine".to_string()]
        );
        assert!(q.is_empty());
        assert_eq!(q.redrive_dead_letters(), 2);
        let back = q.receive(10).await.expect("receive");
        assert_eq!(back.len(), 2);
        assert!(back.iter().all(|m| m.receive_count == 1));
    }

    #[tokio::test]
    async fn oversize_messages_are_refused() {
        let (q, _) = queue(30, 4);
        let big = "x".repeat(MAX_MESSAGE_BYTES + 1);
        assert!(matches!(
            q.send(&big).await,
            Err(QueueError::TooLarge {
                limit: MAX_MESSAGE_BYTES,
                ..
            })
        ));
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn it_refuses_the_characters_sqs_refuses() {
        let (q, _) = queue(30, 4);
        for bad in ["a\u{0}b", "\u{FFFE}", "\u{FFFF}", "\u{1F}", "\u{8}"] {
            let e = q.send(bad).await.expect_err("refused like SQS");
            assert!(
                matches!(&e, QueueError::Rejected { reason, .. } if reason.contains("SQS refuses")),
                "{e:?}"
            );
            assert!(!e.is_retryable());
        }
        for good in ["tab\t nl\n cr\r", "\u{D7FF}\u{E000}\u{FFFD}", "😀 é"] {
            q.send(good).await.expect("allowed");
        }
        assert_eq!(q.len(), 3);
    }
}

//! The local stack's stand-in for Lambda's SQS event source mapping: batches
//! of up to 10 received from the queue into the real processor handler, the
//! successes deleted, from several loops at once (Lambda's concurrency).
//!
//! With the in-memory queue a loop with nothing to receive waits on the
//! queue itself (a send wakes it at once, as SQS long polling returns as soon
//! as a message arrives); with a real SQS endpoint it polls.

use std::sync::Arc;
use std::time::Duration;

use hookbox::queue::QueueConsumer;
use hookbox::queue::memory::MemoryQueue;
use hookbox_processor::{ProcessorFunction, sqs_event};
use lambda_runtime::{Context, LambdaEvent};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Concurrent processor loops by default: a batch of 10 is mostly database
/// round trips, so one loop leaves the database idle between them. Lambda
/// scales to the template's `ProcessorMaxConcurrency` (10).
pub const DEFAULT_CONCURRENCY: usize = 4;
const _: () = assert!(DEFAULT_CONCURRENCY > 1, "several loops, as Lambda runs");

/// The longest an idle loop waits on the in-memory queue before looking
/// again (a send, a redrive or the next delayed message wakes it sooner).
const IDLE_WAIT: Duration = Duration::from_secs(1);

/// Between receives from a real SQS endpoint that returned nothing.
const SQS_POLL: Duration = Duration::from_millis(100);

/// How an idle loop learns that there is something to receive.
#[derive(Debug, Clone)]
pub enum Wake {
    /// The in-memory queue tells its waiters.
    Memory(Arc<MemoryQueue>),
    /// Receive again after a pause.
    Poll(Duration),
}

impl Wake {
    /// For the in-memory queue, when that is the queue; else polling.
    pub fn for_queue(memory: Option<&Arc<MemoryQueue>>) -> Wake {
        match memory {
            Some(q) => Wake::Memory(q.clone()),
            None => Wake::Poll(SQS_POLL),
        }
    }

    async fn idle(&self) {
        match self {
            Wake::Memory(q) => q.wait_for_visible(IDLE_WAIT).await,
            Wake::Poll(pause) => tokio::time::sleep(*pause).await,
        }
    }
}

/// Starts `concurrency` (at least one) loops feeding `processor` from
/// `queue`, until `stopped` turns true.
pub fn spawn(
    concurrency: usize,
    queue: Arc<dyn QueueConsumer>,
    processor: Arc<ProcessorFunction>,
    wake: Wake,
    stopped: &watch::Receiver<bool>,
) -> Vec<JoinHandle<()>> {
    (0..concurrency.max(1))
        .map(|_| {
            tokio::spawn(processor_loop(
                queue.clone(),
                processor.clone(),
                wake.clone(),
                stopped.clone(),
            ))
        })
        .collect()
}

async fn processor_loop(
    queue: Arc<dyn QueueConsumer>,
    processor: Arc<ProcessorFunction>,
    wake: Wake,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        if *stopped.borrow() {
            return;
        }
        let got = match queue.receive(10).await {
            Ok(got) => got,
            Err(e) => {
                tracing::warn!(error = %e, "receive failed");
                Vec::new()
            }
        };
        if got.is_empty() {
            tokio::select! {
                _ = wake.idle() => {}
                _ = stopped.changed() => {}
            }
            continue;
        }
        let mut context = Context::default();
        context.deadline =
            u64::try_from((chrono::Utc::now() + chrono::Duration::seconds(30)).timestamp_millis())
                .unwrap_or(0);
        let response = processor
            .handle(LambdaEvent::new(sqs_event(&got), context))
            .await;
        for m in &got {
            let failed = response
                .batch_item_failures
                .iter()
                .any(|f| f.item_identifier == m.message_id);
            if !failed {
                if let Err(e) = queue.delete(&m.receipt_handle).await {
                    tracing::warn!(error = %e, "delete failed");
                }
            }
        }
    }
}

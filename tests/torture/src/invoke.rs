//! One request through ingest that must be refused, and one processor
//! invocation, each as a Lambda invocation that may crash.

use std::panic::AssertUnwindSafe;

use futures::FutureExt as _;
use hookbox::inbox::ingest::{Ingest, IngestRequest};
use hookbox::metrics::Metrics;
use hookbox::processing::Processor;
use hookbox::queue::QueueConsumer;
use hookbox::queue::memory::MemoryQueue;
use hookbox::signature::Headers;

use crate::partners::Refusable;

/// Sends a request that must be refused; its status (`None`: it crashed).
pub(crate) async fn refuse(ingest: &Ingest, request: &Refusable) -> Option<u16> {
    let ingest_request = IngestRequest {
        partner: request.partner,
        headers: Headers::from_pairs(
            request
                .headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str())),
        ),
        body: &request.body,
        url: None,
    };
    let mut metrics = Metrics::new();
    AssertUnwindSafe(ingest.handle(&ingest_request, &mut metrics))
        .catch_unwind()
        .await
        .ok()
        .map(|r| r.status)
}

/// One processor invocation: receive up to 10, process, delete those not
/// reported failed; a crash deletes nothing. Returns how many it received.
pub(crate) async fn invoke(processor: &Processor<'_>, memory: &MemoryQueue) -> usize {
    let Ok(got) = memory.receive(10).await else {
        return 0;
    };
    if got.is_empty() {
        return 0;
    }
    let report = AssertUnwindSafe(processor.process_batch(&got, None))
        .catch_unwind()
        .await;
    if let Ok(report) = report {
        let retry = report.retry_message_ids();
        for m in &got {
            if !retry.contains(&m.message_id) {
                let _ = memory.delete(&m.receipt_handle).await;
            }
        }
    }
    got.len()
}

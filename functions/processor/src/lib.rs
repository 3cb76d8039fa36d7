//! The processor Lambda: SQS batch in, `batchItemFailures` out.
//!
//! This crate only knows the AWS event shapes; the use case is
//! [`hookbox::processing::Processor`]. The event source mapping MUST enable
//! `ReportBatchItemFailures` (`FunctionResponseTypes:
//! [ReportBatchItemFailures]` in SAM/CloudFormation): without it Lambda
//! ignores the response and retries or deletes whole batches.
//!
//! - every message gets one outcome; only the ones to retry are named in
//!   `batchItemFailures` (never an empty id), the rest are deleted by Lambda;
//! - the handler never fails as a whole: a database outage makes every
//!   message a retry of its own;
//! - after each batch one EMF line (namespace `hookbox`, dimension
//!   `Function=processor`) reports processed, deferred, retried, quarantined,
//!   dead, duplicates, busy, missing and the handler latencies.

use std::sync::Arc;

use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use chrono::{DateTime, Utc};
use hookbox::blob::BlobStore;
use hookbox::clock::{Clock, lambda_deadline};
use hookbox::example::OrdersHandler;
use hookbox::processing::{
    BatchReport, BusinessHandler, Processor, ProcessorConfig, RoutingHandler,
};
use hookbox::queue::{Queue, Received};
use hookbox::startup::{Startup, StartupError};
use hookbox::store::Database;
use lambda_runtime::LambdaEvent;

/// The `Function` dimension of the processor's metrics.
pub const FUNCTION_NAME: &str = "processor";

/// The variable that chooses the business handler.
pub const HOOKBOX_HANDLER: &str = "HOOKBOX_HANDLER";

/// The business handler of the processor function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handler {
    /// `routes` (the default, and the template's): forwarding by the
    /// partners' routes.
    Routes,
    /// `orders-example`: the example orders domain, for the local demo and
    /// the tests; never deployed (`infra/check.py` refuses it).
    OrdersExample,
}

impl Handler {
    /// From [`HOOKBOX_HANDLER`] (unset or empty: `routes`); another value is
    /// refused, naming the ones there are.
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        match env(HOOKBOX_HANDLER).as_deref().map(str::trim) {
            None | Some("" | "routes") => Ok(Self::Routes),
            Some("orders-example") => Ok(Self::OrdersExample),
            Some(other) => Err(format!(
                "{other:?} is not a handler: \"routes\" (forward by the partners' routes, the \
                 default) or \"orders-example\" (the example orders domain)"
            )),
        }
    }
}

/// Dependencies, built once per sandbox.
#[derive(Debug, Clone)]
pub struct ProcessorFunction {
    db: Arc<dyn Database>,
    queue: Arc<dyn Queue>,
    blobs: Arc<dyn BlobStore>,
    clock: Arc<dyn Clock>,
    handler: Arc<dyn BusinessHandler>,
    config: ProcessorConfig,
}

impl ProcessorFunction {
    /// The processor of a Lambda sandbox (see `hookbox::startup`): its
    /// settings, the database, the inbox queue, the blob store and the
    /// business handler [`HOOKBOX_HANDLER`] names: `routes` (the default)
    /// forwards each partner's events by its routes (docs/forwarding.md),
    /// `orders-example` runs the example orders domain (the local demo and
    /// the tests). Your own `BusinessHandler` plugs in here:
    /// `RoutingHandler::new(partners).with_handler(Arc::new(YourHandler))`.
    pub async fn from_startup(start: &Startup) -> Result<Self, StartupError> {
        let config = ProcessorConfig::from_env(start.env())
            .map_err(|e| StartupError::settings("processor settings", e))?;
        let handler: Arc<dyn BusinessHandler> = match Handler::from_env(start.env())
            .map_err(|e| StartupError::settings(HOOKBOX_HANDLER, e))?
        {
            Handler::Routes => Arc::new(RoutingHandler::new(start.partners().await?)),
            Handler::OrdersExample => Arc::new(OrdersHandler::from_env(start.env())),
        };
        Ok(Self::new(
            start.database().await?,
            start.queue().await?,
            start.blobs().await?,
            start.clock(),
            handler,
            config,
        ))
    }

    /// The function over its ports.
    pub fn new(
        db: Arc<dyn Database>,
        queue: Arc<dyn Queue>,
        blobs: Arc<dyn BlobStore>,
        clock: Arc<dyn Clock>,
        handler: Arc<dyn BusinessHandler>,
        config: ProcessorConfig,
    ) -> Self {
        Self {
            db,
            queue,
            blobs,
            clock,
            handler,
            config,
        }
    }

    /// The Lambda handler: processes the batch, prints its metrics, answers
    /// with the messages to retry.
    pub async fn handle(&self, event: LambdaEvent<SqsEvent>) -> SqsBatchResponse {
        let (response, report) = self.handle_with_report(event).await;
        let mut metrics = report.metrics();
        metrics.dimension("Function", FUNCTION_NAME);
        metrics.flush(self.clock.now().timestamp_millis());
        response
    }

    /// Like [`ProcessorFunction::handle`], returning the per-message report
    /// instead of printing metrics (tests, the bench).
    pub async fn handle_with_report(
        &self,
        event: LambdaEvent<SqsEvent>,
    ) -> (SqsBatchResponse, BatchReport) {
        let deadline = lambda_deadline(event.context.deadline);
        let messages: Vec<Received> = event.payload.records.iter().map(received).collect();
        let processor = Processor {
            db: self.db.as_ref(),
            queue: self.queue.as_ref(),
            blobs: self.blobs.as_ref(),
            clock: self.clock.as_ref(),
            handler: self.handler.as_ref(),
            config: &self.config,
        };
        let report = processor.process_batch(&messages, deadline).await;
        (batch_response(&report), report)
    }
}

/// One SQS record as the use case's message. Missing fields become empty
/// (an empty message id is never reported back); the receive count comes
/// from `attributes.ApproximateReceiveCount` (1 when absent or unreadable).
pub fn received(record: &SqsMessage) -> Received {
    let attr = |name: &str| record.attributes.get(name).map(String::as_str);
    Received {
        message_id: record.message_id.clone().unwrap_or_default(),
        receipt_handle: record.receipt_handle.clone().unwrap_or_default(),
        body: record.body.clone().unwrap_or_default(),
        receive_count: attr("ApproximateReceiveCount")
            .and_then(|c| c.trim().parse::<u32>().ok())
            .filter(|c| *c > 0)
            .unwrap_or(1),
        sent_at: attr("SentTimestamp")
            .and_then(|t| t.trim().parse::<i64>().ok())
            .and_then(DateTime::<Utc>::from_timestamp_millis)
            .unwrap_or_default(),
        trace_header: attr("AWSTraceHeader").map(str::to_owned),
    }
}

/// The SQS event Lambda's event source mapping builds from received
/// messages (the inverse of [`received`]): what the local stack and the
/// tests hand the handler when they play the event source.
pub fn sqs_event(messages: &[Received]) -> SqsEvent {
    let mut event = SqsEvent::default();
    event.records = messages
        .iter()
        .map(|m| {
            let mut record = SqsMessage::default();
            record.message_id = Some(m.message_id.clone());
            record.receipt_handle = Some(m.receipt_handle.clone());
            record.body = Some(m.body.clone());
            record.attributes.insert(
                "ApproximateReceiveCount".into(),
                m.receive_count.to_string(),
            );
            record.attributes.insert(
                "SentTimestamp".into(),
                m.sent_at.timestamp_millis().to_string(),
            );
            if let Some(trace) = &m.trace_header {
                record
                    .attributes
                    .insert("AWSTraceHeader".into(), trace.clone());
            }
            record.event_source = Some("aws:sqs".into());
            record
        })
        .collect();
    event
}

/// The response: exactly the messages to retry.
pub fn batch_response(report: &BatchReport) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = report
        .retry_message_ids()
        .into_iter()
        .map(|id| {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            failure
        })
        .collect();
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookbox::processing::{MessageOutcome, MessageResult};

    #[test]
    fn records_map_to_messages_with_their_receive_count() {
        let mut record = SqsMessage::default();
        record.message_id = Some("m-1".into());
        record.receipt_handle = Some("r-1".into());
        record.body = Some("{}".into());
        record
            .attributes
            .insert("ApproximateReceiveCount".into(), "3".into());
        record
            .attributes
            .insert("SentTimestamp".into(), "1780315200000".into());
        let m = received(&record);
        assert_eq!(
            (
                m.message_id.as_str(),
                m.receipt_handle.as_str(),
                m.body.as_str()
            ),
            ("m-1", "r-1", "{}")
        );
        assert_eq!(m.receive_count, 3);
        assert_eq!(m.sent_at.timestamp_millis(), 1_780_315_200_000);

        for bad in ["", "zero", "0", "-2"] {
            record
                .attributes
                .insert("ApproximateReceiveCount".into(), bad.into());
            assert_eq!(received(&record).receive_count, 1, "{bad:?}");
        }
        let empty = received(&SqsMessage::default());
        assert_eq!(empty.message_id, "");
        assert_eq!(empty.receive_count, 1);
    }

    #[test]
    fn the_handler_is_routes_unless_the_example_is_chosen_by_name() {
        let with = |value: Option<&'static str>| {
            Handler::from_env(move |name| {
                assert_eq!(name, HOOKBOX_HANDLER);
                value.map(str::to_owned)
            })
        };
        assert_eq!(with(None), Ok(Handler::Routes));
        assert_eq!(with(Some(" ")), Ok(Handler::Routes));
        assert_eq!(with(Some("routes")), Ok(Handler::Routes));
        assert_eq!(with(Some("orders-example")), Ok(Handler::OrdersExample));
        let refused = with(Some("orders")).expect_err("refused");
        assert!(
            refused.contains("\"orders\" is not a handler") && refused.contains("orders-example"),
            "{refused}"
        );
    }

    #[test]
    fn the_response_names_only_messages_to_retry() {
        let report = BatchReport {
            results: vec![
                MessageResult {
                    message_id: "ok".into(),
                    inbox_id: None,
                    outcome: MessageOutcome::Processed,
                },
                MessageResult {
                    message_id: "again".into(),
                    inbox_id: None,
                    outcome: MessageOutcome::Busy,
                },
                MessageResult {
                    message_id: String::new(),
                    inbox_id: None,
                    outcome: MessageOutcome::Busy,
                },
            ],
            handler_latencies: Vec::new(),
            processing_latencies: Vec::new(),
            spooled_ages: Vec::new(),
        };
        let response = batch_response(&report);
        assert_eq!(response.batch_item_failures.len(), 1);
        assert_eq!(response.batch_item_failures[0].item_identifier, "again");
    }
}

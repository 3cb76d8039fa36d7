//! Helpers of the tests that deliver to moto's SQS and EventBridge: the
//! SDK configuration, queues (FIFO by name), a bus observed through a rule's
//! queue, and reading (and deleting) what arrived.

#![allow(dead_code)]

use std::time::Duration;

use aws_config::SdkConfig;
use aws_sdk_sqs::types::QueueAttributeName;
use hookbox_testkit::moto;

pub fn aws(endpoint: &str) -> SdkConfig {
    hookbox::delivery::local_aws_config(endpoint)
}

pub async fn create_queue(sqs: &aws_sdk_sqs::Client, name: &str) -> (String, String) {
    let mut create = sqs.create_queue().queue_name(name);
    if name.ends_with(".fifo") {
        create = create.attributes(QueueAttributeName::FifoQueue, "true");
    }
    let url = create
        .send()
        .await
        .expect("create queue")
        .queue_url()
        .expect("url")
        .to_string();
    let arn = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .expect("attributes")
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
        .expect("arn");
    (url, arn)
}

/// Every message on the queue (received and deleted), bodies in order,
/// with their FIFO group.
pub async fn drain(sqs: &aws_sdk_sqs::Client, url: &str) -> Vec<(String, Option<String>)> {
    let mut got = Vec::new();
    while receive(sqs, url, &mut got, 0).await > 0 {}
    got
}

/// `n` messages from the queue, read (and deleted) as they arrive, as a
/// consumer does (moto's queues slow down as they fill: a FIFO send checks
/// every message still queued).
pub async fn consume(
    sqs: aws_sdk_sqs::Client,
    url: String,
    n: usize,
) -> Vec<(String, Option<String>)> {
    let mut got = Vec::new();
    let read = async {
        while got.len() < n {
            receive(&sqs, &url, &mut got, 1).await;
        }
    };
    if tokio::time::timeout(Duration::from_secs(300), read)
        .await
        .is_err()
    {
        panic!("{url}: {} of {n} messages after 300 s", got.len());
    }
    got
}

/// One receive of up to ten messages (waiting up to `wait_s` for one),
/// deleted once read: how many.
pub async fn receive(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    got: &mut Vec<(String, Option<String>)>,
    wait_s: i32,
) -> usize {
    let group = aws_sdk_sqs::types::MessageSystemAttributeName::MessageGroupId;
    let out = sqs
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .wait_time_seconds(wait_s)
        // never seen again before its delete, however slow moto is: a
        // message read twice is then a message sent twice
        .visibility_timeout(600)
        .message_system_attribute_names(group.clone())
        .send()
        .await
        .expect("receive");
    let messages = out.messages();
    if messages.is_empty() {
        return 0;
    }
    let mut delete = sqs.delete_message_batch().queue_url(url);
    for (n, m) in messages.iter().enumerate() {
        let group = m.attributes().and_then(|a| a.get(&group)).cloned();
        got.push((m.body().unwrap_or_default().to_string(), group));
        delete = delete.entries(
            aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                .id(n.to_string())
                .receipt_handle(m.receipt_handle().unwrap_or_default())
                .build()
                .expect("entry"),
        );
    }
    let deleted = delete.send().await.expect("delete");
    assert!(deleted.failed().is_empty(), "{:?}", deleted.failed());
    messages.len()
}

pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).expect("JSON")
}

/// A bus whose rule sends every event of source `shop.orders` to a new
/// queue: (bus name, the queue's URL).
pub async fn observed_bus(endpoint: &str) -> (String, String) {
    let sqs = moto::client(endpoint);
    let (url, arn) = create_queue(&sqs, &moto::unique_name("bus-target")).await;
    let events = aws_sdk_eventbridge::Client::new(&aws(endpoint));
    let bus = moto::unique_name("bus");
    events
        .create_event_bus()
        .name(&bus)
        .send()
        .await
        .expect("create bus");
    events
        .put_rule()
        .name("shop-orders")
        .event_bus_name(&bus)
        .event_pattern(r#"{"source": ["shop.orders"]}"#)
        .send()
        .await
        .expect("rule");
    events
        .put_targets()
        .rule("shop-orders")
        .event_bus_name(&bus)
        .targets(
            aws_sdk_eventbridge::types::Target::builder()
                .id("queue")
                .arn(&arn)
                .build()
                .expect("target"),
        )
        .send()
        .await
        .expect("targets");
    (bus, url)
}

/// `relay` with the SQS and EventBridge transports of the services at
/// `endpoint`, each behind `Coalescing` (as the relay function wires them).
pub fn with_aws(relay: hookbox::relay::Relay, endpoint: &str) -> hookbox::relay::Relay {
    use hookbox::config::TransportKind;
    use hookbox::delivery::{Coalescing, EventBridgeTransport, MAX_BATCH, SqsTransport};
    use std::sync::Arc;

    let shared = aws(endpoint);
    relay
        .with_transport(
            TransportKind::Sqs,
            Arc::new(Coalescing::new(
                SqsTransport::new(SqsTransport::client(&shared), None),
                MAX_BATCH,
            )),
        )
        .with_transport(
            TransportKind::EventBridge,
            Arc::new(Coalescing::new(
                EventBridgeTransport::new(EventBridgeTransport::client(&shared), None),
                MAX_BATCH,
            )),
        )
}

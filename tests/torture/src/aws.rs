//! The AWS destinations of a run: an EventBridge bus (observed through a
//! rule whose target is an SQS queue) and a FIFO SQS queue, served by a
//! private moto behind a [`FaultProxy`] that takes the services down
//! (every SendMessageBatch and PutEvents answered 503) and fails chosen
//! entries the way the services do: `InternalFailure` and
//! `ThrottlingException` for a while (retried), a permanent code for good
//! (dead, with the code in the row).
//!
//! Nothing leaves the machine: moto and the proxy listen on 127.0.0.1. The
//! queues are read (and emptied) after every relay run, as consumers do, so
//! moto never holds more than a minute of messages.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, MessageSystemAttributeName};
use hookbox::config::TransportKind;
use hookbox::delivery::{Coalescing, EventBridgeTransport, MAX_BATCH, SqsTransport, Transport};
use hookbox::relay::Relay;
use hookbox::store::Executor;
use hookbox_testkit::fault_proxy::FaultProxy;
use hookbox_testkit::moto::{self, Moto};

use crate::ledger::statement;

/// The EventBridge destination.
pub const BUS: &str = "bus";
/// The FIFO SQS destination (`ordered`).
pub const FIFO: &str = "fifo";
/// The `Source` of the bus's events, which its rule matches.
pub const SOURCE: &str = "torture.orders";

/// Whether a processed `sw` event goes to the AWS destinations as well: one
/// order in five (its id ends in 0 or 5), which keeps moto's work, the
/// run's slowest part, small; events without an order (a body serde_json
/// cannot read) never.
pub fn fans_out(order: Option<&str>) -> bool {
    order.is_some_and(|o| o.ends_with('0') || o.ends_with('5'))
}

/// The code of the bus's permanent failures.
pub const PERMANENT: &str = "MalformedDetail";

/// One message read from a destination's queue.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The envelope's `id`: the delivery id.
    pub id: String,
    /// The FIFO message group (`None` for the bus).
    pub group: Option<String>,
}

/// The services, their proxy, and what reached them.
pub struct Aws {
    _moto: Moto,
    proxy: FaultProxy,
    sqs: aws_sdk_sqs::Client,
    bus: String,
    bus_queue: String,
    fifo_queue: String,
    /// Messages read so far, per destination, in the order read.
    seen: HashMap<&'static str, Vec<Seen>>,
    /// Rows already given (or spared) a fault.
    considered: HashSet<String>,
    /// Rows failed for good, per destination.
    pub permanent: HashMap<String, &'static str>,
    /// Entries failed transiently (each once or more).
    pub transient: u64,
}

impl std::fmt::Debug for Aws {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aws")
            .field("proxy", &self.proxy.endpoint())
            .field("bus", &self.bus)
            .finish_non_exhaustive()
    }
}

impl Aws {
    /// A private moto with the bus, its rule and queue, and the FIFO queue.
    pub async fn start() -> Self {
        let moto = Moto::start();
        let proxy = FaultProxy::start(moto.endpoint()).await;
        let sqs = moto::client(moto.endpoint());
        let shared = hookbox::delivery::local_aws_config(moto.endpoint());
        let events = aws_sdk_eventbridge::Client::new(&shared);
        let (bus_queue, bus_queue_arn) = create_queue(&sqs, "torture-bus-target").await;
        let (fifo_queue, _) = create_queue(&sqs, "torture-orders.fifo").await;
        let bus = "torture-bus".to_owned();
        events
            .create_event_bus()
            .name(&bus)
            .send()
            .await
            .unwrap_or_else(|e| panic!("creating the bus: {e:?}"));
        events
            .put_rule()
            .name("torture-orders")
            .event_bus_name(&bus)
            .event_pattern(format!(r#"{{"source": ["{SOURCE}"]}}"#))
            .send()
            .await
            .unwrap_or_else(|e| panic!("the bus's rule: {e:?}"));
        let target = aws_sdk_eventbridge::types::Target::builder()
            .id("queue")
            .arn(&bus_queue_arn)
            .build()
            .unwrap_or_else(|e| panic!("the rule's target: {e}"));
        events
            .put_targets()
            .rule("torture-orders")
            .event_bus_name(&bus)
            .targets(target)
            .send()
            .await
            .unwrap_or_else(|e| panic!("the rule's target: {e:?}"));
        Self {
            _moto: moto,
            proxy,
            sqs,
            bus,
            bus_queue,
            fifo_queue,
            seen: HashMap::new(),
            considered: HashSet::new(),
            permanent: HashMap::new(),
            transient: 0,
        }
    }

    /// The destinations, as the configuration writes them.
    pub fn destinations(&self) -> serde_json::Value {
        serde_json::json!({
            BUS: {"type": "eventbridge", "bus": self.bus, "source": SOURCE},
            FIFO: {"type": "sqs", "queue_url": self.fifo_queue, "ordered": true},
        })
    }

    /// `relay`, delivering both through the proxy.
    pub fn wire(&self, relay: Relay) -> Relay {
        let shared = hookbox::delivery::local_aws_config(self.proxy.endpoint());
        let sqs: Arc<dyn Transport> = Arc::new(Coalescing::new(
            SqsTransport::new(SqsTransport::client(&shared), None),
            MAX_BATCH,
        ));
        let bus: Arc<dyn Transport> = Arc::new(Coalescing::new(
            EventBridgeTransport::new(EventBridgeTransport::client(&shared), None),
            MAX_BATCH,
        ));
        relay
            .with_transport(TransportKind::Sqs, sqs)
            .with_transport(TransportKind::EventBridge, bus)
    }

    /// Both services down (`true`) or up.
    pub fn set_down(&self, down: bool) {
        self.proxy.set_down(down);
    }

    /// Entries failed by the proxy so far.
    pub fn failed_entries(&self) -> usize {
        self.proxy.failed().len()
    }

    /// Gives the rows of both destinations not yet attempted their faults,
    /// drawn from `rng`: 8 % fail transiently one to three times
    /// (`InternalFailure` or `ThrottlingException`); 3 % of the bus's fail
    /// for good (not the FIFO queue's: it is `ordered`, and a dead head
    /// blocks its aggregate by design until an operator acts, see
    /// docs/relay.md). A read that fails (the database is down) waits for
    /// the next time.
    pub async fn arm(&mut self, db: &dyn Executor, rng: &mut fastrand::Rng) {
        let Ok(rows) = db
            .execute(
                &statement(
                    "SELECT id, destination FROM outbox
                      WHERE destination IN ('bus', 'fifo') AND attempts = 0
                      ORDER BY seq",
                ),
                &hookbox::params! {},
            )
            .await
        else {
            return;
        };
        for row in rows.rows {
            let Ok(id) = row.uuid("id").map(|u| u.to_string()) else {
                continue;
            };
            let destination = row.text("destination").unwrap_or_default();
            if !self.considered.insert(id.clone()) {
                continue;
            }
            let roll = rng.u8(0..100);
            if roll < 8 {
                let (code, sender_fault) = if roll.is_multiple_of(2) {
                    ("InternalFailure", false)
                } else {
                    ("ThrottlingException", true)
                };
                self.proxy.fail(&id, code, sender_fault, rng.usize(1..4));
                self.transient += 1;
            } else if roll < 11 && destination == BUS {
                self.proxy.fail(&id, PERMANENT, true, usize::MAX);
                self.permanent.insert(id, PERMANENT);
            }
        }
    }

    /// Reads (and deletes) every message waiting on both queues.
    pub async fn observe(&mut self) {
        for (destination, url, detail) in [
            (BUS, self.bus_queue.clone(), true),
            (FIFO, self.fifo_queue.clone(), false),
        ] {
            loop {
                let got = receive(&self.sqs, &url, detail).await;
                if got.is_empty() {
                    break;
                }
                self.seen.entry(destination).or_default().extend(got);
            }
        }
    }

    /// What reached `destination`, in the order read.
    pub fn seen(&self, destination: &str) -> &[Seen] {
        self.seen.get(destination).map_or(&[], Vec::as_slice)
    }
}

async fn create_queue(sqs: &aws_sdk_sqs::Client, name: &str) -> (String, String) {
    let mut create = sqs.create_queue().queue_name(name);
    if name.ends_with(".fifo") {
        create = create.attributes(aws_sdk_sqs::types::QueueAttributeName::FifoQueue, "true");
    }
    let url = create
        .send()
        .await
        .unwrap_or_else(|e| panic!("creating {name}: {e:?}"))
        .queue_url()
        .unwrap_or_default()
        .to_owned();
    let arn = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{name}'s ARN: {e:?}"))
        .attributes()
        .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::QueueArn))
        .cloned()
        .unwrap_or_default();
    (url, arn)
}

/// One receive of up to ten messages, deleted once read (`detail`: the
/// envelope is the event's `detail`, as a rule delivers a bus's event).
async fn receive(sqs: &aws_sdk_sqs::Client, url: &str, detail: bool) -> Vec<Seen> {
    let group = MessageSystemAttributeName::MessageGroupId;
    let out = sqs
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .message_system_attribute_names(group.clone())
        .send()
        .await
        .unwrap_or_else(|e| panic!("receiving from {url}: {e:?}"));
    let messages = out.messages();
    if messages.is_empty() {
        return Vec::new();
    }
    let mut seen = Vec::with_capacity(messages.len());
    let mut delete = sqs.delete_message_batch().queue_url(url);
    for (n, message) in messages.iter().enumerate() {
        let body: serde_json::Value =
            serde_json::from_str(message.body().unwrap_or_default()).unwrap_or_default();
        let envelope = if detail { &body["detail"] } else { &body };
        seen.push(Seen {
            id: envelope["id"].as_str().unwrap_or_default().to_owned(),
            group: message.attributes().and_then(|a| a.get(&group)).cloned(),
        });
        let entry = DeleteMessageBatchRequestEntry::builder()
            .id(n.to_string())
            .receipt_handle(message.receipt_handle().unwrap_or_default())
            .build()
            .unwrap_or_else(|e| panic!("a delete entry: {e}"));
        delete = delete.entries(entry);
    }
    let deleted = delete
        .send()
        .await
        .unwrap_or_else(|e| panic!("deleting from {url}: {e:?}"));
    assert!(
        deleted.failed().is_empty(),
        "deleting from {url}: {:?}",
        deleted.failed()
    );
    seen
}

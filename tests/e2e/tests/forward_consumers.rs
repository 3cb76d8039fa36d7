//! docs/forwarding.md's consumers (docs/examples/forwarding/), run on what
//! hookbox forwarded: a partner's signed webhooks go through the ingest use
//! case, which forwards them by the partner's routes (at ingest) to an
//! EventBridge bus and a FIFO SQS queue, and a relay delivers them to moto.
//!
//! - The Python Lambda handler gets each event the bus's rule delivered,
//!   twice: each delivery id is processed once, and DynamoDB holds it once;
//!   a processing failure raises and leaves the id unrecorded.
//! - The Node consumer reads the FIFO queue; the deliveries are replayed
//!   (`hookbox outbox replay`: the same delivery ids sent again) beside new
//!   ones, and it runs again: each delivery id is processed once, each
//!   aggregate's in the order hookbox received them, and the queue ends
//!   empty.
//!
//! Everything runs on 127.0.0.1 (moto through `hookbox_testkit::moto`). A
//! missing interpreter or package fails the test, naming what installs it.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use aws_sdk_sqs::types::QueueAttributeName;
use hookbox::admin::{self, ReplayRange};
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig, TransportKind};
use hookbox::delivery::{Coalescing, EventBridgeTransport, MAX_BATCH, SqsTransport};
use hookbox::inbox::ingest::{Ingest, IngestRequest};
use hookbox::metrics::Metrics;
use hookbox::outbox::OutboxStatus;
use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
use hookbox::relay::{HttpSender, Relay, RelaySettings};
use hookbox::signature::{Headers, Secret, sign_standard_webhooks};
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, Statement};
use hookbox_testkit::TestDb;
use hookbox_testkit::moto;

const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

/// The bus destination's `source`, which its rule matches.
const SOURCE: &str = "shop.webhooks";

/// Where the consumers are.
fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/forwarding")
}

/// Creates (`create TABLE`: partition key `id`, TTL on `expires_at`, as the
/// consumers' docs say) or lists (`scan TABLE`: `[{"id", "state"}]`) a
/// deduplication table.
const DEDUP_TABLE: &str = r#"
import json, sys
import boto3
dynamodb = boto3.client("dynamodb")
command, table = sys.argv[1:3]
if command == "create":
    dynamodb.create_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.update_time_to_live(
        TableName=table,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"},
    )
else:
    pages = dynamodb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True)
    print(json.dumps([{"id": i["id"]["S"], "state": i["state"]["S"]}
                      for page in pages for i in page["Items"]]))
"#;

/// Runs the Lambda handler as Lambda would (argv[1]: its directory; stdin:
/// the events, as the bus's rule delivered them): first the first event
/// with a processing that fails, then every event twice. Prints what the
/// table held for the first event after the failure; the handler's log
/// goes to stderr.
const LAMBDA: &str = r#"
import json, logging, sys
logging.basicConfig(stream=sys.stderr, format="%(message)s")
sys.path.insert(0, sys.argv[1])
import eventbridge_consumer as consumer

events = json.load(sys.stdin)
first = events[0]
business = consumer.process
def failing(envelope):
    raise RuntimeError("the business failed")
consumer.process = failing
try:
    consumer.handler(first, None)
    raised = False
except RuntimeError:
    raised = True
consumer.process = business
left = consumer.dynamodb.get_item(
    TableName=consumer.TABLE, Key={"id": {"S": first["detail"]["id"]}}, ConsistentRead=True
).get("Item")

for event in events + events:
    consumer.handler(event, None)
print(json.dumps({"failure_raised": raised, "left_after_failure": left}))
"#;

/// The partner `shop`: routed to the bus and the FIFO queue, by customer.
fn config(bus: &str, fifo: &str) -> HookboxConfig {
    HookboxConfig::parse(
        &serde_json::json!({
            "partners": {"shop": {
                "signature": {"scheme": "standard-webhooks"},
                "secrets": [SECRET],
                "event_id": {"header": "webhook-id"},
                "event_type": "/type",
                "ordering_key": "/customer",
                "routes": [
                    {"to": "bus", "event_types": ["*"]},
                    {"to": "fifo", "event_types": ["invoice.*", "charge.*"]},
                ],
            }},
            "destinations": {
                "bus": {"type": "eventbridge", "bus": bus, "source": SOURCE},
                "fifo": {"type": "sqs", "queue_url": fifo, "ordered": true},
            }
        })
        .to_string(),
        "test",
    )
    .expect("config")
}

/// A partner, hookbox (ingest forwarding at ingest, a relay with both AWS
/// transports) and moto's bus, its rule's queue and the FIFO queue.
struct Rig {
    _test_db: TestDb,
    db: Arc<dyn Database>,
    clock: Arc<ManualClock>,
    store: Arc<ConfigStore>,
    ingest: Ingest,
    relay: Relay,
    endpoint: String,
    sqs: aws_sdk_sqs::Client,
    /// The queue the bus's rule targets: what a Lambda target would get.
    bus_queue: String,
    fifo: String,
}

impl Rig {
    async fn new() -> Self {
        let test_db = TestDb::create().await;
        let db: Arc<dyn Database> =
            Arc::new(PgDatabase::connect(test_db.url(), &PgOptions::default()).expect("pool"));
        hookbox::migrate::migrate(db.as_ref())
            .await
            .expect("migrate");

        let endpoint = moto::endpoint();
        let sqs = moto::client(&endpoint);
        let shared = hookbox::delivery::local_aws_config(&endpoint);
        let events = aws_sdk_eventbridge::Client::new(&shared);
        let bus = moto::unique_name("consumers-bus");
        let (bus_queue, bus_queue_arn) = create_queue(&sqs, &moto::unique_name("bus-target")).await;
        let (fifo, _) = create_queue(&sqs, &format!("{}.fifo", moto::unique_name("shop"))).await;
        events
            .create_event_bus()
            .name(&bus)
            .send()
            .await
            .unwrap_or_else(|e| panic!("creating the bus: {e:?}"));
        events
            .put_rule()
            .name("shop-webhooks")
            .event_bus_name(&bus)
            .event_pattern(serde_json::json!({"source": [SOURCE]}).to_string())
            .send()
            .await
            .unwrap_or_else(|e| panic!("the bus's rule: {e:?}"));
        let target = aws_sdk_eventbridge::types::Target::builder()
            .id("consumer")
            .arn(&bus_queue_arn)
            .build()
            .unwrap_or_else(|e| panic!("the rule's target: {e}"));
        events
            .put_targets()
            .rule("shop-webhooks")
            .event_bus_name(&bus)
            .targets(target)
            .send()
            .await
            .unwrap_or_else(|e| panic!("the rule's target: {e:?}"));

        let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
        let cfg = config(&bus, &fifo);
        // the routes in the database, as the relay's run syncs them
        hookbox::outbox::destinations::sync(db.as_ref(), &cfg, clock.now())
            .await
            .expect("sync the destinations");
        let store = Arc::new(ConfigStore::fixed(cfg, clock.clone()));
        let queue = MemoryQueue::new(
            MemoryQueueConfig {
                visibility_timeout: std::time::Duration::from_secs(30),
                max_receive_count: 5,
            },
            clock.clone(),
        );
        let ingest = Ingest::new(
            store.clone(),
            db.clone(),
            Arc::new(queue),
            Arc::new(MemoryBlobStore::new()),
            clock.clone(),
        )
        .with_forwarding_at_ingest(true);
        let relay = Relay::new(
            db.clone(),
            Arc::new(MemoryBlobStore::new()),
            Arc::new(HttpSender::default()),
            None,
            clock.clone(),
            RelaySettings::new("forward-consumers"),
        )
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
        );
        Self {
            _test_db: test_db,
            db,
            clock,
            store,
            ingest,
            relay,
            endpoint,
            sqs,
            bus_queue,
            fifo,
        }
    }

    /// A signed webhook of `shop`, through ingest: stored and forwarded.
    async fn post(&self, event_id: &str, event_type: &str, customer: &str) {
        let body = serde_json::to_vec(&serde_json::json!({
            "id": event_id, "type": event_type, "customer": customer, "amount": 1250,
        }))
        .expect("json");
        let h = sign_standard_webhooks(event_id, self.clock.now(), &body, &[Secret::new(SECRET)])
            .expect("sign");
        let request = IngestRequest {
            partner: "shop",
            headers: Headers::from_pairs([
                ("webhook-id", h.id.as_str()),
                ("webhook-timestamp", h.timestamp.as_str()),
                ("webhook-signature", h.signature.as_str()),
            ]),
            body: &body,
            url: None,
        };
        let mut metrics = Metrics::new();
        let response = self.ingest.handle(&request, &mut metrics).await;
        assert_eq!(response.status, 200, "{event_id}: {response:?}");
        assert_eq!(
            response.body["status"], "accepted",
            "{event_id}: {response:?}"
        );
    }

    /// Customers `c1`…`c3`, three events each, interleaved.
    async fn post_nine(&self) {
        for (n, event_type) in ["invoice.created", "invoice.paid", "charge.refunded"]
            .iter()
            .enumerate()
        {
            for customer in ["c1", "c2", "c3"] {
                self.post(&format!("evt_{customer}_{n}"), event_type, customer)
                    .await;
            }
        }
    }

    /// One relay drain: every due row delivered, none failed.
    async fn drain(&self) -> u64 {
        let run = self.relay.drain(&self.store).await;
        assert!(run.errors.is_empty(), "{:?}", run.errors);
        let d = &run.deliveries;
        assert_eq!((d.retried, d.dead), (0, 0), "{d:?}");
        d.delivered
    }

    /// `destination`'s deliveries, in the order hookbox wrote them:
    /// (delivery id, aggregate id).
    async fn deliveries(&self, destination: &str) -> Vec<(String, String)> {
        self.db
            .execute(
                &Statement::new(
                    "test.deliveries",
                    "SELECT CAST(id AS text) AS id, aggregate_id FROM outbox
                      WHERE destination = :destination ORDER BY seq",
                ),
                &hookbox::params! {"destination" => destination},
            )
            .await
            .expect("outbox")
            .rows
            .iter()
            .map(|r| {
                (
                    r.text("id").expect("id"),
                    r.text("aggregate_id").expect("aggregate"),
                )
            })
            .collect()
    }

    /// `hookbox outbox replay --destination DESTINATION --since <an hour
    /// ago>`: its delivered rows pending again, under the same ids.
    async fn replay(&self, destination: &str) -> u64 {
        let range = ReplayRange {
            destination: destination.into(),
            since: self.clock.now() - chrono::Duration::hours(1),
            until: None,
            statuses: vec![OutboxStatus::Delivered],
        };
        let db = self.db.as_ref();
        let mut walk = admin::plan_replay(db, &range).await.expect("plan").walk;
        let mut replayed = 0;
        while let Some(at) = walk {
            let page = admin::replay_page(db, &range, at, 100, self.clock.now())
                .await
                .expect("replay");
            replayed += page.replayed;
            walk = page.next;
        }
        replayed
    }

    /// `command` with the standard AWS variables pointing at moto, and
    /// nothing of this machine's AWS configuration.
    fn aws_command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(examples())
            .env("AWS_ENDPOINT_URL", &self.endpoint)
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .env("AWS_CONFIG_FILE", "/dev/null")
            .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
            .env("AWS_EC2_METADATA_DISABLED", "true");
        for var in [
            "AWS_PROFILE",
            "AWS_SESSION_TOKEN",
            "AWS_ENDPOINT_URL_SQS",
            "AWS_ENDPOINT_URL_DYNAMODB",
            "AWS_ENDPOINT_URL_EVENTBRIDGE",
        ] {
            command.env_remove(var);
        }
        command
    }

    /// A Python program of the project's interpreter, with boto3.
    fn python(&self, script: &str) -> Command {
        let mut command = self.aws_command(hookbox_testkit::python::python());
        // (no __pycache__ beside the example)
        command
            .args(["-c", script])
            .env("PYTHONDONTWRITEBYTECODE", "1");
        command
    }

    /// A new deduplication table.
    async fn table(&self, prefix: &str) -> String {
        let table = moto::unique_name(prefix);
        let mut command = self.python(DEDUP_TABLE);
        command.args(["create", &table]);
        run(
            "creating a DynamoDB table with boto3",
            command,
            None,
            PYTHON_HINT,
        )
        .await;
        table
    }

    /// `table`'s items: delivery id → state, and how many times each id is
    /// there.
    async fn recorded(&self, table: &str) -> BTreeMap<String, (String, usize)> {
        let mut command = self.python(DEDUP_TABLE);
        command.args(["scan", table]);
        let output = run("scanning a DynamoDB table", command, None, PYTHON_HINT).await;
        let items = json(&output.stdout, "the scan");
        let mut recorded: BTreeMap<String, (String, usize)> = BTreeMap::new();
        for item in items.as_array().expect("a list of items") {
            let id = item["id"].as_str().expect("id").to_string();
            let state = item["state"].as_str().expect("state").to_string();
            recorded.entry(id).or_insert((state, 0)).1 += 1;
        }
        recorded
    }

    /// The Node consumer, `--once`, on the FIFO queue: its output lines.
    async fn node_consumer(&self, table: &str) -> Vec<String> {
        let modules = examples().join("node_modules/@aws-sdk/client-sqs");
        assert!(
            modules.is_dir(),
            "{} is missing: {NODE_HINT}",
            modules.display()
        );
        let mut command = self.aws_command("node");
        command
            .args(["sqs_consumer.mjs", "--once"])
            .env("QUEUE_URL", &self.fifo)
            .env("DEDUP_TABLE", table)
            // (the idle poll that ends --once answers at once)
            .env("WAIT_SECONDS", "0");
        let output = run("the Node SQS consumer", command, None, NODE_HINT).await;
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(String::from)
            .collect()
    }

    /// Every message on `url`, received and deleted.
    async fn take_all(&self, url: &str) -> Vec<String> {
        let mut bodies = Vec::new();
        loop {
            let out = self
                .sqs
                .receive_message()
                .queue_url(url)
                .max_number_of_messages(10)
                .send()
                .await
                .unwrap_or_else(|e| panic!("receiving from {url}: {e:?}"));
            if out.messages().is_empty() {
                return bodies;
            }
            for message in out.messages() {
                bodies.push(message.body().unwrap_or_default().to_string());
                self.sqs
                    .delete_message()
                    .queue_url(url)
                    .receipt_handle(message.receipt_handle().unwrap_or_default())
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("deleting from {url}: {e:?}"));
            }
        }
    }

    /// Messages on `url` (visible or in flight).
    async fn queued(&self, url: &str) -> u64 {
        let attributes = self
            .sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{url}'s attributes: {e:?}"));
        let attributes = attributes.attributes().expect("attributes");
        [
            QueueAttributeName::ApproximateNumberOfMessages,
            QueueAttributeName::ApproximateNumberOfMessagesNotVisible,
        ]
        .iter()
        .map(|a| attributes[a].parse::<u64>().expect("a count"))
        .sum()
    }
}

const PYTHON_HINT: &str = "boto3 comes with tools/requirements/test.txt: run `tools/dev setup \
     test` (or set HOOKBOX_PYTHON to an interpreter that has it)";

const NODE_HINT: &str = "the Node consumer needs Node.js >= 20 and the npm packages of \
     docs/examples/forwarding: run `tools/dev setup test` (it runs `npm ci --prefix \
     docs/examples/forwarding`)";

async fn create_queue(sqs: &aws_sdk_sqs::Client, name: &str) -> (String, String) {
    let mut create = sqs.create_queue().queue_name(name);
    if name.ends_with(".fifo") {
        create = create.attributes(QueueAttributeName::FifoQueue, "true");
    }
    let url = create
        .send()
        .await
        .unwrap_or_else(|e| panic!("creating {name}: {e:?}"))
        .queue_url()
        .expect("url")
        .to_string();
    let arn = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{name}'s ARN: {e:?}"))
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
        .expect("arn");
    (url, arn)
}

/// Runs `command` (feeding it `stdin`) to success; fails naming `what` and
/// `hint` when it cannot start or fails.
async fn run(what: &str, mut command: Command, stdin: Option<Vec<u8>>, hint: &str) -> Output {
    let shown = format!("{what} ({command:?})");
    let output = tokio::task::spawn_blocking(move || {
        command
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn()?;
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(&input)?;
        }
        child.wait_with_output()
    })
    .await
    .expect("join")
    .unwrap_or_else(|e| panic!("cannot run {shown}: {e}; {hint}"));
    assert!(
        output.status.success(),
        "{shown} failed ({}): {hint}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn json(bytes: &[u8], what: &str) -> serde_json::Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| {
        panic!(
            "{what}: not the JSON expected ({e}): {}",
            String::from_utf8_lossy(bytes)
        )
    })
}

/// The delivery ids of `log`'s lines `<word> delivery <id>…`, in order.
fn logged(log: &[String], word: &str) -> Vec<String> {
    let prefix = format!("{word} delivery ");
    log.iter()
        .filter_map(|line| line.strip_prefix(&prefix))
        .map(|rest| rest.split(':').next().unwrap_or_default().to_string())
        .collect()
}

/// How many times each id occurs.
fn counts(ids: &[String]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for id in ids {
        *counts.entry(id.clone()).or_insert(0) += 1;
    }
    counts
}

/// Each of `ids` once.
fn once(ids: &[String]) -> BTreeMap<String, usize> {
    ids.iter().map(|id| (id.clone(), 1)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_lambda_processes_each_eventbridge_delivery_once_though_delivered_twice() {
    let rig = Rig::new().await;
    let table = rig.table("eventbridge-dedup").await;
    rig.post_nine().await;
    assert_eq!(
        rig.drain().await,
        18,
        "nine events, each to the bus and the queue"
    );
    let ids: Vec<String> = rig
        .deliveries("bus")
        .await
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(ids.len(), 9);

    // what the bus's rule delivered: EventBridge events, the envelope in
    // `detail`
    let events: Vec<serde_json::Value> = rig
        .take_all(&rig.bus_queue)
        .await
        .iter()
        .map(|body| json(body.as_bytes(), "an EventBridge event"))
        .collect();
    assert_eq!(events.len(), 9, "{events:?}");
    for event in &events {
        assert_eq!(event["source"], SOURCE, "{event}");
        assert_eq!(event["detail-type"], event["detail"]["type"], "{event}");
        assert_eq!(event["detail"]["version"], 1, "{event}");
    }
    let delivered: BTreeSet<&str> = events
        .iter()
        .map(|e| e["detail"]["id"].as_str().expect("the delivery id"))
        .collect();
    assert_eq!(delivered, ids.iter().map(String::as_str).collect());

    let mut command = rig.python(LAMBDA);
    command
        .arg(examples())
        .env("DEDUP_TABLE", &table)
        .env_remove("DEDUP_TTL_DAYS");
    let input = serde_json::to_vec(&events).expect("json");
    let output = run(
        "the Python Lambda handler",
        command,
        Some(input),
        PYTHON_HINT,
    )
    .await;
    let outcome = json(&output.stdout, "the handler's run");
    assert_eq!(
        outcome["failure_raised"], true,
        "a failed processing is an error to Lambda (which retries): {outcome}"
    );
    assert_eq!(
        outcome["left_after_failure"],
        serde_json::Value::Null,
        "a failed processing leaves its id unrecorded: {outcome}"
    );
    let log: Vec<String> = String::from_utf8_lossy(&output.stderr)
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(
        counts(&logged(&log, "processed")),
        once(&ids),
        "each delivery processed once (the failed attempt's retry included): {log:#?}"
    );
    assert_eq!(
        counts(&logged(&log, "duplicate")),
        once(&ids),
        "each second copy acknowledged as a duplicate: {log:#?}"
    );
    let recorded = rig.recorded(&table).await;
    let expected: BTreeMap<String, (String, usize)> = ids
        .iter()
        .map(|id| (id.clone(), ("processed".to_string(), 1)))
        .collect();
    assert_eq!(recorded, expected, "DynamoDB holds each id once, processed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_consumer_processes_each_fifo_delivery_once_in_order_across_a_replay() {
    let rig = Rig::new().await;
    let table = rig.table("sqs-dedup").await;
    rig.post_nine().await;
    assert_eq!(
        rig.drain().await,
        18,
        "nine events, each to the bus and the queue"
    );
    let first = rig.node_consumer(&table).await;
    assert_eq!(logged(&first, "processed").len(), 9, "{first:#?}");
    assert!(logged(&first, "duplicate").is_empty(), "{first:#?}");

    // an operator replays the queue's deliveries (the same ids) while new
    // events of two customers arrive
    assert_eq!(rig.replay("fifo").await, 9);
    rig.post("evt_c1_3", "invoice.voided", "c1").await;
    rig.post("evt_c3_3", "charge.refunded", "c3").await;
    assert_eq!(
        rig.drain().await,
        9 + 2 * 2,
        "the replayed rows and the new events"
    );
    let second = rig.node_consumer(&table).await;

    let deliveries = rig.deliveries("fifo").await;
    assert_eq!(deliveries.len(), 11);
    let replayed: Vec<String> = deliveries[..9].iter().map(|(id, _)| id.clone()).collect();
    let new: Vec<String> = deliveries[9..].iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(
        counts(&logged(&first, "processed")),
        once(&replayed),
        "the first run: {first:#?}"
    );
    assert_eq!(
        counts(&logged(&second, "duplicate")),
        once(&replayed),
        "the replayed deliveries deleted as duplicates: {second:#?}"
    );
    assert_eq!(
        counts(&logged(&second, "processed")),
        once(&new),
        "only the new ones processed: {second:#?}"
    );

    // each customer's deliveries processed in the order hookbox received
    // them
    let processed: Vec<String> =
        [logged(&first, "processed"), logged(&second, "processed")].concat();
    let aggregate: BTreeMap<&str, &str> = deliveries
        .iter()
        .map(|(id, key)| (id.as_str(), key.as_str()))
        .collect();
    let mut by_key: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for id in &processed {
        by_key.entry(aggregate[id.as_str()]).or_default().push(id);
    }
    let mut received: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (id, key) in &deliveries {
        received.entry(key).or_default().push(id);
    }
    assert_eq!(
        by_key, received,
        "each customer's deliveries in received order"
    );
    assert_eq!(received.len(), 3);

    let recorded = rig.recorded(&table).await;
    let all: Vec<String> = deliveries.into_iter().map(|(id, _)| id).collect();
    let expected: BTreeMap<String, (String, usize)> = all
        .iter()
        .map(|id| (id.clone(), ("processed".to_string(), 1)))
        .collect();
    assert_eq!(recorded, expected, "DynamoDB holds each id once, processed");
    assert_eq!(rig.queued(&rig.fifo).await, 0, "every message deleted");
}

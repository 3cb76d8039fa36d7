//! Batched webhooks (one POST carrying many events), through both database
//! adapters and the real ingest use case: each event stored once with its
//! own id and type in ONE statement, duplicates inside and across POSTs
//! stored once, routes matched per event, a retried POST storing nothing;
//! a batch that is not what its declaration says refused naming the
//! event, nothing stored; a database outage spools every event.

mod common;
#[path = "processing_support/mod.rs"]
mod processing_support;

use std::sync::Arc;
use std::time::Duration;

use common::{Adapter, count, migrated_db, sql};
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::inbox;
use hookbox::inbox::body::Body;
use hookbox::inbox::ingest::{Ingest, IngestRequest, IngestResponse, Outcome};
use hookbox::metrics::Metrics;
use hookbox::params;
use hookbox::processing::{Processor, ProcessorConfig, RoutingHandler};
use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
use hookbox::signature::Headers;
use hookbox::signature::Secret;
use hookbox::signature::presets::{self, Outgoing, SigningKey};
use hookbox::store::Database;
use processing_support::CountingDb;
use serde_json::json;

const SECRET: &str = "hubspot-client-secret";
const URL: &str = "https://hooks.example.com/webhooks/hubspot";

fn config(extra: serde_json::Value) -> HookboxConfig {
    let mut hubspot = json!({
        "preset": "hubspot",
        "secrets": [SECRET],
        "public_url": URL,
        "routes": [{"to": "crm", "event_types": ["contact.creation"]}],
        "unrouted": "drop",
    });
    if let (Some(h), Some(extra)) = (hubspot.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            h.insert(k.clone(), v.clone());
        }
    }
    HookboxConfig::parse(
        &json!({
            "partners": {"hubspot": hubspot},
            "destinations": {"crm": {"url": "https://crm.example.com/hooks",
                                     "secrets": ["whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA=="]}},
        })
        .to_string(),
        "test",
    )
    .expect("config")
}

struct Rig {
    db: Arc<dyn Database>,
    counting: Arc<CountingDb>,
    clock: Arc<ManualClock>,
    queue: MemoryQueue,
    blobs: Arc<MemoryBlobStore>,
    ingest: Ingest,
    handler: RoutingHandler,
}

impl Rig {
    async fn new(db: Arc<dyn Database>, forward: bool, extra: serde_json::Value) -> Self {
        Self::with(db.clone(), db, forward, extra).await
    }

    /// Ingest stores through `ingest_db`; the rest reads `db`.
    async fn with(
        db: Arc<dyn Database>,
        ingest_db: Arc<dyn Database>,
        forward: bool,
        extra: serde_json::Value,
    ) -> Self {
        let clock = Arc::new(ManualClock::new(common::t0()));
        let queue = MemoryQueue::new(
            MemoryQueueConfig {
                visibility_timeout: Duration::from_secs(30),
                max_receive_count: 5,
            },
            clock.clone(),
        );
        let cfg = config(extra);
        hookbox::outbox::destinations::sync(db.as_ref(), &cfg, clock.now())
            .await
            .expect("sync the destinations");
        let store = Arc::new(ConfigStore::fixed(cfg, clock.clone()));
        let blobs = Arc::new(MemoryBlobStore::new());
        let counting = Arc::new(CountingDb::new(ingest_db));
        let ingest = Ingest::new(
            store.clone(),
            counting.clone(),
            Arc::new(queue.clone()),
            blobs.clone(),
            clock.clone(),
        )
        .with_forwarding_at_ingest(forward);
        Self {
            db,
            counting,
            clock,
            queue,
            blobs,
            ingest,
            handler: RoutingHandler::new(store),
        }
    }

    /// `body` signed as HubSpot signs it (v3: method, URL, body, time).
    async fn post(&self, body: &str) -> IngestResponse {
        let preset = presets::get("hubspot").expect("preset");
        let now = self.clock.now();
        let signed = preset
            .sign(
                &Outgoing {
                    body: body.as_bytes(),
                    headers: &[],
                    url: Some(URL),
                    method: "POST",
                    timestamp: now,
                },
                SigningKey::Secret(&Secret::new(SECRET)),
            )
            .expect("sign");
        let headers: Vec<(String, String)> = signed
            .into_iter()
            .map(|(n, v)| (n.to_owned(), v))
            .chain([("content-type".to_owned(), "application/json".to_owned())])
            .collect();
        let request = IngestRequest {
            partner: "hubspot",
            headers: Headers::from_pairs(headers.iter().map(|(n, v)| (n.as_str(), v.as_str()))),
            body: body.as_bytes(),
            url: Some(URL),
        };
        self.ingest.handle(&request, &mut Metrics::new()).await
    }

    async fn process(&self) -> Vec<&'static str> {
        let config = ProcessorConfig::default();
        let processor = Processor {
            db: self.db.as_ref(),
            queue: &self.queue,
            blobs: self.blobs.as_ref(),
            clock: self.clock.as_ref(),
            handler: &self.handler,
            config: &config,
        };
        let mut kinds = Vec::new();
        while !self.queue.is_empty() {
            let got = common::process_visible(&processor, &self.queue).await;
            if got.is_empty() {
                break;
            }
            kinds.extend(got);
        }
        kinds
    }

    /// (event_id, event_type, body) of every row, by event id.
    async fn rows(&self) -> Vec<(String, String, String)> {
        let mut rows: Vec<(String, String, String)> = self
            .db
            .execute(
                &sql(
                    "SELECT event_id, event_type, convert_from(body, 'UTF8') AS body
                        FROM inbox ORDER BY received_at, id",
                ),
                &params! {},
            )
            .await
            .expect("rows")
            .rows
            .iter()
            .map(|r| {
                (
                    r.text("event_id").expect("id"),
                    r.text("event_type").expect("type"),
                    r.text("body").expect("body"),
                )
            })
            .collect();
        rows.sort_by_key(|(id, _, _)| id.parse::<u64>().unwrap_or(u64::MAX));
        rows
    }

    /// The event ids the outbox delivers to `crm`, sorted.
    async fn delivered(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .db
            .execute(
                &sql("SELECT payload->>'eventId' AS id FROM outbox WHERE destination = 'crm'"),
                &params! {},
            )
            .await
            .expect("outbox")
            .rows
            .iter()
            .map(|r| r.text("id").expect("id").parse().expect("number"))
            .collect();
        ids.sort_unstable();
        ids
    }
}

/// A HubSpot event as HubSpot writes it: even ids are contact.creation.
fn event(id: u64) -> String {
    let kind = if id.is_multiple_of(2) {
        "contact.creation"
    } else {
        "contact.propertyChange"
    };
    format!(
        r#"{{"eventId":{id},"subscriptionId":7,"portalId":62515,"occurredAt":1733000000000,"subscriptionType":"{kind}","attemptNumber":0,"objectId":{}}}"#,
        1000 + id
    )
}

fn batch(ids: impl IntoIterator<Item = u64>) -> String {
    let events: Vec<String> = ids.into_iter().map(event).collect();
    format!("[{}]", events.join(","))
}

fn counts(r: &IngestResponse) -> (u64, u64, u64) {
    let n = |k: &str| {
        r.body[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} in {}", r.body))
    };
    (n("events"), n("stored"), n("duplicates"))
}

/// The acceptance case: 100 events, 30 stored by an earlier POST, 10
/// repeated inside this one: exactly the 60 new stored, in one statement.
fn hundred() -> (String, Vec<u64>) {
    let ids: Vec<u64> = (1..=30).chain(31..=90).chain(31..=40).collect();
    assert_eq!(ids.len(), 100);
    (batch(ids.iter().copied()), ids)
}

async fn a_batch_stores_each_new_event_once_in_one_statement_and_forwards_by_its_type(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let rig = Rig::new(db.clone(), true, json!({})).await;
    let first = rig.post(&batch(1..=30)).await;
    assert_eq!(first.status, 200, "{first:?}");
    assert_eq!(counts(&first), (30, 30, 0));

    let (body, _) = hundred();
    let before = rig.counting.counts.total();
    let r = rig.post(&body).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["status"], "accepted");
    assert_eq!(counts(&r), (100, 60, 40));
    assert!(matches!(r.outcome, Outcome::Batch(c) if c.forwarded == 60));
    let ids = r.body["ids"].as_array().expect("ids");
    assert_eq!(ids.len(), 90, "the row of each distinct event, in order");
    let first_ids = first.body["ids"].as_array().expect("ids");
    assert_eq!(
        &ids[..30],
        &first_ids[..],
        "the 30 stored before: their rows"
    );
    assert_eq!(
        rig.counting.counts.total() - before,
        1,
        "one database call for the whole POST"
    );
    let rows = rig.rows().await;
    assert_eq!(rows.len(), 90);
    for (i, (id, event_type, body)) in rows.iter().enumerate() {
        let n = i as u64 + 1;
        assert_eq!(id, &n.to_string());
        assert_eq!(body, &event(n), "each row holds its event's exact bytes");
        let expected = if n.is_multiple_of(2) {
            "contact.creation"
        } else {
            "contact.propertyChange"
        };
        assert_eq!(event_type, expected);
    }
    // the route on contact.creation: those events only, each once
    let even: Vec<u64> = (1..=90).filter(|n: &u64| n.is_multiple_of(2)).collect();
    assert_eq!(rig.delivered().await, even);
    assert_eq!(rig.queue.len(), 0, "finished at ingest: nothing enqueued");

    // the provider retries the whole POST: nothing stored, success
    let again = rig.post(&body).await;
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(counts(&again), (100, 0, 100));
    assert_eq!(
        count(db.as_ref(), "SELECT count(*) AS n FROM inbox").await,
        90
    );
    assert_eq!(rig.delivered().await, even);
}

async fn without_forwarding_at_ingest_each_new_event_is_enqueued_and_processed(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let rig = Rig::new(db.clone(), false, json!({})).await;
    rig.post(&batch(1..=30)).await;
    rig.process().await;
    let (body, _) = hundred();
    let before = rig.counting.counts.total();
    let r = rig.post(&body).await;
    assert_eq!(counts(&r), (100, 60, 40), "{r:?}");
    assert_eq!(rig.counting.counts.total() - before, 1);
    assert_eq!(rig.queue.len(), 60, "one message per new event");
    let kinds = rig.process().await;
    assert_eq!(kinds.len(), 60, "{kinds:?}");
    assert_eq!(
        count(
            db.as_ref(),
            "SELECT count(*) AS n FROM inbox WHERE status = 'processed'"
        )
        .await,
        90
    );
    let even: Vec<u64> = (1..=90).filter(|n: &u64| n.is_multiple_of(2)).collect();
    assert_eq!(rig.delivered().await, even);
}

async fn a_batch_that_is_not_what_its_declaration_says_stores_nothing(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let rig = Rig::new(db.clone(), true, json!({})).await;
    let missing_id = format!(
        "[{},{}]",
        event(1),
        r#"{"subscriptionType":"contact.creation","objectId":5}"#
    );
    for (body, status, code, names) in [
        ("[]".to_owned(), 400, "batch_empty", "holds no event"),
        (event(1), 400, "batch_not_array", "not a JSON array"),
        (missing_id, 400, "missing_event_id", "event 1 (of 2)"),
        (batch(1..=1001), 413, "batch_too_large", "1001 events"),
    ] {
        let r = rig.post(&body).await;
        assert_eq!(r.status, status, "{r:?}");
        assert_eq!(r.body["error"], code, "{r:?}");
        let detail = r.body["detail"].as_str().expect("detail");
        assert!(detail.contains(names), "{detail}");
    }
    assert_eq!(
        count(db.as_ref(), "SELECT count(*) AS n FROM inbox").await,
        0
    );
    // a forged POST is refused before any of it is read
    let mut forged = batch(1..=3);
    forged.push(' ');
    let preset = presets::get("hubspot").expect("preset");
    let signed = preset
        .sign(
            &Outgoing {
                body: batch(1..=3).as_bytes(),
                headers: &[],
                url: Some(URL),
                method: "POST",
                timestamp: rig.clock.now(),
            },
            SigningKey::Secret(&Secret::new(SECRET)),
        )
        .expect("sign");
    let headers: Vec<(String, String)> =
        signed.into_iter().map(|(n, v)| (n.to_owned(), v)).collect();
    let r = rig
        .ingest
        .handle(
            &IngestRequest {
                partner: "hubspot",
                headers: Headers::from_pairs(headers.iter().map(|(n, v)| (n.as_str(), v.as_str()))),
                body: forged.as_bytes(),
                url: Some(URL),
            },
            &mut Metrics::new(),
        )
        .await;
    assert_eq!(r.status, 401, "{r:?}");
    assert_eq!(
        count(db.as_ref(), "SELECT count(*) AS n FROM inbox").await,
        0
    );
}

async fn large_events_go_to_the_blob_store_and_the_rest_stay_inline(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let clock_rig = Rig::new(db.clone(), false, json!({})).await;
    let rig = Rig {
        ingest: clock_rig.ingest.clone().with_inline_max(256),
        ..clock_rig
    };
    let big = format!(
        r#"{{"eventId":2,"subscriptionType":"contact.creation","objectId":9,"note":"{}"}}"#,
        "n".repeat(1000)
    );
    let body = format!("[{},{big},{}]", event(1), event(3));
    let r = rig.post(&body).await;
    assert_eq!(counts(&r), (3, 3, 0), "{r:?}");
    let mut kinds = Vec::new();
    for id in ["1", "2", "3"] {
        let row_id = rig
            .db
            .execute(
                &sql("SELECT id FROM inbox WHERE event_id = :e"),
                &params! {"e" => id},
            )
            .await
            .expect("row")
            .rows[0]
            .uuid("id")
            .expect("id");
        let row = inbox::get(rig.db.as_ref(), row_id)
            .await
            .expect("get")
            .expect("row");
        kinds.push(match &row.body {
            Body::Blob(r) => {
                assert_eq!(r.size, big.len() as u64);
                "blob"
            }
            Body::Inline(bytes) => {
                assert_eq!(bytes, event(row.event_id.parse().expect("n")).as_bytes());
                "inline"
            }
            Body::InlineUnread { .. } => "unread",
        });
    }
    assert_eq!(kinds, ["inline", "blob", "inline"]);
    // the processor reads the big one back and forwards it
    rig.process().await;
    assert_eq!(rig.delivered().await, vec![2]);
}

async fn with_the_database_down_every_event_is_spooled_and_stored_once_later(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let rig = Rig::with(db.clone(), Arc::new(common::DownDb), false, json!({})).await;
    let body = batch([1, 2, 3, 2, 4]);
    let r = rig.post(&body).await;
    assert_eq!(r.status, 202, "{r:?}");
    assert_eq!(r.body["status"], "spooled");
    assert_eq!(r.body["events"], 5);
    assert_eq!(r.outcome, Outcome::Spooled);
    assert_eq!(rig.queue.len(), 4, "each distinct event spooled once");
    // the processor stores and forwards them once the database is back
    rig.process().await;
    let rows = rig.rows().await;
    assert_eq!(
        rows.iter()
            .map(|(id, _, _)| id.as_str())
            .collect::<Vec<_>>(),
        ["1", "2", "3", "4"]
    );
    assert_eq!(rows[3].2, event(4));
    assert_eq!(rig.delivered().await, vec![2, 4]);
    assert_eq!(
        count(
            db.as_ref(),
            "SELECT count(*) AS n FROM inbox WHERE status = 'processed'"
        )
        .await,
        4
    );
}

async fn batch_false_keeps_one_row_per_post(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let rig = Rig::new(db.clone(), false, json!({"batch": false})).await;
    let r = rig.post(&batch(1..=3)).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(matches!(r.outcome, Outcome::Accepted { .. }), "{r:?}");
    assert_eq!(
        count(db.as_ref(), "SELECT count(*) AS n FROM inbox").await,
        1
    );
    let row = rig
        .db
        .execute(&sql("SELECT event_id_derived FROM inbox"), &params! {})
        .await
        .expect("row");
    assert!(row.rows[0].bool("event_id_derived").expect("derived"));
}

async fn the_acknowledgement_a_provider_expects_answers_each_2xx(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let rig = Rig::new(db.clone(), true, json!({"acknowledge": "[accepted]"})).await;
    for (body, status) in [
        (batch(1..=2), 200),
        (batch(1..=2), 200),
        ("[]".to_owned(), 400),
    ] {
        let r = rig.post(&body).await;
        assert_eq!(r.status, status, "{r:?}");
        match r.handshake.as_deref() {
            Some(answer) => {
                assert_eq!(status, 200, "only a 2xx is acknowledged");
                assert_eq!(answer.status, 200);
                assert_eq!(answer.body, b"[accepted]");
                assert_eq!(answer.content_type, Some("text/plain"));
            }
            None => assert_eq!(status, 400, "a refusal stays JSON: {r:?}"),
        }
    }
    assert_eq!(
        count(db.as_ref(), "SELECT count(*) AS n FROM inbox").await,
        2
    );
}

/// Ingest for one partner `name` configured as `partner`, nothing routed.
fn plain_ingest(
    db: Arc<dyn Database>,
    name: &str,
    partner: serde_json::Value,
) -> (Ingest, MemoryQueue) {
    plain_ingest_at(db, name, partner, common::t0())
}

/// [`plain_ingest`] with its clock at `now`.
fn plain_ingest_at(
    db: Arc<dyn Database>,
    name: &str,
    partner: serde_json::Value,
    now: chrono::DateTime<chrono::Utc>,
) -> (Ingest, MemoryQueue) {
    let clock = Arc::new(ManualClock::new(now));
    let queue = MemoryQueue::new(MemoryQueueConfig::default(), clock.clone());
    let cfg = HookboxConfig::parse(&json!({"partners": {name: partner}}).to_string(), "test")
        .expect("config");
    let ingest = Ingest::new(
        Arc::new(ConfigStore::fixed(cfg, clock.clone())),
        db,
        Arc::new(queue.clone()),
        Arc::new(MemoryBlobStore::new()),
        clock,
    );
    (ingest, queue)
}

/// Four items of Adyen's Python library's tests, each signed on its own.
const ADYEN_SLASHES: &str = include_str!("presets/adyen_standard_slashes.json");
const ADYEN_SLASHES_KEY: &str = "74F490DD33F7327BAECC88B2947C011FC02D014A473AAA33A8EC93E4DC069174";

async fn adyen_items_are_each_verified_stored_and_acknowledged(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let (ingest, queue) = plain_ingest(
        db.clone(),
        "adyen",
        json!({"preset": "adyen-standard", "secrets": [ADYEN_SLASHES_KEY]}),
    );
    let post = |body: String| {
        let ingest = &ingest;
        async move {
            let request = IngestRequest {
                partner: "adyen",
                headers: Headers::from_pairs([("content-type", "application/json")]),
                body: body.as_bytes(),
                url: None,
            };
            ingest.handle(&request, &mut Metrics::new()).await
        }
    };
    // one forged item refuses the whole POST, naming it; nothing stored
    let mut forged: serde_json::Value = serde_json::from_str(ADYEN_SLASHES).expect("json");
    forged["notificationItems"][2]["NotificationRequestItem"]["amount"]["value"] = json!(99999);
    let r = post(forged.to_string()).await;
    assert_eq!(r.status, 401, "{r:?}");
    assert!(r.handshake.is_none(), "a refusal is not acknowledged");
    assert!(
        r.body["detail"]
            .as_str()
            .is_some_and(|d| d.contains("item #2")),
        "{r:?}"
    );
    assert_eq!(
        count(db.as_ref(), "SELECT count(*) AS n FROM inbox").await,
        0
    );

    // the real POST: each item its own row, acknowledged as Adyen expects
    let r = post(ADYEN_SLASHES.to_owned()).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(counts(&r), (4, 4, 0));
    let answer = r.handshake.as_deref().expect("acknowledged");
    assert_eq!(answer.body, b"[accepted]");
    assert_eq!(queue.len(), 4);
    let items: serde_json::Value = serde_json::from_str(ADYEN_SLASHES).expect("json");
    let rows = db
        .execute(
            &sql(
                "SELECT event_id, event_type, convert_from(body, 'UTF8') AS body FROM inbox
                   ORDER BY id",
            ),
            &params! {},
        )
        .await
        .expect("rows")
        .rows;
    for (i, row) in rows.iter().enumerate() {
        let item = &items["notificationItems"][i]["NotificationRequestItem"];
        let id = format!(
            "{}:{}:{}",
            item["pspReference"].as_str().expect("psp"),
            item["eventCode"].as_str().expect("code"),
            item["success"].as_str().expect("success")
        );
        assert_eq!(row.text("event_id").expect("id"), id);
        assert_eq!(row.text("event_type").expect("type"), item["eventCode"]);
        let stored: serde_json::Value =
            serde_json::from_str(&row.text("body").expect("body")).expect("json");
        assert_eq!(&stored, item, "the item itself is the event");
    }
    // Adyen resends: duplicates, still acknowledged
    let r = post(ADYEN_SLASHES.to_owned()).await;
    assert_eq!(counts(&r), (4, 0, 4));
    assert!(r.handshake.is_some());
}

/// SendGrid's Event Webhook vector of sendgrid/sendgrid-python
/// (test/unit/test_eventwebhook.py): an array, ECDSA-signed with its
/// timestamp.
const SENDGRID_BODY: &str = "[{\"email\":\"hello@world.com\",\"event\":\"dropped\",\"reason\":\"Bounced Address\",\"sg_event_id\":\"ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA\",\"sg_message_id\":\"LRzXl_NHStOGhQ4kofSm_A.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0\",\"smtp-id\":\"<LRzXl_NHStOGhQ4kofSm_A@ismtpd0039p1iad1.sendgrid.net>\",\"timestamp\":1600112492}]\r\n";
const SENDGRID_KEY: &str = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g==";
const SENDGRID_SIGNATURE: &str = "MEUCIGHQVtGj+Y3LkG9fLcxf3qfI10QysgDWmMOVmxG0u6ZUAiEAyBiXDWzM+uOe5W0JuG+luQAbPIqHh89M15TluLtEZtM=";

async fn sendgrid_and_meta_batches_split_as_their_providers_send_them(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    // SendGrid: its SDK's signed array, each event by its sg_event_id
    let at = chrono::DateTime::from_timestamp(1_600_112_502, 0).expect("time");
    let (sendgrid, _) = plain_ingest_at(
        db.clone(),
        "sendgrid",
        json!({"preset": "sendgrid", "secrets": [SENDGRID_KEY]}),
        at,
    );
    let headers = [
        ("X-Twilio-Email-Event-Webhook-Signature", SENDGRID_SIGNATURE),
        ("X-Twilio-Email-Event-Webhook-Timestamp", "1600112502"),
        ("content-type", "application/json"),
    ];
    let send = |body: &'static str| {
        let sendgrid = &sendgrid;
        async move {
            let request = IngestRequest {
                partner: "sendgrid",
                headers: Headers::from_pairs(headers),
                body: body.as_bytes(),
                url: None,
            };
            sendgrid.handle(&request, &mut Metrics::new()).await
        }
    };
    let r = send(SENDGRID_BODY).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(counts(&r), (1, 1, 0));
    let row = db
        .execute(
            &sql("SELECT event_id, event_type, ordering_key FROM inbox WHERE partner = 'sendgrid'"),
            &params! {},
        )
        .await
        .expect("row")
        .rows;
    assert_eq!(
        row[0].text("event_id").expect("id"),
        "ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA"
    );
    assert_eq!(row[0].text("event_type").expect("type"), "dropped");
    assert!(
        row[0]
            .text("ordering_key")
            .expect("key")
            .starts_with("LRzXl_NHStOGhQ4kofSm_A.")
    );
    // other bytes under the same signature: refused, nothing more stored
    let r = send("[{\"email\":\"hello@world.com\",\"event\":\"dropped\"}]\r\n").await;
    assert_eq!(r.status, 401, "{r:?}");

    // Meta (WhatsApp): each entry its own event, typed by its change's field
    let (meta, _) = plain_ingest(
        db.clone(),
        "meta",
        json!({"preset": "meta", "secrets": ["meta-app-secret"], "verify_tokens": ["tok-1"]}),
    );
    let body = r#"{"object":"whatsapp_business_account","entry":[{"id":"WABA-1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","messages":[{"id":"wamid.1"}]}}]},{"id":"WABA-2","changes":[{"field":"message_template_status_update","value":{"event":"APPROVED"}}]}]}"#;
    let preset = presets::get("meta").expect("preset");
    for expected in [(2, 2, 0), (2, 0, 2)] {
        let r = common::ingest_signed_by_preset(
            &meta,
            "meta",
            preset,
            "meta-app-secret",
            &[("content-type", "application/json")],
            body,
            common::t0(),
        )
        .await;
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(counts(&r), expected, "then a resend: duplicates");
    }
    let rows = db
        .execute(
            &sql(
                "SELECT event_type, ordering_key, event_id_derived FROM inbox
                   WHERE partner = 'meta' ORDER BY id",
            ),
            &params! {},
        )
        .await
        .expect("rows")
        .rows;
    let got: Vec<(String, String, bool)> = rows
        .iter()
        .map(|r| {
            (
                r.text("event_type").expect("type"),
                r.text("ordering_key").expect("key"),
                r.bool("event_id_derived").expect("derived"),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("messages".to_owned(), "WABA-1".to_owned(), true),
            (
                "message_template_status_update".to_owned(),
                "WABA-2".to_owned(),
                true
            ),
        ]
    );
}

#[test]
fn an_acknowledgement_is_short_printable_text() {
    for bad in [json!(""), json!("a\nb"), json!("x".repeat(257))] {
        let text = json!({
            "partners": {"p": {"preset": "hubspot", "secrets": ["s"], "acknowledge": bad}}
        })
        .to_string();
        let e = HookboxConfig::parse(&text, "test").expect_err("refused");
        assert!(e.to_string().contains("acknowledge"), "{e}");
    }
    // the preset that needs one has it; the others answer JSON
    assert_eq!(
        hookbox::config::acknowledgement_of_preset("adyen-standard"),
        Some("[accepted]")
    );
    assert_eq!(hookbox::config::acknowledgement_of_preset("hubspot"), None);
}

for_each_adapter!(
    sendgrid_and_meta_batches_split_as_their_providers_send_them,
    adyen_items_are_each_verified_stored_and_acknowledged,
    the_acknowledgement_a_provider_expects_answers_each_2xx,
    a_batch_stores_each_new_event_once_in_one_statement_and_forwards_by_its_type,
    without_forwarding_at_ingest_each_new_event_is_enqueued_and_processed,
    a_batch_that_is_not_what_its_declaration_says_stores_nothing,
    large_events_go_to_the_blob_store_and_the_rest_stay_inline,
    with_the_database_down_every_event_is_spooled_and_stored_once_later,
    batch_false_keeps_one_row_per_post,
);

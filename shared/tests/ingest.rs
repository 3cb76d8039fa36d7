//! The ingest use case against real PostgreSQL and moto SQS: accepted,
//! duplicate, concurrent duplicates, signature failures, oversize, event id
//! extraction, spooling when the database is down, 503 when the queue is
//! down too.

mod common;

use std::sync::Arc;
use std::time::Duration;

use chrono::TimeZone;
use common::{Adapter, migrated_db_with};
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::inbox::ingest::{Ingest, IngestRequest, IngestResponse, Outcome};
use hookbox::inbox::{InboxMessage, InboxStatus};
use hookbox::metrics::Metrics;
use hookbox::queue::QueueConsumer;
use hookbox::queue::sqs::SqsQueue;
use hookbox::signature::{Headers, Secret, sign_standard_webhooks};
use hookbox::store::{Database, Executor};
use hookbox_testkit::moto;
use tokio::sync::Barrier;
use uuid::Uuid;

const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

fn config_json() -> String {
    serde_json::json!({"partners": {
        "demo": {
            "signature": {"scheme": "standard-webhooks"},
            "secrets": ["whsec_b2xkLW9sZC1vbGQtb2xkLW9sZC1vbGQ=", SECRET],
            "event_id": {"header": "webhook-id"},
            "event_type": "/type",
            "ordering_key": "/order_id",
            "max_body_bytes": 4096
        },
        "gh": {
            "signature": {"scheme": "github"},
            "secrets": ["It's a Secret to Everybody"],
            "event_id": {"json_pointer": "/delivery"}
        },
        "anon": {"signature": {"scheme": "github"}, "secrets": ["It's a Secret to Everybody"]},
        "ghh": {
            "signature": {"scheme": "github"},
            "secrets": ["It's a Secret to Everybody"],
            "event_id": {"header": "x-github-delivery"}
        },
        "ghh-id-only": {
            "signature": {"scheme": "github"},
            "secrets": ["It's a Secret to Everybody"],
            "event_id": {"header": "x-github-delivery"},
            "dedupe_on_body": false
        },
        "big": {
            "signature": {"scheme": "standard-webhooks"},
            "secrets": [SECRET],
            "event_id": {"header": "webhook-id"},
            "event_type": "/type",
            "max_body_bytes": 4_194_304
        }
    }})
    .to_string()
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(
        chrono::Utc
            .with_ymd_and_hms(2026, 6, 1, 12, 0, 0)
            .single()
            .expect("valid"),
    ))
}

struct Rig {
    ingest: Ingest,
    db: Arc<dyn Database>,
    queue: SqsQueue,
    blobs: Arc<MemoryBlobStore>,
    clock: Arc<ManualClock>,
    _t: hookbox_testkit::TestDb,
}

async fn rig_with(db: Arc<dyn Database>, t: hookbox_testkit::TestDb, queue: SqsQueue) -> Rig {
    let clock = clock();
    let config = HookboxConfig::parse(&config_json(), "test").expect("config");
    let store = Arc::new(ConfigStore::fixed(config, clock.clone()));
    let blobs = Arc::new(MemoryBlobStore::new());
    let ingest = Ingest::new(
        store,
        db.clone(),
        Arc::new(queue.clone()),
        blobs.clone(),
        clock.clone(),
    );
    Rig {
        ingest,
        db,
        queue,
        blobs,
        clock,
        _t: t,
    }
}

async fn moto_queue() -> SqsQueue {
    let endpoint = moto::endpoint();
    let q = moto::create_queue(&endpoint, &moto::unique_name("ingest"), 30, 4).await;
    SqsQueue::new(SqsQueue::local_client(&endpoint), q.url)
}

async fn rig() -> Rig {
    let (t, db) = migrated_db_with(Adapter::Postgres, 40).await;
    rig_with(db, t, moto_queue().await).await
}

struct Signed {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn signed(id: &str, body: &str, at: chrono::DateTime<chrono::Utc>) -> Signed {
    let h = sign_standard_webhooks(id, at, body.as_bytes(), &[Secret::new(SECRET)]).expect("sign");
    Signed {
        headers: vec![
            ("Webhook-Id".into(), h.id),
            ("Webhook-Timestamp".into(), h.timestamp),
            ("Webhook-Signature".into(), h.signature),
            ("Content-Type".into(), "application/json".into()),
        ],
        body: body.as_bytes().to_vec(),
    }
}

async fn send(rig: &Rig, partner: &str, s: &Signed) -> (IngestResponse, Metrics) {
    let headers = Headers::from_pairs(s.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    let request = IngestRequest {
        partner,
        headers,
        body: &s.body,
        url: None,
    };
    let mut metrics = Metrics::new();
    let response = rig.ingest.handle(&request, &mut metrics).await;
    (response, metrics)
}

async fn rows(db: &dyn Executor) -> i64 {
    common::count(db, "SELECT count(*) AS n FROM inbox").await
}

async fn drain(queue: &SqsQueue) -> Vec<InboxMessage> {
    let mut out = Vec::new();
    loop {
        let got = queue.receive(10).await.expect("receive");
        if got.is_empty() {
            return out;
        }
        for m in got {
            out.push(InboxMessage::from_body(&m.body).expect("our message"));
            queue.delete(&m.receipt_handle).await.expect("delete");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_event_is_stored_once_and_enqueued_once() {
    let rig = rig().await;
    let body = r#"{"type":"payment.received","order_id":"o-1","amount":12.5}"#;
    let s = signed("msg_1", body, rig.clock.now());
    let (r, metrics) = send(&rig, "demo", &s).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["status"], "accepted");
    let id: Uuid = r.body["id"].as_str().expect("id").parse().expect("uuid");
    assert_eq!(metrics.values("accepted"), Some(&[1.0][..]));
    let row = hookbox::inbox::get(rig.db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(row.partner, "demo");
    assert_eq!(row.event_id, "msg_1");
    assert_eq!(row.body.inline(), Some(body.as_bytes()), "stored verbatim");
    assert_eq!(row.event_type.as_deref(), Some("payment.received"));
    assert_eq!(row.ordering_key.as_deref(), Some("o-1"));
    assert_eq!(row.status, InboxStatus::Pending);
    assert!(row.signature_verified);
    assert_eq!(row.headers["webhook-id"], "msg_1");
    assert!(
        row.headers.get("webhook-signature").is_none(),
        "signatures are not kept"
    );
    assert_eq!(
        drain(&rig.queue).await,
        vec![InboxMessage::stored(id, "demo", "msg_1")]
    );

    // the partner retries: 200 duplicate, same id, nothing enqueued
    let (again, metrics) = send(&rig, "demo", &s).await;
    assert_eq!(again.status, 200);
    assert_eq!(
        again.body,
        serde_json::json!({"status": "duplicate", "id": id})
    );
    assert_eq!(metrics.values("duplicate"), Some(&[1.0][..]));
    assert_eq!(rows(rig.db.as_ref()).await, 1);
    assert!(drain(&rig.queue).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_concurrent_deliveries_make_one_row_and_one_message() {
    let rig = Arc::new(rig().await);
    let s = Arc::new(signed(
        "msg_race",
        r#"{"type":"order.shipped","order_id":"o-9"}"#,
        rig.clock.now(),
    ));
    let barrier = Arc::new(Barrier::new(100));
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let (rig, s, barrier) = (rig.clone(), s.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                send(&rig, "demo", &s).await.0
            })
        })
        .collect();
    let mut accepted = 0;
    for t in tasks {
        let r = t.await.expect("join");
        assert_eq!(r.status, 200, "{r:?}");
        if r.body["status"] == "accepted" {
            accepted += 1;
        }
    }
    assert_eq!(accepted, 1);
    assert_eq!(rows(rig.db.as_ref()).await, 1);
    assert_eq!(drain(&rig.queue).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_signatures_and_timestamps_are_401_and_store_nothing() {
    let rig = rig().await;
    let now = rig.clock.now();
    let body = r#"{"type":"payment.received","order_id":"o-1"}"#;
    let mut tampered = signed("msg_t", body, now);
    tampered.body = br#"{"type":"payment.received","order_id":"o-2"}"#.to_vec();
    let stale = signed("msg_s", body, now - chrono::Duration::seconds(301));
    let future = signed("msg_f", body, now + chrono::Duration::seconds(301));
    let mut missing = signed("msg_m", body, now);
    missing.headers.retain(|(n, _)| n != "Webhook-Signature");
    for (s, code) in [
        (&tampered, "invalid_signature"),
        (&stale, "timestamp_too_old"),
        (&future, "timestamp_in_future"),
        (&missing, "missing_signature_header"),
    ] {
        let (r, metrics) = send(&rig, "demo", s).await;
        assert_eq!(r.status, 401, "{code}: {r:?}");
        assert_eq!(r.body["error"], code);
        assert_eq!(
            metrics.values(&format!("rejected_{code}")),
            Some(&[1.0][..])
        );
        let text = r.body.to_string();
        assert!(
            !text.contains("whsec_") && !text.contains("aG9va2J"),
            "{text}"
        );
    }
    // the boundary is inclusive: 300 s old still passes
    let (edge, _) = send(
        &rig,
        "demo",
        &signed("msg_e", body, now - chrono::Duration::seconds(300)),
    )
    .await;
    assert_eq!(edge.status, 200, "{edge:?}");
    assert_eq!(rows(rig.db.as_ref()).await, 1);
    // unknown partner
    let (unknown, _) = send(&rig, "nobody", &signed("x", body, now)).await;
    assert_eq!(unknown.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_bodies_are_413_and_store_nothing() {
    let rig = rig().await;
    let body = format!(r#"{{"type":"x","pad":"{}"}}"#, "a".repeat(5000));
    let (r, metrics) = send(&rig, "demo", &signed("big", &body, rig.clock.now())).await;
    assert_eq!(r.status, 413);
    assert_eq!(r.body["error"], "body_too_large");
    assert_eq!(metrics.values("rejected_body_too_large"), Some(&[1.0][..]));
    assert_eq!(rows(rig.db.as_ref()).await, 0);
}

fn github(body: &str, partner_headers: &[(&str, &str)]) -> Signed {
    use hmac::{KeyInit, Mac};
    let mut mac =
        hmac::Hmac::<sha2::Sha256>::new_from_slice(b"It's a Secret to Everybody").expect("key");
    mac.update(body.as_bytes());
    let sig = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    let mut headers = vec![("X-Hub-Signature-256".to_string(), sig)];
    headers.extend(
        partner_headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string())),
    );
    Signed {
        headers,
        body: body.as_bytes().to_vec(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_ids_come_from_the_body_or_its_hash() {
    let rig = rig().await;
    let (r, _) = send(&rig, "gh", &github(r#"{"delivery": 42, "x": 1}"#, &[])).await;
    assert_eq!(r.status, 200, "{r:?}");
    let id: Uuid = r.body["id"].as_str().expect("id").parse().expect("uuid");
    let row = hookbox::inbox::get(rig.db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(row.event_id, "42");
    assert!(!row.event_id_derived);

    let (missing, _) = send(&rig, "gh", &github(r#"{"x": 1}"#, &[])).await;
    assert_eq!(missing.status, 400);
    assert_eq!(missing.body["error"], "missing_event_id");
    let (not_json, _) = send(&rig, "gh", &github("delivery=42", &[])).await;
    assert_eq!(not_json.status, 400);
    assert_eq!(not_json.body["error"], "body_not_json");

    // no id configured: sha256 of the body, flagged; the same body is a duplicate
    let (hashed, _) = send(&rig, "anon", &github("plain text body", &[])).await;
    assert_eq!(hashed.status, 200);
    let id: Uuid = hashed.body["id"]
        .as_str()
        .expect("id")
        .parse()
        .expect("uuid");
    let row = hookbox::inbox::get(rig.db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    assert!(row.event_id_derived);
    assert_eq!(
        row.event_id,
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"plain text body"))
    );
    let (dup, _) = send(&rig, "anon", &github("plain text body", &[])).await;
    assert_eq!(dup.body["status"], "duplicate");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn database_down_spools_the_event_and_queue_down_too_is_503() {
    let common::KillableDb { cluster, db, .. } = common::killable_db(Adapter::Postgres).await;
    let private_moto = moto::Moto::start();
    let names = moto::create_queue(private_moto.endpoint(), "spool", 30, 4).await;
    let queue = SqsQueue::new(SqsQueue::local_client(private_moto.endpoint()), names.url);
    let t = hookbox_testkit::TestDb::create().await; // unused; keeps the rig shape
    let rig = rig_with(db, t, queue).await;

    cluster.kill().expect("stop PostgreSQL");
    let body = r#"{"type":"payment.received","order_id":"o-5","amount":3}"#;
    let s = signed("msg_spool", body, rig.clock.now());
    let (r, metrics) = send(&rig, "demo", &s).await;
    assert_eq!(r.status, 202, "{r:?}");
    assert_eq!(r.body, serde_json::json!({"status": "spooled"}));
    assert_eq!(metrics.values("spooled"), Some(&[1.0][..]));
    let spooled = drain(&rig.queue).await;
    assert_eq!(spooled.len(), 1);
    let InboxMessage::Spooled(event) = &spooled[0] else {
        panic!("expected the event itself: {spooled:?}");
    };
    let event = event.to_new_event().expect("event");
    assert_eq!(event.partner, "demo");
    assert_eq!(event.event_id, "msg_spool");
    assert_eq!(
        event.body.inline(),
        Some(body.as_bytes()),
        "full raw body in the message"
    );
    assert!(event.signature_verified);

    private_moto.kill();
    let (r, metrics) = send(&rig, "demo", &signed("msg_lost", body, rig.clock.now())).await;
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(r.retry_after, Some(30));
    assert_eq!(r.outcome, Outcome::Unavailable);
    assert_eq!(metrics.values("unavailable"), Some(&[1.0][..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_failure_after_the_insert_still_answers_200() {
    let (t, db) = migrated_db_with(Adapter::Postgres, 8).await;
    let private_moto = moto::Moto::start();
    let names = moto::create_queue(private_moto.endpoint(), "gone", 30, 4).await;
    let queue = SqsQueue::new(SqsQueue::local_client(private_moto.endpoint()), names.url);
    let rig = rig_with(db, t, queue).await;
    private_moto.kill();
    let (r, metrics) = send(&rig, "demo", &signed("msg_q", "{}", rig.clock.now())).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.outcome,
        Outcome::Accepted {
            enqueue_failed: true
        }
    );
    assert_eq!(metrics.values("enqueue_failed"), Some(&[1.0][..]));
    assert_eq!(
        rows(rig.db.as_ref()).await,
        1,
        "the row is safe for the sweeper"
    );
    let _ = rig.queue.url();
}

/// A JSON order event of about `bytes` bytes (a padding field).
fn large_body(bytes: usize) -> String {
    let pad = "p".repeat(bytes);
    serde_json::json!({"type": "payment.received", "order_id": "o-big", "amount": 1, "pad": pad})
        .to_string()
}

async fn a_large_body_is_stored_by_reference_once(adapter: Adapter) {
    let (t, db) = migrated_db_with(adapter, 10).await;
    let rig = rig_with(db, t, moto_queue().await).await;
    let body = large_body(4_000_000);
    let s = signed("msg_big", &body, rig.clock.now());
    let (r, _) = send(&rig, "big", &s).await;
    assert_eq!(r.status, 200, "{r:?}");
    let id: Uuid = r.body["id"].as_str().expect("id").parse().expect("uuid");
    let row = hookbox::inbox::get(rig.db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    let reference = row.body.blob().expect("stored by reference").clone();
    assert_eq!(reference.size, body.len() as u64);
    assert_eq!(reference.sha256, hookbox::blob::sha256(body.as_bytes()));
    assert_eq!(
        reference.key.as_str(),
        format!("inbox/big/{}", reference.sha256_hex())
    );
    assert_eq!(rig.blobs.len(), 1);
    let stored = hookbox::inbox::body::read(rig.db.as_ref(), rig.blobs.as_ref(), id, &row.body)
        .await
        .expect("read");
    assert!(stored == body.as_bytes(), "the exact bytes");

    // the partner retries: one row, one object
    let (again, _) = send(&rig, "big", &s).await;
    assert_eq!(again.body["status"], "duplicate");
    assert_eq!(rows(rig.db.as_ref()).await, 1);
    assert_eq!(rig.blobs.len(), 1, "content-addressed: the same object");

    // a body at the threshold stays inline
    let small = "x".repeat(hookbox::inbox::body::DEFAULT_INLINE_MAX_BYTES - 40);
    let small = format!(r#"{{"type":"t","pad":"{small}"}}"#);
    assert!(small.len() <= hookbox::inbox::body::DEFAULT_INLINE_MAX_BYTES);
    let (r, _) = send(&rig, "big", &signed("msg_small", &small, rig.clock.now())).await;
    let id: Uuid = r.body["id"].as_str().expect("id").parse().expect("uuid");
    let row = hookbox::inbox::get(rig.db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(row.body.inline(), Some(small.as_bytes()));
    assert_eq!(rig.blobs.len(), 1);
}

async fn the_blob_store_down_is_503_and_nothing_is_stored(adapter: Adapter) {
    let (t, db) = migrated_db_with(adapter, 10).await;
    let rig = rig_with(db, t, moto_queue().await).await;
    rig.blobs.set_unavailable(true);
    let body = large_body(100_000);
    let (r, metrics) = send(&rig, "big", &signed("msg_b", &body, rig.clock.now())).await;
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(r.retry_after, Some(30));
    assert_eq!(metrics.values("unavailable"), Some(&[1.0][..]));
    assert_eq!(
        rows(rig.db.as_ref()).await,
        0,
        "no row refers to a missing object"
    );
    assert!(drain(&rig.queue).await.is_empty());
    // a small body does not need the blob store
    let (r, _) = send(
        &rig,
        "big",
        &signed("msg_s", r#"{"type":"t"}"#, rig.clock.now()),
    )
    .await;
    assert_eq!(r.status, 200, "{r:?}");
}

async fn fields_past_the_row_budget_are_400_or_cut_and_documented(adapter: Adapter) {
    let (t, db) = migrated_db_with(adapter, 10).await;
    let rig = rig_with(db, t, moto_queue().await).await;
    // event type over 256 bytes: 400 naming the field, nothing stored
    let long_type = serde_json::json!({"type": "t".repeat(257), "order_id": "o"}).to_string();
    let (r, _) = send(&rig, "demo", &signed("msg_t", &long_type, rig.clock.now())).await;
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(r.body["error"], "event_type_too_long");
    assert!(
        r.body["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("event_type of 257 bytes is over 256")
    );
    // ordering key over 512 bytes
    let long_key = serde_json::json!({"type": "t", "order_id": "k".repeat(513)}).to_string();
    let (r, _) = send(&rig, "demo", &signed("msg_k", &long_key, rig.clock.now())).await;
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(r.body["error"], "ordering_key_too_long");
    assert_eq!(rows(rig.db.as_ref()).await, 0, "no 4xx leaves a row");
    // at the limits: stored
    let at_limits =
        serde_json::json!({"type": "t".repeat(256), "order_id": "k".repeat(512)}).to_string();
    let (r, _) = send(&rig, "demo", &signed("msg_ok", &at_limits, rig.clock.now())).await;
    assert_eq!(r.status, 200, "{r:?}");

    // a huge stored header is cut deterministically, never refused
    let body = r#"{"type":"t","order_id":"o"}"#;
    let mut s = signed("msg_h", body, rig.clock.now());
    s.headers.push(("User-Agent".into(), "é".repeat(3000)));
    let (r, _) = send(&rig, "demo", &s).await;
    assert_eq!(r.status, 200, "{r:?}");
    let id: Uuid = r.body["id"].as_str().expect("id").parse().expect("uuid");
    let row = hookbox::inbox::get(rig.db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    let agent = row.headers["user-agent"].as_str().expect("kept");
    assert!(agent.ends_with("…[cut: 6000 bytes]"), "{agent}");
    assert!(agent.len() <= hookbox::inbox::ingest::MAX_STORED_HEADER_VALUE_BYTES + 30);
}

async fn text_the_storage_refuses_is_stored_escaped_and_deduplicated(adapter: Adapter) {
    let (t, db) = migrated_db_with(adapter, 10).await;
    let rig = rig_with(db, t, moto_queue().await).await;
    // NUL in the event type and the ordering key (PostgreSQL text refuses it)
    let body =
        serde_json::json!({"type": "payment\u{0}received", "order_id": "o\u{0}1"}).to_string();
    let s = signed("msg_nul", &body, rig.clock.now());
    let (r, _) = send(&rig, "demo", &s).await;
    assert_eq!(r.status, 200, "{r:?}");
    let id: Uuid = r.body["id"].as_str().expect("id").parse().expect("uuid");
    let row = hookbox::inbox::get(rig.db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(row.event_type.as_deref(), Some(r"esc:payment\0received"));
    assert_eq!(row.ordering_key.as_deref(), Some(r"esc:o\01"));
    assert_eq!(
        row.body.inline(),
        Some(body.as_bytes()),
        "the raw body byte-exact"
    );
    let (again, _) = send(&rig, "demo", &s).await;
    assert_eq!(again.body["status"], "duplicate");

    // an event id with NUL and U+FFFE (SQS refuses U+FFFE in a message)
    let odd = "d\u{0}\u{FFFE}-1";
    let body = serde_json::json!({ "delivery": odd }).to_string();
    let s = github(&body, &[]);
    let (r, metrics) = send(&rig, "gh", &s).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        metrics.values("enqueue_failed"),
        None,
        "the message was sent"
    );
    let (again, _) = send(&rig, "gh", &s).await;
    assert_eq!(again.body["status"], "duplicate", "the same dedupe key");
    assert_eq!(rows(rig.db.as_ref()).await, 2);
    let messages = drain(&rig.queue).await;
    let keys: Vec<(String, String)> = messages
        .iter()
        .map(|m| {
            let (p, e) = m.key();
            (p.to_string(), e.to_string())
        })
        .collect();
    assert!(
        keys.contains(&("gh".to_string(), "esc:d\\0\u{FFFE}-1".to_string())),
        "{keys:?}"
    );
}

async fn a_captured_request_resent_with_a_fresh_id_is_a_duplicate(adapter: Adapter) {
    // GitHub signs the body only: X-GitHub-Delivery is not covered, so an
    // attacker who captured a request can resend it with a new delivery id.
    let (t, db) = migrated_db_with(adapter, 10).await;
    let rig = rig_with(db, t, moto_queue().await).await;
    let body = r#"{"action":"opened","number":7}"#;
    let (first, _) = send(&rig, "ghh", &github(body, &[("X-GitHub-Delivery", "d-1")])).await;
    assert_eq!(first.body["status"], "accepted", "{first:?}");
    let (replayed, _) = send(&rig, "ghh", &github(body, &[("X-GitHub-Delivery", "d-2")])).await;
    assert_eq!(replayed.status, 200);
    assert_eq!(replayed.body["status"], "duplicate", "{replayed:?}");
    assert_eq!(replayed.body["id"], first.body["id"], "the original row");
    // another body is another event
    let (other, _) = send(
        &rig,
        "ghh",
        &github(
            r#"{"action":"closed","number":7}"#,
            &[("X-GitHub-Delivery", "d-3")],
        ),
    )
    .await;
    assert_eq!(other.body["status"], "accepted");
    // a partner that opted out keeps the id as the only key
    let (a, _) = send(
        &rig,
        "ghh-id-only",
        &github(body, &[("X-GitHub-Delivery", "d-1")]),
    )
    .await;
    let (b, _) = send(
        &rig,
        "ghh-id-only",
        &github(body, &[("X-GitHub-Delivery", "d-2")]),
    )
    .await;
    assert_eq!(a.body["status"], "accepted");
    assert_eq!(b.body["status"], "accepted", "dedupe_on_body: false");
    assert_eq!(rows(rig.db.as_ref()).await, 4);
}

for_each_adapter!(
    a_captured_request_resent_with_a_fresh_id_is_a_duplicate,
    text_the_storage_refuses_is_stored_escaped_and_deduplicated,
    fields_past_the_row_budget_are_400_or_cut_and_documented,
    a_large_body_is_stored_by_reference_once,
    the_blob_store_down_is_503_and_nothing_is_stored,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_spooled_body_travels_as_its_reference() {
    let common::KillableDb { cluster, db, .. } = common::killable_db(Adapter::Postgres).await;
    let t = hookbox_testkit::TestDb::create().await; // unused; keeps the rig shape
    let rig = rig_with(db, t, moto_queue().await).await;
    cluster.kill().expect("stop PostgreSQL");

    // 3 MB: as base64 in a message it could never fit SQS's 1 MiB
    let body = large_body(3_000_000);
    let (r, _) = send(
        &rig,
        "big",
        &signed("msg_spool_big", &body, rig.clock.now()),
    )
    .await;
    assert_eq!(r.status, 202, "{r:?}");
    let received = rig.queue.receive(10).await.expect("receive");
    assert_eq!(received.len(), 1);
    assert!(received[0].body.len() < 2048, "{}", received[0].body);
    let InboxMessage::Spooled(spooled) = InboxMessage::from_body(&received[0].body).expect("ours")
    else {
        panic!("expected a spooled event");
    };
    let event = spooled.to_new_event().expect("event");
    let reference = event.body.blob().expect("by reference");
    let bytes = hookbox::blob::get_verified(rig.blobs.as_ref(), reference)
        .await
        .expect("the object is there before the message");
    assert!(bytes == body.as_bytes());
}

/// A database that never answers (a stuck connection, a cluster resuming).
#[derive(Debug)]
struct Hanging;

#[async_trait::async_trait]
impl Executor for Hanging {
    async fn execute(
        &self,
        _statement: &hookbox::store::Statement,
        _params: &hookbox::store::Params,
    ) -> Result<hookbox::store::Rows, hookbox::store::DbError> {
        std::future::pending().await
    }
}

#[async_trait::async_trait]
impl Database for Hanging {
    async fn begin(&self) -> Result<Box<dyn hookbox::store::Transaction>, hookbox::store::DbError> {
        std::future::pending().await
    }
}

// Paused time: the deadline passes without waiting for it.
#[tokio::test(start_paused = true)]
async fn a_database_that_does_not_answer_in_time_gets_the_event_spooled() {
    use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
    let clock = clock();
    let config = HookboxConfig::parse(&config_json(), "test").expect("config");
    let queue = Arc::new(MemoryQueue::new(
        MemoryQueueConfig::default(),
        clock.clone(),
    ));
    let ingest = Ingest::new(
        Arc::new(ConfigStore::fixed(config, clock.clone())),
        Arc::new(Hanging),
        queue.clone(),
        Arc::new(MemoryBlobStore::new()),
        clock.clone(),
    )
    .with_db_deadline(Duration::from_secs(3));
    let body = r#"{"type":"payment.received","order_id":"o-9","amount":1}"#;
    let s = signed("msg_slow", body, clock.now());
    let request = IngestRequest {
        partner: "demo",
        headers: Headers::from_pairs(s.headers.iter().map(|(n, v)| (n.as_str(), v.as_str()))),
        body: &s.body,
        url: None,
    };
    let started = tokio::time::Instant::now();
    let response = ingest.handle(&request, &mut Metrics::new()).await;
    assert_eq!(response.status, 202, "{response:?}");
    assert_eq!(response.outcome, Outcome::Spooled);
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(3),
        "exactly the deadline"
    );
    let got = queue.receive(10).await.expect("receive");
    assert_eq!(got.len(), 1);
    assert!(matches!(
        InboxMessage::from_body(&got[0].body).expect("ours"),
        InboxMessage::Spooled(_)
    ));
}

#[test]
fn the_database_deadline_comes_from_the_environment() {
    use hookbox::inbox::ingest::{DB_DEADLINE_VAR, DEFAULT_DB_DEADLINE, db_deadline_from_env};
    assert_eq!(db_deadline_from_env(|_| None), Ok(DEFAULT_DB_DEADLINE));
    let set = |v: &'static str| move |k: &str| (k == DB_DEADLINE_VAR).then(|| v.to_string());
    assert_eq!(db_deadline_from_env(set("2")), Ok(Duration::from_secs(2)));
    for bad in ["0", "29", "5s"] {
        let e = db_deadline_from_env(set(bad)).expect_err(bad);
        assert!(e.to_string().contains(DB_DEADLINE_VAR), "{e}");
    }
}

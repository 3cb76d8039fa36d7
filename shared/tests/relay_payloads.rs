//! Large outbound payloads through the relay, both database adapters (the
//! local Data API refuses result rows over 64 KB and responses over 1 MiB,
//! as the service does): payloads stored by reference are read, checked and
//! POSTed byte-exact; a claim stays inside its byte budget; a missing or
//! corrupt object, or a row no statement can return or decode, is dead with
//! its reason while the other rows go; a blob store outage is a failed
//! attempt; a claim whose answer is lost is claimed again row by row.
//! Time is a manual clock; only 127.0.0.1 is contacted.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::DateTime;
use chrono::Utc;
use common::{Adapter, at, migrated_db, sql};
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::blob::{BlobError, BlobStore, sha256};
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::outbox::repo::CLAIM_BUDGET_BYTES;
use hookbox::outbox::{self, NewOutboxEvent, OutboxStatus, PayloadStorage};
use hookbox::params;
use hookbox::relay::{FixedJitter, HttpSender, Relay, RelaySettings, RunReport};
use hookbox::signature::{Headers, SchemeConfig, Secret, SignedRequest, Verifier};
use hookbox::store::{Database, DbError, Executor, Params, Rows, Statement, Transaction};
use hookbox_testkit::http_sink::{HttpSink, Recorded};
use uuid::Uuid;

const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

/// Destination `crm` at the sink, loopback allowed.
fn config(sink: &HttpSink) -> HookboxConfig {
    let text = serde_json::json!({ "destinations": { "crm": {
        "url": sink.url("/in"),
        "secrets": [SECRET],
        "allowed_networks": ["127.0.0.0/8", "::1/128"],
    }}})
    .to_string();
    HookboxConfig::parse(&text, "test").expect("valid config")
}

/// A payload of about `pad` bytes of JSON.
fn payload(order_id: &str, pad: usize) -> serde_json::Value {
    serde_json::json!({ "order_id": order_id, "pad": "p".repeat(pad) })
}

fn event(order_id: &str, payload: serde_json::Value) -> NewOutboxEvent {
    NewOutboxEvent {
        aggregate_type: "order".into(),
        aggregate_id: order_id.into(),
        event_type: "order.status_changed".into(),
        destination: "crm".into(),
        payload,
    }
}

/// Enqueues `payloads` (keyed by order id) in one transaction, large ones
/// through `blobs`.
async fn enqueue(
    db: &dyn Database,
    blobs: &dyn BlobStore,
    payloads: &[(String, serde_json::Value)],
    now: DateTime<Utc>,
) -> Vec<Uuid> {
    let tx = db.begin().await.expect("begin");
    let mut ids = Vec::new();
    for (order_id, p) in payloads {
        ids.push(
            outbox::enqueue_with_blobs(tx.as_ref(), blobs, &event(order_id, p.clone()), now)
                .await
                .expect("enqueue"),
        );
    }
    tx.commit().await.expect("commit");
    ids
}

/// A relay with one lane (its steps in a known order) over `db` and `blobs`.
fn relay(
    db: Arc<dyn Database>,
    blobs: &MemoryBlobStore,
    clock: &Arc<ManualClock>,
    worker: &str,
) -> Relay {
    let mut settings = RelaySettings::new(worker);
    settings.lanes = 1;
    Relay::new(
        db,
        Arc::new(blobs.clone()),
        Arc::new(HttpSender::default()),
        None,
        clock.clone(),
        settings,
    )
    .with_jitter(Arc::new(FixedJitter(0.0)))
}

async fn drain(relay: &Relay, cfg: &HookboxConfig, clock: &Arc<ManualClock>) -> RunReport {
    relay
        .drain(&ConfigStore::fixed(cfg.clone(), clock.clone()))
        .await
}

async fn row(db: &dyn Executor, id: Uuid) -> outbox::OutboxRow {
    outbox::get(db, id).await.expect("get").expect("row exists")
}

/// The requests the sink received, by webhook-id.
fn by_id(requests: Vec<Recorded>) -> HashMap<Uuid, Recorded> {
    let mut out = HashMap::new();
    for r in requests {
        let id: Uuid = r
            .header("webhook-id")
            .expect("webhook-id")
            .parse()
            .expect("a uuid");
        assert!(out.insert(id, r).is_none(), "{id} was POSTed twice");
    }
    out
}

fn assert_signed(request: &Recorded, now: DateTime<Utc>) {
    let verifier = Verifier::new(SchemeConfig::StandardWebhooks {
        tolerance_secs: 300,
    })
    .expect("verifier");
    let headers = Headers::from_pairs(
        request
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str())),
    );
    verifier
        .verify_at(
            &SignedRequest::new(&request.body, headers),
            &[Secret::new(SECRET)],
            now,
        )
        .expect("the signature covers the bytes sent");
}

async fn a_large_payload_and_a_batch_past_one_mib_are_delivered_byte_exact(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let blobs = MemoryBlobStore::new();
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    let cfg = config(&sink);
    let big = payload("o-big", 200_000);
    let mut payloads = vec![("o-big".to_string(), big.clone())];
    for i in 0..50 {
        // 30 KB each: inline, 1.5 MB together
        payloads.push((format!("o-{i}"), payload(&format!("o-{i}"), 30_000)));
    }
    let ids = enqueue(db.as_ref(), &blobs, &payloads, at(0)).await;
    assert_eq!(
        blobs.len(),
        1,
        "only the 200 KB payload went to the blob store"
    );
    let big_row = row(db.as_ref(), ids[0]).await;
    let reference = big_row
        .payload_storage
        .blob()
        .expect("by reference")
        .clone();
    assert!(
        reference.key.as_str().starts_with("outbox/crm/"),
        "{}",
        reference.key
    );
    assert_eq!(big_row.payload, "", "no statement returns it inline");

    let run = drain(&relay(db.clone(), &blobs, &clock, "relay-a"), &cfg, &clock).await;
    assert_eq!(run.errors, Vec::<String>::new(), "the lane never stopped");
    assert_eq!((run.deliveries.claimed, run.deliveries.delivered), (51, 51));
    // 50 × 30 KB do not fit one claim's answer: two claims or more, plus
    // the empty one that ends the lane
    assert!(run.batches >= 3, "{run:?}");

    let got = by_id(sink.requests());
    assert_eq!(got.len(), 51);
    let sent = &got[&ids[0]];
    assert!(
        sent.body == big.to_string().into_bytes(),
        "the large payload is POSTed as stored: its JSON text, byte for byte"
    );
    assert_eq!(sha256(&sent.body), reference.sha256);
    assert_signed(sent, at(0));
    for (id, (_, p)) in ids.iter().zip(&payloads).skip(1) {
        let stored = row(db.as_ref(), *id).await;
        assert_eq!(stored.status, OutboxStatus::Delivered);
        assert_eq!(stored.payload_storage, PayloadStorage::Inline);
        let body = &got[id].body;
        assert!(
            *body == stored.payload.as_bytes(),
            "inline: jsonb's text, byte for byte"
        );
        assert_eq!(got[id].json(), *p);
    }
}

async fn a_claim_stays_within_its_byte_budget(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let blobs = MemoryBlobStore::new();
    let payloads: Vec<_> = (0..50)
        .map(|i| (format!("o-{i}"), payload(&format!("o-{i}"), 30_000)))
        .collect();
    enqueue(db.as_ref(), &blobs, &payloads, at(0)).await;
    let d = db.as_ref();

    let mut claims = Vec::new();
    let mut seen = std::collections::HashSet::new();
    loop {
        let token = format!("relay-a/{}", claims.len());
        let claimed = outbox::claim_batch(
            d,
            common::claim(&token, at(1), at(31), 50),
            CLAIM_BUDGET_BYTES,
        )
        .await
        .expect("claim within the budget");
        assert_eq!(claimed.unreadable, []);
        if claimed.rows.is_empty() {
            break;
        }
        let bytes: usize = claimed.rows.iter().map(|r| r.payload.len()).sum();
        assert!(
            bytes as i64 <= CLAIM_BUDGET_BYTES,
            "{} rows, {bytes} bytes of payload",
            claimed.rows.len()
        );
        seen.extend(claimed.rows.iter().map(|r| r.id));
        claims.push(claimed.rows.len());
    }
    assert_eq!(seen.len(), 50, "every row claimed once: {claims:?}");
    assert!(claims.len() >= 2, "more than one claim: {claims:?}");
    assert!(claims[0] >= 25, "the budget is used: {claims:?}");

    // at least one row, whatever the budget
    d.execute(
        &sql("UPDATE outbox SET locked_until = NULL, locked_by = NULL"),
        &params! {},
    )
    .await
    .expect("release");
    let one = outbox::claim_batch(d, common::claim("relay-b/1", at(1), at(31), 50), 1)
        .await
        .expect("claim");
    assert_eq!(one.rows.len(), 1);

    // without a budget, the answer passes the Data API's 1 MiB
    let all = outbox::claim_batch(d, common::claim("relay-c/1", at(1), at(31), 49), i64::MAX).await;
    match adapter {
        Adapter::Postgres => assert_eq!(all.expect("no limit here").rows.len(), 49),
        Adapter::DataApi => {
            let e = all.expect_err("refused by the Data API");
            assert!(e.to_string().contains("size limit"), "{e}");
        }
    }
}

async fn a_missing_or_corrupt_object_makes_only_its_row_dead_with_the_reason(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let blobs = MemoryBlobStore::new();
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    let cfg = config(&sink);
    let payloads = vec![
        ("o-corrupt".to_string(), payload("o-corrupt", 40_000)),
        ("o-gone".to_string(), payload("o-gone", 50_000)),
        ("o-fine".to_string(), payload("o-fine", 60_000)),
        ("o-small".to_string(), payload("o-small", 10)),
    ];
    let ids = enqueue(db.as_ref(), &blobs, &payloads, at(0)).await;
    let key = |row: &outbox::OutboxRow| {
        row.payload_storage
            .blob()
            .expect("by reference")
            .key
            .clone()
    };
    let corrupt_key = key(&row(db.as_ref(), ids[0]).await);
    let gone_key = key(&row(db.as_ref(), ids[1]).await);
    assert!(blobs.corrupt(&corrupt_key));
    assert!(blobs.remove(&gone_key));

    let run = drain(&relay(db.clone(), &blobs, &clock, "relay-a"), &cfg, &clock).await;
    assert_eq!(run.errors, Vec::<String>::new());
    assert_eq!(
        (
            run.deliveries.delivered,
            run.deliveries.dead,
            run.deliveries.unreadable
        ),
        (2, 2, 2)
    );
    assert_eq!(run.metrics().values("Unreadable"), Some(&[2.0][..]));
    let corrupt = row(db.as_ref(), ids[0]).await;
    let gone = row(db.as_ref(), ids[1]).await;
    for (r, k, why) in [
        (&corrupt, &corrupt_key, "is corrupt"),
        (&gone, &gone_key, "not found"),
    ] {
        assert_eq!((r.status, r.attempts), (OutboxStatus::Dead, 1), "{r:?}");
        let error = r.last_error.as_deref().unwrap_or("");
        for part in [why, k.as_str(), "can never be delivered as written"] {
            assert!(error.contains(part), "{error:?} says {part:?}");
        }
    }
    for id in &ids[2..] {
        assert_eq!(row(db.as_ref(), *id).await.status, OutboxStatus::Delivered);
    }
    let got = by_id(sink.requests());
    assert_eq!(got.len(), 2, "nothing was POSTed for the lost payloads");
    assert!(got[&ids[2]].body == payloads[2].1.to_string().into_bytes());
}

async fn a_blob_store_outage_is_a_failed_attempt_then_the_payload_goes(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let blobs = MemoryBlobStore::new();
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    let cfg = config(&sink);
    let big = payload("o-1", 100_000);
    let ids = enqueue(db.as_ref(), &blobs, &[("o-1".into(), big.clone())], at(0)).await;
    let relay = relay(db.clone(), &blobs, &clock, "relay-a");

    blobs.set_unavailable(true);
    let report = relay
        .deliver_batch(&cfg, clock.now() + chrono::Duration::seconds(30))
        .await
        .expect("batch");
    assert_eq!((report.retried, report.dead), (1, 0));
    let r = row(db.as_ref(), ids[0]).await;
    assert_eq!((r.status, r.attempts), (OutboxStatus::Pending, 1));
    assert_eq!(r.next_attempt_at, at(5), "the schedule's first delay");
    let error = r.last_error.unwrap_or_default();
    assert!(
        error.contains("blob store unavailable during get of outbox/crm/"),
        "{error}"
    );
    assert!(sink.requests().is_empty(), "nothing was sent");

    blobs.set_unavailable(false);
    clock.advance(chrono::Duration::seconds(5));
    let report = relay
        .deliver_batch(&cfg, clock.now() + chrono::Duration::seconds(30))
        .await
        .expect("batch");
    assert_eq!(report.delivered, 1);
    let r = row(db.as_ref(), ids[0]).await;
    assert_eq!((r.status, r.attempts), (OutboxStatus::Delivered, 2));
    let sent = sink.requests();
    assert_eq!(sent.len(), 1);
    assert!(sent[0].body == big.to_string().into_bytes());
}

/// A row written before payloads went to the blob store: 100 KB of jsonb
/// inline. No statement returns it whole; the relay reads it in pieces.
async fn an_inline_payload_over_the_row_bound_is_read_in_pieces(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let blobs = MemoryBlobStore::new();
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    let cfg = config(&sink);
    // multi-byte characters: pieces are counted in characters, sizes in bytes
    let text = serde_json::json!({ "order_id": "o-old", "pad": "é€".repeat(20_000) }).to_string();
    let id = Uuid::now_v7();
    db.execute(
        &sql(
            "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, destination,
                                 payload, status, next_attempt_at, created_at)
             VALUES (CAST(:id AS uuid), 'order', 'o-old', 'order.paid', 'crm',
                     CAST(:payload AS jsonb), 'pending', CAST(:at AS timestamptz),
                     CAST(:at AS timestamptz))",
        ),
        &params! { "id" => id, "payload" => text, "at" => at(0) },
    )
    .await
    .expect("a row as version 6 wrote it");
    // (what jsonb's text is, told by its size and sha256: the text itself
    // is a row the Data API would refuse)
    let stored = hookbox::store::fetch_one(
        db.as_ref(),
        &sql("SELECT octet_length(CAST(payload AS text)) AS size,
                    sha256(convert_to(CAST(payload AS text), 'UTF8')) AS sha256
               FROM outbox"),
        &params! {},
    )
    .await
    .expect("size and sha256");
    let size = stored.i64("size").expect("size") as usize;
    let digest = stored.bytes("sha256").expect("sha256");
    assert!(size > 100_000, "{size}");
    let r = outbox::get(db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    assert_eq!(
        (r.payload.as_str(), &r.payload_storage),
        ("", &PayloadStorage::InlineUnread { size: size as u64 }),
        "no statement returns it whole"
    );

    let run = drain(&relay(db.clone(), &blobs, &clock, "relay-a"), &cfg, &clock).await;
    assert_eq!(run.errors, Vec::<String>::new());
    assert_eq!(run.deliveries.delivered, 1);
    let sent = sink.requests();
    assert_eq!(sent[0].body.len(), size);
    assert_eq!(
        sha256(&sent[0].body).to_vec(),
        digest,
        "jsonb's text, byte for byte"
    );
}

/// Runs a claim for real, then loses its answer (as the Data API does when
/// it refuses a response it cannot carry, after the statement ran): the
/// leases are committed, the caller gets a non-retryable error.
#[derive(Debug)]
struct LosesClaimAnswers {
    db: Arc<dyn Database>,
    lost: std::sync::atomic::AtomicUsize,
    times: usize,
}

#[async_trait]
impl Executor for LosesClaimAnswers {
    async fn execute(&self, statement: &Statement, params: &Params) -> Result<Rows, DbError> {
        let rows = self.db.execute(statement, params).await?;
        let is_claim = statement.name == outbox::repo::RECORD_AND_CLAIM.name
            || statement.name == outbox::repo::CLAIM_DUE.name;
        if is_claim
            && !rows.rows.is_empty()
            && self.lost.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < self.times
        {
            return Err(DbError::Statement {
                statement: statement.name,
                message: "Database response exceeded size limit (simulated)".into(),
            });
        }
        Ok(rows)
    }
}

#[async_trait]
impl Database for LosesClaimAnswers {
    async fn begin(&self) -> Result<Box<dyn Transaction>, DbError> {
        self.db.begin().await
    }
}

async fn a_claim_whose_answer_is_lost_is_claimed_again_row_by_row(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let blobs = MemoryBlobStore::new();
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    let cfg = config(&sink);
    let payloads: Vec<_> = (0..3)
        .map(|i| (format!("o-{i}"), payload(&format!("o-{i}"), 10)))
        .collect();
    let ids = enqueue(db.as_ref(), &blobs, &payloads, at(0)).await;
    let losing = Arc::new(LosesClaimAnswers {
        db: db.clone(),
        lost: Default::default(),
        times: 1,
    });
    let run = drain(&relay(losing, &blobs, &clock, "relay-a"), &cfg, &clock).await;
    assert_eq!(run.errors.len(), 1, "{:?}", run.errors);
    assert!(
        run.errors[0].contains("exceeded size limit"),
        "{:?}",
        run.errors
    );
    assert_eq!(
        run.deliveries.delivered, 3,
        "the rows its lost answer leased are delivered in the same run"
    );
    assert_eq!(by_id(sink.requests()).len(), 3, "each once");
    for id in &ids {
        let r = row(db.as_ref(), *id).await;
        assert_eq!(
            (r.status, r.attempts, r.locked_by),
            (OutboxStatus::Delivered, 1, None)
        );
    }

    // deliver_batch recovers the same way
    let ids = enqueue(db.as_ref(), &blobs, &payloads, at(0)).await;
    let losing = Arc::new(LosesClaimAnswers {
        db: db.clone(),
        lost: Default::default(),
        times: 1,
    });
    let report = relay(losing, &blobs, &clock, "relay-b")
        .deliver_batch(&cfg, clock.now() + chrono::Duration::seconds(30))
        .await
        .expect("recovered");
    assert_eq!((report.claimed, report.delivered), (3, 3));
    for id in &ids {
        assert_eq!(row(db.as_ref(), *id).await.status, OutboxStatus::Delivered);
    }
}

async fn a_row_no_statement_can_return_or_decode_is_dead_and_the_others_go(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let blobs = MemoryBlobStore::new();
    let clock = Arc::new(ManualClock::new(at(0)));
    let sink = HttpSink::start().await;
    let cfg = config(&sink);
    let payloads: Vec<_> = (0..3)
        .map(|i| (format!("o-{i}"), payload(&format!("o-{i}"), 10)))
        .collect();
    let fine = enqueue(db.as_ref(), &blobs, &payloads, at(0)).await;
    // a reference whose key is not a key (a hand-made row), and a row
    // whose aggregate id alone passes the Data API's 64 KB per row
    let undecodable = Uuid::now_v7();
    let too_large = Uuid::now_v7();
    db.execute(
        &sql(
            "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, destination,
                                 payload, payload_key, payload_size, payload_sha256,
                                 status, next_attempt_at, created_at)
             VALUES (CAST(:bad AS uuid), 'order', 'o-bad', 'order.paid', 'crm',
                     NULL, 'outbox/crm/not a key', 10, decode(repeat('ab', 32), 'hex'),
                     'pending', CAST(:at AS timestamptz), CAST(:at AS timestamptz)),
                    (CAST(:big AS uuid), 'order', repeat('a', 70000), 'order.paid', 'crm',
                     CAST('{}' AS jsonb), NULL, 2, NULL,
                     'pending', CAST(:at AS timestamptz), CAST(:at AS timestamptz))",
        ),
        &params! { "bad" => undecodable, "big" => too_large, "at" => at(0) },
    )
    .await
    .expect("hand-made rows");

    let run = drain(&relay(db.clone(), &blobs, &clock, "relay-a"), &cfg, &clock).await;
    for id in &fine {
        assert_eq!(row(db.as_ref(), *id).await.status, OutboxStatus::Delivered);
    }
    let status = |id: Uuid| {
        let db = db.clone();
        async move {
            hookbox::store::fetch_one(
                db.as_ref(),
                &sql("SELECT status, last_error FROM outbox WHERE id = CAST(:id AS uuid)"),
                &params! { "id" => id },
            )
            .await
            .map(|r| {
                (
                    r.text("status").expect("status"),
                    r.opt_text("last_error").expect("error"),
                )
            })
            .expect("status")
        }
    };
    let (bad_status, bad_error) = status(undecodable).await;
    assert_eq!(bad_status, "dead");
    let bad_error = bad_error.unwrap_or_default();
    assert!(
        bad_error.contains("payload_key")
            && bad_error.contains("can never be delivered as written"),
        "{bad_error}"
    );
    let (big_status, big_error) = status(too_large).await;
    match adapter {
        // no limit on rows: delivered like any other
        Adapter::Postgres => {
            assert_eq!(big_status, "delivered");
            assert_eq!(run.errors, Vec::<String>::new());
            assert_eq!(run.deliveries.delivered, 4);
        }
        // the claim's answer is refused; claimed again row by row, the row
        // alone is refused too: dead, the others delivered in the same run
        Adapter::DataApi => {
            assert_eq!(big_status, "dead");
            let big_error = big_error.unwrap_or_default();
            assert!(big_error.contains("too large"), "{big_error}");
            assert!(!run.errors.is_empty());
            assert_eq!(run.deliveries.delivered, 3);
        }
    }
    assert_eq!(
        run.deliveries.unreadable,
        1 + u64::from(adapter == Adapter::DataApi)
    );
}

/// Enqueueing a large payload: the object holds the bytes, the row the
/// reference; plain `enqueue` refuses with what it needs.
async fn a_large_payload_is_stored_by_reference_and_plain_enqueue_says_what_it_needs(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let blobs = MemoryBlobStore::new();
    let big = payload("o-1", 40_000);
    let tx = db.begin().await.expect("begin");
    let e = outbox::enqueue(tx.as_ref(), &event("o-1", big.clone()), at(0))
        .await
        .expect_err("too large for a row");
    let text = e.to_string();
    // the size its row would have: jsonb's text, a space after each : and ,
    let size = hookbox::outbox::payload::jsonb_text_bound(&big.to_string()).to_string();
    for part in ["\"crm\"", size.as_str(), "32768", "enqueue_with_blobs"] {
        assert!(text.contains(part), "{text:?} names {part}");
    }
    assert!(!e.is_retryable());
    let id = outbox::enqueue_with_blobs(tx.as_ref(), &blobs, &event("o-1", big.clone()), at(0))
        .await
        .expect("by reference");
    tx.commit().await.expect("commit");
    let r = row(db.as_ref(), id).await;
    let reference = r.payload_storage.blob().expect("by reference");
    let bytes = blobs.get(&reference.key).await.expect("stored");
    assert!(
        bytes == big.to_string().into_bytes(),
        "the JSON text, as POSTed"
    );
    assert_eq!(reference.size, bytes.len() as u64);
    assert_eq!(
        reference.key.as_str(),
        format!("outbox/crm/{}", hex::encode(sha256(&bytes)))
    );

    // a transaction that rolls back leaves its object behind (an orphan)
    let tx = db.begin().await.expect("begin");
    outbox::enqueue_with_blobs(
        tx.as_ref(),
        &blobs,
        &event("o-2", payload("o-2", 50_000)),
        at(0),
    )
    .await
    .expect("by reference");
    tx.rollback().await.expect("rollback");
    assert_eq!(blobs.len(), 2, "the put is not undone");

    // a store that refuses: the error names the destination and the store's reason
    blobs.fail_next(BlobError::Refused {
        operation: "put",
        key: "outbox/crm/x".into(),
        reason: "AccessDenied".into(),
    });
    let tx = db.begin().await.expect("begin");
    let e = outbox::enqueue_with_blobs(
        tx.as_ref(),
        &blobs,
        &event("o-3", payload("o-3", 60_000)),
        at(0),
    )
    .await
    .expect_err("refused");
    assert!(
        e.to_string().contains("\"crm\"") && e.to_string().contains("AccessDenied"),
        "{e}"
    );
    tx.rollback().await.expect("rollback");
}

for_each_adapter!(
    a_large_payload_and_a_batch_past_one_mib_are_delivered_byte_exact,
    a_claim_stays_within_its_byte_budget,
    a_missing_or_corrupt_object_makes_only_its_row_dead_with_the_reason,
    a_blob_store_outage_is_a_failed_attempt_then_the_payload_goes,
    an_inline_payload_over_the_row_bound_is_read_in_pieces,
    a_claim_whose_answer_is_lost_is_claimed_again_row_by_row,
    a_row_no_statement_can_return_or_decode_is_dead_and_the_others_go,
    a_large_payload_is_stored_by_reference_and_plain_enqueue_says_what_it_needs,
);

//! Runs the built `hookbox` binary's operator commands against a fresh,
//! migrated PostgreSQL database (rows written through the repositories),
//! the moto SQS emulator and local HTTP servers: stats, inbox list / show /
//! replay, outbox list / retry, dlq redrive, send, and the configuration
//! errors.

use std::process::{Command, Output};
use std::sync::Arc;

use aws_sdk_sqs::types::QueueAttributeName;
use chrono::{DateTime, Duration, TimeZone, Utc};
use hookbox::inbox::{self, Claim, InboxMessage, InboxStatus, NewInboxEvent};
use hookbox::outbox::{self, DeliveryOutcome, DeliveryResult, NewOutboxEvent, OutboxStatus};
use hookbox::signature::presets;
use hookbox::signature::{Headers, SchemeKind, Secret, SignedRequest, Verifier};
use hookbox::store::Database;
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox_testkit::TestDb;
use hookbox_testkit::http_sink::HttpSink;
use hookbox_testkit::moto;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use uuid::Uuid;

const BIN: &str = env!("CARGO_BIN_EXE_hookbox");
const DEMO_SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

/// Variables the binary would otherwise pick up from the test's environment.
const CLEARED: &[&str] = &[
    "DATABASE_URL",
    "HOOKBOX_DB",
    "DB_CLUSTER_ARN",
    "DB_SECRET_ARN",
    "DB_NAME",
    "HOOKBOX_QUEUE_URL",
    "HOOKBOX_DLQ_URL",
    "AWS_ENDPOINT_URL_SQS",
];

/// Runs the binary off the async runtime (so servers of this test keep
/// answering), with `env` as its only hookbox configuration.
async fn hookbox(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(BIN);
    command.args(args);
    for name in CLEARED {
        command.env_remove(name);
    }
    for (name, value) in env {
        command.env(name, value);
    }
    tokio::task::spawn_blocking(move || command.output().expect("the binary runs"))
        .await
        .expect("join")
}

/// Runs the binary against `db` (DATABASE_URL).
async fn hookbox_db(db: &TestDb, args: &[&str]) -> Output {
    hookbox(args, &[("DATABASE_URL", db.url())]).await
}

fn code(output: &Output) -> i32 {
    output.status.code().expect("exited normally")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0)
        .single()
        .expect("valid instant")
}

fn at(seconds: i64) -> DateTime<Utc> {
    t0() + Duration::seconds(seconds)
}

async fn migrated() -> (TestDb, Arc<dyn Database>) {
    let test_db = TestDb::create().await;
    let db: Arc<dyn Database> =
        Arc::new(PgDatabase::connect(test_db.url(), &PgOptions::default()).expect("pool"));
    hookbox::migrate::migrate(db.as_ref())
        .await
        .expect("migrate");
    (test_db, db)
}

fn event(partner: &str, event_id: &str, body: &[u8]) -> NewInboxEvent {
    NewInboxEvent {
        partner: partner.into(),
        event_id: event_id.into(),
        event_id_derived: false,
        event_type: Some("order.paid".into()),
        ordering_key: Some("order-7".into()),
        body: hookbox::inbox::Body::Inline(body.to_vec()),
        headers: serde_json::json!({"webhook-id": event_id, "content-type": "application/json"}),
        signature_verified: true,
    }
}

/// An inbox row received at `at(t)` and left in `status` (claimed, and
/// finished when not processing, at `at(t + 1)`), with `error` as its reason.
async fn inbox_row(
    db: &dyn Database,
    partner: &str,
    event_id: &str,
    t: i64,
    status: InboxStatus,
    error: &str,
) -> Uuid {
    inbox_row_with_body(
        db,
        partner,
        event_id,
        t,
        status,
        error,
        br#"{"order_id":"order-7"}"#,
    )
    .await
}

async fn inbox_row_with_body(
    db: &dyn Database,
    partner: &str,
    event_id: &str,
    t: i64,
    status: InboxStatus,
    error: &str,
    body: &[u8],
) -> Uuid {
    let id = inbox::insert_if_new(db, &event(partner, event_id, body), at(t))
        .await
        .expect("insert")
        .id();
    if status == InboxStatus::Pending {
        return id;
    }
    let token = match inbox::claim(db, &[id], at(t + 1), at(t + 3600))
        .await
        .expect("claim")
        .as_slice()
    {
        [Claim::Claimed { token, .. }] => *token,
        other => panic!("expected a claim, got {other:?}"),
    };
    let changed = match status {
        InboxStatus::Processing => Ok(true),
        InboxStatus::Processed => inbox::mark_processed(db, token, at(t + 1)).await,
        InboxStatus::Quarantined => inbox::mark_quarantined(db, token, at(t + 1), error).await,
        InboxStatus::Dead => inbox::mark_dead(db, token, at(t + 1), error).await,
        other => panic!("not a status these tests use: {other}"),
    }
    .expect("status change");
    assert!(changed);
    id
}

async fn enqueue(db: &dyn Database, destination: &str, aggregate_id: &str, t: i64) -> Uuid {
    enqueue_for(db, destination, aggregate_id, t, None).await
}

/// [`enqueue`] in a transaction writing for `origin` (as the processor's).
async fn enqueue_for(
    db: &dyn Database,
    destination: &str,
    aggregate_id: &str,
    t: i64,
    origin: Option<&outbox::Origin>,
) -> Uuid {
    let mut tx = db.begin().await.expect("begin");
    if let Some(origin) = origin {
        tx = Box::new(hookbox::store::WithOrigin::new(tx, origin.to_json()));
    }
    let id = outbox::enqueue(
        tx.as_ref(),
        &NewOutboxEvent {
            aggregate_type: "order".into(),
            aggregate_id: aggregate_id.into(),
            event_type: "order.paid".into(),
            destination: destination.into(),
            payload: serde_json::json!({"order_id": aggregate_id}),
        },
        at(t),
    )
    .await
    .expect("enqueue");
    tx.commit().await.expect("commit");
    id
}

/// An outbox row created at `at(t)` and delivered or dead after one attempt.
/// Call before creating pending rows: the claim takes every due row.
async fn finished_outbox_row(
    db: &dyn Database,
    destination: &str,
    aggregate_id: &str,
    t: i64,
    dead: bool,
) -> Uuid {
    finished_outbox_row_for(db, destination, aggregate_id, t, dead, None).await
}

/// [`finished_outbox_row`] written for `origin`.
async fn finished_outbox_row_for(
    db: &dyn Database,
    destination: &str,
    aggregate_id: &str,
    t: i64,
    dead: bool,
    origin: Option<&outbox::Origin>,
) -> Uuid {
    let id = enqueue_for(db, destination, aggregate_id, t, origin).await;
    let claimed = outbox::claim_due(
        db,
        outbox::ClaimRequest {
            worker: "relay-1",
            now: at(t + 1),
            lease_until: at(t + 31),
            limit: 10,
            ordered_destinations: &[],
            destination_caps: &[],
        },
    )
    .await
    .expect("claim");
    assert_eq!(claimed.iter().map(|r| r.id).collect::<Vec<_>>(), vec![id]);
    let result = if dead {
        DeliveryResult {
            id,
            outcome: DeliveryOutcome::Dead,
            status_code: Some(410),
            error: Some(format!("HTTP 410 Gone from {destination}")),
            attempt: None,
        }
    } else {
        DeliveryResult {
            id,
            outcome: DeliveryOutcome::Delivered,
            status_code: Some(200),
            error: None,
            attempt: None,
        }
    };
    let n = outbox::record_results(db, "relay-1", at(t + 1), &[result])
        .await
        .expect("record");
    assert_eq!(n, 1);
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_json_is_exact() {
    let (test_db, db) = migrated().await;
    let d = db.as_ref();
    let now = t0().timestamp().to_string();

    let empty = hookbox_db(&test_db, &["stats", "--json", "--now", &now]).await;
    assert_eq!(code(&empty), 0, "{}", stderr(&empty));
    assert_eq!(
        stdout(&empty),
        concat!(
            r#"{"inbox":{"pending":0,"processing":0,"deferred":0,"processed":0,"quarantined":0,"dead":0},"#,
            r#""outbox":{"pending":0,"delivered":0,"dead":0},"#,
            r#""oldest_pending_seconds":{"inbox":null,"outbox":null}}"#,
            "\n"
        )
    );

    inbox_row(d, "acme", "processed", -1000, InboxStatus::Processed, "").await;
    inbox_row(d, "acme", "pending-old", -300, InboxStatus::Pending, "").await;
    inbox_row(d, "acme", "working", -200, InboxStatus::Processing, "").await;
    inbox_row(d, "acme", "pending-new", -100, InboxStatus::Pending, "").await;
    inbox_row(d, "acme", "poison", -90, InboxStatus::Quarantined, "bad").await;
    inbox_row(d, "acme", "gave-up", -80, InboxStatus::Dead, "down").await;
    finished_outbox_row(d, "erp", "o-dead", -500, true).await;
    finished_outbox_row(d, "erp", "o-ok", -400, false).await;
    enqueue(d, "erp", "o-pending", -60).await;

    let out = hookbox_db(&test_db, &["stats", "--json", "--now", &now]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        concat!(
            r#"{"inbox":{"pending":2,"processing":1,"deferred":0,"processed":1,"quarantined":1,"dead":1},"#,
            r#""outbox":{"pending":1,"delivered":1,"dead":1},"#,
            r#""oldest_pending_seconds":{"inbox":300,"outbox":60}}"#,
            "\n"
        )
    );

    let table = hookbox_db(&test_db, &["stats", "--now", &now]).await;
    assert_eq!(code(&table), 0, "{}", stderr(&table));
    let text = stdout(&table);
    for line in [
        "inbox",
        "  pending               2",
        "  quarantined           1",
        "  oldest pending: 5m 00s (300 s)",
        "outbox",
        "  delivered             1",
        "  oldest pending: 1m 00s (60 s)",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbox_list_and_show() {
    let (test_db, db) = migrated().await;
    let d = db.as_ref();
    let long_error = format!("handler failed: {}\nsecond line", "x".repeat(200));
    let q1 = inbox_row(
        d,
        "acme",
        "evt_q1",
        10,
        InboxStatus::Quarantined,
        &long_error,
    )
    .await;
    let q2 = inbox_row(d, "globex", "evt_q2", 20, InboxStatus::Quarantined, "nope").await;
    let dead = inbox_row(d, "acme", "evt_d1", 30, InboxStatus::Dead, "gave up").await;
    let binary = inbox_row_with_body(
        d,
        "acme",
        "evt_bin",
        40,
        InboxStatus::Pending,
        "",
        &[0xff, 0x00, 0x01],
    )
    .await;

    let out = hookbox_db(&test_db, &["inbox", "list", "--status", "quarantined"]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("ID"), "{text}");
    for header in [
        "PARTNER",
        "EVENT_ID",
        "EVENT_TYPE",
        "STATUS",
        "ATTEMPTS",
        "RECEIVED_AT",
        "LAST_ERROR",
    ] {
        assert!(lines[0].contains(header), "{header} in {}", lines[0]);
    }
    assert!(
        lines[1].starts_with(&q1.to_string()),
        "oldest first:\n{text}"
    );
    assert!(lines[2].starts_with(&q2.to_string()), "{text}");
    for cell in [
        "acme",
        "evt_q1",
        "order.paid",
        "quarantined",
        "2026-06-01T12:00:10Z",
        "handler failed: xxx",
    ] {
        assert!(lines[1].contains(cell), "{cell} in {}", lines[1]);
    }
    assert!(lines[1].ends_with('…'), "error shortened: {}", lines[1]);
    assert!(!text.contains("second line"), "{text}");
    assert!(!text.contains(&dead.to_string()), "{text}");
    assert_eq!(lines.last().copied(), Some("(2 rows)"));

    let acme = hookbox_db(
        &test_db,
        &[
            "inbox",
            "list",
            "--status",
            "quarantined",
            "--partner",
            "globex",
        ],
    )
    .await;
    assert_eq!(code(&acme), 0, "{}", stderr(&acme));
    assert!(stdout(&acme).contains(&q2.to_string()));
    assert!(!stdout(&acme).contains(&q1.to_string()));

    let limited = hookbox_db(
        &test_db,
        &["inbox", "list", "--status", "quarantined", "--limit", "1"],
    )
    .await;
    assert!(stdout(&limited).contains(&q1.to_string()));
    assert!(!stdout(&limited).contains(&q2.to_string()));
    assert!(
        stdout(&limited).contains("more match"),
        "{}",
        stdout(&limited)
    );

    let bad = hookbox_db(&test_db, &["inbox", "list", "--status", "lost"]).await;
    assert_eq!(code(&bad), 2);
    assert!(stderr(&bad).contains("\"lost\""), "{}", stderr(&bad));

    let show = hookbox_db(&test_db, &["inbox", "show", &q1.to_string()]).await;
    assert_eq!(code(&show), 0, "{}", stderr(&show));
    let text = stdout(&show);
    for line in [
        format!("id:                 {q1}"),
        "partner:            acme".into(),
        "event_id:           evt_q1".into(),
        "event_id_derived:   false".into(),
        "event_type:         order.paid".into(),
        "ordering_key:       order-7".into(),
        "status:             quarantined".into(),
        "attempts:           1".into(),
        "signature_verified: true".into(),
        "received_at:        2026-06-01T12:00:10Z".into(),
        "next_attempt_at:    -".into(),
        "processed_at:       2026-06-01T12:00:11Z".into(),
        "body (utf-8, 22 bytes):".into(),
        r#"{"order_id":"order-7"}"#.into(),
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in:\n{text}");
    }
    assert!(text.contains(&long_error), "show prints the whole error");
    assert!(
        text.contains(r#""webhook-id": "evt_q1""#),
        "headers: {text}"
    );

    let show = hookbox_db(&test_db, &["inbox", "show", &binary.to_string()]).await;
    assert_eq!(code(&show), 0, "{}", stderr(&show));
    let text = stdout(&show);
    assert!(
        text.contains("body (base64, 3 bytes, not UTF-8):\n/wAB\n"),
        "{text}"
    );

    let missing = Uuid::now_v7();
    let out = hookbox_db(&test_db, &["inbox", "show", &missing.to_string()]).await;
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains(&format!("no inbox row {missing}")),
        "{}",
        stderr(&out)
    );
    let out = hookbox_db(&test_db, &["inbox", "show", "not-a-uuid"]).await;
    assert_eq!(code(&out), 2);
}

/// The trail: `inbox show` lists the deliveries written for the row, with
/// their outcomes; `outbox show` names the webhook a delivery came from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbox_show_lists_its_deliveries_and_outbox_show_names_the_webhook() {
    let (test_db, db) = migrated().await;
    let id = inbox_row(db.as_ref(), "shop", "evt_t1", 0, InboxStatus::Processed, "").await;
    let origin = outbox::Origin {
        inbox_id: id,
        partner: Some("shop".into()),
        event_id: Some("evt_t1".into()),
        received_at: Some(at(0)),
        trace_id: Some("1-5759e988-bd862e3fe1be46a994272793".into()),
    };
    let delivered =
        finished_outbox_row_for(db.as_ref(), "billing", "o-1", 1, false, Some(&origin)).await;
    let dead = finished_outbox_row_for(db.as_ref(), "crm", "o-1", 2, true, Some(&origin)).await;
    let plain = enqueue(db.as_ref(), "billing", "o-2", 3).await;

    let show = hookbox_db(&test_db, &["inbox", "show", &id.to_string()]).await;
    assert_eq!(code(&show), 0, "{}", stderr(&show));
    let text = stdout(&show);
    assert!(text.contains("deliveries:         2\n"), "{text}");
    let line = |id: Uuid| {
        text.lines()
            .find(|l| l.starts_with(&id.to_string()))
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(line(delivered)[1..5], ["billing", "delivered", "1", "200"]);
    assert_eq!(line(dead)[1..5], ["crm", "dead", "1", "410"]);
    assert!(
        line(dead).join(" ").contains("HTTP 410 Gone from crm"),
        "{text}"
    );
    assert!(line(plain).is_empty(), "not this webhook's: {text}");

    let show = hookbox_db(&test_db, &["outbox", "show", &dead.to_string()]).await;
    assert_eq!(code(&show), 0, "{}", stderr(&show));
    let text = stdout(&show);
    for expected in [
        "inbound:          shop/evt_t1\n".to_owned(),
        format!("inbox_id:         {id}\n"),
        "trace_id:         1-5759e988-bd862e3fe1be46a994272793\n".to_owned(),
        "status:           dead\n".to_owned(),
        "last_status_code: 410\n".to_owned(),
    ] {
        assert!(text.contains(&expected), "{expected:?} in {text}");
    }
    let show = hookbox_db(&test_db, &["outbox", "show", &plain.to_string()]).await;
    assert!(
        stdout(&show).contains("inbound:          - (published by business code"),
        "{}",
        stdout(&show)
    );
    let missing = Uuid::now_v7();
    let out = hookbox_db(&test_db, &["outbox", "show", &missing.to_string()]).await;
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains(&format!("no outbox row {missing}")),
        "{}",
        stderr(&out)
    );
}

async fn receive_all(sqs: &aws_sdk_sqs::Client, url: &str) -> Vec<String> {
    let mut bodies = Vec::new();
    loop {
        let out = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .visibility_timeout(300)
            .send()
            .await
            .expect("receive");
        if out.messages().is_empty() {
            return bodies;
        }
        bodies.extend(
            out.messages()
                .iter()
                .map(|m| m.body().unwrap_or_default().to_owned()),
        );
    }
}

fn replayed_id(body: &str) -> Uuid {
    match InboxMessage::from_body(body).expect("an inbox message") {
        InboxMessage::Stored { inbox_id, .. } => inbox_id,
        other => panic!("expected a stored message, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_of_a_quarantined_row_enqueues_one_message_and_sets_it_pending() {
    let (test_db, db) = migrated().await;
    let d = db.as_ref();
    let endpoint = moto::endpoint();
    let queue = moto::create_queue(&endpoint, &moto::unique_name("replay"), 30, 4).await;
    let sqs = moto::client(&endpoint);
    let id = inbox_row(d, "acme", "evt_1", 10, InboxStatus::Quarantined, "poison").await;
    let args = |ids: &[String]| {
        let mut v = vec!["inbox".to_owned(), "replay".to_owned()];
        v.extend(ids.iter().cloned());
        v.extend(["--sqs-endpoint".to_owned(), endpoint.clone()]);
        v
    };

    let argv = args(&[id.to_string()]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = hookbox(
        &argv,
        &[
            ("DATABASE_URL", test_db.url()),
            ("HOOKBOX_QUEUE_URL", &queue.url),
        ],
    )
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("enqueued: 1\n"), "{text}");
    assert!(text.contains("pending for sweeper: 0\n"), "{text}");
    assert!(text.contains("not replayable: 0\n"), "{text}");
    assert!(text.contains("missing: 0\n"), "{text}");

    let bodies = receive_all(&sqs, &queue.url).await;
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    assert_eq!(replayed_id(&bodies[0]), id);
    let row = inbox::get(d, id).await.expect("get").expect("row");
    assert_eq!(row.status, InboxStatus::Pending);
    assert_eq!(
        row.last_error.as_deref(),
        Some("poison"),
        "kept until processed"
    );
    assert!(row.next_attempt_at.is_some());

    // again: not replayable (it is pending now), plus an unknown id: exit 1,
    // and nothing more on the queue
    let missing = Uuid::now_v7();
    let argv = args(&[id.to_string(), missing.to_string()]);
    let mut argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    argv.extend(["--queue-url", &queue.url]);
    let out = hookbox(&argv, &[("DATABASE_URL", test_db.url())]).await;
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("enqueued: 0\n"), "{text}");
    assert!(
        text.contains(&format!("not replayable: 1\n  {id}  (pending:")),
        "{text}"
    );
    assert!(
        text.contains(&format!("missing: 1\n  {missing}\n")),
        "{text}"
    );
    assert!(receive_all(&sqs, &queue.url).await.is_empty());

    // no queue configured: a usage error before anything changes
    let q2 = inbox_row(d, "acme", "evt_2", 20, InboxStatus::Quarantined, "poison").await;
    let out = hookbox(
        &["inbox", "replay", &q2.to_string()],
        &[("DATABASE_URL", test_db.url())],
    )
    .await;
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("HOOKBOX_QUEUE_URL"),
        "{}",
        stderr(&out)
    );
    let row = inbox::get(d, q2).await.expect("get").expect("row");
    assert_eq!(row.status, InboxStatus::Quarantined);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_replay_by_status_pages_through_every_matching_row() {
    let (test_db, db) = migrated().await;
    let d = db.as_ref();
    let endpoint = moto::endpoint();
    let queue = moto::create_queue(&endpoint, &moto::unique_name("bulk"), 30, 4).await;
    let sqs = moto::client(&endpoint);
    let mut dead = Vec::new();
    for i in 0..5 {
        dead.push(inbox_row(d, "acme", &format!("d{i}"), i, InboxStatus::Dead, "gave up").await);
    }
    let other_partner = inbox_row(d, "globex", "g", 7, InboxStatus::Dead, "gave up").await;
    let quarantined = inbox_row(d, "acme", "q", 8, InboxStatus::Quarantined, "bad").await;

    let out = hookbox(
        &[
            "inbox",
            "replay",
            "--status",
            "dead",
            "--partner",
            "acme",
            "--batch-size",
            "2",
            "--queue-url",
            &queue.url,
            "--sqs-endpoint",
            &endpoint,
        ],
        &[("DATABASE_URL", test_db.url())],
    )
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("enqueued: 5\n"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("under NEW delivery ids"),
        "the output says what consumers see: {}",
        stdout(&out)
    );

    let mut replayed: Vec<Uuid> = receive_all(&sqs, &queue.url)
        .await
        .iter()
        .map(|b| replayed_id(b))
        .collect();
    replayed.sort();
    let mut want = dead.clone();
    want.sort();
    assert_eq!(
        replayed, want,
        "each acme dead row once, over three batches"
    );
    for id in &dead {
        let row = inbox::get(d, *id).await.expect("get").expect("row");
        assert_eq!(row.status, InboxStatus::Pending);
    }
    for (id, status) in [
        (other_partner, InboxStatus::Dead),
        (quarantined, InboxStatus::Quarantined),
    ] {
        let row = inbox::get(d, id).await.expect("get").expect("row");
        assert_eq!(row.status, status, "untouched");
    }

    // nothing left to replay: an empty run succeeds
    let out = hookbox(
        &[
            "inbox",
            "replay",
            "--status",
            "dead",
            "--partner",
            "acme",
            "--queue-url",
            &queue.url,
            "--sqs-endpoint",
            &endpoint,
        ],
        &[("DATABASE_URL", test_db.url())],
    )
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("enqueued: 0\n"),
        "{}",
        stdout(&out)
    );
    // only quarantined and dead rows are replayed in bulk
    let out = hookbox(
        &["inbox", "replay", "--status", "processed"],
        &[("DATABASE_URL", test_db.url())],
    )
    .await;
    assert_eq!(code(&out), 2, "only quarantined|dead");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outbox_list_and_retry() {
    let (test_db, db) = migrated().await;
    let d = db.as_ref();
    let erp1 = finished_outbox_row(d, "erp", "o1", 10, true).await;
    let crm = finished_outbox_row(d, "crm", "o2", 20, true).await;
    let erp2 = finished_outbox_row(d, "erp", "o3", 30, true).await;
    let delivered = finished_outbox_row(d, "erp", "o4", 40, false).await;
    let pending = enqueue(d, "erp", "o5", 50).await;

    let out = hookbox_db(&test_db, &["outbox", "list", "--status", "dead"]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    for header in [
        "ID",
        "DESTINATION",
        "EVENT_TYPE",
        "STATUS",
        "ATTEMPTS",
        "LAST_ERROR",
    ] {
        assert!(lines[0].contains(header), "{header} in {}", lines[0]);
    }
    assert!(lines[1].starts_with(&erp1.to_string()), "{text}");
    assert!(lines[2].starts_with(&crm.to_string()), "{text}");
    assert!(lines[3].starts_with(&erp2.to_string()), "{text}");
    for cell in [
        "erp",
        "order.paid",
        "order/o1",
        "dead",
        "410",
        "HTTP 410 Gone from erp",
    ] {
        assert!(lines[1].contains(cell), "{cell} in {}", lines[1]);
    }
    assert_eq!(lines[4], "(3 rows)");
    let all = hookbox_db(&test_db, &["outbox", "list", "--destination", "erp"]).await;
    assert_eq!(code(&all), 0, "{}", stderr(&all));
    assert_eq!(stdout(&all).lines().count(), 1 + 4 + 1, "{}", stdout(&all));
    assert!(!stdout(&all).contains(&crm.to_string()));

    // by id: dead → pending; pending, delivered and unknown ids are reported, exit 1
    let missing = Uuid::now_v7();
    let before = Utc::now() - Duration::seconds(1);
    let out = hookbox_db(
        &test_db,
        &[
            "outbox",
            "retry",
            &erp1.to_string(),
            &pending.to_string(),
            &delivered.to_string(),
            &missing.to_string(),
        ],
    )
    .await;
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("retried: 1\n"), "{text}");
    assert!(text.contains(&format!("  {pending}  (pending:")), "{text}");
    assert!(
        text.contains(&format!("  {delivered}  (delivered:")),
        "{text}"
    );
    assert!(
        text.contains(&format!("missing: 1\n  {missing}\n")),
        "{text}"
    );
    let row = outbox::get(d, erp1).await.expect("get").expect("row");
    assert_eq!(row.status, OutboxStatus::Pending);
    assert_eq!(row.attempts, 0);
    assert_eq!(row.last_error.as_deref(), Some("HTTP 410 Gone from erp"));
    assert!(
        row.next_attempt_at >= before && row.next_attempt_at <= Utc::now() + Duration::seconds(1),
        "due now: {}",
        row.next_attempt_at
    );
    assert_eq!(
        outbox::get(d, delivered)
            .await
            .expect("get")
            .expect("row")
            .status,
        OutboxStatus::Delivered
    );

    // every dead row of one destination, in batches of one
    let out = hookbox_db(
        &test_db,
        &[
            "outbox",
            "retry",
            "--status",
            "dead",
            "--destination",
            "erp",
            "--batch-size",
            "1",
        ],
    )
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("retried: 1\n"), "{}", stdout(&out));
    assert_eq!(
        outbox::get(d, erp2)
            .await
            .expect("get")
            .expect("row")
            .status,
        OutboxStatus::Pending
    );
    assert_eq!(
        outbox::get(d, crm).await.expect("get").expect("row").status,
        OutboxStatus::Dead,
        "another destination"
    );
    let out = hookbox_db(&test_db, &["outbox", "retry", "--status", "dead"]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("retried: 1\n"), "{}", stdout(&out));
    let counts = outbox::counts_by_status(d).await.expect("counts");
    assert_eq!(counts[&OutboxStatus::Dead], 0);
    assert_eq!(counts[&OutboxStatus::Pending], 4);
}

async fn approximate_messages(sqs: &aws_sdk_sqs::Client, url: &str) -> String {
    sqs.get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .send()
        .await
        .expect("attributes")
        .attributes()
        .and_then(|a| {
            a.get(&QueueAttributeName::ApproximateNumberOfMessages)
                .cloned()
        })
        .expect("ApproximateNumberOfMessages")
}

/// Sends `bodies` and lets SQS's RedrivePolicy (maxReceiveCount 1) move them
/// to the DLQ: one receive, then the next receive moves them.
async fn dead_letter(sqs: &aws_sdk_sqs::Client, queue: &moto::TestQueue, bodies: &[&str]) {
    for body in bodies {
        sqs.send_message()
            .queue_url(&queue.url)
            .message_body(*body)
            .send()
            .await
            .expect("send");
    }
    for expected in [bodies.len(), 0] {
        let got = sqs
            .receive_message()
            .queue_url(&queue.url)
            .max_number_of_messages(10)
            .visibility_timeout(0)
            .send()
            .await
            .expect("receive");
        assert_eq!(got.messages().len(), expected);
    }
    assert_eq!(
        approximate_messages(sqs, &queue.dlq_url).await,
        bodies.len().to_string()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dlq_redrive_moves_dead_letters_back_with_moto() {
    let endpoint = moto::endpoint();
    let queue = moto::create_queue(&endpoint, &moto::unique_name("redrive"), 0, 1).await;
    let sqs = moto::client(&endpoint);
    dead_letter(&sqs, &queue, &[r#"{"n":1}"#, r#"{"n":2}"#]).await;

    // the DLQ found through the queue's RedrivePolicy
    let out = hookbox(
        &[
            "dlq",
            "redrive",
            "--queue-url",
            &queue.url,
            "--sqs-endpoint",
            &endpoint,
        ],
        &[],
    )
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!(
            "moved 2 messages from {} to {}",
            queue.dlq_url, queue.url
        )),
        "{text}"
    );
    assert!(
        text.contains("does not implement StartMessageMoveTask"),
        "{text}"
    );
    assert_eq!(approximate_messages(&sqs, &queue.dlq_url).await, "0");
    let mut bodies = receive_all(&sqs, &queue.url).await;
    bodies.sort();
    assert_eq!(bodies, vec![r#"{"n":1}"#, r#"{"n":2}"#]);

    // only the DLQ given (environment): the source queue found through SQS
    let queue2 = moto::create_queue(&endpoint, &moto::unique_name("redrive"), 0, 1).await;
    dead_letter(&sqs, &queue2, &[r#"{"n":3}"#]).await;
    let out = hookbox(
        &["dlq", "redrive", "--sqs-endpoint", &endpoint],
        &[("HOOKBOX_DLQ_URL", &queue2.dlq_url)],
    )
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!(
            "moved 1 messages from {} to {}",
            queue2.dlq_url, queue2.url
        )),
        "{}",
        stdout(&out)
    );
    assert_eq!(receive_all(&sqs, &queue2.url).await, vec![r#"{"n":3}"#]);

    // neither queue: a usage error naming both ways
    let out = hookbox(&["dlq", "redrive", "--sqs-endpoint", &endpoint], &[]).await;
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("--dlq-url or --queue-url"),
        "{}",
        stderr(&out)
    );
}

/// A one-request HTTP server answering `200` with `body`; returns its base
/// URL and the request line it got.
async fn json_server(body: &'static str) -> (String, tokio::task::JoinHandle<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let served = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.expect("accept");
        let mut request = Vec::new();
        let mut chunk = [0u8; 1024];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut chunk).await.expect("read");
            assert!(n > 0, "request ended early");
            request.extend_from_slice(&chunk[..n]);
        }
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(answer.as_bytes()).await.expect("write");
        String::from_utf8_lossy(&request)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    });
    (base, served)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dlq_redrive_says_which_messages_refer_to_dead_rows_and_points_at_replay() {
    let (test_db, db) = migrated().await;
    let d = db.as_ref();
    let dead = inbox_row(d, "acme", "evt_dead", 10, InboxStatus::Dead, "gave up").await;
    let pending = inbox_row(d, "acme", "evt_pending", 20, InboxStatus::Pending, "").await;
    let endpoint = moto::endpoint();
    let queue = moto::create_queue(&endpoint, &moto::unique_name("redrive-dead"), 0, 1).await;
    let sqs = moto::client(&endpoint);
    let dead_msg = InboxMessage::stored(dead, "acme", "evt_dead")
        .to_body()
        .expect("body");
    let pending_msg = InboxMessage::stored(pending, "acme", "evt_pending")
        .to_body()
        .expect("body");
    dead_letter(&sqs, &queue, &[dead_msg.as_str(), pending_msg.as_str()]).await;
    let out = hookbox(
        &[
            "dlq",
            "redrive",
            "--queue-url",
            &queue.url,
            "--sqs-endpoint",
            &endpoint,
        ],
        &[("DATABASE_URL", test_db.url())],
    )
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("moved 2 messages"), "{text}");
    assert!(
        text.contains(
            "note: 1 of the moved messages refer to dead inbox rows: the processor acknowledges \
             a message of a dead row without running the handler (the row is finished). To \
             process them again: hookbox inbox replay --status dead"
        ),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dlq_redrive_through_the_local_stack_admin_api() {
    // the future endpoint's answer: printed as is
    let (base, served) = json_server(r#"{"moved":3}"#).await;
    let out = hookbox(&["dlq", "redrive", "--local-stack", &base], &[]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "{\"moved\":3}\n");
    assert_eq!(
        served.await.expect("served"),
        "POST /admin/api/dlq/redrive HTTP/1.1"
    );

    // an empty answer (today's HttpSink) is accepted and said so
    let sink = HttpSink::start().await;
    let out = hookbox(&["dlq", "redrive", "--local-stack", &sink.url("/")], &[]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("without a count"), "{}", stdout(&out));
    let requests = sink.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].target, "/admin/api/dlq/redrive");

    // an error answer fails
    sink.respond_with(503);
    let out = hookbox(&["dlq", "redrive", "--local-stack", &sink.url("")], &[]).await;
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("503"), "{}", stderr(&out));
    // and --local-stack with SQS queue flags is a usage error
    let out = hookbox(
        &[
            "dlq",
            "redrive",
            "--local-stack",
            &sink.url(""),
            "--queue-url",
            "http://q",
        ],
        &[],
    )
    .await;
    assert_eq!(code(&out), 2);
}

fn verify(recorded: &hookbox_testkit::http_sink::Recorded, secret: &str) -> Result<(), String> {
    let verifier = Verifier::for_scheme(SchemeKind::StandardWebhooks).expect("verifier");
    let headers = Headers::from_pairs(
        recorded
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str())),
    );
    let request = SignedRequest::new(&recorded.body, headers);
    verifier
        .verify_at(&request, &[Secret::new(secret)], Utc::now())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_signs_with_standard_webhooks_and_posts() {
    let sink = HttpSink::start().await;
    let url = sink.url("/webhooks/demo");
    let body = r#"{"type":"order.paid","order_id":"o-1"}"#;

    // the demo partner's documented secret, an explicit id
    let out = hookbox(
        &[
            "send",
            "--partner",
            "demo",
            "--url",
            &url,
            "--body",
            body,
            "--event-id",
            "evt_42",
        ],
        &[],
    )
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "status: 200 OK\nwebhook-id: evt_42\n");
    let got = sink.requests();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].method, "POST");
    assert_eq!(got[0].target, "/webhooks/demo");
    assert_eq!(got[0].body, body.as_bytes());
    assert_eq!(got[0].header("webhook-id"), Some("evt_42"));
    assert_eq!(got[0].header("content-type"), Some("application/json"));
    verify(&got[0], DEMO_SECRET).expect("signed with the demo secret");
    assert!(verify(&got[0], "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_err());

    // a partner of a config file: its first secret; a fresh msg_ id
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("partners.json");
    std::fs::write(
        &config,
        serde_json::json!({"partners": {
            "acme": {"signature": {"scheme": "standard-webhooks"},
                     "secrets": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", DEMO_SECRET]},
            "stripey": {"signature": {"scheme": "stripe"}, "secrets": ["whsec_x"]}
        }})
        .to_string(),
    )
    .expect("write config");
    let config = config.to_str().expect("utf-8 path");
    let out = hookbox(
        &[
            "send",
            "--partner",
            "acme",
            "--url",
            &url,
            "--body",
            body,
            "--config",
            config,
        ],
        &[],
    )
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let got = sink.wait_for(2).await;
    let id = got[1].header("webhook-id").expect("webhook-id").to_owned();
    assert!(id.starts_with("msg_") && id.len() == 4 + 32, "{id}");
    assert!(
        stdout(&out).contains(&format!("webhook-id: {id}\n")),
        "{}",
        stdout(&out)
    );
    verify(&got[1], "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").expect("first secret");
    assert!(
        verify(&got[1], DEMO_SECRET).is_err(),
        "only the first secret signs"
    );

    // a non-2xx answer is reported, exit 1
    sink.respond_with(401);
    let out = hookbox(
        &["send", "--partner", "demo", "--url", &url, "--body", body],
        &[],
    )
    .await;
    assert_eq!(code(&out), 1);
    assert!(
        stdout(&out).starts_with("status: 401 Unauthorized\n"),
        "{}",
        stdout(&out)
    );

    // clear usage errors, nothing sent
    for (args, message) in [
        (
            vec!["--partner", "stripey", "--config", config],
            "uses the stripe scheme; `hookbox send` signs Standard Webhooks only",
        ),
        (vec!["--partner", "nobody", "--config", config], "is not in"),
        (vec!["--partner", "acme"], "pass --secret or --config"),
    ] {
        let mut argv = vec!["send", "--url", &url, "--body", body];
        argv.extend(args);
        let out = hookbox(&argv, &[]).await;
        assert_eq!(code(&out), 2, "{argv:?}");
        assert!(stderr(&out).contains(message), "{}", stderr(&out));
    }
    let out = hookbox(
        &[
            "send",
            "--partner",
            "demo",
            "--url",
            &url,
            "--body",
            "not json",
        ],
        &[],
    )
    .await;
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("not JSON"), "{}", stderr(&out));
    assert_eq!(sink.requests().len(), 3);
}

/// Verifies a recorded request with preset `name`'s verifier, as received
/// at `url`, now.
fn verify_preset(
    recorded: &hookbox_testkit::http_sink::Recorded,
    name: &str,
    url: &str,
    secret: &str,
) -> Result<(), String> {
    let preset = presets::get(name).expect("a preset");
    let headers = Headers::from_pairs(
        recorded
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str())),
    );
    let request = SignedRequest::new(&recorded.body, headers).with_url(url);
    preset
        .verifier()
        .expect("compiles")
        .verify_at(&request, &[Secret::new(secret)], Utc::now())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_with_a_preset_signs_as_the_provider_and_fills_its_event_headers() {
    let sink = HttpSink::start().await;
    let url = sink.url("/webhooks/partner");
    // One preset per kind of recipe: a hand-written scheme, Standard
    // Webhooks under `svix-*` names, a signed header and an RFC 3339
    // timestamp, a timestamp item of the signature header, the URL and
    // form parameters, a token; each secret starts with `-` once.
    let cases: [(&str, &str, &str); 6] = [
        ("github", "-Zx8kQ2pL", r#"{"action":"opened"}"#),
        (
            "clerk",
            "whsec_c3RhbmRhcmQtd2ViaG9va3Mta2V5LTMyLWJ5dGVzISE=",
            r#"{"type":"user.created","data":{}}"#,
        ),
        ("twitch-eventsub", "twitch-secret-0123", r#"{"event":{}}"#),
        (
            "paddle",
            "pdl_ntfset_secret",
            r#"{"event_id":"evt_1","event_type":"transaction.completed"}"#,
        ),
        (
            "twilio",
            "twilio-auth-token",
            "CallSid=CA1&Digits=1234&From=%2B14158675310",
        ),
        ("gitlab", "gitlab-token", r#"{"object_kind":"push"}"#),
    ];
    for (i, (name, secret, body)) in cases.iter().enumerate() {
        let out = hookbox(
            &[
                "send", "--preset", name, "--secret", secret, "--url", &url, "--body", body,
            ],
            &[],
        )
        .await;
        assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
        assert!(
            stdout(&out).starts_with("status: 200 OK\n"),
            "{}",
            stdout(&out)
        );
        let got = sink.wait_for(i + 1).await;
        let sent = &got[i];
        assert_eq!(sent.body, body.as_bytes(), "{name}");
        verify_preset(sent, name, &url, secret).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            verify_preset(sent, name, &url, "another-secret").is_err(),
            "{name}"
        );
    }
    let got = sink.requests();
    // The event id header the preset reads is fresh, the event type header
    // the sample's; Twilio's body is sent as a form.
    let twitch = &got[2];
    let id = twitch.header("Twitch-Eventsub-Message-Id").expect("an id");
    assert!(id.starts_with("msg_"), "{id}");
    assert_eq!(
        twitch.header("Twitch-Eventsub-Subscription-Type"),
        Some("channel.follow")
    );
    assert!(twitch.header("svix-id").is_none());
    assert!(
        got[1]
            .header("svix-id")
            .is_some_and(|v| v.starts_with("msg_"))
    );
    assert_eq!(
        got[4].header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(got[0].header("content-type"), Some("application/json"));

    // Given id and type land in the preset's headers, and are printed.
    let out = hookbox(
        &[
            "send",
            "--preset",
            "shopify",
            "--secret",
            "shpss_x",
            "--url",
            &url,
            "--event-id",
            "-evt_7",
            "--event-type",
            "orders/paid",
            "--body",
            "{}",
        ],
        &[],
    )
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "status: 200 OK\nevent id: -evt_7\n");
    let got = sink.wait_for(cases.len() + 1).await;
    let shopify = &got[cases.len()];
    assert_eq!(shopify.header("X-Shopify-Webhook-Id"), Some("-evt_7"));
    assert_eq!(shopify.header("X-Shopify-Topic"), Some("orders/paid"));
    verify_preset(shopify, "shopify", &url, "shpss_x").expect("shopify");

    // Refused, naming the preset and why, nothing sent: a public-key
    // recipe, a signature inside the body, an id the preset reads from the
    // body, a preset without --secret, an unknown preset.
    for (argv, message) in [
        (
            vec!["--preset", "discord", "--secret", "00", "--body", "{}"],
            "preset `discord` cannot be signed",
        ),
        (
            vec!["--preset", "sendgrid", "--secret", "00", "--body", "[]"],
            "public key",
        ),
        (
            vec!["--preset", "mailgun", "--secret", "k", "--body", "{}"],
            "inside the body",
        ),
        (
            vec![
                "--preset",
                "stripe",
                "--secret",
                "k",
                "--event-id",
                "e",
                "--body",
                "{}",
            ],
            "reads the event id from body /id",
        ),
        (vec!["--preset", "stripe", "--body", "{}"], "--secret"),
        (
            vec!["--preset", "paypal", "--secret", "k", "--body", "{}"],
            "unknown preset",
        ),
    ] {
        let mut args = vec!["send", "--url", &url];
        args.extend(argv);
        let out = hookbox(&args, &[]).await;
        assert_eq!(code(&out), 2, "{args:?}");
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(sink.requests().len(), cases.len() + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_database_configured_is_a_usage_error_naming_the_variables() {
    for args in [
        vec!["stats"],
        vec!["inbox", "list", "--status", "dead"],
        vec!["outbox", "retry", "--status", "dead"],
    ] {
        let out = hookbox(&args, &[]).await;
        assert_eq!(code(&out), 2, "{args:?}");
        let err = stderr(&out);
        for name in [
            "DATABASE_URL",
            "HOOKBOX_DB=data-api",
            "DB_CLUSTER_ARN",
            "DB_SECRET_ARN",
            "DB_NAME",
            "--database-url",
        ] {
            assert!(err.contains(name), "{name} in {err}");
        }
    }
    let out = hookbox(
        &["stats"],
        &[
            ("HOOKBOX_DB", "data-api"),
            ("DB_CLUSTER_ARN", "arn:aws:rds:us-east-1:1:cluster:c"),
        ],
    )
    .await;
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("DB_SECRET_ARN"), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn database_url_flag_is_used_and_its_password_never_printed() {
    let (test_db, _db) = migrated().await;
    // the flag wins over the environment
    let out = hookbox(
        &["stats", "--json", "--database-url", test_db.url()],
        &[("DATABASE_URL", "postgres://nobody@127.0.0.1:1/nothing")],
    )
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with(r#"{"inbox":{"pending":0"#),
        "{}",
        stdout(&out)
    );

    // an unreachable server: the operation fails (exit 1) without the password
    let out = hookbox(
        &[
            "stats",
            "--database-url",
            "postgres://hookbox:hunter2@127.0.0.1:1/hookbox",
        ],
        &[],
    )
    .await;
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("database unavailable"),
        "{}",
        stderr(&out)
    );
    let out_text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!out_text.contains("hunter2"), "{out_text}");
    // a malformed URL: a usage error, without the password either
    let out = hookbox(
        &[
            "stats",
            "--database-url",
            "postgres://hookbox:hunter2@127.0.0.1:notaport/db",
        ],
        &[],
    )
    .await;
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(!stderr(&out).contains("hunter2"), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dlq_redrive_with_replay_dead_puts_the_dead_rows_back_to_pending_before_their_messages() {
    let (test_db, db) = migrated().await;
    let d = db.as_ref();
    let dead = inbox_row(d, "acme", "evt_dead_r", 10, InboxStatus::Dead, "gave up").await;
    let pending = inbox_row(d, "acme", "evt_pending_r", 20, InboxStatus::Pending, "").await;
    let endpoint = moto::endpoint();
    let queue = moto::create_queue(&endpoint, &moto::unique_name("replay-dead"), 0, 1).await;
    let sqs = moto::client(&endpoint);
    let bodies: Vec<String> = [(dead, "evt_dead_r"), (pending, "evt_pending_r")]
        .iter()
        .map(|(id, event)| {
            InboxMessage::stored(*id, "acme", event)
                .to_body()
                .expect("body")
        })
        .collect();
    dead_letter(&sqs, &queue, &[bodies[0].as_str(), bodies[1].as_str()]).await;

    // without a database the flag is a usage error, and nothing moves
    let out = hookbox(
        &[
            "dlq",
            "redrive",
            "--replay-dead",
            "--queue-url",
            &queue.url,
            "--sqs-endpoint",
            &endpoint,
        ],
        &[],
    )
    .await;
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    assert!(
        stderr(&out).contains("--replay-dead needs the inbox's database"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        inbox::get(d, dead).await.expect("get").expect("row").status,
        InboxStatus::Dead
    );

    let out = hookbox(
        &[
            "dlq",
            "redrive",
            "--replay-dead",
            "--queue-url",
            &queue.url,
            "--sqs-endpoint",
            &endpoint,
        ],
        &[("DATABASE_URL", test_db.url())],
    )
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("moved 2 messages"), "{text}");
    assert!(text.contains("replayed 1 dead inbox rows"), "{text}");
    assert_eq!(
        inbox::get(d, dead).await.expect("get").expect("row").status,
        InboxStatus::Pending,
        "the dead row is pending again"
    );
    assert_eq!(
        inbox::get(d, pending)
            .await
            .expect("get")
            .expect("row")
            .status,
        InboxStatus::Pending
    );
    // both messages are back on the queue, byte for byte
    let mut back: Vec<String> = Vec::new();
    for _ in 0..5 {
        let got = sqs
            .receive_message()
            .queue_url(&queue.url)
            .max_number_of_messages(10)
            .send()
            .await
            .expect("receive");
        back.extend(
            got.messages()
                .iter()
                .filter_map(|m| m.body().map(str::to_owned)),
        );
        if back.len() >= 2 {
            break;
        }
    }
    back.sort();
    let mut want = bodies.clone();
    want.sort();
    assert_eq!(back, want);
}

/// `hookbox outbox attempts <id>` shows every logged attempt of a delivery
/// that failed twice and then succeeded; an id with none logged is exit 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outbox_attempts_shows_each_attempt_of_a_delivery() {
    let (test_db, db) = migrated().await;
    let id = enqueue(db.as_ref(), "erp", "o-att", 0).await;
    let answers = [
        (
            Some(503),
            Some("HTTP 503: down for maintenance"),
            Some("down for maintenance"),
        ),
        (None, Some("no answer within 10s (timed out)"), None),
        (Some(204), None, Some("accepted")),
    ];
    for (i, (status, error, response)) in answers.iter().enumerate() {
        let t = 10 * i64::try_from(i).expect("small") + 1;
        outbox::claim_due(
            db.as_ref(),
            outbox::ClaimRequest {
                worker: "relay-1",
                now: at(t + 5_000),
                lease_until: at(t + 5_030),
                limit: 10,
                ordered_destinations: &[],
                destination_caps: &[],
            },
        )
        .await
        .expect("claim");
        let outcome = if i < 2 {
            DeliveryOutcome::Retry {
                next_attempt_at: at(t + 1),
            }
        } else {
            DeliveryOutcome::Delivered
        };
        let recorded = outbox::record_results(
            db.as_ref(),
            "relay-1",
            at(t + 5_000),
            &[DeliveryResult {
                id,
                outcome,
                status_code: status.map(|s: u16| s),
                error: error.map(str::to_string),
                attempt: Some(hookbox::outbox::AttemptDetail {
                    started_at: at(t + 5_000),
                    latency: std::time::Duration::from_millis(40 + i as u64),
                    response_excerpt: response.map(str::to_string),
                }),
            }],
        )
        .await
        .expect("record");
        assert_eq!(recorded, 1);
    }
    let out = hookbox_db(&test_db, &["outbox", "attempts", &id.to_string()]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("ATTEMPT"), "{text}");
    for (n, needle) in [
        (1, "down for maintenance"),
        (2, "timed out"),
        (3, "accepted"),
    ] {
        let line = lines[n];
        assert!(line.starts_with(&n.to_string()), "{text}");
        assert!(line.contains(needle) && line.contains("erp"), "{text}");
    }
    assert!(
        lines[1].contains("503") && lines[1].contains("40 ms"),
        "{text}"
    );
    assert!(
        lines[3].contains("204") && lines[3].contains("42 ms"),
        "{text}"
    );
    assert!(text.contains(&format!("(3 attempts of {id})")), "{text}");

    let none = hookbox_db(&test_db, &["outbox", "attempts", &Uuid::nil().to_string()]).await;
    assert_eq!(code(&none), 1);
    assert!(stderr(&none).contains("no attempt"), "{}", stderr(&none));
}

/// `hookbox destination list|status|disable|enable` over the destinations
/// the relay synced; an unknown one is exit 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destination_commands_show_disable_and_enable() {
    let (test_db, db) = migrated().await;
    let text = serde_json::json!({"destinations": {
        "erp": {"url": "https://erp.example.com/hooks", "secrets": [DEMO_SECRET]},
    }})
    .to_string();
    let cfg = hookbox::config::HookboxConfig::parse(&text, "test").expect("config");
    outbox::destinations::sync(db.as_ref(), &cfg, at(0))
        .await
        .expect("sync");
    enqueue(db.as_ref(), "erp", "o-d", 0).await;

    let list = hookbox_db(&test_db, &["destination", "list"]).await;
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    let row = stdout(&list)
        .lines()
        .find(|l| l.starts_with("erp"))
        .map(str::to_string)
        .expect("erp listed");
    assert!(row.contains("healthy") && row.contains(" 1 "), "{row}");

    let off = hookbox_db(
        &test_db,
        &[
            "destination",
            "disable",
            "erp",
            "--reason",
            "maintenance window",
        ],
    )
    .await;
    assert_eq!(code(&off), 0, "{}", stderr(&off));
    let status = stdout(&hookbox_db(&test_db, &["destination", "status", "erp"]).await);
    assert!(
        status.contains("state:                disabled"),
        "{status}"
    );
    assert!(status.contains("maintenance window"), "{status}");
    assert!(status.contains("pending rows:         1"), "{status}");

    let on = hookbox_db(&test_db, &["destination", "enable", "erp"]).await;
    assert_eq!(code(&on), 0, "{}", stderr(&on));
    let status = stdout(&hookbox_db(&test_db, &["destination", "status", "erp"]).await);
    assert!(status.contains("state:                healthy"), "{status}");

    for args in [
        &["destination", "status", "nope"][..],
        &["destination", "enable", "nope"][..],
        &["destination", "disable", "nope"][..],
    ] {
        let out = hookbox_db(&test_db, args).await;
        assert_eq!(code(&out), 1, "{args:?}");
        assert!(
            stderr(&out).contains("no destination \"nope\""),
            "{}",
            stderr(&out)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outbox_replay_delivers_a_destinations_rows_of_a_range_again_under_the_same_webhook_ids() {
    let (test_db, db) = migrated().await;
    let d = db.as_ref();
    let delivered = finished_outbox_row(d, "crm", "o1", 10, false).await;
    let dead = finished_outbox_row(d, "crm", "o2", 20, true).await;
    let other = finished_outbox_row(d, "erp", "o3", 15, false).await;
    let later = finished_outbox_row(d, "crm", "o4", 40, false).await;
    let since = at(0).to_rfc3339();
    let until = at(30).to_rfc3339();

    let out = hookbox_db(
        &test_db,
        &[
            "outbox",
            "replay",
            "--destination",
            "crm",
            "--since",
            &since,
            "--until",
            &until,
            "--status",
            "delivered,dead",
            "--batch-size",
            "1",
        ],
    )
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("replayed: 2 rows of \"crm\""),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("under its own delivery id"),
        "the output says what consumers see: {}",
        stdout(&out)
    );
    for (id, status) in [
        (delivered, OutboxStatus::Pending),
        (dead, OutboxStatus::Pending),
        (other, OutboxStatus::Delivered),
        (later, OutboxStatus::Delivered),
    ] {
        let row = outbox::get(d, id).await.expect("get").expect("row");
        assert_eq!(
            (row.status, row.attempts),
            (
                status,
                if status == OutboxStatus::Pending {
                    0
                } else {
                    1
                }
            ),
            "{id}"
        );
    }

    // the relay delivers them again, under their own ids
    let sink = HttpSink::start().await;
    let cfg = hookbox::config::HookboxConfig::parse(
        &serde_json::json!({"destinations": {"crm": {"url": sink.url("/crm"),
            "secrets": [DEMO_SECRET], "allowed_networks": ["127.0.0.0/8"]}}})
        .to_string(),
        "test",
    )
    .expect("config");
    let clock = Arc::new(hookbox::clock::ManualClock::new(Utc::now()));
    let relay = hookbox::relay::Relay::new(
        db.clone(),
        Arc::new(hookbox::blob::memory::MemoryBlobStore::new()),
        Arc::new(hookbox::relay::HttpSender::default()),
        None,
        clock.clone(),
        hookbox::relay::RelaySettings::new("relay-1"),
    );
    let report = relay
        .drain(&hookbox::config::ConfigStore::fixed(cfg, clock))
        .await;
    assert_eq!(report.deliveries.delivered, 2, "{report:?}");
    let mut ids: Vec<String> = sink
        .requests()
        .iter()
        .map(|r| r.header("webhook-id").expect("webhook-id").to_string())
        .collect();
    ids.sort();
    let mut want = vec![delivered.to_string(), dead.to_string()];
    want.sort();
    assert_eq!(ids, want);

    // nothing left in that range: a second replay finds nothing
    let again = hookbox_db(
        &test_db,
        &[
            "outbox",
            "replay",
            "--destination",
            "crm",
            "--since",
            &since,
            "--until",
            &until,
        ],
    )
    .await;
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert!(
        stdout(&again).starts_with("replayed: 0 rows"),
        "{}",
        stdout(&again)
    );

    // a destination with no rows that the relay never synced: a typo
    let typo = hookbox_db(
        &test_db,
        &["outbox", "replay", "--destination", "crn", "--since", "2d"],
    )
    .await;
    assert_eq!(code(&typo), 1);
    assert!(
        stderr(&typo).contains("\"crn\" has no rows"),
        "{}",
        stderr(&typo)
    );
    for (args, says) in [
        (&["--since", "yesterday"][..], "\"yesterday\" is not a time"),
        (
            &["--since", &until, "--until", &since][..],
            "must come after --since",
        ),
    ] {
        let mut all = vec!["outbox", "replay", "--destination", "crm"];
        all.extend_from_slice(args);
        let out = hookbox_db(&test_db, &all).await;
        assert_eq!(code(&out), 2, "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

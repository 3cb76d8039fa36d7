//! The bad-input corpus (`events/bad-input/corpus.json`, issue #14) through
//! the real authorizer and ingest handlers, once per database adapter
//! (direct PostgreSQL, and the RDS Data API via the local Data API server)
//! and once per API Gateway ingress (REST, and HTTP API's payload 2.0:
//! issue #44), with moto SQS and moto S3 and a fixed clock.
//!
//! Each case is one HTTP request as a partner sends it. The test signs it
//! (or not), turns it into the two events the ingress sends (the
//! REQUEST-authorizer event and the proxy event, `corpus/events.rs`: REST
//! as `tools/local/src/gateway.rs` builds them, HTTP API as
//! `tools/local/src/http_api.rs` does), hands each event to the handler as
//! JSON bytes, deserialized as the functions' `main.rs` do, and only an
//! allowed request reaches ingest. It checks the answer documented for the
//! case, and for every case: no 5xx, no panic, no row, no outbox row and no
//! blob left by a refusal, exactly one row (with the sent bytes) and one
//! queue message SQS took for a stored case, the same id for a duplicate.
//! Ingest forwards at ingest (issue #47), with the destinations synced as
//! the relay does: an event the corpus says is forwarded is `processed`
//! with that many outbox rows, each holding the body as a JSON value
//! exactly (compared by jsonb), and no queue message; every other stored
//! event is `pending` with none. Every mismatch is collected; the test
//! fails once, with a table. Through HTTP API every case must get the same
//! answer as through REST, except where HTTP API cannot pass the partner's
//! bytes (`corpus::model::expect_through_http_api`), each such case named
//! in docs/bad-input.md. A last test checks that `docs/bad-input.md` has one
//! row per case, with the corpus's answer.
//!
//! Bytes that are not UTF-8 cannot be written in an event's JSON; such a
//! header value is put into the deserialized event's header maps as the
//! bytes themselves (what `HeaderValue::from_bytes` holds), which is how the
//! handlers would see any rendering API Gateway could choose: a value that
//! is not visible ASCII.

mod corpus;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use chrono::TimeZone;
use corpus::call::call;
use corpus::check::{Added, Sent, Stores, check};
use corpus::events::{Shape, T, events};
use corpus::model::{Case, Expect, Partners, corpus, expect_through_http_api, request};
use hookbox::blob::s3::S3BlobStore;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigSource, ConfigStore};
use hookbox::inbox::ingest::Ingest;
use hookbox::params;
use hookbox::queue::QueueConsumer;
use hookbox::queue::sqs::SqsQueue;
use hookbox::store::data_api::{DataApiDatabase, DataApiTarget};
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, Statement};
use hookbox_authorizer::Authorizer;
use hookbox_ingest::IngestFunction;
use hookbox_testkit::TestDb;
use hookbox_testkit::moto::{self, Moto};

const EVENTS: &str = corpus::model::EVENTS;
const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/bad-input.md");

// ------------------------------------------------------------------ the rig

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Adapter {
    Postgres,
    DataApi,
}

struct Rig {
    authorizer: Authorizer,
    ingest: IngestFunction,
    db: Arc<dyn Database>,
    queue: SqsQueue,
    blobs: Arc<S3BlobStore>,
    bucket: String,
    moto: Moto,
    _db: TestDb,
}

async fn rig(adapter: Adapter) -> Rig {
    let test_db = TestDb::create().await;
    let db: Arc<dyn Database> = match adapter {
        Adapter::Postgres => {
            Arc::new(PgDatabase::connect(test_db.url(), &PgOptions::default()).expect("pool"))
        }
        Adapter::DataApi => Arc::new(DataApiDatabase::local(
            &hookbox_testkit::data_api_endpoint(),
            DataApiTarget {
                resource_arn: "arn:aws:rds:us-east-1:123456789012:cluster:hookbox-test".into(),
                secret_arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:hookbox-test"
                    .into(),
                database: test_db.name().into(),
            },
        )),
    };
    hookbox::migrate::migrate(db.as_ref())
        .await
        .expect("migrate");
    // A moto server of its own: the shared one's request log goes to a pipe
    // nobody reads, and a full pipe stops it (see docs/bad-input.md).
    let moto = Moto::start();
    let names = moto::create_queue(moto.endpoint(), &moto::unique_name("bad-input"), 30, 4).await;
    let queue = SqsQueue::new(SqsQueue::local_client(moto.endpoint()), names.url);
    let s3 = hookbox_testkit::s3::client(moto.endpoint());
    let bucket = moto::unique_name("bad-input-blobs");
    s3.create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("moto refused bucket {bucket}: {e:?}"));
    let blobs = Arc::new(S3BlobStore::new(s3, bucket.clone()));
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(
        chrono::Utc.timestamp_opt(T, 0).single().expect("valid"),
    ));
    let config = Arc::new(
        ConfigStore::load(
            ConfigSource::File(format!("{EVENTS}/bad-input/partners.json").into()),
            None,
            clock.clone(),
        )
        .await
        .expect("config"),
    );
    // Forwarding at ingest on, and the destinations (with the partners whose
    // routes name them) synced to the database as the relay's run does:
    // without them the database forwards nothing at ingest. Partners
    // without routes are stored pending and enqueued either way.
    hookbox::outbox::destinations::sync(db.as_ref(), &*config.current().await, clock.now())
        .await
        .expect("sync the destinations");
    let ingest = Ingest::new(
        config.clone(),
        db.clone(),
        Arc::new(queue.clone()),
        blobs.clone(),
        clock.clone(),
    )
    .with_forwarding_at_ingest(true);
    Rig {
        authorizer: Authorizer::new(config, clock.clone()),
        ingest: IngestFunction::new(ingest, clock),
        db,
        queue,
        blobs,
        bucket,
        moto,
        _db: test_db,
    }
}

async fn rows(db: &dyn Database) -> i64 {
    hookbox::inbox::counts_by_status(db)
        .await
        .expect("counts")
        .values()
        .sum()
}

const LAST_OUTBOX_SEQ: Statement = Statement::new(
    "test.bad_input.last_outbox_seq",
    "SELECT COALESCE(max(seq), 0) AS seq FROM outbox",
);

/// The outbox's last `seq`: the rows a case writes come after it.
async fn last_outbox_seq(db: &dyn Database) -> i64 {
    db.execute(&LAST_OUTBOX_SEQ, &params! {})
        .await
        .expect("outbox seq")
        .rows[0]
        .i64("seq")
        .expect("seq")
}

/// Objects in the blob store's bucket.
async fn objects(rig: &Rig) -> i32 {
    hookbox_testkit::s3::client(rig.moto.endpoint())
        .list_objects_v2()
        .bucket(&rig.bucket)
        .send()
        .await
        .expect("list objects")
        .key_count()
        .unwrap_or(0)
}

/// Every message on the queue (deleted as read).
async fn drain(queue: &SqsQueue) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let got = queue.receive(10).await.expect("receive");
        if got.is_empty() {
            return out;
        }
        for m in got {
            queue.delete(&m.receipt_handle).await.expect("delete");
            out.push(m.body);
        }
    }
}
/// The panic's message, when the task panicked.
fn panic_text(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(payload) => payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into()),
        Err(e) => e.to_string(),
    }
}
/// What `case` expects through `shape`.
fn expected(shape: Shape, case: &Case, request: &corpus::model::Request) -> Expect {
    match shape {
        Shape::Rest => case.expect.clone(),
        Shape::Http => expect_through_http_api(case, request),
    }
}

async fn run_corpus(adapter: Adapter, shape: Shape) {
    let started = Instant::now();
    let rig = rig(adapter).await;
    let partners = Partners::load();
    let cases = corpus();
    let mut ids = HashMap::new();
    let mut blob_keys = HashSet::new();
    let mut mismatches: Vec<[String; 3]> = Vec::new();
    let mut differing = BTreeSet::new();
    for case in &cases {
        let request = request(case, &partners, T);
        let expect = expected(shape, case, &request);
        if expect.summary() != case.expect.summary() {
            differing.insert(case.name.clone());
        }
        let events = events(shape, case, &request);
        let rows_before = rows(rig.db.as_ref()).await;
        let outbox_before = last_outbox_seq(rig.db.as_ref()).await;
        // Each case in a task of its own: a panic is caught and reported
        // with the case's name, and the run goes on.
        let task = tokio::spawn(call(rig.authorizer.clone(), rig.ingest.clone(), events));
        let got = match task.await {
            Ok(got) => got,
            Err(e) => {
                mismatches.push([
                    case.name.clone(),
                    expect.summary(),
                    format!("PANIC: {}", panic_text(e)),
                ]);
                drain(&rig.queue).await;
                continue;
            }
        };
        let rows_added = rows(rig.db.as_ref()).await - rows_before;
        let messages = drain(&rig.queue).await;
        let sent = Sent {
            case,
            expect: &expect,
            request: &request,
        };
        let stores = Stores {
            db: rig.db.as_ref(),
            blobs: rig.blobs.as_ref(),
        };
        let problems = check(
            &stores,
            &sent,
            &got,
            Added {
                rows: rows_added,
                outbox_after: outbox_before,
            },
            &messages,
            &mut ids,
            &mut blob_keys,
        )
        .await;
        if !problems.is_empty() {
            mismatches.push([
                case.name.clone(),
                expect.summary(),
                format!("{}: {}", got.summary(), problems.join("; ")),
            ]);
        }
    }
    // Nothing a refusal did is left in the blob store either: the bucket
    // holds exactly the bodies stored rows refer to.
    let objects = objects(&rig).await;
    if usize::try_from(objects).ok() != Some(blob_keys.len()) {
        mismatches.push([
            "(the blob store, after all cases)".into(),
            format!(
                "{} objects, the bodies stored rows refer to",
                blob_keys.len()
            ),
            format!("{objects} objects"),
        ]);
    }
    // Every answer that differs by ingress is documented, by case name.
    let doc = std::fs::read_to_string(DOC).unwrap_or_else(|e| panic!("{DOC}: {e}"));
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("Both ingresses"))
        .unwrap_or_default();
    for name in &differing {
        if !section.contains(&format!("`{name}`")) {
            mismatches.push([
                name.clone(),
                "named in docs/bad-input.md, \"Both ingresses\"".into(),
                "answers otherwise through HTTP API, undocumented".into(),
            ]);
        }
    }
    eprintln!(
        "bad-input corpus, {adapter:?}, {shape:?}: {} cases in {:.1?} ({} answered otherwise than \
         through REST: {differing:?})",
        cases.len(),
        started.elapsed(),
        differing.len()
    );
    if !mismatches.is_empty() {
        let mut table = format!(
            "{} of {} corpus cases did not get their documented answer ({adapter:?}, {shape:?}):\n\n\
             | case | expected | got |\n| --- | --- | --- |\n",
            mismatches.len(),
            cases.len()
        );
        for [name, expected, got] in &mismatches {
            let got: String = got.chars().take(600).collect();
            table.push_str(&format!("| {name} | {expected} | {got} |\n"));
        }
        panic!("{table}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_case_gets_its_documented_answer_through_rest_and_direct_postgres() {
    run_corpus(Adapter::Postgres, Shape::Rest).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_case_gets_its_documented_answer_through_rest_and_the_data_api() {
    run_corpus(Adapter::DataApi, Shape::Rest).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_case_gets_the_same_answer_through_http_api_and_direct_postgres() {
    run_corpus(Adapter::Postgres, Shape::Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_case_gets_the_same_answer_through_http_api_and_the_data_api() {
    run_corpus(Adapter::DataApi, Shape::Http).await;
}

// ---------------------------------------------------------------- the doc

/// Text safe in a Markdown table cell.
fn md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '|' | '*' | '<' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The case's row in `docs/bad-input.md`.
fn doc_row(case: &Case) -> String {
    let e = &case.expect;
    let stored = match (&e.duplicate_of, e.stored, e.forwarded) {
        (Some(of), _, _) => format!("duplicate of `{of}`"),
        (None, true, None) => "yes".into(),
        (None, true, Some(0)) => "yes, pending: left to the processor".into(),
        (None, true, Some(1)) => "yes, forwarded at ingest: 1 outbox row".into(),
        (None, true, Some(n)) => format!("yes, forwarded at ingest: {n} outbox rows"),
        (None, false, _) => "no".into(),
    };
    format!(
        "| `{}` | {} | {:?} | {} | {} | {} |",
        case.name,
        md(&case.about),
        e.authorizer,
        e.status,
        e.error.as_deref().map_or("–".into(), |c| format!("`{c}`")),
        stored
    )
}

const DOC_HEADER: &str = "| case | what it is | authorizer | status | error | stored |\n| --- | --- | --- | --- | --- | --- |";

#[test]
fn the_doc_table_has_every_corpus_case_with_its_answer() {
    let cases = corpus();
    assert!(cases.len() >= 60, "the corpus has {} cases", cases.len());
    let expected: Vec<String> = cases.iter().map(doc_row).collect();
    let doc = std::fs::read_to_string(DOC).unwrap_or_else(|e| panic!("{DOC}: {e}"));
    // the rows of every table with the answers' header
    let header = DOC_HEADER.lines().next().unwrap_or_default();
    let mut rows: Vec<&str> = Vec::new();
    let mut in_table = false;
    for line in doc.lines() {
        if line == header {
            in_table = true;
        } else if !line.starts_with('|') {
            in_table = false;
        } else if in_table && line.starts_with("| `") {
            rows.push(line);
        }
    }
    if rows != expected {
        let missing: Vec<&String> = expected
            .iter()
            .filter(|r| !rows.contains(&r.as_str()))
            .collect();
        let extra: Vec<&&str> = rows
            .iter()
            .filter(|r| !expected.contains(&r.to_string()))
            .collect();
        panic!(
            "docs/bad-input.md's table disagrees with events/bad-input/corpus.json\n\
             rows missing or different in the doc:\n{}\n\nrows in the doc the corpus does not have:\n{}\n\n\
             the table, generated from the corpus:\n\n{DOC_HEADER}\n{}\n",
            missing
                .iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            extra.iter().map(|r| **r).collect::<Vec<_>>().join("\n"),
            expected.join("\n")
        );
    }
}

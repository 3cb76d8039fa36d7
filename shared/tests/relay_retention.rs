//! Retention and the blob store, both database adapters: deleting rows
//! deletes the objects no remaining row (inbox, outbox, their archives)
//! refers to and keeps shared ones; archiving keeps them; a failed object
//! delete never fails retention; an object a writer is about to refer to
//! (its transaction still open) is never deleted. Time is a manual clock.

mod common;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use common::{Adapter, at, count, migrated_db, sql};
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::blob::{BlobError, BlobKey};
use hookbox::clock::ManualClock;
use hookbox::inbox::{self, NewInboxEvent};
use hookbox::outbox::{self, NewOutboxEvent, blob_refs};
use hookbox::params;
use hookbox::relay::{HttpSender, PurgeReport, Relay, RelaySettings, RunReport};
use hookbox::store::{Database, Executor, Retention};
use uuid::Uuid;

const DAY: i64 = 86_400;

fn big(tag: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({ "tag": tag, "pad": "b".repeat(50_000) })).expect("json")
}

/// An inbox row whose 50 KB body is in the blob store, received at `t`,
/// then set to `status`. Returns its id and its body's key.
async fn inbox_row(
    db: &dyn Database,
    blobs: &MemoryBlobStore,
    event_id: &str,
    body: Vec<u8>,
    t: i64,
    status: &str,
) -> (Uuid, BlobKey) {
    let body = inbox::body::store(blobs, "acme", body, inbox::body::DEFAULT_INLINE_MAX_BYTES)
        .await
        .expect("store the body");
    let key = body.blob().expect("by reference").key.clone();
    let event = NewInboxEvent {
        partner: "acme".into(),
        event_id: event_id.into(),
        event_id_derived: false,
        event_type: Some("order.paid".into()),
        ordering_key: None,
        body,
        headers: serde_json::json!({}),
        signature_verified: true,
    };
    let id = inbox::insert_if_new(db, &event, at(t))
        .await
        .expect("insert")
        .id();
    db.execute(
        &sql("UPDATE inbox SET status = :status, next_attempt_at = NULL,
                    processed_at = CAST(:at AS timestamptz)
              WHERE id = CAST(:id AS uuid)"),
        &params! { "status" => status, "at" => at(t), "id" => id },
    )
    .await
    .expect("status");
    (id, key)
}

/// An outbox row with a 50 KB payload for `crm` (by reference), written at
/// `t`, then set to `status`. Returns its id and its payload's key.
async fn outbox_row(
    db: &dyn Database,
    blobs: &MemoryBlobStore,
    tag: &str,
    t: i64,
    status: &str,
) -> (Uuid, BlobKey) {
    let tx = db.begin().await.expect("begin");
    let id = outbox::enqueue_with_blobs(tx.as_ref(), blobs, &event(tag), at(t))
        .await
        .expect("enqueue");
    tx.commit().await.expect("commit");
    if status != "pending" {
        db.execute(
            &sql(
                "UPDATE outbox SET status = :status, processed_at = CAST(:at AS timestamptz)
                  WHERE id = CAST(:id AS uuid)",
            ),
            &params! { "status" => status, "at" => at(t), "id" => id },
        )
        .await
        .expect("status");
    }
    let row = outbox::get(db, id).await.expect("get").expect("row");
    (
        id,
        row.payload_storage
            .blob()
            .expect("by reference")
            .key
            .clone(),
    )
}

fn event(tag: &str) -> NewOutboxEvent {
    NewOutboxEvent {
        aggregate_type: "order".into(),
        aggregate_id: tag.into(),
        event_type: "order.status_changed".into(),
        destination: "crm".into(),
        payload: serde_json::json!({ "tag": tag, "pad": "o".repeat(50_000) }),
    }
}

/// A relay purging rows older than 30 days at `now`, in `mode`.
fn relay(
    db: &Arc<dyn Database>,
    blobs: &MemoryBlobStore,
    now: DateTime<Utc>,
    mode: Retention,
) -> Relay {
    let mut settings = RelaySettings::new("relay-a");
    settings.retention_mode = mode;
    relay_with(db, blobs, now, settings)
}

fn relay_with(
    db: &Arc<dyn Database>,
    blobs: &MemoryBlobStore,
    now: DateTime<Utc>,
    settings: RelaySettings,
) -> Relay {
    Relay::new(
        db.clone(),
        Arc::new(blobs.clone()),
        Arc::new(HttpSender::default()),
        None,
        Arc::new(ManualClock::new(now)),
        settings,
    )
}

async fn queued(db: &dyn Executor) -> i64 {
    blob_refs::queued(db).await.expect("queued")
}

/// Old finished rows with an object of their own, and old finished rows
/// whose object another row (kept by retention) shares.
struct History {
    inbox_alone: BlobKey,
    inbox_shared: BlobKey,
    outbox_alone: BlobKey,
    outbox_shared: BlobKey,
    outbox_sharer: Uuid,
}

async fn history(db: &dyn Database, blobs: &MemoryBlobStore) -> History {
    let (_, inbox_alone) = inbox_row(db, blobs, "evt-1", big("alone"), 0, "processed").await;
    let (_, inbox_shared) = inbox_row(db, blobs, "evt-2", big("shared"), 0, "processed").await;
    // the same bytes under another event id, quarantined: kept for an operator
    let (_, again) = inbox_row(db, blobs, "evt-3", big("shared"), 0, "quarantined").await;
    assert_eq!(again, inbox_shared, "content addressing: one object");
    let (_, outbox_alone) = outbox_row(db, blobs, "alone", 0, "delivered").await;
    let (_, outbox_shared) = outbox_row(db, blobs, "shared", 0, "delivered").await;
    // the same payload again, recent and pending
    let (outbox_sharer, again) = outbox_row(db, blobs, "shared", 20 * DAY, "pending").await;
    assert_eq!(again, outbox_shared);
    assert_eq!(blobs.len(), 4);
    History {
        inbox_alone,
        inbox_shared,
        outbox_alone,
        outbox_shared,
        outbox_sharer,
    }
}

async fn deleting_rows_deletes_the_objects_no_row_refers_to_and_keeps_shared_ones(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let blobs = MemoryBlobStore::new();
    let h = history(db.as_ref(), &blobs).await;

    let report = relay(&db, &blobs, at(31 * DAY), Retention::Delete)
        .purge()
        .await
        .expect("purge");
    assert_eq!(
        report,
        PurgeReport {
            inbox: 2,
            outbox: 2,
            archived_deleted: 0,
            attempts_deleted: 0,
            messages_deleted: 0,
            blobs_deleted: 2,
            blobs_kept: 2,
            blob_delete_failed: 0,
        }
    );
    assert!(!blobs.contains(&h.inbox_alone));
    assert!(!blobs.contains(&h.outbox_alone));
    assert!(
        blobs.contains(&h.inbox_shared),
        "a quarantined row refers to it"
    );
    assert!(
        blobs.contains(&h.outbox_shared),
        "a pending row refers to it"
    );
    assert_eq!(queued(db.as_ref()).await, 0);
    let metrics = RunReport {
        purge: report,
        ..RunReport::default()
    }
    .metrics();
    assert_eq!(metrics.values("BlobsDeleted"), Some(&[2.0][..]));
    assert_eq!(metrics.values("BlobDeleteFailed"), Some(&[0.0][..]));

    // once the last row that refers to it goes, so does the object
    db.execute(
        &sql("UPDATE outbox SET status = 'delivered' WHERE id = CAST(:id AS uuid)"),
        &params! { "id" => h.outbox_sharer },
    )
    .await
    .expect("delivered");
    let report = relay(&db, &blobs, at(51 * DAY), Retention::Delete)
        .purge()
        .await
        .expect("purge");
    assert_eq!((report.outbox, report.blobs_deleted), (1, 1));
    assert!(!blobs.contains(&h.outbox_shared));
    assert_eq!(blobs.keys(), vec![h.inbox_shared]);
}

async fn archiving_rows_keeps_their_objects(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let blobs = MemoryBlobStore::new();
    let h = history(db.as_ref(), &blobs).await;

    let report = relay(&db, &blobs, at(31 * DAY), Retention::Archive)
        .purge()
        .await
        .expect("purge");
    assert_eq!((report.inbox, report.outbox), (2, 2));
    assert_eq!((report.blobs_deleted, report.blobs_kept), (0, 0));
    assert_eq!(blobs.len(), 4, "archived rows keep their objects");
    assert_eq!(queued(db.as_ref()).await, 0, "nothing to delete");
    let archived: i64 = hookbox::store::fetch_one(
        db.as_ref(),
        &sql(
            "SELECT (SELECT count(*) FROM inbox_archive WHERE body_key IS NOT NULL)
                  + (SELECT count(*) FROM outbox_archive WHERE payload_key IS NOT NULL) AS n",
        ),
        &params! {},
    )
    .await
    .expect("archive")
    .i64("n")
    .expect("n");
    assert_eq!(archived, 4, "with their references");

    // deleting later rows that share an object with an archived row keeps it
    let (_, key) = outbox_row(db.as_ref(), &blobs, "alone", 10 * DAY, "delivered").await;
    assert_eq!(key, h.outbox_alone);
    let report = relay(&db, &blobs, at(41 * DAY), Retention::Delete)
        .purge()
        .await
        .expect("purge");
    assert_eq!(
        (report.outbox, report.blobs_kept, report.blobs_deleted),
        (1, 1, 0)
    );
    assert!(blobs.contains(&h.outbox_alone), "the archive refers to it");
}

/// HOOKBOX_ARCHIVE_RETENTION_DAYS: archived rows older than it are deleted,
/// and their objects with them unless a row (live or archived) still refers
/// to them; younger archived rows stay, and so does everything without it.
async fn the_archive_has_its_own_retention_and_its_objects_go_with_it(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let blobs = MemoryBlobStore::new();
    let h = history(db.as_ref(), &blobs).await;
    let (_, recent) = inbox_row(
        db.as_ref(),
        &blobs,
        "evt-recent",
        big("recent"),
        50 * DAY,
        "processed",
    )
    .await;
    let archived = "SELECT (SELECT count(*) FROM inbox_archive)
                         + (SELECT count(*) FROM outbox_archive) AS n";

    let report = relay(&db, &blobs, at(100 * DAY), Retention::Archive)
        .purge()
        .await
        .expect("archive");
    assert_eq!(
        (report.inbox, report.outbox, report.archived_deleted),
        (3, 2, 0)
    );
    let report = relay(&db, &blobs, at(1_000 * DAY), Retention::Archive)
        .purge()
        .await
        .expect("no archive retention: kept");
    assert_eq!(report.archived_deleted, 0);
    assert_eq!(count(db.as_ref(), archived).await, 5);
    assert_eq!(blobs.len(), 5);

    let mut settings = RelaySettings::new("relay-a");
    settings.retention_mode = Retention::Archive;
    settings.archive_retention = Some(std::time::Duration::from_secs(90 * DAY as u64));
    let report = relay_with(&db, &blobs, at(100 * DAY), settings)
        .purge()
        .await
        .expect("purge the archive");
    assert_eq!(report.archived_deleted, 4, "the four received on day 0");
    assert_eq!((report.blobs_deleted, report.blobs_kept), (2, 2));
    assert_eq!(
        count(db.as_ref(), archived).await,
        1,
        "day 50 is younger than 90 days"
    );
    assert!(!blobs.contains(&h.inbox_alone));
    assert!(!blobs.contains(&h.outbox_alone));
    assert!(
        blobs.contains(&h.inbox_shared),
        "a quarantined row refers to it"
    );
    assert!(
        blobs.contains(&h.outbox_shared),
        "a pending row refers to it"
    );
    assert!(blobs.contains(&recent), "its archived row stays");
    assert_eq!(queued(db.as_ref()).await, 0);
}

async fn a_failed_object_delete_never_fails_retention(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let blobs = MemoryBlobStore::new();
    let (_, first) = outbox_row(db.as_ref(), &blobs, "first", 0, "delivered").await;
    let relay_at = |days: i64| relay(&db, &blobs, at(days * DAY), Retention::Delete);

    // the store is out: counted, queued again, deleted by the next run
    blobs.fail_next(BlobError::Unavailable {
        operation: "delete",
        key: first.to_string(),
        reason: "injected".into(),
    });
    let report = relay_at(31).purge().await.expect("retention goes on");
    assert_eq!((report.outbox, report.blob_delete_failed), (1, 1));
    assert!(blobs.contains(&first));
    assert_eq!(queued(db.as_ref()).await, 1, "tried again next run");
    let report = relay_at(31).purge().await.expect("purge");
    assert_eq!((report.blobs_deleted, report.blob_delete_failed), (1, 0));
    assert!(!blobs.contains(&first));

    // the store refuses: counted, left behind as an orphan
    let (_, second) = outbox_row(db.as_ref(), &blobs, "second", 0, "delivered").await;
    blobs.fail_next(BlobError::Refused {
        operation: "delete",
        key: second.to_string(),
        reason: "AccessDenied (injected)".into(),
    });
    let report = relay_at(31).purge().await.expect("retention goes on");
    assert_eq!((report.outbox, report.blob_delete_failed), (1, 1));
    assert!(blobs.contains(&second), "an orphan");
    assert_eq!(queued(db.as_ref()).await, 0);
}

/// A writer enqueues the same payload as an old row that retention deletes,
/// its transaction still open: the object it is about to refer to stays.
async fn an_object_a_writer_is_about_to_refer_to_is_never_deleted(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let blobs = MemoryBlobStore::new();
    let (_, key) = outbox_row(db.as_ref(), &blobs, "same", 0, "delivered").await;
    let relay = relay(&db, &blobs, at(31 * DAY), Retention::Delete);

    let tx = db.begin().await.expect("begin");
    let id = outbox::enqueue_with_blobs(tx.as_ref(), &blobs, &event("same"), at(31 * DAY))
        .await
        .expect("enqueue the same payload");
    let report = relay.purge().await.expect("purge");
    assert_eq!(report.outbox, 1, "the old row goes");
    assert_eq!(report.blobs_deleted, 0);
    assert!(blobs.contains(&key), "the writer's object stays");
    assert_eq!(
        queued(db.as_ref()).await,
        1,
        "decided once the writer is done"
    );
    tx.commit().await.expect("commit");

    let report = relay.purge().await.expect("purge");
    assert_eq!((report.blobs_deleted, report.blobs_kept), (0, 1));
    assert!(blobs.contains(&key));
    assert_eq!(queued(db.as_ref()).await, 0);
    let row = outbox::get(db.as_ref(), id)
        .await
        .expect("get")
        .expect("row");
    let reference = row.payload_storage.blob().expect("by reference");
    hookbox::blob::get_verified(&blobs, reference)
        .await
        .expect("the new row's payload is intact");
}

for_each_adapter!(
    deleting_rows_deletes_the_objects_no_row_refers_to_and_keeps_shared_ones,
    archiving_rows_keeps_their_objects,
    the_archive_has_its_own_retention_and_its_objects_go_with_it,
    a_failed_object_delete_never_fails_retention,
    an_object_a_writer_is_about_to_refer_to_is_never_deleted,
);

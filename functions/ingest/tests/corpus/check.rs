//! What a corpus case must have done: its answer, and what it left in the
//! database, the blob store and the queue (docs/bad-input.md, "What every
//! case must also satisfy").

use std::collections::{HashMap, HashSet};

use hookbox::blob::BlobStore;
use hookbox::inbox::{InboxMessage, InboxStatus};
use hookbox::params;
use hookbox::store::{Database, Statement};
use serde_json::Value;

use super::model::{Case, Expect, Request, Sign, Spec};

/// Where a case's effects are looked for.
pub struct Stores<'a> {
    pub db: &'a dyn Database,
    pub blobs: &'a dyn BlobStore,
}

/// One case as sent: the case, what it expects through the ingress it was
/// sent through, its request.
pub struct Sent<'a> {
    pub case: &'a Case,
    pub expect: &'a Expect,
    pub request: &'a Request,
}

/// What API Gateway answered for one case.
#[derive(Debug, Default)]
pub struct Got {
    /// `Allow`, `Deny`, or why the authorizer did not answer.
    pub authorizer: String,
    pub status: u16,
    /// The deny reason, or ingest's `error`.
    pub error: Option<String>,
    /// Ingest's JSON answer.
    pub body: Value,
}

impl Got {
    pub fn summary(&self) -> String {
        let mut s = format!("{} {}", self.authorizer, self.status);
        if let Some(e) = &self.error {
            s.push_str(&format!(" {e}"));
        }
        if let Some(status) = self.body.get("status").and_then(Value::as_str) {
            s.push_str(&format!(" {status}"));
        }
        s
    }
}

const OUTBOX_AFTER: Statement = Statement::new(
    "test.bad_input.outbox_after",
    "SELECT destination, aggregate_type, aggregate_id, event_type, status,
            payload_key IS NULL AS inline
       FROM outbox WHERE seq > :after ORDER BY seq",
);

/// True when PostgreSQL's jsonb (whose numbers are exact: no `f64` in
/// between) holds each outbox row after `:after` as the JSON value `:body`.
const OUTBOX_PAYLOADS_ARE: Statement = Statement::new(
    "test.bad_input.outbox_payloads_are",
    "SELECT COALESCE(bool_and(payload = CAST(:body AS jsonb)), false) AS same
       FROM outbox WHERE seq > :after",
);

/// What a case added to the database: inbox rows, and outbox rows (those
/// after `outbox_after`, the outbox's last `seq` before the case).
pub struct Added {
    pub rows: i64,
    pub outbox_after: i64,
}

/// Everything wrong with what `case` got, checked against the database,
/// the blob store and the queue.
#[allow(clippy::too_many_arguments)]
pub async fn check(
    rig: &Stores<'_>,
    sent: &Sent<'_>,
    got: &Got,
    added: Added,
    messages: &[String],
    ids: &mut HashMap<String, uuid::Uuid>,
    blob_keys: &mut HashSet<String>,
) -> Vec<String> {
    let (case, e) = (sent.case, sent.expect);
    let rows_added = added.rows;
    let mut problems = Vec::new();
    let verdict = format!("{:?}", e.authorizer);
    if got.authorizer != verdict {
        problems.push(format!("authorizer not {verdict}"));
    }
    if got.status != e.status {
        problems.push(format!("status {} (expected {})", got.status, e.status));
    }
    if got.error != e.error {
        problems.push(format!("error {:?} (expected {:?})", got.error, e.error));
    }
    if got.status >= 500 {
        let signed = matches!(case.sign, Sign::StandardWebhooks | Sign::Github);
        problems.push(format!(
            "a 5xx{}",
            if signed && got.authorizer == "Allow" {
                " for a correctly signed request"
            } else {
                ""
            }
        ));
    }
    if (400..500).contains(&got.status) && rows_added != 0 {
        problems.push(format!("a {} left {rows_added} row(s)", got.status));
    }
    let answered = got.body.get("status").and_then(Value::as_str);
    let accepted = answered == Some("accepted");
    let id = got
        .body
        .get("id")
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<uuid::Uuid>().ok());
    if let Some(id) = id {
        ids.insert(case.name.clone(), id);
    }
    let expect_new = e.stored && e.duplicate_of.is_none();
    if expect_new && !accepted {
        problems.push(format!("not stored (answer {answered:?})"));
    }
    if expect_new {
        if rows_added != 1 {
            problems.push(format!("{rows_added} rows added (expected 1)"));
        }
    } else if rows_added != 0 {
        problems.push(format!("{rows_added} row(s) added (expected none)"));
    }
    if let Some(of) = &e.duplicate_of {
        if answered != Some("duplicate") {
            problems.push(format!("answer {answered:?} (expected duplicate of {of})"));
        } else if id != ids.get(of).copied() {
            problems.push(format!("duplicate of {id:?}, {of} was {:?}", ids.get(of)));
        }
    }
    // the queue: one message SQS took for a new row left to the processor,
    // nothing for a row forwarded at ingest, nothing otherwise
    if accepted {
        let forwarded = e.deliveries() > 0;
        match (messages, forwarded) {
            ([], true) => {}
            (m, true) => problems.push(format!(
                "{} queue message(s) for an event forwarded at ingest (expected none)",
                m.len()
            )),
            ([m], false) => {
                if !m.is_ascii() {
                    problems.push("queue message is not ASCII".into());
                }
                match InboxMessage::from_body(m) {
                    Ok(InboxMessage::Stored { inbox_id, .. }) if Some(inbox_id) == id => {}
                    other => problems.push(format!("queue message {other:?}")),
                }
            }
            (m, false) => problems.push(format!("{} queue messages (expected 1)", m.len())),
        }
        match id {
            Some(id) => {
                problems.extend(check_row(rig, sent, id, added.outbox_after, blob_keys).await);
            }
            None => problems.push(format!("accepted without an id: {}", got.body)),
        }
    } else {
        if !messages.is_empty() {
            problems.push(format!(
                "{} queue message(s) without a new row",
                messages.len()
            ));
        }
        problems.extend(check_outbox(rig, sent, added.outbox_after, None).await);
    }
    problems
}

/// The outbox rows the case wrote: as many as `expect.forwarded` (none
/// unless forwarded at ingest), each inline, pending for the relay, of
/// aggregate `partner:<name>` / the ordering key (else the event id), and
/// whose payload is the body as a JSON value exactly (compared by jsonb,
/// whose numbers are exact: serde_json's `f64` would hide a rounding).
async fn check_outbox(
    rig: &Stores<'_>,
    sent: &Sent<'_>,
    after: i64,
    row: Option<&hookbox::inbox::InboxRow>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let written = match rig
        .db
        .execute(&OUTBOX_AFTER, &params! { "after" => after })
        .await
    {
        Ok(r) => r.rows,
        Err(err) => return vec![format!("outbox unreadable: {err}")],
    };
    let (request, want) = (sent.request, sent.expect.deliveries());
    if u64::try_from(written.len()).ok() != Some(want) {
        problems.push(format!(
            "{} outbox row(s) written (expected {want})",
            written.len()
        ));
    }
    let Some(row) = row.filter(|_| !written.is_empty()) else {
        return problems;
    };
    let aggregate_type = format!("partner:{}", request.partner);
    let aggregate_id = row.ordering_key.as_deref().unwrap_or(&row.event_id);
    for w in &written {
        let field = |c: &str| w.opt_text(c).ok().flatten().unwrap_or_default();
        if field("aggregate_type") != aggregate_type || field("aggregate_id") != aggregate_id {
            problems.push(format!(
                "outbox aggregate {}/{} (expected {aggregate_type}/{aggregate_id})",
                field("aggregate_type"),
                field("aggregate_id")
            ));
        }
        if let Some(t) = row
            .event_type
            .as_deref()
            .filter(|t| field("event_type") != *t)
        {
            problems.push(format!(
                "outbox event_type {:?} (expected {t:?})",
                field("event_type")
            ));
        }
        if field("status") != "pending" || w.bool("inline").ok() != Some(true) {
            problems.push(format!(
                "outbox row {}, inline {:?} (expected pending, inline)",
                field("status"),
                w.bool("inline").ok()
            ));
        }
    }
    let Ok(body) = std::str::from_utf8(&request.body) else {
        problems.push("forwarded a body that is not UTF-8".into());
        return problems;
    };
    match rig
        .db
        .execute(
            &OUTBOX_PAYLOADS_ARE,
            &params! { "after" => after, "body" => body },
        )
        .await
        .map(|r| r.rows.first().map(|r| r.bool("same")))
    {
        Ok(Some(Ok(true))) => {}
        Ok(Some(Ok(false))) => {
            problems.push("an outbox payload is not the body's JSON value exactly".into());
        }
        other => problems.push(format!("outbox payloads not comparable: {other:?}")),
    }
    problems
}

/// The stored row against the case.
async fn check_row(
    rig: &Stores<'_>,
    sent: &Sent<'_>,
    id: uuid::Uuid,
    outbox_after: i64,
    blob_keys: &mut HashSet<String>,
) -> Vec<String> {
    let (request, e) = (sent.request, sent.expect);
    let mut problems = Vec::new();
    let row = match hookbox::inbox::get(rig.db, id).await {
        Ok(Some(row)) => row,
        other => return vec![format!("row {id}: {other:?}")],
    };
    // no processor runs: a row is finished only when forwarded at ingest
    let status = if e.deliveries() > 0 {
        InboxStatus::Processed
    } else {
        InboxStatus::Pending
    };
    if row.status != status {
        problems.push(format!("row {} (expected {status})", row.status));
    }
    problems.extend(check_outbox(rig, sent, outbox_after, Some(&row)).await);
    if row.partner != request.partner || !row.signature_verified {
        problems.push(format!(
            "row partner {:?}, verified {}",
            row.partner, row.signature_verified
        ));
    }
    match hookbox::inbox::body::read(rig.db, rig.blobs, id, &row.body).await {
        Ok(bytes) if bytes == request.body => {}
        Ok(bytes) => problems.push(format!(
            "stored body of {} bytes differs from the {} sent",
            bytes.len(),
            request.body.len()
        )),
        Err(err) => problems.push(format!("body unreadable: {err}")),
    }
    if let Some(blob) = row.body.blob() {
        blob_keys.insert(blob.key.to_string());
    }
    if let Some(in_blob) = e.body_in_blob {
        if row.body.blob().is_some() != in_blob {
            problems.push(format!(
                "body in the blob store: {}",
                row.body.blob().is_some()
            ));
        }
    }
    let text = |v: &Option<Spec>| v.as_ref().map(Spec::text);
    if let Some(want) = &e.event_id {
        if Some(row.event_id.clone()) != text(want) {
            problems.push(format!(
                "event_id {:?} (expected {:?})",
                row.event_id,
                text(want)
            ));
        }
    }
    if let Some(want) = &e.event_type {
        if row.event_type != text(want) {
            problems.push(format!(
                "event_type {:?} (expected {:?})",
                row.event_type,
                text(want)
            ));
        }
    }
    if let Some(want) = &e.ordering_key {
        if row.ordering_key != text(want) {
            problems.push(format!(
                "ordering_key {:?} (expected {:?})",
                row.ordering_key,
                text(want)
            ));
        }
    }
    for (name, want) in &e.kept_headers {
        let kept = row
            .headers
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_string);
        if kept != text(want) {
            problems.push(format!(
                "kept header {name} {kept:?} (expected {:?})",
                text(want)
            ));
        }
    }
    problems
}

//! Notices that name what failed: at the end of each run the relay tells
//! the operators' alarm topic ([`crate::notify`]) when a configured
//! destination trips (its breaker opened), is disabled, or a delivery of it
//! dies, naming the destination and, for a dead delivery, the delivery,
//! its last status and error and the webhook it was written for. Never a
//! secret: a destination's URL and headers are not in a notice, and the
//! relay's errors never quote them.
//!
//! Rate-limited, so an outage sends a few messages, not thousands
//! (`hookbox_notices`, migration 29, shared by every relay):
//! - a trip is noticed once per failure episode (the destination's
//!   `failing_since`: a success ends it), however often the breaker opens
//!   again while it lasts; a disablement once (its `disabled_at`);
//! - dead deliveries at most once per destination every
//!   [`NOTICE_INTERVAL`]; the next notice counts those held back;
//! - at most [`MAX_NOTICES_PER_RUN`] notices a run: the rest in one summary.
//!
//! Tenants' endpoints are left out: a customer's receiver being down is not
//! an operator's page (their deliveries are in the attempt log and the
//! management API). A notice that cannot be sent is logged and counted
//! (`NoticesFailed`); it is not sent again.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use super::attempt::Kind;
use crate::notify::{MAX_SUBJECT_CHARS, Notifier};
use crate::outbox::{DeliveryResult, OutboxRow};
use crate::params;
use crate::store::{DbError, Executor, Statement};

/// Dead deliveries of one destination are noticed at most this often.
pub const NOTICE_INTERVAL: Duration = Duration::from_secs(15 * 60);

/// Most notices of one run; the rest go in one summary notice.
pub const MAX_NOTICES_PER_RUN: usize = 10;

/// Destinations whose attempts a run keeps for its notices (configured
/// ones are few; this bounds memory if they are not).
const MAX_TRACKED: usize = 200;

/// Most troubled destinations read at a run's end.
const MAX_TROUBLED: i64 = 500;

/// One failed or dead attempt, as a notice names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// The delivery (outbox row id, `webhook-id`).
    pub delivery_id: Uuid,
    /// The last HTTP status, if any.
    pub status_code: Option<u16>,
    /// The last error.
    pub error: Option<String>,
    /// The webhook it was written for: (inbox id, partner, event id).
    pub webhook: Option<(Uuid, Option<String>, Option<String>)>,
}

/// What one configured destination's attempts came to in a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trouble {
    /// Its last failed (or dead) attempt.
    pub last_failure: Option<Sample>,
    /// Its first dead delivery.
    pub first_dead: Option<Sample>,
    /// Deliveries that died.
    pub dead: u64,
}

/// The failures of a relay's attempts since they were last taken.
#[derive(Debug, Default)]
pub(super) struct Troubles(Mutex<BTreeMap<String, Trouble>>);

impl Troubles {
    /// An attempt of `row` (to a configured destination) came to `kind`.
    pub(super) fn record(&self, row: &OutboxRow, kind: &Kind, result: &DeliveryResult) {
        let dead = matches!(kind, Kind::Dead { .. });
        if !dead && !matches!(kind, Kind::Retried { .. }) {
            return;
        }
        let mut all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !all.contains_key(&row.destination) && all.len() >= MAX_TRACKED {
            return;
        }
        let trouble = all.entry(row.destination.clone()).or_default();
        let sample = Sample {
            delivery_id: row.id,
            status_code: result.status_code,
            error: result.error.clone(),
            webhook: row
                .origin
                .as_ref()
                .map(|o| (o.inbox_id, o.partner.clone(), o.event_id.clone())),
        };
        if dead {
            trouble.dead += 1;
            if trouble.first_dead.is_none() {
                trouble.first_dead = Some(sample.clone());
            }
        }
        trouble.last_failure = Some(sample);
    }

    /// What was recorded, and a fresh start.
    pub(super) fn take(&self) -> BTreeMap<String, Trouble> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// What a run's notices came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoticeReport {
    /// Notices sent (a summary counts one).
    pub sent: u64,
    /// Notices that could not be sent.
    pub failed: u64,
    /// Dead-delivery notices held back by the interval.
    pub held_back: u64,
}

/// A configured destination that is tripped or disabled now.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Troubled {
    name: String,
    consecutive_failures: i64,
    failing_since: Option<DateTime<Utc>>,
    open_until: Option<DateTime<Utc>>,
    disabled_at: Option<DateTime<Utc>>,
    disabled_reason: Option<String>,
}

pub const TROUBLED: Statement = Statement::new(
    "outbox.notices_troubled",
    "SELECT name, consecutive_failures, failing_since, open_until, disabled_at, disabled_reason
       FROM outbox_destinations
      WHERE tenant_id IS NULL AND (disabled_at IS NOT NULL OR open_until IS NOT NULL)
      ORDER BY name
      LIMIT CAST(:limit AS bigint)",
);

/// Takes the right to send each candidate notice (one statement, atomic
/// across relays): a trip or disablement not noticed for its episode yet, a
/// dead-delivery notice not sent within the interval. Answers those taken,
/// with the dead deliveries held back since the last one.
pub const CLAIM: Statement = Statement::new(
    "outbox.notices_claim",
    "WITH c AS (
         SELECT * FROM jsonb_to_recordset(CAST(:candidates AS jsonb))
             AS c(destination text, kind text, episode timestamptz)
     ), old AS (
         SELECT h.destination, h.kind, h.held_back
           FROM hookbox_notices AS h JOIN c USING (destination, kind)
     ), taken AS (
         INSERT INTO hookbox_notices AS h (destination, kind, episode, sent_at, held_back)
         SELECT c.destination, c.kind, c.episode, CAST(:now AS timestamptz), 0 FROM c
         ON CONFLICT (destination, kind) DO UPDATE
            SET episode = EXCLUDED.episode, sent_at = EXCLUDED.sent_at, held_back = 0
          WHERE CASE WHEN h.kind = 'dead'
                     THEN h.sent_at <= EXCLUDED.sent_at
                                       - CAST(:interval_secs AS bigint) * interval '1 second'
                     ELSE h.episode IS DISTINCT FROM EXCLUDED.episode END
         RETURNING h.destination, h.kind
     )
     SELECT t.destination, t.kind, coalesce(o.held_back, 0) AS held_back
       FROM taken AS t LEFT JOIN old AS o USING (destination, kind)",
);

/// Counts dead deliveries whose notice the interval held back.
pub const HOLD_BACK: Statement = Statement::new(
    "outbox.notices_hold_back",
    "UPDATE hookbox_notices AS h SET held_back = h.held_back + c.n
       FROM jsonb_to_recordset(CAST(:held AS jsonb)) AS c(destination text, n bigint)
      WHERE h.destination = c.destination AND h.kind = 'dead'",
);

async fn troubled(db: &dyn Executor) -> Result<Vec<Troubled>, DbError> {
    let rows = db
        .execute(&TROUBLED, &params! { "limit" => MAX_TROUBLED })
        .await?;
    rows.rows
        .iter()
        .map(|r| {
            Ok(Troubled {
                name: r.text("name")?,
                consecutive_failures: r.i64("consecutive_failures")?,
                failing_since: r.opt_timestamp("failing_since")?,
                open_until: r.opt_timestamp("open_until")?,
                disabled_at: r.opt_timestamp("disabled_at")?,
                disabled_reason: r.opt_text("disabled_reason")?,
            })
        })
        .collect()
}

/// One notice to send.
#[derive(Debug, Clone, PartialEq)]
struct Notice {
    destination: String,
    kind: &'static str,
    message: Value,
}

fn time(t: Option<DateTime<Utc>>) -> Value {
    t.map_or(Value::Null, |t| {
        Value::from(t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
    })
}

fn sample_json(s: &Sample) -> Value {
    let mut v = json!({
        "delivery_id": s.delivery_id.to_string(),
        "status_code": s.status_code,
        "error": s.error,
    });
    if let Some((inbox_id, partner, event_id)) = &s.webhook {
        v["webhook"] = json!({
            "inbox_id": inbox_id.to_string(), "partner": partner, "event_id": event_id,
        });
    }
    v
}

fn subject(stack: Option<&str>, what: &str) -> String {
    let text = format!(
        "hookbox{}: {what}",
        stack.map(|s| format!(" {s}")).unwrap_or_default()
    );
    // names are [A-Za-z0-9._-]; anything else (a stack name) is replaced
    let text: String = text
        .chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
        .collect();
    text.chars().take(MAX_SUBJECT_CHARS).collect()
}

/// The candidate notices of a run: trips and disablements now, and the
/// run's dead deliveries (configured destinations only).
fn candidates(troubled: &[Troubled], troubles: &BTreeMap<String, Trouble>) -> Vec<Value> {
    let mut out = Vec::new();
    for t in troubled {
        if let Some(at) = t.disabled_at {
            out.push(json!({"destination": t.name, "kind": "disabled", "episode": time(Some(at))}));
        } else if t.open_until.is_some() {
            out.push(json!({
                "destination": t.name, "kind": "tripped", "episode": time(t.failing_since),
            }));
        }
    }
    for (name, trouble) in troubles {
        if trouble.dead > 0 {
            out.push(json!({"destination": name, "kind": "dead", "episode": Value::Null}));
        }
    }
    out
}

/// The notice of a claimed (destination, kind).
fn notice(
    stack: Option<&str>,
    now: DateTime<Utc>,
    destination: &str,
    kind: &str,
    held_back: i64,
    troubled: &[Troubled],
    troubles: &BTreeMap<String, Trouble>,
) -> Option<Notice> {
    let trouble = troubles.get(destination);
    let state = troubled.iter().find(|t| t.name == destination);
    let runbook = "docs/operations.md: hookbox destination list; \
                   hookbox outbox list --destination NAME --status dead; \
                   hookbox outbox attempts DELIVERY_ID";
    let (kind, what, mut message) = match kind {
        "tripped" => {
            let state = state?;
            (
                "tripped",
                "tripped",
                json!({
                    "type": "alert.destination.tripped",
                    "consecutive_failures": state.consecutive_failures,
                    "failing_since": time(state.failing_since),
                    "open_until": time(state.open_until),
                    "last_failure": trouble.and_then(|t| t.last_failure.as_ref()).map(sample_json),
                }),
            )
        }
        "disabled" => {
            let state = state?;
            (
                "disabled",
                "disabled",
                json!({
                    "type": "alert.destination.disabled",
                    "disabled_at": time(state.disabled_at),
                    "reason": state.disabled_reason,
                    "enable_with": format!("hookbox destination enable {destination}"),
                }),
            )
        }
        "dead" => {
            let trouble = trouble?;
            (
                "dead",
                "has dead deliveries",
                json!({
                    "type": "alert.delivery.dead",
                    "dead_this_run": trouble.dead,
                    "held_back_since_last_notice": held_back,
                    "delivery": trouble.first_dead.as_ref().map(sample_json),
                }),
            )
        }
        _ => return None,
    };
    message["destination"] = destination.into();
    message["stack"] = stack.into();
    message["at"] = time(Some(now));
    message["runbook"] = runbook.into();
    Some(Notice {
        destination: destination.to_owned(),
        kind,
        message: json!({
            "subject": subject(stack, &format!("destination {destination} {what}")),
            "notice": message,
        }),
    })
}

/// Claims and sends the run's notices through `notifier`; never fails the
/// run (a failure is logged and counted).
pub(super) async fn send(
    db: &dyn Executor,
    notifier: &dyn Notifier,
    now: DateTime<Utc>,
    troubles: BTreeMap<String, Trouble>,
) -> Result<NoticeReport, DbError> {
    let troubled = troubled(db).await?;
    let candidates = candidates(&troubled, &troubles);
    let mut report = NoticeReport::default();
    if candidates.is_empty() {
        return Ok(report);
    }
    let claimed = db
        .execute(
            &CLAIM,
            &params! {
                "candidates" => Value::from(candidates).to_string(),
                "now" => now,
                "interval_secs" => i64::try_from(NOTICE_INTERVAL.as_secs()).unwrap_or(i64::MAX),
            },
        )
        .await?;
    let stack = crate::metrics::stack();
    let mut notices = Vec::new();
    for row in &claimed.rows {
        let destination = row.text("destination")?;
        let kind = row.text("kind")?;
        let held_back = row.i64("held_back")?;
        if let Some(n) = notice(
            stack,
            now,
            &destination,
            &kind,
            held_back,
            &troubled,
            &troubles,
        ) {
            notices.push(n);
        }
    }
    // dead deliveries the interval held back: counted for the next notice
    let held: Vec<Value> = troubles
        .iter()
        .filter(|(name, t)| {
            t.dead > 0
                && !notices
                    .iter()
                    .any(|n| n.kind == "dead" && &n.destination == *name)
        })
        .map(|(name, t)| json!({"destination": name, "n": t.dead}))
        .collect();
    report.held_back = held.len() as u64;
    if !held.is_empty() {
        db.execute(
            &HOLD_BACK,
            &params! { "held" => Value::from(held).to_string() },
        )
        .await?;
    }
    // the most urgent first: disabled, tripped, dead
    let rank = |k: &str| ["disabled", "tripped", "dead"].iter().position(|x| *x == k);
    notices.sort_by_key(|n| (rank(n.kind), n.destination.clone()));
    let rest = notices.split_off(notices.len().min(MAX_NOTICES_PER_RUN));
    if !rest.is_empty() {
        notices.push(summary(stack, now, &rest));
    }
    for n in notices {
        let subject = n.message["subject"].as_str().unwrap_or("hookbox notice");
        let body = n.message["notice"].to_string();
        match notifier.notify(subject, &body).await {
            Ok(()) => {
                report.sent += 1;
                tracing::info!(destination = %n.destination, kind = n.kind, "notice sent");
            }
            Err(e) => {
                report.failed += 1;
                tracing::error!(destination = %n.destination, kind = n.kind, error = %e, "notice not sent");
            }
        }
    }
    Ok(report)
}

/// One notice for the notices over a run's limit.
fn summary(stack: Option<&str>, now: DateTime<Utc>, rest: &[Notice]) -> Notice {
    let listed: Vec<Value> = rest
        .iter()
        .take(50)
        .map(|n| json!({"destination": n.destination, "kind": n.kind}))
        .collect();
    let subject = subject(
        stack,
        &format!("{} more destinations need attention", rest.len()),
    );
    Notice {
        destination: "(several)".into(),
        kind: "summary",
        message: json!({
            "subject": subject,
            "notice": {
                "type": "alert.destination.summary",
                "stack": stack,
                "at": time(Some(now)),
                "more": rest.len(),
                "first": listed,
                "runbook": "docs/operations.md: hookbox destination list",
            },
        }),
    }
}

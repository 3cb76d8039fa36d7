//! `hookbox dlq redrive`: messages from the dead-letter queue back to the
//! inbox queue, through SQS's StartMessageMoveTask, or by moving them
//! ourselves where the endpoint does not implement it (moto), or by asking a
//! running local stack.

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Duration;

use aws_sdk_sqs::Client;
use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::types::QueueAttributeName;
use clap::{Args, Subcommand};

use crate::common::{
    DbArgs, Failure, OrFail as _, Outcome, SqsArgs, connect_if_configured, shorten,
};

#[derive(Debug, Subcommand)]
pub enum DlqCommand {
    /// Move the dead-letter queue's messages back to the queue they came
    /// from. Processing is idempotent, so a message that is moved twice is
    /// harmless.
    Redrive(RedriveArgs),
}

#[derive(Debug, Args)]
pub struct RedriveArgs {
    /// The dead-letter queue URL. Default: HOOKBOX_DLQ_URL, else the
    /// deadLetterTargetArn of the queue's RedrivePolicy.
    #[arg(long, value_name = "URL", conflicts_with = "local_stack")]
    dlq_url: Option<String>,
    /// The queue to move the messages to. Default: HOOKBOX_QUEUE_URL, else
    /// the queues that use the DLQ (SQS's own default).
    #[arg(long, value_name = "URL", conflicts_with = "local_stack")]
    queue_url: Option<String>,
    #[command(flatten)]
    sqs: SqsArgs,
    /// The inbox's database, when configured: the redrive then says how many
    /// of the messages refer to dead rows (the processor acknowledges those
    /// without running the handler: replay them with `hookbox inbox replay`).
    #[command(flatten)]
    db: DbArgs,
    /// Also process the dead rows among the moved messages again: each one
    /// is put back to pending (as `hookbox inbox replay` does) just before
    /// its message is sent back, so the processor runs it. Needs the
    /// database. The CLI then moves the messages itself (receive, send,
    /// delete) even where StartMessageMoveTask exists, since that does not
    /// show which rows the messages name.
    #[arg(long, conflicts_with = "local_stack")]
    replay_dead: bool,
    /// Ask a running local stack instead (`POST <URL>/admin/api/dlq/redrive`).
    #[arg(long, value_name = "URL")]
    local_stack: Option<String>,
}

pub async fn run(command: &DlqCommand) -> Outcome {
    match command {
        DlqCommand::Redrive(args) => match &args.local_stack {
            Some(url) => {
                if args.sqs.sqs_endpoint.is_some() {
                    return Err(Failure::usage(
                        "--sqs-endpoint does not apply to --local-stack (the local stack owns its queues)",
                    ));
                }
                redrive_local_stack(url).await
            }
            None => redrive_sqs(args).await,
        },
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// `arn:aws:sqs:<region>:<account>:<name>` → (account, name).
fn parse_queue_arn(arn: &str) -> Option<(&str, &str)> {
    let mut parts = arn.splitn(6, ':');
    let (arn_tag, _partition, service, _region) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let (account, name) = (parts.next()?, parts.next()?);
    (arn_tag == "arn" && service == "sqs" && !name.is_empty()).then_some((account, name))
}

fn sdk_error<E, R>(e: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match e {
        SdkError::ServiceError(ctx) => match (ctx.err().code(), ctx.err().message()) {
            (Some(code), Some(message)) => format!("{code}: {message}"),
            (Some(code), None) => code.to_owned(),
            (None, _) => format!("{e} ({})", ctx.err()),
        },
        other => {
            let mut out = other.to_string();
            let mut source = std::error::Error::source(other);
            while let Some(s) = source {
                out.push_str(": ");
                out.push_str(&s.to_string());
                source = s.source();
            }
            out
        }
    }
}

async fn attributes(
    sqs: &Client,
    url: &str,
    names: &[QueueAttributeName],
) -> Result<HashMap<QueueAttributeName, String>, Failure> {
    let mut request = sqs.get_queue_attributes().queue_url(url);
    for name in names {
        request = request.attribute_names(name.clone());
    }
    let out = request.send().await.map_err(|e| {
        Failure::failed(format!(
            "cannot read the attributes of {url}: {}",
            sdk_error(&e)
        ))
    })?;
    Ok(out.attributes().cloned().unwrap_or_default())
}

async fn queue_arn(sqs: &Client, url: &str) -> Result<String, Failure> {
    attributes(sqs, url, &[QueueAttributeName::QueueArn])
        .await?
        .remove(&QueueAttributeName::QueueArn)
        .ok_or_else(|| Failure::failed(format!("{url} did not say its QueueArn")))
}

async fn url_of_arn(sqs: &Client, arn: &str) -> Result<String, Failure> {
    let (account, name) = parse_queue_arn(arn)
        .ok_or_else(|| Failure::failed(format!("{arn:?} is not an SQS queue ARN")))?;
    let out = sqs
        .get_queue_url()
        .queue_name(name)
        .queue_owner_aws_account_id(account)
        .send()
        .await
        .map_err(|e| Failure::failed(format!("cannot find the URL of {arn}: {}", sdk_error(&e))))?;
    out.queue_url()
        .map(str::to_owned)
        .ok_or_else(|| Failure::failed(format!("no URL for {arn}")))
}

/// The DLQ named by the queue's RedrivePolicy.
async fn dlq_of(sqs: &Client, queue_url: &str) -> Result<String, Failure> {
    let policy = attributes(sqs, queue_url, &[QueueAttributeName::RedrivePolicy])
        .await?
        .remove(&QueueAttributeName::RedrivePolicy)
        .ok_or_else(|| {
            Failure::usage(format!(
                "{queue_url} has no RedrivePolicy, so no dead-letter queue: pass --dlq-url"
            ))
        })?;
    let policy: serde_json::Value = serde_json::from_str(&policy)
        .or_failed(format!("the RedrivePolicy of {queue_url} is not JSON"))?;
    let arn = policy
        .get("deadLetterTargetArn")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| {
            Failure::failed(format!(
                "the RedrivePolicy of {queue_url} has no deadLetterTargetArn"
            ))
        })?;
    url_of_arn(sqs, arn).await
}

/// True when the endpoint does not know the operation at all (an emulator):
/// AWS always answers its own errors with an error code.
fn unsupported<E, R>(e: &SdkError<E, R>) -> bool
where
    E: ProvideErrorMetadata,
{
    let SdkError::ServiceError(ctx) = e else {
        return false;
    };
    match ctx.err().code() {
        None => true,
        Some(code) => [
            "UnknownOperationException",
            "InvalidAction",
            "NotImplemented",
            "UnsupportedOperation",
            "AWS.SimpleQueueService.UnsupportedOperation",
        ]
        .contains(&code),
    }
}

async fn redrive_sqs(args: &RedriveArgs) -> Outcome {
    let sqs = args.sqs.client().await;
    let queue_url = args.queue_url.clone().or_else(|| env("HOOKBOX_QUEUE_URL"));
    let dlq_url = match args.dlq_url.clone().or_else(|| env("HOOKBOX_DLQ_URL")) {
        Some(url) => url,
        None => match &queue_url {
            Some(queue) => dlq_of(&sqs, queue).await?,
            None => {
                return Err(Failure::usage(
                    "no queue configured: pass --dlq-url or --queue-url \
                     (or set HOOKBOX_DLQ_URL or HOOKBOX_QUEUE_URL)",
                ));
            }
        },
    };
    if queue_url.as_deref() == Some(dlq_url.as_str()) {
        return Err(Failure::usage(format!(
            "the queue and the dead-letter queue are the same ({dlq_url})"
        )));
    }
    let dlq_arn = queue_arn(&sqs, &dlq_url).await?;
    let queue_arn = match &queue_url {
        Some(url) => Some(queue_arn(&sqs, url).await?),
        None => None,
    };
    if args.replay_dead {
        let Some(db) = connect_if_configured(&args.db).await? else {
            return Err(Failure::usage(
                "--replay-dead needs the inbox's database: set DATABASE_URL (or HOOKBOX_DB=data-api \
                 with its variables) or pass --database-url",
            ));
        };
        let target = match queue_url {
            Some(url) => url,
            None => only_source_queue(&sqs, &dlq_url).await?,
        };
        let moved = move_messages(&sqs, &dlq_url, &target, Some(db.as_ref())).await?;
        println!(
            "moved {} messages from {dlq_url} to {target} by receive/send/delete",
            moved.moved
        );
        println!(
            "replayed {} dead inbox rows: pending again, their moved messages run them",
            moved.replayed
        );
        return Ok(ExitCode::SUCCESS);
    }
    let waiting = attributes(
        &sqs,
        &dlq_url,
        &[QueueAttributeName::ApproximateNumberOfMessages],
    )
    .await?
    .remove(&QueueAttributeName::ApproximateNumberOfMessages)
    .unwrap_or_else(|| "?".into());

    let started = sqs
        .start_message_move_task()
        .source_arn(&dlq_arn)
        .set_destination_arn(queue_arn.clone())
        .customize()
        .config_override(
            aws_sdk_sqs::config::Builder::default()
                .retry_config(aws_sdk_sqs::config::retry::RetryConfig::disabled()),
        )
        .send()
        .await;
    match started {
        Ok(out) => {
            let target = queue_url.as_deref().unwrap_or("the queues it serves");
            println!(
                "started a message move task from {dlq_url} to {target} (about {waiting} messages)"
            );
            if let Some(handle) = out.task_handle() {
                println!("task handle: {handle}");
            }
            println!(
                "SQS moves the messages in the background (ListMessageMoveTasks shows progress)"
            );
            note_dead_rows(&args.db, None).await?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) if unsupported(&e) => {
            let target = match queue_url {
                Some(url) => url,
                None => only_source_queue(&sqs, &dlq_url).await?,
            };
            let moved = move_messages(&sqs, &dlq_url, &target, None).await?;
            println!(
                "moved {} messages from {dlq_url} to {target} by receive/send/delete: \
                 this SQS endpoint does not implement StartMessageMoveTask",
                moved.moved
            );
            note_dead_rows(&args.db, Some(&moved.rows)).await?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Err(Failure::failed(format!(
            "StartMessageMoveTask from {dlq_arn} failed: {}",
            sdk_error(&e)
        ))),
    }
}

/// The one queue whose RedrivePolicy targets `dlq_url`.
async fn only_source_queue(sqs: &Client, dlq_url: &str) -> Result<String, Failure> {
    let out = sqs
        .list_dead_letter_source_queues()
        .queue_url(dlq_url)
        .send()
        .await
        .map_err(|e| {
            Failure::failed(format!(
                "cannot list the queues that use {dlq_url}: {}",
                sdk_error(&e)
            ))
        })?;
    match out.queue_urls() {
        [one] => Ok(one.clone()),
        [] => Err(Failure::usage(format!(
            "no queue uses {dlq_url} as its dead-letter queue: pass --queue-url"
        ))),
        many => Err(Failure::usage(format!(
            "{} queues use {dlq_url} as their dead-letter queue: pass --queue-url",
            many.len()
        ))),
    }
}

/// Moves every message by hand: receive from the DLQ, send to the queue
/// (body and attributes), then delete from the DLQ. A crash between send and
/// delete leaves a copy in both (at least once; processing is idempotent).
/// A redriven message of a dead row is acknowledged without running the
/// handler (the row is finished): say so, and point at the replay. With the
/// moved rows' ids (the receive/send/delete path sees the bodies) the count
/// is exact; after StartMessageMoveTask it is every dead row. Nothing is said
/// without a configured database.
async fn note_dead_rows(db: &DbArgs, moved_rows: Option<&[uuid::Uuid]>) -> Result<(), Failure> {
    let Some(db) = connect_if_configured(db).await? else {
        println!("(configure the database to learn how many of them refer to dead inbox rows)");
        return Ok(());
    };
    let dead = match moved_rows {
        Some(ids) => {
            let mut dead = 0;
            for id in ids {
                let row = hookbox::inbox::get(db.as_ref(), *id)
                    .await
                    .or_failed(format!("cannot read inbox row {id}"))?;
                dead +=
                    u64::from(row.is_some_and(|r| r.status == hookbox::inbox::InboxStatus::Dead));
            }
            dead
        }
        None => hookbox::inbox::counts_by_status(db.as_ref())
            .await
            .or_failed("cannot count the inbox rows")?
            .get(&hookbox::inbox::InboxStatus::Dead)
            .copied()
            .map_or(0, |n| u64::try_from(n).unwrap_or(0)),
    };
    if dead > 0 {
        let which = if moved_rows.is_some() {
            format!("{dead} of the moved messages refer to dead inbox rows")
        } else {
            format!("{dead} inbox rows are dead")
        };
        println!(
            "note: {which}: the processor acknowledges a message of a dead row without running \
             the handler (the row is finished). To process them again: \
             hookbox inbox replay --status dead (or redrive with --replay-dead)"
        );
    }
    Ok(())
}

/// What [`move_messages`] did.
#[derive(Debug, Default)]
struct Moved {
    /// Messages moved.
    moved: u64,
    /// The inbox rows the moved `stored` messages name.
    rows: Vec<uuid::Uuid>,
    /// Dead rows put back to pending before their message was sent.
    replayed: u64,
}

/// Puts inbox row `id` back to pending when it is dead (one statement, as
/// `hookbox inbox replay`); `true` when it did. Other statuses are left:
/// the processor treats their redriven message as usual.
async fn replay_if_dead(
    db: &dyn hookbox::store::Executor,
    id: uuid::Uuid,
) -> Result<bool, Failure> {
    let row = hookbox::inbox::get(db, id)
        .await
        .or_failed(format!("cannot read inbox row {id}"))?;
    if row.is_none_or(|r| r.status != hookbox::inbox::InboxStatus::Dead) {
        return Ok(false);
    }
    let replayed = hookbox::inbox::replay(db, id, chrono::Utc::now())
        .await
        .or_failed(format!("cannot replay inbox row {id}"))?;
    Ok(matches!(replayed, hookbox::inbox::Replay::Replayed { .. }))
}

async fn move_messages(
    sqs: &Client,
    from: &str,
    to: &str,
    replay_dead: Option<&dyn hookbox::store::Executor>,
) -> Result<Moved, Failure> {
    const VISIBILITY: Duration = Duration::from_secs(60);
    let mut done = Moved::default();
    loop {
        let out = sqs
            .receive_message()
            .queue_url(from)
            .max_number_of_messages(10)
            .visibility_timeout(i32::try_from(VISIBILITY.as_secs()).unwrap_or(60))
            .wait_time_seconds(0)
            .message_attribute_names("All")
            .send()
            .await
            .map_err(|e| {
                Failure::failed(format!(
                    "cannot receive from {from} after moving {} messages: {}",
                    done.moved,
                    sdk_error(&e)
                ))
            })?;
        let messages = out.messages();
        if messages.is_empty() {
            return Ok(done);
        }
        for message in messages {
            let id = message.message_id().unwrap_or("?");
            if let Ok(hookbox::inbox::InboxMessage::Stored { inbox_id, .. }) =
                hookbox::inbox::InboxMessage::from_body(message.body().unwrap_or_default())
            {
                done.rows.push(inbox_id);
                // Pending BEFORE the message is back on the queue: a
                // processor that received it first would acknowledge it as
                // the message of a finished row.
                if let Some(db) = replay_dead
                    && replay_if_dead(db, inbox_id).await?
                {
                    done.replayed += 1;
                }
            }
            sqs.send_message()
                .queue_url(to)
                .message_body(message.body().unwrap_or_default())
                .set_message_attributes(message.message_attributes().cloned())
                .send()
                .await
                .map_err(|e| {
                    Failure::failed(format!(
                        "cannot send message {id} to {to} after moving {} messages: {}",
                        done.moved,
                        sdk_error(&e)
                    ))
                })?;
            sqs.delete_message()
                .queue_url(from)
                .receipt_handle(message.receipt_handle().unwrap_or_default())
                .send()
                .await
                .map_err(|e| {
                    Failure::failed(format!(
                        "message {id} was copied to {to} but not deleted from {from}: {}",
                        sdk_error(&e)
                    ))
                })?;
            done.moved += 1;
        }
    }
}

/// Asks the local stack: `POST <url>/admin/api/dlq/redrive`, which answers
/// `{"moved":n}`. An empty 2xx answer is accepted (the count is unknown).
async fn redrive_local_stack(base: &str) -> Outcome {
    let url = format!("{}/admin/api/dlq/redrive", base.trim_end_matches('/'));
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(60))
        .build()
        .or_failed("cannot build the HTTP client")?;
    let response = http
        .post(&url)
        .send()
        .await
        .or_failed(format!("POST {url} failed"))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .or_failed(format!("cannot read the answer of POST {url}"))?;
    let text = String::from_utf8_lossy(&body);
    if !status.is_success() {
        return Err(Failure::failed(format!(
            "the local stack answered POST {url} with {status}: {}",
            shorten(&text, 200)
        )));
    }
    if text.trim().is_empty() {
        println!("redrive requested: the local stack answered {status} without a count");
        return Ok(ExitCode::SUCCESS);
    }
    let answer: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Failure::failed(format!(
            "the local stack's answer to POST {url} is not JSON ({e}): {}",
            shorten(&text, 200)
        ))
    })?;
    if !answer.get("moved").is_some_and(serde_json::Value::is_u64) {
        return Err(Failure::failed(format!(
            "the local stack's answer to POST {url} has no \"moved\" count: {}",
            shorten(&text, 200)
        )));
    }
    println!("{answer}");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_arns_give_account_and_name() {
        assert_eq!(
            parse_queue_arn("arn:aws:sqs:us-east-1:123456789012:hookbox-dlq"),
            Some(("123456789012", "hookbox-dlq"))
        );
        assert_eq!(parse_queue_arn("arn:aws:sns:us-east-1:1:topic"), None);
        assert_eq!(parse_queue_arn("not an arn"), None);
    }
}

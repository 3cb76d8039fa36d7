//! The SQS adapter against the moto emulator: send, receive with receive
//! counts, visibility changes, delete, the DLQ after maxReceiveCount, and
//! "unavailable" when the service is gone.

use std::time::Duration;

use hookbox::queue::sqs::SqsQueue;
use hookbox::queue::{MAX_MESSAGE_BYTES, Queue, QueueConsumer, QueueError};
use hookbox_testkit::moto;

async fn queue(max_receive: u32, visibility_s: u32) -> (SqsQueue, moto::TestQueue) {
    let endpoint = moto::endpoint();
    let q = moto::create_queue(
        &endpoint,
        &moto::unique_name("hookbox"),
        visibility_s,
        max_receive,
    )
    .await;
    (
        SqsQueue::new(SqsQueue::local_client(&endpoint), q.url.clone()),
        q,
    )
}

#[tokio::test]
async fn send_receive_change_visibility_and_delete() {
    let (q, _) = queue(4, 30).await;
    let id = q.send("{\"inbox_id\":\"x\"}").await.expect("send");
    assert!(!id.is_empty());
    let got = q.receive(10).await.expect("receive");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].message_id, id);
    assert_eq!(got[0].body, "{\"inbox_id\":\"x\"}");
    assert_eq!(got[0].receive_count, 1);
    assert!(got[0].sent_at.timestamp() > 0);
    assert!(
        q.receive(10).await.expect("receive").is_empty(),
        "invisible while in flight"
    );
    // visible again at once
    q.change_visibility(&got[0].receipt_handle, Duration::ZERO)
        .await
        .expect("change visibility");
    let again = q.receive(10).await.expect("receive");
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].receive_count, 2);
    q.delete(&again[0].receipt_handle).await.expect("delete");
    q.change_visibility(&again[0].receipt_handle, Duration::ZERO)
        .await
        .expect_err("deleted message");
    assert!(q.receive(10).await.expect("receive").is_empty());
}

#[tokio::test]
async fn after_max_receives_the_message_goes_to_the_dead_letter_queue() {
    let (q, names) = queue(2, 30).await;
    q.send("poison").await.expect("send");
    for expected in 1..=2 {
        let got = q.receive(1).await.expect("receive");
        assert_eq!(got[0].receive_count, expected);
        q.change_visibility(&got[0].receipt_handle, Duration::ZERO)
            .await
            .expect("release");
    }
    assert!(
        q.receive(1).await.expect("receive").is_empty(),
        "moved on this receive"
    );
    let dlq = SqsQueue::new(SqsQueue::local_client(&moto::endpoint()), names.dlq_url);
    let dead = dlq.receive(10).await.expect("dlq");
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].body, "poison");
}

#[tokio::test]
async fn oversize_messages_are_refused_without_a_call_and_a_dead_service_is_unavailable() {
    let (q, _) = queue(4, 30).await;
    let big = "x".repeat(MAX_MESSAGE_BYTES + 1);
    assert!(matches!(
        q.send(&big).await,
        Err(QueueError::TooLarge { .. })
    ));
    // what SQS would refuse is refused the same way, without a call
    assert!(matches!(
        q.send("id-\u{FFFE}").await,
        Err(QueueError::Rejected {
            operation: "send",
            ..
        })
    ));

    let private = moto::Moto::start();
    let names = moto::create_queue(private.endpoint(), "doomed", 30, 4).await;
    let doomed = SqsQueue::new(SqsQueue::local_client(private.endpoint()), names.url);
    doomed.send("before").await.expect("alive");
    private.kill();
    let e = doomed.send("after").await.expect_err("moto is gone");
    assert!(e.is_retryable(), "{e:?}");
    assert!(
        matches!(
            e,
            QueueError::Unavailable {
                operation: "send",
                ..
            }
        ),
        "{e:?}"
    );
}

#[tokio::test]
async fn an_unknown_queue_is_a_definite_refusal() {
    let client = SqsQueue::local_client(&moto::endpoint());
    let q = SqsQueue::new(
        client,
        format!("{}/123456789012/no-such-queue", moto::endpoint()),
    );
    let e = q.send("x").await.expect_err("no queue");
    assert!(
        matches!(
            e,
            QueueError::Rejected {
                operation: "send",
                ..
            }
        ),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_delayed_message_is_a_fresh_one_invisible_until_its_delay() {
    let (q, _) = queue(4, 30).await;
    q.send_delayed("later", std::time::Duration::from_secs(900))
        .await
        .expect("sent with DelaySeconds");
    q.send("now").await.expect("sent");
    let got = q.receive(10).await.expect("receive");
    let bodies: Vec<&str> = got.iter().map(|m| m.body.as_str()).collect();
    assert_eq!(bodies, ["now"], "the delayed one is not visible yet");
}

#[tokio::test]
async fn a_batch_send_is_one_call_answered_entry_by_entry() {
    let (q, _) = queue(4, 30).await;
    let bodies: Vec<String> = (0..3).map(|i| format!("{{\"n\":{i}}}")).collect();
    let sent = q.send_batch(&bodies).await;
    assert_eq!(sent.len(), 3);
    assert!(sent.iter().all(Result::is_ok), "{sent:?}");
    let mut got: Vec<String> = q
        .receive(10)
        .await
        .expect("receive")
        .into_iter()
        .map(|m| m.body)
        .collect();
    got.sort();
    assert_eq!(got, bodies);

    // a body SQS refuses is refused alone, the others still go
    let mixed = vec!["ok-1".to_owned(), "bad\u{1}".to_owned(), "ok-2".to_owned()];
    let sent = q.send_batch(&mixed).await;
    assert!(sent[0].is_ok() && sent[2].is_ok(), "{sent:?}");
    assert!(
        matches!(&sent[1], Err(QueueError::Rejected { reason, .. }) if reason.contains("U+0001")),
        "{sent:?}"
    );

    // more than one call takes (moto would accept it): refused whole, no call
    let eleven: Vec<String> = (0..11).map(|i| i.to_string()).collect();
    let sent = q.send_batch(&eleven).await;
    assert_eq!(sent.len(), 11);
    assert!(
        sent.iter().all(|r| matches!(
            r,
            Err(QueueError::Rejected {
                operation: "send_batch",
                ..
            })
        )),
        "{sent:?}"
    );
    let half = "x".repeat(MAX_MESSAGE_BYTES / 2 + 1);
    let sent = q.send_batch(&[half.clone(), half]).await;
    assert!(sent.iter().all(Result::is_err), "over 1 MiB together");

    // send_all splits any number into calls SQS takes, in order
    let many: Vec<String> = (0..23).map(|i| format!("m-{i}")).collect();
    let sent = hookbox::queue::send_all(&q, many).await;
    assert_eq!(sent.len(), 23);
    assert!(sent.iter().all(Result::is_ok), "{sent:?}");
    let mut received = 0;
    loop {
        let got = q.receive(10).await.expect("receive");
        if got.is_empty() {
            break;
        }
        received += got.len();
        for m in got {
            q.delete(&m.receipt_handle).await.expect("delete");
        }
    }
    // 2 ok of the mixed batch, 23 of send_all
    assert_eq!(received, 25);
}

/// Issue 43: a message sent while the invocation has an X-Ray trace header
/// carries it (`AWSTraceHeader`), so its processing joins the trace; a
/// malformed one is not sent on (SQS would refuse the message). Moto keeps
/// the attribute of `SendMessage` (not of `SendMessageBatch`, whose entries
/// get it from the same function).
#[tokio::test]
async fn a_message_carries_the_senders_trace_header_when_it_is_well_formed() {
    let (q, _) = queue(4, 30).await;
    let header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
    hookbox::startup::begin_invocation("req-traced", Some(header));
    q.send("traced").await.expect("send");
    let got = q.receive(10).await.expect("receive");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].trace_header.as_deref(), Some(header));
    q.delete(&got[0].receipt_handle).await.expect("delete");

    hookbox::startup::begin_invocation("req-odd", Some("Root=not-a-trace"));
    q.send("untraced")
        .await
        .expect("a malformed header is left out, not refused");
    let got = q.receive(10).await.expect("receive");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].trace_header, None);
}

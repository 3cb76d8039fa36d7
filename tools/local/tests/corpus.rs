//! Issue #44, acceptance 1 on the local stack: the bad-input corpus
//! (`events/bad-input/corpus.json`, docs/bad-input.md) sent over real HTTP,
//! byte for byte, to two stacks, one playing API Gateway's REST API
//! (`--ingress rest`) and one its HTTP API (`--ingress http`), each over the
//! corpus's partners and a throwaway PostgreSQL of its own. Every case gets
//! the same answer from both (status, error code, accepted or duplicate),
//! but where HTTP API cannot pass the partner's bytes: a body it passes as
//! text that is not UTF-8, refused `401 invalid_signature_body_altered`
//! (docs/bad-input.md, "Both ingresses"). A Deny is compared by its status
//! (API Gateway words it differently per ingress); through REST its body
//! names the case's reason.
//!
//! The stack's clock is the system's: each case is signed just before it
//! is sent, and the corpus's timestamp offsets are moved away from the
//! 300 s tolerance's edge (an offset within it by a tenth, one past it by
//! 10 s more) so a second ticking between signing and checking changes
//! nothing. The cases that hand API Gateway's event a body of their own
//! (`event_body`) are not HTTP requests and are left out; a header value
//! HTTP itself refuses (a control character) gets the HTTP server's 400
//! from both stacks alike.

#[path = "../../../functions/ingest/tests/corpus/model.rs"]
mod model;
// the local stack's other test, in this binary (one per area): issue 43's
// trail from webhook to delivery
#[path = "stack/trail.rs"]
mod trail;

use std::time::Duration;

use hookbox_local::{Ingress, LocalStack, Options};
use model::{Case, Partners, corpus, request};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The corpus's partners, with the destination of partner `fwd`'s route
/// on this machine (a closed port: deliveries fail and are retried, and
/// nothing leaves loopback).
fn config(dir: &std::path::Path) -> std::path::PathBuf {
    let mut partners = Partners::load().0;
    for (_, destination) in partners["destinations"]
        .as_object_mut()
        .expect("destinations")
        .iter_mut()
    {
        destination["url"] = json!("http://127.0.0.1:9/hooks");
        destination["allowed_networks"] = json!(["127.0.0.0/8"]);
    }
    let path = dir.join("partners.json");
    std::fs::write(&path, partners.to_string()).expect("config");
    path
}

async fn stack(ingress: Ingress, config: &std::path::Path) -> LocalStack {
    LocalStack::start(Options {
        port: 0,
        ingress,
        config: Some(config.to_path_buf()),
        ..Options::default()
    })
    .await
    .expect("the local stack starts")
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// The case with its timestamp offset away from the tolerance's edge.
fn off_the_edge(case: &Case) -> Case {
    let mut case = case.clone();
    let offset = case.timestamp_offset_secs;
    case.timestamp_offset_secs = if offset.abs() <= 300 {
        offset * 9 / 10
    } else {
        offset + offset.signum() * 10
    };
    case
}

/// `text` for a URL path segment: every byte but the unreserved ones
/// percent-encoded.
fn segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An answer: status, and the JSON body (`{"raw": …}` when it is not).
#[derive(Debug)]
struct Answer {
    status: u16,
    body: Value,
}

impl Answer {
    fn summary(&self) -> String {
        let mut s = self.status.to_string();
        for field in ["error", "status"] {
            if let Some(v) = self.body.get(field).and_then(Value::as_str) {
                s.push_str(&format!(" {v}"));
            }
        }
        s
    }

    /// What must be the same through both ingresses.
    fn key(&self) -> (u16, Option<String>, Option<String>) {
        if self.status == 403 {
            return (403, None, None);
        }
        let field = |f: &str| self.body.get(f).and_then(Value::as_str).map(str::to_owned);
        (self.status, field("error"), field("status"))
    }
}

/// The request sent over one connection, as written (HTTP/1.1, the
/// header lines as the case has them), and the answer read to its end.
async fn send(url: &str, request: &model::Request) -> Answer {
    let address = url.trim_start_matches("http://");
    let mut head =
        format!("POST /webhooks/{} HTTP/1.1\r\n", segment(&request.partner)).into_bytes();
    let mut has_length = false;
    for (name, values) in &request.headers {
        has_length |= name.eq_ignore_ascii_case("content-length");
        for value in values {
            head.extend_from_slice(name.as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(value);
            head.extend_from_slice(b"\r\n");
        }
    }
    if !has_length {
        head.extend_from_slice(format!("content-length: {}\r\n", request.body.len()).as_bytes());
    }
    head.extend_from_slice(b"connection: close\r\n\r\n");
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    stream.write_all(&head).await.expect("write head");
    // a server may answer (413, 400) before reading a large body
    let _ = stream.write_all(&request.body).await;
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut response))
        .await
        .expect("an answer within 30 s");
    let text = String::from_utf8_lossy(&response);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let body = serde_json::from_str(body).unwrap_or_else(|_| json!({ "raw": body }));
    Answer { status, body }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_case_gets_the_same_answer_from_the_rest_and_the_http_api_stack() {
    hookbox::metrics::print_to_stdout(false);
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(dir.path());
    let rest = stack(Ingress::Rest, &config).await;
    let http = stack(Ingress::Http, &config).await;
    let partners = Partners::load();
    let mut mismatches = Vec::new();
    let mut denies_unnamed = Vec::new();
    let (mut sent, mut accepted, mut altered) = (0, 0, 0);
    for case in corpus() {
        if case.event_body.is_some() {
            continue;
        }
        let case = off_the_edge(&case);
        let request = request(&case, &partners, now());
        let from_rest = send(rest.url(), &request).await;
        let request = {
            // signed again: a second may have passed
            let case = case.clone();
            model::request(&case, &partners, now())
        };
        let from_http = send(http.url(), &request).await;
        sent += 1;
        let expected = if request.http_api_alters_body() {
            altered += 1;
            (401, Some(hookbox_ingest::BODY_ALTERED.to_owned()), None)
        } else if request.partner.is_empty() {
            // no route: each API Gateway's own answer (REST 403, HTTP 404)
            (404, None, None)
        } else {
            from_rest.key()
        };
        if from_http.key() != expected {
            mismatches.push(format!(
                "| {} | {} | {} |",
                case.name,
                from_rest.summary(),
                from_http.summary()
            ));
        }
        if request.partner.is_empty()
            && (from_rest.status, from_rest.body["message"].as_str())
                != (403, Some("Missing Authentication Token"))
        {
            denies_unnamed.push(format!("{} (no route): {}", case.name, from_rest.body));
        }
        // a Deny through REST names its reason (the ACCESS_DENIED gateway
        // response the stack plays); through HTTP API it cannot. (An empty
        // partner segment matches no route: API Gateway answers that
        // itself, before any authorizer.)
        if matches!(case.expect.authorizer, model::Verdict::Deny)
            && !request.partner.is_empty()
            && (from_rest.status != 403
                || from_rest.body["error"].as_str() != case.expect.error.as_deref()
                || from_rest.body["detail"].as_str().is_none_or(str::is_empty))
        {
            denies_unnamed.push(format!("{}: {}", case.name, from_rest.body));
        }
        if from_rest.body["status"] == "accepted" {
            accepted += 1;
        }
    }
    rest.stop().await;
    http.stop().await;
    eprintln!(
        "the corpus over HTTP: {sent} cases, {accepted} accepted by the REST stack, {altered} \
         bodies HTTP API passes as text that are not UTF-8"
    );
    assert!(
        denies_unnamed.is_empty(),
        "REST denies whose body does not name the reason:\n{}",
        denies_unnamed.join("\n")
    );
    assert!(
        mismatches.is_empty(),
        "{} cases answered otherwise through HTTP API:\n\n| case | rest | http |\n| --- | --- | --- |\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert!(
        accepted >= 60,
        "only {accepted} cases accepted: a vacuous run"
    );
    assert!(altered >= 3, "{altered}");
}

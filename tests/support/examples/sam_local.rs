//! `sam local` over the real template against local services: what
//! `tools/dev deploy invoke` and `tools/dev deploy start-api` run
//! ([`hookbox_testkit::sam`]). A throwaway PostgreSQL (the schema applied
//! by the MigrateFunction through `sam local invoke`, as CloudFormation
//! would), moto for SQS and S3, the partners of events/partners-test.json
//! and a sink on 127.0.0.1 as the relay's destination `erp` and as every
//! CloudFormation ResponseURL. Everything stops with this process.
//!
//! ```sh
//! cargo run -p hookbox-testkit --example sam_local -- BOOTSTRAP_DIR invoke FUNCTION EVENT
//! cargo run -p hookbox-testkit --example sam_local -- BOOTSTRAP_DIR start-api [PORT]
//! ```
//! BOOTSTRAP_DIR holds cargo-lambda's builds (`<dir>/<bin>/bootstrap`);
//! EVENT is a file of events/ (API Gateway events are signed now).
//! `HOOKBOX_SAM_PARAMETER_OVERRIDES` adds the template's parameters
//! (`Key=Value` ...; `tools/dev deploy start-api --ingress http` sets
//! `Ingress=http`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use hookbox_testkit::sam::{self, LocalServices, SamLocal};
use hookbox_testkit::smoke;

fn fail(message: impl std::fmt::Display) -> ! {
    eprintln!("sam_local: {message}");
    std::process::exit(1)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: sam_local BOOTSTRAP_DIR invoke FUNCTION EVENT | BOOTSTRAP_DIR start-api [PORT]";
    let (Some(dir), Some(task)) = (args.first(), args.get(1)) else {
        fail(usage)
    };
    let started = Instant::now();
    let sam = SamLocal::prepare(Path::new(dir)).unwrap_or_else(|e| fail(e));
    let services = LocalServices::start().await;
    eprintln!(
        "sam_local: Docker, images and local services ready in {:.1} s (database {}, moto {}, sink {})",
        started.elapsed().as_secs_f64(),
        services.db.name(),
        services.moto,
        services.sink.url("/")
    );
    match (task.as_str(), &args[2..]) {
        ("invoke", [function, event]) => {
            if function != "MigrateFunction" {
                migrate(&sam, &services).await;
            }
            invoke(&sam, &services, function, &events_file(event)).await;
        }
        ("start-api", rest) if rest.len() <= 1 => {
            let port = match rest.first() {
                Some(p) => p
                    .parse()
                    .unwrap_or_else(|_| fail(format!("{p:?} is not a port"))),
                None => 3000,
            };
            migrate(&sam, &services).await;
            start_api(&sam, &services, port).await;
        }
        _ => fail(usage),
    }
}

fn events_file(name: &str) -> PathBuf {
    let name = name.strip_prefix("events/").unwrap_or(name);
    let path = smoke::events_dir().join(name);
    if !path.is_file() {
        fail(format!("no event {name} in events/"));
    }
    path
}

/// The schema, applied by the MigrateFunction (its CloudFormation answer
/// goes to the sink).
async fn migrate(sam: &SamLocal, services: &LocalServices) {
    let event = sam::with_response_url(
        smoke::event("cfn-migrate-create.json"),
        &services.sink.url("/cfn-response"),
    );
    let run = sam
        .invoke("MigrateFunction", &event, services.env_file())
        .await
        .unwrap_or_else(|e| fail(e));
    let answer = services.sink.requests().pop().map(|r| r.json());
    match answer {
        Some(body) if body["Status"] == "SUCCESS" => eprintln!(
            "sam_local: schema applied by the MigrateFunction in {:.1} s",
            run.elapsed.as_secs_f64()
        ),
        other => fail(format!(
            "the MigrateFunction did not answer SUCCESS: {other:?}\n{}",
            run.stderr
        )),
    }
}

async fn invoke(sam: &SamLocal, services: &LocalServices, function: &str, event: &Path) {
    let text = std::fs::read_to_string(event).unwrap_or_else(|e| fail(format!("{event:?}: {e}")));
    let mut event: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| fail(format!("{event:?}: {e}")));
    sam::at_invoke_time(&mut event, smoke::now_secs());
    if event.get("ResponseURL").is_some() {
        event = sam::with_response_url(event, &services.sink.url("/cfn-response"));
    }
    let before = services.sink.requests().len();
    let run = sam
        .invoke(function, &event, services.env_file())
        .await
        .unwrap_or_else(|e| fail(e));
    eprint!("{}", run.stderr);
    for request in services.sink.requests().into_iter().skip(before) {
        eprintln!(
            "sam_local: the sink received {} {}: {}",
            request.method,
            request.target,
            String::from_utf8_lossy(&request.body)
        );
    }
    eprintln!(
        "sam_local: sam local invoke {function} took {:.1} s",
        run.elapsed.as_secs_f64()
    );
    println!("{}", run.response);
}

async fn start_api(sam: &SamLocal, services: &LocalServices, port: u16) {
    let api = sam
        .start_api(port, services.env_file())
        .await
        .unwrap_or_else(|e| fail(e));
    let now = smoke::now_secs();
    let id = format!("msg_sam_{}_{now}", std::process::id());
    let body = r#"{"type":"order.paid","order_id":"o-1"}"#;
    let signature = smoke::sign(&id, now, body.as_bytes());
    eprintln!(
        "sam_local: sam local start-api listens on {} (pid {}); the inbox is in {}",
        api.url,
        api.pid(),
        services.db.url()
    );
    eprintln!("sam_local: a webhook signed now (valid for 300 s; resend it: duplicate):");
    println!(
        "curl -sS -X POST {}/webhooks/demo -H 'content-type: application/json' \
         -H 'webhook-id: {id}' -H 'webhook-timestamp: {now}' -H 'webhook-signature: {signature}' \
         --data '{body}'",
        api.url
    );
    eprintln!("sam_local: Ctrl-C stops SAM and the local services");
    let mut printed = 0;
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let log = api.log();
        if log.len() > printed {
            eprint!("{}", &log[printed..]);
            printed = log.len();
        }
    }
}

//! `hookbox send`: sign a JSON body as a partner would (Standard Webhooks)
//! and POST it, e.g. to a local stack's `/webhooks/demo`.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use hookbox::clock::{Clock as _, SystemClock};
use hookbox::config::HookboxConfig;
use hookbox::signature::{SchemeKind, Secret, sign_standard_webhooks};
use uuid::Uuid;

use crate::Body;
use crate::common::{FAILED, Failure, OrFail as _, Outcome};

/// The documented secret of the `demo` partner of the local stack.
pub const DEMO_SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

#[derive(Debug, Args)]
pub struct SendArgs {
    /// The partner to send as (its secret comes from --config, or the demo
    /// secret for `demo`).
    #[arg(long, value_name = "NAME")]
    partner: String,
    /// Where to POST, e.g. http://127.0.0.1:3000/webhooks/demo.
    #[arg(long, value_name = "URL")]
    url: String,
    #[command(flatten)]
    body: Body,
    /// A `whsec_…` secret (or `whsk_…` signing key) to sign with (may
    /// start with `-`).
    #[arg(
        long,
        value_name = "S",
        conflicts_with = "config",
        allow_hyphen_values = true
    )]
    secret: Option<String>,
    /// A hookbox configuration file (JSON or TOML): the partner's first
    /// secret signs; its scheme must be Standard Webhooks.
    #[arg(long, value_name = "PATH")]
    config: Option<std::path::PathBuf>,
    /// The `webhook-id` (default: a fresh `msg_<uuid>`; may start with `-`).
    #[arg(long, value_name = "ID", allow_hyphen_values = true)]
    event_id: Option<String>,
}

fn secret(args: &SendArgs) -> Result<Secret, Failure> {
    if let Some(secret) = &args.secret {
        return Ok(Secret::new(secret.clone()));
    }
    if let Some(path) = &args.config {
        let text = std::fs::read_to_string(path)
            .or_usage(format!("cannot read --config {}", path.display()))?;
        let config = HookboxConfig::parse(&text, &path.display().to_string())
            .or_usage(format!("invalid --config {}", path.display()))?;
        let partner = config.partner(&args.partner).ok_or_else(|| {
            let known: Vec<&str> = config.partners().map(|p| p.name.as_str()).collect();
            Failure::usage(format!(
                "partner {:?} is not in {} (it has: {})",
                args.partner,
                path.display(),
                if known.is_empty() {
                    "no partners".to_owned()
                } else {
                    known.join(", ")
                }
            ))
        })?;
        let scheme = partner.verifier.scheme();
        if scheme != SchemeKind::StandardWebhooks {
            return Err(Failure::usage(format!(
                "partner {:?} uses the {scheme} scheme; `hookbox send` signs Standard Webhooks only",
                args.partner
            )));
        }
        return partner.secrets.first().cloned().ok_or_else(|| {
            Failure::usage(format!(
                "partner {:?} has no secrets in {}",
                args.partner,
                path.display()
            ))
        });
    }
    if args.partner == "demo" {
        return Ok(Secret::new(DEMO_SECRET));
    }
    Err(Failure::usage(format!(
        "no secret for partner {:?}: pass --secret or --config (only `demo` has a built-in secret)",
        args.partner
    )))
}

pub async fn run(args: &SendArgs) -> Outcome {
    let secret = secret(args)?;
    let body = args.body.bytes().map_err(Failure::Usage)?;
    serde_json::from_slice::<serde_json::Value>(&body).or_usage("the body is not JSON")?;
    let id = args
        .event_id
        .clone()
        .unwrap_or_else(|| format!("msg_{}", Uuid::new_v4().simple()));
    let headers = sign_standard_webhooks(&id, SystemClock.now(), &body, &[secret])
        .or_usage(format!("cannot sign with webhook-id {id:?}"))?;
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(30))
        .build()
        .or_failed("cannot build the HTTP client")?;
    let mut request = http
        .post(&args.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body);
    for (name, value) in headers.pairs() {
        request = request.header(name, value);
    }
    let response = request
        .send()
        .await
        .or_failed(format!("POST {} failed (webhook-id {id})", args.url))?;
    let status = response.status();
    println!("status: {status}");
    println!("webhook-id: {id}");
    let answer = response.text().await.unwrap_or_default();
    if !answer.trim().is_empty() {
        println!("{}", crate::common::shorten(&answer, 2000));
    }
    Ok(if status.is_success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(FAILED)
    })
}

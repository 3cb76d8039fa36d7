//! `hookbox send`: sign a JSON body as a partner would (Standard Webhooks)
//! and POST it, e.g. to a local stack's `/webhooks/demo`; or, with
//! `--preset NAME`, sign it as that provider would (the registry's recipe,
//! through `Preset::sign`), with the event id and type headers the preset
//! reads.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use hookbox::clock::{Clock as _, SystemClock};
use hookbox::config::HookboxConfig;
use hookbox::signature::presets::{self, EventField, Outgoing, Preset, SigningKey};
use hookbox::signature::{Headers, SchemeKind, Secret, sign_standard_webhooks};
use uuid::Uuid;

use crate::Body;
use crate::common::{FAILED, Failure, OrFail as _, Outcome};

/// The documented secret of the `demo` partner of the local stack.
pub const DEMO_SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

#[derive(Debug, Args)]
pub struct SendArgs {
    /// The partner to send as (its secret comes from --config, or the demo
    /// secret for `demo`).
    #[arg(long, value_name = "NAME", required_unless_present = "preset")]
    partner: Option<String>,
    /// Sign as this provider preset would (`hookbox presets` lists them)
    /// instead of Standard Webhooks; needs --secret.
    #[arg(
        long,
        value_name = "NAME",
        value_parser = crate::preset_name,
        requires = "secret",
        conflicts_with_all = ["partner", "config"]
    )]
    preset: Option<String>,
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
    /// With --preset: the event id header the preset reads.
    #[arg(long, value_name = "ID", allow_hyphen_values = true)]
    event_id: Option<String>,
    /// With --preset: the event type header the preset reads (default: the
    /// preset's sample event's).
    #[arg(
        long,
        value_name = "TYPE",
        requires = "preset",
        allow_hyphen_values = true
    )]
    event_type: Option<String>,
}

fn secret(args: &SendArgs, name: &str) -> Result<Secret, Failure> {
    if let Some(secret) = &args.secret {
        return Ok(Secret::new(secret.clone()));
    }
    if let Some(path) = &args.config {
        let text = std::fs::read_to_string(path)
            .or_usage(format!("cannot read --config {}", path.display()))?;
        let config = HookboxConfig::parse(&text, &path.display().to_string())
            .or_usage(format!("invalid --config {}", path.display()))?;
        let partner = config.partner(name).ok_or_else(|| {
            let known: Vec<&str> = config.partners().map(|p| p.name.as_str()).collect();
            Failure::usage(format!(
                "partner {:?} is not in {} (it has: {})",
                name,
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
                "partner {:?} uses the {scheme} scheme; `hookbox send` signs Standard Webhooks only (or --preset)",
                name
            )));
        }
        return partner.secrets.first().cloned().ok_or_else(|| {
            Failure::usage(format!(
                "partner {:?} has no secrets in {}",
                name,
                path.display()
            ))
        });
    }
    if name == "demo" {
        return Ok(Secret::new(DEMO_SECRET));
    }
    Err(Failure::usage(format!(
        "no secret for partner {:?}: pass --secret or --config (only `demo` has a built-in secret)",
        name
    )))
}

/// A fresh event id, `msg_<uuid>`.
fn fresh_id() -> String {
    format!("msg_{}", Uuid::new_v4().simple())
}

/// A request ready to POST: headers, body, and the event id to print.
struct Prepared {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// `(label, id)`, e.g. `("webhook-id", "msg_…")`.
    id: (String, String),
}

fn standard_webhooks(args: &SendArgs, partner: &str) -> Result<Prepared, Failure> {
    let secret = secret(args, partner)?;
    let body = args.body.bytes().map_err(Failure::Usage)?;
    serde_json::from_slice::<serde_json::Value>(&body).or_usage("the body is not JSON")?;
    let id = args.event_id.clone().unwrap_or_else(fresh_id);
    let signed = sign_standard_webhooks(&id, SystemClock.now(), &body, &[secret])
        .or_usage(format!("cannot sign with webhook-id {id:?}"))?;
    let mut headers = vec![("Content-Type".to_owned(), "application/json".to_owned())];
    headers.extend(
        signed
            .pairs()
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
    );
    Ok(Prepared {
        headers,
        body,
        id: ("webhook-id".to_owned(), id),
    })
}

/// Sets `name` in `headers` to `value` (replacing the sample's).
fn set_header(headers: &mut Vec<(String, String)>, name: &str, value: String) {
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    headers.push((name.to_owned(), value));
}

/// Why a preset's `what` cannot be given with `flag`: it is not a header.
fn not_a_header(preset: &Preset, field: EventField, what: &str, flag: &str) -> Failure {
    match field {
        EventField::Absent => {
            Failure::usage(format!("{flag}: preset {:?} has no {what}", preset.name))
        }
        other => Failure::usage(format!(
            "{flag}: preset {:?} reads the {what} from {other}; put it in the body",
            preset.name
        )),
    }
}

fn preset_request(args: &SendArgs, name: &str) -> Result<Prepared, Failure> {
    let preset = presets::lookup(name).or_usage("--preset")?;
    let secret = Secret::new(
        args.secret
            .clone()
            .ok_or_else(|| Failure::usage("--preset needs --secret"))?,
    );
    let body = args.body.bytes().map_err(Failure::Usage)?;
    let content_type = if serde_json::from_slice::<serde_json::Value>(&body).is_ok() {
        "application/json"
    } else {
        "application/x-www-form-urlencoded"
    };
    let mut headers: Vec<(String, String)> =
        vec![("Content-Type".to_owned(), content_type.to_owned())];
    headers.extend(
        preset
            .sample
            .headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
    );
    // The event id: given, else fresh (a re-send is not a duplicate); the
    // event type: given, else the sample's.
    match (preset.event_id, &args.event_id) {
        (EventField::Header(header), id) => {
            set_header(&mut headers, header, id.clone().unwrap_or_else(fresh_id));
        }
        (field, Some(_)) => return Err(not_a_header(preset, field, "event id", "--event-id")),
        (_, None) => {}
    }
    match (preset.event_type, &args.event_type) {
        (EventField::Header(header), Some(event_type)) => {
            set_header(&mut headers, header, event_type.clone());
        }
        (field, Some(_)) => {
            return Err(not_a_header(preset, field, "event type", "--event-type"));
        }
        (_, None) => {}
    }
    let pairs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let outgoing = Outgoing {
        body: &body,
        headers: &pairs,
        url: Some(&args.url),
        method: "POST",
        timestamp: SystemClock.now(),
    };
    let signed = preset
        .sign(&outgoing, SigningKey::Secret(&secret))
        .or_usage(format!("cannot sign as preset {:?}", preset.name))?;
    let id = preset
        .event_id(&Headers::from_pairs(pairs.iter().copied()), &body)
        .unwrap_or_else(|| "none".to_owned());
    for (name, value) in signed {
        set_header(&mut headers, name, value);
    }
    Ok(Prepared {
        headers,
        body,
        id: ("event id".to_owned(), id),
    })
}

pub async fn run(args: &SendArgs) -> Outcome {
    let prepared = match (&args.preset, &args.partner) {
        (Some(name), _) => preset_request(args, name)?,
        (None, Some(partner)) => standard_webhooks(args, partner)?,
        (None, None) => return Err(Failure::usage("give --partner or --preset")),
    };
    let Prepared { headers, body, id } = prepared;
    let (id_label, id) = id;
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(30))
        .build()
        .or_failed("cannot build the HTTP client")?;
    let mut request = http.post(&args.url).body(body);
    for (name, value) in &headers {
        request = request.header(name, value);
    }
    let response = request
        .send()
        .await
        .or_failed(format!("POST {} failed ({id_label} {id})", args.url))?;
    let status = response.status();
    println!("status: {status}");
    println!("{id_label}: {id}");
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

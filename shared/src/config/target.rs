//! Where a destination's deliveries go, by transport: an HTTP endpoint
//! (signed POSTs, the default), an EventBridge bus or an SQS queue. Each
//! kind's fields are checked here; a field of another kind is refused by
//! name.

use std::fmt;
use std::net::IpAddr;

use chrono::{DateTime, Utc};
use ipnet::IpNet;

use crate::signature::Secret;

/// Default largest entry an EventBridge or SQS destination is sent whole:
/// 256 KiB, which every region and SDK accepts (both services take 1 MiB
/// since January 2026; raise `max_entry_bytes` to use it).
pub const DEFAULT_MAX_ENTRY_BYTES: usize = 256 * 1024;

/// Largest `max_entry_bytes` accepted: 1 MiB, the services' limit.
pub const MAX_MAX_ENTRY_BYTES: usize = 1024 * 1024;

/// Smallest `max_entry_bytes` accepted: 64 KiB, so an envelope by reference
/// (its head and `payload_ref`: a few KiB at most) always fits. A payload is not
/// bounded by it: `hookbox_publish` keeps up to 256 KiB of JSON in the row,
/// and an envelope over the limit goes by reference, the relay moving the
/// payload to the blob store first (`outbox::relay::spill`).
pub const MIN_MAX_ENTRY_BYTES: usize = 64 * 1024;

/// Default EventBridge `Source` of the events hookbox puts on a bus.
pub const DEFAULT_EVENTBRIDGE_SOURCE: &str = "hookbox";

/// The transports, by their configuration name (`"type"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransportKind {
    /// `"http"`: signed POSTs (the default).
    Http,
    /// `"eventbridge"`: PutEvents on a bus.
    EventBridge,
    /// `"sqs"`: SendMessageBatch to a queue (standard or FIFO).
    Sqs,
}

impl TransportKind {
    /// Every kind, in documentation order.
    pub const ALL: [TransportKind; 3] = [Self::Http, Self::EventBridge, Self::Sqs];

    /// Its configuration name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::EventBridge => "eventbridge",
            Self::Sqs => "sqs",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a destination's deliveries go.
#[derive(Clone)]
pub enum Target {
    /// Signed POSTs to a URL.
    Http(HttpTarget),
    /// Events on an EventBridge bus.
    EventBridge(EventBridgeTarget),
    /// Messages on an SQS queue.
    Sqs(SqsTarget),
}

impl Target {
    /// Its transport.
    pub fn kind(&self) -> TransportKind {
        match self {
            Self::Http(_) => TransportKind::Http,
            Self::EventBridge(_) => TransportKind::EventBridge,
            Self::Sqs(_) => TransportKind::Sqs,
        }
    }

    /// A FIFO SQS queue (always delivered `ordered`).
    pub fn is_fifo(&self) -> bool {
        matches!(self, Self::Sqs(SqsTarget { fifo: true, .. }))
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Http(t) => t.fmt(f),
            Self::EventBridge(t) => t.fmt(f),
            Self::Sqs(t) => t.fmt(f),
        }
    }
}

/// An HTTP endpoint.
#[derive(Clone)]
pub struct HttpTarget {
    /// Where to POST. Never logged whole (a query may carry a token).
    pub url: reqwest::Url,
    /// Standard Webhooks signing secrets (`whsec_…`, or `whsk_…` Ed25519
    /// keys); several during a rotation: every request carries one
    /// signature per secret.
    pub secrets: Vec<Secret>,
    /// Networks the SSRF guard lets this destination resolve to.
    pub allowed_networks: Vec<IpNet>,
    /// Headers added to every request (a tenant's endpoint's custom
    /// headers; names checked when they were set). Never logged: a value may
    /// be a credential.
    pub headers: Vec<(String, String)>,
}

impl fmt::Debug for HttpTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Http")
            .field("url", &redacted_url(&self.url))
            .field(
                "secrets",
                &format_args!("[{} redacted]", self.secrets.len()),
            )
            .field("allowed_networks", &self.allowed_networks)
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// `scheme://host:port/path`, without query or fragment (which may carry
/// tokens): what logs and errors show of a destination URL.
pub fn redacted_url(url: &reqwest::Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

/// An EventBridge bus. Each delivery is one event: `Source` = `source`,
/// `DetailType` = the event type, `Detail` = the envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventBridgeTarget {
    /// The bus's name or ARN (`EventBusName` takes either).
    pub bus: String,
    /// The events' `Source`.
    pub source: String,
    /// Largest entry sent whole (bytes, as EventBridge counts them).
    pub max_entry_bytes: usize,
}

/// An SQS queue. A FIFO queue (its name ends in `.fifo`) gets
/// `MessageGroupId` = the aggregate's type and id (ordering per aggregate;
/// `delivery::sqs::group_id`) and `MessageDeduplicationId` = the delivery
/// id, so a retry inside SQS's 5-minute window is not a second message; its
/// destination is always `ordered`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqsTarget {
    /// The queue's URL.
    pub queue_url: String,
    /// A FIFO queue.
    pub fifo: bool,
    /// Largest message sent whole (bytes).
    pub max_entry_bytes: usize,
}

/// The transport-specific fields of a destination as written.
#[derive(Default)]
pub(super) struct RawTarget {
    pub(super) kind: Option<String>,
    pub(super) url: Option<String>,
    pub(super) secrets: Option<Vec<String>>,
    pub(super) allowed_networks: Option<Vec<String>>,
    pub(super) bus: Option<String>,
    pub(super) source: Option<String>,
    pub(super) queue_url: Option<String>,
    pub(super) max_entry_bytes: Option<usize>,
}

type FieldError = (String, String);

fn field(name: &str, reason: impl Into<String>) -> FieldError {
    (name.to_string(), reason.into())
}

impl RawTarget {
    /// The target, or the field that is wrong and why.
    pub(super) fn validate(self) -> Result<Target, FieldError> {
        let kind = match self.kind.as_deref() {
            None => TransportKind::Http,
            Some(name) => TransportKind::parse(name).ok_or_else(|| {
                field(
                    "type",
                    format!(
                        "{name:?} is not a destination type (one of {})",
                        TransportKind::ALL.map(TransportKind::as_str).join(", ")
                    ),
                )
            })?,
        };
        // a field of another transport is a mistake worth naming
        let foreign: &[(&str, bool)] = &[
            ("url", self.url.is_some()),
            ("secrets", self.secrets.is_some()),
            ("allowed_networks", self.allowed_networks.is_some()),
            ("bus", self.bus.is_some()),
            ("source", self.source.is_some()),
            ("queue_url", self.queue_url.is_some()),
            ("max_entry_bytes", self.max_entry_bytes.is_some()),
        ];
        let own: &[&str] = match kind {
            TransportKind::Http => &["url", "secrets", "allowed_networks"],
            TransportKind::EventBridge => &["bus", "source", "max_entry_bytes"],
            TransportKind::Sqs => &["queue_url", "max_entry_bytes"],
        };
        if let Some((name, _)) = foreign
            .iter()
            .find(|(name, given)| *given && !own.contains(name))
        {
            return Err(field(
                name,
                format!(
                    "is not a field of {kind} destinations (theirs: {})",
                    own.join(", ")
                ),
            ));
        }
        match kind {
            TransportKind::Http => self.http().map(Target::Http),
            TransportKind::EventBridge => {
                let max_entry_bytes = max_entry_bytes(self.max_entry_bytes)?;
                let bus = self.bus.ok_or_else(|| {
                    field(
                        "bus",
                        "an eventbridge destination needs its bus (a name or an ARN)",
                    )
                })?;
                check_bus(&bus)?;
                let source = self
                    .source
                    .unwrap_or_else(|| DEFAULT_EVENTBRIDGE_SOURCE.to_string());
                check_source(&source)?;
                Ok(Target::EventBridge(EventBridgeTarget {
                    bus,
                    source,
                    max_entry_bytes,
                }))
            }
            TransportKind::Sqs => {
                let max_entry_bytes = max_entry_bytes(self.max_entry_bytes)?;
                let queue_url = self
                    .queue_url
                    .ok_or_else(|| field("queue_url", "an sqs destination needs its queue URL"))?;
                let fifo = check_queue_url(&queue_url)?;
                Ok(Target::Sqs(SqsTarget {
                    queue_url,
                    fifo,
                    max_entry_bytes,
                }))
            }
        }
    }

    fn http(self) -> Result<HttpTarget, FieldError> {
        let Some(url) = self.url else {
            return Err(field("url", "an http destination needs its url"));
        };
        let url =
            reqwest::Url::parse(&url).map_err(|e| field("url", format!("not a URL ({e})")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(field(
                "url",
                format!("scheme {:?} is not http or https", url.scheme()),
            ));
        }
        if url.host().is_none() {
            return Err(field("url", "has no host"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(field(
                "url",
                "must not carry credentials (user:password@); receivers authenticate by the \
                 signature",
            ));
        }
        let secrets = self.secrets.unwrap_or_default();
        if secrets.is_empty() {
            return Err(field("secrets", "at least one signing secret is required"));
        }
        let secrets: Vec<Secret> = secrets.into_iter().map(Secret::new).collect();
        for (i, secret) in secrets.iter().enumerate() {
            let text = secret.expose_secret();
            if !(text.starts_with("whsec_") || text.starts_with("whsk_")) {
                return Err(field(
                    &format!("secrets[{i}]"),
                    "a Standard Webhooks signing secret starts with whsec_ (or whsk_ for an \
                     Ed25519 signing key)",
                ));
            }
            crate::signature::sign_standard_webhooks(
                "msg_check",
                DateTime::<Utc>::UNIX_EPOCH,
                b"",
                std::slice::from_ref(secret),
            )
            .map_err(|e| field(&format!("secrets[{i}]"), format!("cannot sign: {e}")))?;
        }
        let allowed_networks = self
            .allowed_networks
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, c)| {
                c.parse::<IpNet>()
                    .or_else(|_| c.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| {
                        field(
                            &format!("allowed_networks[{i}]"),
                            format!("{c:?} is not an address or CIDR"),
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(HttpTarget {
            url,
            secrets,
            allowed_networks,
            headers: Vec::new(),
        })
    }
}

fn max_entry_bytes(value: Option<usize>) -> Result<usize, FieldError> {
    match value {
        None => Ok(DEFAULT_MAX_ENTRY_BYTES),
        Some(n) if (MIN_MAX_ENTRY_BYTES..=MAX_MAX_ENTRY_BYTES).contains(&n) => Ok(n),
        Some(n) => Err(field(
            "max_entry_bytes",
            format!(
                "{n} is outside {MIN_MAX_ENTRY_BYTES}..={MAX_MAX_ENTRY_BYTES} (1 MiB, the \
                 services' limit; 256 KiB where older SDKs or regions are in play)"
            ),
        )),
    }
}

/// A bus name (1 to 256 of `A-Za-z0-9._-/`) or an EventBridge bus ARN.
fn check_bus(bus: &str) -> Result<(), FieldError> {
    let name = match bus.strip_prefix("arn:") {
        Some(rest) => {
            // arn:partition:events:region:account:event-bus/name
            let parts: Vec<&str> = rest.splitn(5, ':').collect();
            match parts.as_slice() {
                [partition, "events", region, account, resource]
                    if partition.starts_with("aws")
                        && !region.is_empty()
                        && account.len() == 12
                        && account.bytes().all(|b| b.is_ascii_digit()) =>
                {
                    resource.strip_prefix("event-bus/").ok_or_else(|| {
                        field(
                            "bus",
                            format!("{bus:?} is not an event bus ARN (…:event-bus/NAME)"),
                        )
                    })?
                }
                _ => {
                    return Err(field(
                        "bus",
                        format!(
                            "{bus:?} is not an event bus ARN \
                             (arn:aws:events:REGION:ACCOUNT:event-bus/NAME)"
                        ),
                    ));
                }
            }
        }
        None => bus,
    };
    let ok = !name.is_empty()
        && name.len() <= 256
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'/'));
    if ok {
        Ok(())
    } else {
        Err(field(
            "bus",
            format!("{bus:?}: a bus name is 1 to 256 letters, digits, '.', '-', '_' and '/'"),
        ))
    }
}

/// An event `Source`: 1 to 256 printable characters, not AWS's `aws.`.
fn check_source(source: &str) -> Result<(), FieldError> {
    if source.is_empty() || source.len() > 256 || source.chars().any(char::is_control) {
        return Err(field(
            "source",
            format!("{source:?} is not 1 to 256 printable characters"),
        ));
    }
    if source.starts_with("aws.") {
        return Err(field(
            "source",
            format!("{source:?}: sources starting with \"aws.\" are reserved for AWS services"),
        ));
    }
    Ok(())
}

/// An SQS queue URL (`https://sqs.REGION.amazonaws.com/ACCOUNT/NAME`, or an
/// emulator's `http://127.0.0.1:PORT/ACCOUNT/NAME`); whether it is FIFO.
fn check_queue_url(queue_url: &str) -> Result<bool, FieldError> {
    let url = reqwest::Url::parse(queue_url)
        .map_err(|e| field("queue_url", format!("{queue_url:?} is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(field(
            "queue_url",
            format!("{queue_url:?} is not an http(s) URL with a host"),
        ));
    }
    let segments: Vec<&str> = url
        .path_segments()
        .map(|s| s.filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    let [account, name] = segments.as_slice() else {
        return Err(field(
            "queue_url",
            format!("{queue_url:?} is not a queue URL (…/ACCOUNT/QUEUE-NAME)"),
        ));
    };
    let base = name.strip_suffix(".fifo").unwrap_or(name);
    let name_ok = !base.is_empty()
        && name.len() <= 80
        && base
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if account.is_empty() || !name_ok || url.query().is_some() {
        return Err(field(
            "queue_url",
            format!(
                "{queue_url:?}: a queue name is 1 to 80 letters, digits, '-' and '_' (a FIFO \
                 queue's ends in .fifo), after the account"
            ),
        ));
    }
    Ok(name.ends_with(".fifo"))
}

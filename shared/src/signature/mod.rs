//! Verifying partner webhook signatures (inbound) and signing our own
//! webhooks (outbound). Pure code: no I/O, no AWS, no clock of its own.
//!
//! This module is the security boundary of hookbox. Its rules:
//! - every MAC comparison is constant time (`subtle`);
//! - secrets never appear in `Debug`/`Display` output or in errors, and no
//!   error carries an expected signature;
//! - every header parser is total: it returns an error, never panics, on any
//!   input (fuzzed, see `fuzz/` and `docs/signatures.md`);
//! - time comes from the caller (a [`Clock`] or a `now` value), so tests
//!   never sleep.
//!
//! # Inbound
//!
//! A partner is configured with a [`SchemeConfig`] (serde: JSON or TOML, e.g.
//! `{"scheme":"stripe"}`) and its active secrets (several during rotation).
//! Build a [`Verifier`] once, then verify each request:
//!
//! ```
//! use chrono::{TimeZone, Utc};
//! use hookbox::signature::{Headers, SchemeConfig, Secret, SignedRequest, Verifier};
//!
//! let config: SchemeConfig = serde_json::from_str(r#"{"scheme":"github"}"#)?;
//! let verifier = Verifier::new(config)?;
//! let headers = Headers::from_pairs([(
//!     "X-Hub-Signature-256",
//!     "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
//! )]);
//! let request = SignedRequest::new(b"Hello, World!", headers);
//! let secrets = [Secret::new("It's a Secret to Everybody")];
//! let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().ok_or("date")?;
//! let verified = verifier.verify_at(&request, &secrets, now)?;
//! assert_eq!(verified.secret_index, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Outbound
//!
//! [`sign_standard_webhooks`] produces the three Standard Webhooks headers
//! (`webhook-id`, `webhook-timestamp`, `webhook-signature`) for one or more
//! secrets.
//!
//! [`Clock`]: crate::clock::Clock

mod body_fields;
mod config;
mod crypto;
mod decode;
mod each_item;
mod error;
mod few;
mod form;
mod generic;
mod github;
mod headers;
pub mod joined;
mod json;
mod jws;
mod keys;
mod lines;
pub mod parse;
pub mod presets;
mod recipe;
mod secret;
mod shopify;
mod signed;
mod signed_parts;
mod slack;
mod standard_webhooks;
mod stripe;
mod timestamp;
mod twilio;
mod twilio_url;
mod verifier;

#[cfg(test)]
mod tests;

pub use config::{
    Algorithm, DEFAULT_TOLERANCE_SECS, Encoding, GenericHmacConfig, SchemeConfig, SchemeKind,
    UnknownScheme,
};
pub use error::{ConfigError, SignError, SignatureError};
pub use headers::{Headers, drop_unusable_headers, is_usable_header_name, is_usable_header_value};
pub use recipe::{
    KeyFormat, Part, Primitive, Recipe, SignatureAt, Signed, TimeFormat, TimestampAt,
    TimestampSource,
};
pub use secret::Secret;
pub use standard_webhooks::{StandardWebhookHeaders, sign as sign_standard_webhooks};
pub use verifier::{SignedRequest, Verified, Verifier};

/// An API Gateway event from the JSON the Lambda runtime received, without
/// the header values the `http` crate refuses (a control character such as
/// U+0000): otherwise the whole event fails to deserialize and API Gateway
/// answers 500 (authorizer) or 502 (ingest) to a correctly signed webhook.
/// `joined`: an HTTP API (payload 2.0) event, whose comma-joined values
/// lose only their unusable lines ([`joined::drop_unusable_lines`]); else
/// a REST one ([`drop_unusable_headers`]). The names dropped are logged,
/// never the values.
pub fn event_without_unusable_headers<T: serde::de::DeserializeOwned>(
    mut json: serde_json::Value,
    joined: bool,
) -> Result<T, serde_json::Error> {
    let dropped = if joined {
        joined::drop_unusable_lines(&mut json)
    } else {
        drop_unusable_headers(&mut json)
    };
    if !dropped.is_empty() {
        tracing::warn!(headers = ?dropped, "header values no HTTP library takes were dropped");
    }
    serde_json::from_value(json)
}

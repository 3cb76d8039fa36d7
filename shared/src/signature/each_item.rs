//! Verifying a [`Signed`] recipe whose signature is in each item of a JSON
//! array of the body ([`SignatureAt::EachItem`]): Adyen's standard
//! notifications, `{"live":…,"notificationItems":[{"NotificationRequestItem":
//! {…,"additionalData":{"hmacSignature":…}}},…]}`, where each item carries
//! the HMAC of its own fields.
//!
//! One POST is accepted only when every item verifies with one of the
//! secrets (several during a rotation, each item with any of them): one
//! unsigned or forged item refuses the whole POST, and the error names its
//! index (a JSON pointer to it, or [`SignatureError::NoMatchingSignature`]'s
//! `item`), never a secret or an expected MAC. A body that is not JSON, has
//! no such array or an empty one is refused too.
//!
//! What is signed is each item's message (the recipe's parts, read in the
//! item), not the body: the item's other fields and the body around the
//! items are not covered.

use std::borrow::Cow;

use serde_json::Value;

use super::crypto::{self, Tag};
use super::error::SignatureError;
use super::keys::{KeyUse, PreparedKey};
use super::recipe::{Context, Part, Primitive, SCHEME, Signed, invalid_secret};
use super::secret::Secret;
use super::signed_parts::{check_prepared, form_message};
use super::verifier::{SignedRequest, Verified};

/// The three pointers of [`SignatureAt::EachItem`](super::SignatureAt::EachItem).
pub(super) struct ItemsAt {
    /// The array in the body.
    pub(super) items: &'static str,
    /// The signed object inside each element.
    pub(super) item: &'static str,
    /// The signature inside the signed object.
    pub(super) signature: &'static str,
}

fn missing(pointer: String) -> SignatureError {
    SignatureError::MissingHeader {
        header: Cow::Owned(pointer),
    }
}

fn malformed(pointer: impl Into<Cow<'static, str>>, reason: &'static str) -> SignatureError {
    SignatureError::MalformedHeader {
        header: pointer.into(),
        reason,
    }
}

/// Verifies every item of the body. The secret index reported is the
/// largest any item needed: the oldest secret still in use (secrets are
/// listed newest first), so one is removed only once no item needs it.
pub(super) fn verify<'a>(
    signed: &Signed,
    at: &ItemsAt,
    context: &Context<'_>,
    request: &SignedRequest<'a>,
    secrets: &[Secret],
) -> Result<Verified<'a>, SignatureError> {
    let Primitive::Hmac(algorithm, format) = signed.primitive else {
        // The registry's tests keep this from happening.
        return Err(invalid_secret(
            context.name,
            0,
            "a signature in each item is an HMAC; this recipe's primitive is not",
        ));
    };
    let body: Value = serde_json::from_slice(request.body)
        .map_err(|_| malformed(at.items, "the body is not JSON"))?;
    let items = match body.pointer(at.items) {
        None => return Err(missing(at.items.to_owned())),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(malformed(at.items, "not a JSON array")),
    };
    if items.is_empty() {
        return Err(malformed(at.items, "the array is empty: no item to verify"));
    }
    let usage = KeyUse::Hmac(algorithm, format);
    check_prepared(context.name, usage, secrets)?;
    let prepared: Vec<_> = secrets.iter().map(|s| s.prepared(usage)).collect();

    let mut oldest = 0;
    let mut message = Vec::new();
    for (index, element) in items.iter().enumerate() {
        let here = || format!("{}/{index}{}", at.items, at.item);
        let object = match element.pointer(at.item) {
            None => return Err(missing(here())),
            Some(object @ Value::Object(_)) => object,
            Some(_) => return Err(malformed(here(), "the item is not a JSON object")),
        };
        let tag = item_signature(object, at, signed, algorithm.output_len(), &here)?;
        item_message(object, signed, context, request, &here, &mut message)?;
        let mut matched = None;
        for (secret_index, key) in prepared.iter().enumerate() {
            let Ok(PreparedKey::Hmac(keyed)) = key.as_ref() else {
                // Prepared above: not reached.
                continue;
            };
            let mut mac = keyed.clone();
            mac.update(&message);
            if crypto::ct_eq(mac.finalize().as_bytes(), tag.as_bytes()) {
                matched = Some(secret_index);
                break;
            }
        }
        let Some(secret_index) = matched else {
            return Err(SignatureError::NoMatchingSignature {
                candidates: 1,
                secrets: secrets.len(),
                item: Some(index),
            });
        };
        oldest = oldest.max(secret_index);
    }
    Ok(Verified::new(SCHEME, oldest))
}

/// The item's signature, decoded (absent, `null` or empty: unsigned).
fn item_signature(
    object: &Value,
    at: &ItemsAt,
    signed: &Signed,
    len: usize,
    here: &impl Fn() -> String,
) -> Result<Tag, SignatureError> {
    let pointer = || format!("{}{}", here(), at.signature);
    let text = match object.pointer(at.signature) {
        None | Some(Value::Null) => return Err(missing(pointer())),
        Some(Value::String(text)) if text.is_empty() => return Err(missing(pointer())),
        Some(Value::String(text)) => text,
        Some(_) => return Err(malformed(pointer(), "the signature is not a string")),
    };
    crypto::decode_tag(signed.encoding, text, len).map_err(|reason| malformed(pointer(), reason))
}

/// The item's message, in `out` (cleared first): the recipe's parts, its
/// JSON fields read in the item.
fn item_message(
    object: &Value,
    signed: &Signed,
    context: &Context<'_>,
    request: &SignedRequest<'_>,
    here: &impl Fn() -> String,
    out: &mut Vec<u8>,
) -> Result<(), SignatureError> {
    out.clear();
    for part in signed.message {
        match part {
            Part::Json(pointer) => match object.pointer(pointer) {
                None | Some(Value::Null) => {}
                Some(Value::String(text)) => out.extend_from_slice(text.as_bytes()),
                Some(Value::Bool(true)) => out.extend_from_slice(b"true"),
                Some(Value::Bool(false)) => out.extend_from_slice(b"false"),
                Some(Value::Number(number)) => out.extend_from_slice(number.to_string().as_bytes()),
                Some(Value::Array(_) | Value::Object(_)) => {
                    return Err(malformed(
                        format!("{}{pointer}", here()),
                        "a signed field is not a string, number or boolean",
                    ));
                }
            },
            Part::Text(text) => out.extend_from_slice(text.as_bytes()),
            Part::Body => out.extend_from_slice(request.body),
            // No timestamp with this recipe: empty, as a `Signed` recipe
            // without one writes it.
            Part::Timestamp => {}
            Part::Header(name) => out.extend_from_slice(request.headers.required(name)?.as_bytes()),
            Part::Method => out.extend_from_slice(context.method.unwrap_or("POST").as_bytes()),
            Part::Form => out.extend_from_slice(&form_message(request)?),
            Part::Url => out.extend_from_slice(
                request
                    .url
                    .ok_or(SignatureError::MissingUrl {
                        scheme: context.name,
                    })?
                    .as_bytes(),
            ),
        }
    }
    Ok(())
}

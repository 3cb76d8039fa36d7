//! What a [`super::recipe::Signed`] recipe's verifiers share, whether the
//! signature is in a header (`signed`) or in each item of the body
//! (`each_item`): the secrets prepared for the primitive, and the message
//! part made of a form's sorted parameters.

use super::error::SignatureError;
use super::form::Form;
use super::keys::KeyUse;
use super::parse::is_form_content_type;
use super::recipe::{SCHEME, invalid_secret, malformed};
use super::secret::Secret;
use super::verifier::{SignedRequest, check_secrets};

/// [`Part::Form`] of `request`: its form parameters decoded and sorted,
/// each name then its value (none for an empty body); a body of another
/// content type is not signed, so refused.
pub(super) fn form_message(request: &SignedRequest<'_>) -> Result<Vec<u8>, SignatureError> {
    let content_type = request
        .headers
        .unique(CONTENT_TYPE)
        .map_err(|reason| malformed(CONTENT_TYPE, reason))?;
    if !content_type.is_some_and(is_form_content_type) {
        if request.body.is_empty() {
            return Ok(Vec::new());
        }
        return Err(SignatureError::UnsignedBody {
            reason: "not form-encoded, and the recipe signs the form parameters",
        });
    }
    let mut form = Form::parse(request.body);
    form.sort_and_dedup();
    let mut message = Vec::with_capacity(request.body.len());
    for param in form.signed() {
        message.extend_from_slice(param);
    }
    Ok(message)
}

const CONTENT_TYPE: &str = "Content-Type";

/// Every secret prepared for `usage`, or the first that cannot be (so a
/// bad secret is reported even when another one would have matched).
pub(super) fn check_prepared(
    name: &'static str,
    usage: KeyUse,
    secrets: &[Secret],
) -> Result<(), SignatureError> {
    check_secrets(SCHEME, secrets)?;
    for (index, secret) in secrets.iter().enumerate() {
        if let Err(reason) = secret.prepared(usage).as_ref() {
            return Err(invalid_secret(name, index, reason));
        }
    }
    Ok(())
}

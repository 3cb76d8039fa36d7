//! `docs/providers.md`, generated from the registry: per preset, what to
//! set in the provider's dashboard, the secret and its format, how to
//! rotate it without downtime, where the event id and type are, the
//! handshake, and the partner configuration to start from
//! (`shared/tests/presets.rs` fails when the page is stale).

use super::super::recipe::{Primitive, Recipe, SignatureAt};
use super::{EventField, Handshake, PRESETS, Preset};

/// The whole page, in registry order.
pub fn providers_page() -> String {
    let mut page = String::from(
        "# Providers\n\n\
         <!-- generated from the registry (shared/src/signature/presets/catalog) by \
         shared/tests/presets.rs; HOOKBOX_UPDATE_DOCS=1 cargo test -p hookbox --test presets \
         rewrites it -->\n\n\
         One section per preset of hookbox's registry. Every partner is received at \
         `https://{api}/webhooks/{partner}`: the stack's `WebhookUrl` output with the name \
         you give the partner in the configuration (`docs/signatures.md` has the recipes, \
         their vectors and the table of all presets; `docs/forwarding.md` routes a \
         partner's events to destinations).\n\n\
         A partner names its preset (`\"preset\": \"stripe\"`) and takes from it the \
         signature, where the event id and type are and the handshake; `signature`, \
         `event_id` and `event_type` in the partner override them.\n\n\
         Secrets go in the partner's `secrets` list, newest first. hookbox accepts a \
         request any listed secret verifies, so a rotation never drops a webhook: add the \
         new secret, switch the provider, remove the old one once no request needs it.\n\n\
         Handshakes: ingest answers the POST ones (Slack, Zoom, Twitch, Discord) once \
         they verify like the provider's events, byte for byte and without storing \
         anything; a wrongly signed one gets 401, a malformed one 400 `bad_handshake`. \
         The GET ones (Meta, Dropbox, Okta, X) reach ingest only when the authorizer would \
         answer them too: Meta's `hub.verify_token` must be one of the partner's \
         `verify_tokens`, Okta's `Authorization` header one of its `secrets` (X's CRC is \
         signed with them), a challenge must be 1 to 1,024 bytes of visible ASCII; any other \
         GET, and a GET to a partner whose provider sends none, gets API Gateway's 403. \
         Asana's first request is unsigned and hands over the secret that signs what \
         follows: it is answered only while the partner has an `enroll_key`, and the \
         secret is logged sealed to that key, never kept (see Asana below).\n",
    );
    for preset in PRESETS {
        page.push_str(&section(preset));
    }
    page.push_str(NOT_PRESETS);
    page
}

/// The providers that are not presets, and why: what each would take.
const NOT_PRESETS: &str = "\n## Not presets yet\n\n\
     **Keys fetched over the network.** These providers sign with a key hookbox would have \
     to download and cache, which a preset (data over the request and configured secrets) \
     cannot do. Each would take a key fetcher beside the verifier (HTTPS only, host \
     allow-list, cache with expiry, refresh on an unknown key id, a failure answered 503 so \
     the provider retries rather than 401) and the ingest Lambda's network access to the \
     host:\n\n\
     - **PayPal**: `PAYPAL-TRANSMISSION-SIG` is RSA-SHA256 over \
     `{transmission id}|{transmission time}|{webhook id}|{CRC32 of the body}`, verified with \
     the certificate at `PAYPAL-CERT-URL` (must be under `api.paypal.com` / \
     `api.sandbox.paypal.com`, chained to a trusted CA); the webhook id is configuration. \
     The alternative is PayPal's verify-webhook-signature API call with OAuth client \
     credentials, one call per event. \
     <https://developer.paypal.com/api/rest/webhooks/rest/#link-verifysignature>\n\
     - **Plaid**: the `Plaid-Verification` header is an ES256 JWT whose `kid` names a key \
     fetched with `/webhook_verification_key/get` (client id and secret); its \
     `request_body_sha256` claim must equal the body's SHA-256 and `iat` be under 5 minutes \
     old. <https://plaid.com/docs/api/webhooks/webhook-verification/>\n\
     - **AWS SNS** (HTTP/S subscriptions): `Signature` inside the JSON body, RSA-SHA1 \
     (`SignatureVersion` 1) or RSA-SHA256 (2) over a canonical string of selected fields, with \
     the certificate at `SigningCertURL` (an `sns.<region>.amazonaws.com` host); the \
     subscription is confirmed by fetching `SubscribeURL`. Within AWS, subscribing an SQS \
     queue needs none of this. \
     <https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html>\n";

fn section(preset: &Preset) -> String {
    let tolerance = preset.tolerance_secs.map_or_else(
        || "none (the provider signs no timestamp, or documents no window)".to_owned(),
        |secs| format!("{secs} s (`tolerance_secs` overrides it)"),
    );
    let handshake = preset.handshake.map_or("none".to_owned(), |h| {
        format!("{} ({})", h.as_str(), answer(h))
    });
    format!(
        "\n## {provider} (`{name}`)\n\n\
         - **Authentication:** {recipe}. {proves}\n\
         - **In the provider's dashboard:** the endpoint URL \
         `https://{{api}}/webhooks/{{partner}}`; the provider's documentation: <{docs}>.\n\
         - **Secret:** {secret}.\n\
         - **Rotation:** {rotation}\n\
         - **Timestamp tolerance:** {tolerance}.\n\
         - **Event id:** {event_id}.\n\
         - **Event type:** {event_type}.\n\
         - **Handshake:** {handshake}.\n\n\
         ```json\n{config}\n```\n{enrolment}",
        provider = preset.provider,
        name = preset.name,
        recipe = preset.recipe,
        proves = proves(preset.recipe),
        docs = preset.docs,
        secret = preset.secret.trim_end_matches('.'),
        rotation = if preset.handshake.is_some_and(Handshake::hands_over_a_secret) {
            "the provider makes the secret: enrol again (below) with a new webhook, put \
             its secret first in `secrets`, then delete the old webhook and remove its \
             secret."
        } else {
            rotation(preset.recipe)
        },
        event_id = field(preset.event_id, "the dedupe key", true),
        event_type = field(preset.event_type, "what routes match", false),
        config = config(preset),
        enrolment = enrolment(preset),
    )
}

/// How to enrol a partner whose provider hands its secret over in the
/// handshake (Asana), step by step.
fn enrolment(preset: &Preset) -> String {
    if !preset.handshake.is_some_and(Handshake::hands_over_a_secret) {
        return String::new();
    }
    format!(
        "\n**Enrolment.** The provider makes the secret and hands it over in the \
         handshake, which is unsigned: hookbox never adopts it by itself (anyone who knows \
         the URL could send one) and never keeps it in clear.\n\n\
         1. `hookbox enroll-key new --out {name}.key` writes a private key (mode 0600) and \
         prints its public key.\n\
         2. Configure the partner with `\"enroll_key\": \"<that public key>\"` instead of \
         `secrets` (beside them if it has some), deploy.\n\
         3. Create the webhook in the provider. Ingest echoes the handshake and logs \
         `handshake answered` with `sealed_secret`: the secret sealed to your key \
         (libsodium's `crypto_box_seal`). Until step 5 the new webhook's events get 401 \
         (`no_secret_yet` while the partner has no secret), and the provider retries \
         them.\n\
         4. `hookbox enroll-key open --key {name}.key <sealed_secret>` prints the secret.\n\
         5. Put it first in the partner's `secrets`, remove `enroll_key`, deploy (or \
         update the Secrets Manager secret): the configuration above. A handshake to a \
         partner without `enroll_key` gets 403 `not_enrolling`.\n\n\
         Only you can open the log line. Expect exactly one while you create the \
         webhook: if there are more, someone else knows the URL, so adopt none, delete \
         the webhook and enrol again (`allowed_cidrs` with the provider's addresses \
         narrows who can send one).\n",
        name = preset.name
    )
}

/// What the authentication proves.
fn proves(recipe: Recipe) -> &'static str {
    match recipe {
        Recipe::Signed(signed) if matches!(signed.signature, SignatureAt::EachItem { .. }) => {
            "One unsigned or forged item refuses the whole POST, and an empty list too. \
             It proves each item's signed fields came from the holder of the key, \
             unchanged; an item's other fields and the body around the items are not \
             signed: trust only the signed fields, and keep the endpoint on HTTPS."
        }
        Recipe::Signed(signed) if !signed.signs_body() => {
            "It proves the sender holds the key, NOT that the body is the provider's: \
             the signature covers other parts of the request only, so anyone who sees one \
             request can send its signature with another body. Keep the endpoint on HTTPS."
        }
        Recipe::Token { .. } | Recipe::BasicAuth => {
            "It proves only that the sender knows the shared value: the body is not \
             signed, so anyone who sees one request (a logging proxy) can send others. \
             Keep the endpoint on HTTPS and the value out of logs."
        }
        _ => "It proves the body came from the holder of the key, unchanged.",
    }
}

/// How to rotate the secret without dropping a webhook.
fn rotation(recipe: Recipe) -> &'static str {
    match recipe {
        Recipe::Signed(signed) if !matches!(signed.primitive, Primitive::Hmac(..)) => {
            "list the provider's new public key first and the old one after it while the \
             provider switches; remove the old one afterwards."
        }
        Recipe::Token { .. } | Recipe::BasicAuth => {
            "add the new value first in `secrets`, change it in the provider, then remove \
             the old one."
        }
        _ => {
            "add the new secret first in `secrets` (the old one after it), roll it in the \
             provider, then remove the old one."
        }
    }
}

fn field(field: EventField, what: &str, of_id: bool) -> String {
    match field {
        EventField::Absent if of_id => {
            format!("none sent by the provider ({what}: the body's SHA-256 stands in)")
        }
        EventField::Absent => format!("none sent by the provider ({what}: none)"),
        EventField::Composite(_) => format!("{field}, joined with `:` ({what})"),
        other => format!("{other} ({what})"),
    }
}

/// What hookbox answers when it answers the handshake.
fn answer(handshake: Handshake) -> &'static str {
    match handshake {
        Handshake::SlackUrlVerification => "a signed POST answered with its `challenge`",
        Handshake::ZoomUrlValidation => {
            "a signed POST answered within 3 s with `plainToken` and its HMAC-SHA256"
        }
        Handshake::TwitchCallbackVerification => {
            "a signed POST answered with its `challenge` as text/plain"
        }
        Handshake::DiscordPing => "a signed PING answered with a PONG",
        Handshake::MetaVerifyToken => {
            "a GET answered with `hub.challenge` when `hub.verify_token` is one of the \
             partner's `verify_tokens`, 403 otherwise"
        }
        Handshake::DropboxChallenge => "a GET whose `challenge` is echoed as text/plain",
        Handshake::OktaVerification => {
            "a GET whose `X-Okta-Verification-Challenge` is answered as `{\"verification\":…}` \
             when its `Authorization` header is one of the partner's secrets (computed by \
             `Handshake::answer_get_request`; ingest and the authorizer do not route it yet, \
             see below)"
        }
        Handshake::XCrc => {
            "a GET `crc_token` answered with `{\"response_token\":\"sha256=…\"}`, its \
             HMAC-SHA256 with the consumer secret; a token that could be a JSON body is refused, \
             so the answer never signs one (computed by `Handshake::answer_get_request`; ingest \
             and the authorizer do not route it yet, see below)"
        }
        Handshake::AsanaHookSecret => {
            "the first POST's `X-Hook-Secret` echoed (200, no body) while the partner has an \
             `enroll_key`, 403 `not_enrolling` otherwise; the secret is logged sealed to that \
             key, never kept"
        }
    }
}

/// The partner configuration to start from: the preset, which brings the
/// signature, the event id and type and the handshake.
fn config(preset: &Preset) -> String {
    let mut partner = serde_json::Map::new();
    partner.insert("preset".into(), serde_json::json!(preset.name));
    partner.insert("secrets".into(), serde_json::json!(["<secret>"]));
    if preset
        .handshake
        .is_some_and(Handshake::checks_a_verify_token)
    {
        partner.insert(
            "verify_tokens".into(),
            serde_json::json!(["<verify-token>"]),
        );
    }
    let config = serde_json::json!({"partners": {preset.name: partner}});
    serde_json::to_string_pretty(&config).unwrap_or_default()
}

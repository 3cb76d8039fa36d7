//! `docs/providers.md`, generated from the registry: per preset, what to
//! set in the provider's dashboard, the secret and its format, how to
//! rotate it without downtime, where the event id and type are, the
//! handshake, and the partner configuration to start from
//! (`shared/tests/presets.rs` fails when the page is stale).

use super::super::recipe::{Primitive, Recipe};
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
         Secrets go in the partner's `secrets` list, newest first. hookbox accepts a \
         request any listed secret verifies, so a rotation never drops a webhook: add the \
         new secret, switch the provider, remove the old one once no request needs it.\n\n\
         Handshakes: ingest answers the POST ones (Slack, Zoom, Twitch, Discord) once \
         they verify like the provider's events, byte for byte and without storing \
         anything; a wrongly signed one gets 401, a malformed one 400 `bad_handshake`. \
         The GET ones (Meta, Dropbox) and Asana's unsigned first request are not \
         answered yet (issue #28): until they are, those providers cannot be enabled \
         against hookbox.\n",
    );
    for preset in PRESETS {
        page.push_str(&section(preset));
    }
    page
}

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
         ```json\n{config}\n```\n",
        provider = preset.provider,
        name = preset.name,
        recipe = preset.recipe,
        proves = proves(preset.recipe),
        docs = preset.docs,
        secret = preset.secret.trim_end_matches('.'),
        rotation = rotation(preset.recipe),
        event_id = field(preset.event_id, "the dedupe key", true),
        event_type = field(preset.event_type, "what routes match", false),
        config = config(preset),
    )
}

/// What the authentication proves.
fn proves(recipe: Recipe) -> &'static str {
    match recipe {
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
        EventField::Composite(_) => format!(
            "{field} ({what}; a partner's configuration cannot name a composite yet: \
             without `event_id` the body's SHA-256 stands in)"
        ),
        EventField::Header(_) if !of_id => format!(
            "{field} ({what}; a partner's `event_type` is a JSON pointer: reading it from \
             a header is not configurable yet)"
        ),
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
            "a GET answered with `hub.challenge` when `hub.verify_token` matches"
        }
        Handshake::DropboxChallenge => "a GET whose `challenge` is echoed as text/plain",
        Handshake::AsanaHookSecret => {
            "the first POST's `X-Hook-Secret` echoed; it becomes the signing secret"
        }
    }
}

/// The partner configuration to start from.
fn config(preset: &Preset) -> String {
    let mut partner = serde_json::Map::new();
    partner.insert(
        "signature".into(),
        serde_json::json!({"scheme": "preset", "name": preset.name}),
    );
    partner.insert("secrets".into(), serde_json::json!(["<secret>"]));
    match preset.event_id {
        EventField::Header(name) => {
            partner.insert(
                "event_id".into(),
                serde_json::json!({"header": name.to_lowercase()}),
            );
        }
        EventField::Json(pointer) => {
            partner.insert(
                "event_id".into(),
                serde_json::json!({"json_pointer": pointer}),
            );
        }
        EventField::Composite(_) | EventField::Absent => {}
    }
    if let EventField::Json(pointer) = preset.event_type {
        partner.insert("event_type".into(), serde_json::json!(pointer));
    }
    let config = serde_json::json!({"partners": {preset.name: partner}});
    serde_json::to_string_pretty(&config).unwrap_or_default()
}

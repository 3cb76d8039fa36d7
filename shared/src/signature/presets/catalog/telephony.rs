//! Telephony, chat apps and bots: voice and SMS platforms, messenger bots,
//! in-app chat.

use super::*;

pub(crate) const MICROSOFT_TEAMS: Preset = Preset {
    name: "microsoft-teams",
    provider: "Microsoft Teams (outgoing webhooks)",
    // `Authorization: HMAC <base64>`, keyed with the base64-decoded
    // security token Teams shows once when the webhook is created.
    recipe: body_hmac(
        Primitive::Hmac(Algorithm::Sha256, KeyFormat::Base64),
        &["Authorization"],
        &["HMAC "],
        Encoding::Base64,
    ),
    tolerance_secs: None,
    event_id: Json("/id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the outgoing webhook's security token (base64, shown once when it is created; the key is its decoded bytes)",
    docs: "https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/add-outgoing-webhook",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"type":"message","id":"1485983408511","timestamp":"2023-11-14T22:13:20.000Z","serviceUrl":"https://smba.trafficmanager.net/amer/","channelId":"msteams","from":{"id":"29:1XJKJMvc5GBtc2JwZq0oj8tHZmzrQgFmB39ATiQWA85gQtHieVkKilBZ9XHoq9j7Zaqt7CZ-NJWi7me2kHTL3Bw","name":"Tim Jones"},"text":"<at>hookbox</at> hello"}"#,
    },
};

pub(crate) const PLIVO: Preset = Preset {
    name: "plivo",
    provider: "Plivo (signature V2)",
    // V2 signs the callback URL and a nonce, NOT the form parameters: it
    // proves the sender knows the auth token, not that the body is
    // Plivo's. Plivo signs the URL without its query string: configure
    // the callback URL without one.
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["X-Plivo-Signature-V2"],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Base64,
        message: &[Part::Url, Part::Header("X-Plivo-Signature-V2-Nonce")],
        timestamp: None,
    }),
    tolerance_secs: None,
    event_id: Absent,
    event_type: Absent,
    handshake: None,
    secret: "the account's auth token (Console, Overview; text); the callback URL, without a query string, is signed",
    docs: "https://www.plivo.com/docs/voice/concepts/signature-validation",
    sample: Sample {
        headers: &[("X-Plivo-Signature-V2-Nonce", "05429567804466091622")],
        body: "CallUUID=2b2d0b0a-1b7e-4b5f-9a58-6b7c3a1e2f11&CallStatus=ringing&Direction=inbound&From=14155550100&To=14155550199",
    },
};

pub(crate) const SENDBIRD: Preset = Preset {
    name: "sendbird",
    provider: "Sendbird (Chat webhooks)",
    recipe: body_hmac(SHA256, &["x-sendbird-signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Absent,
    event_type: Json("/category"),
    handshake: None,
    secret: "the application's master API token (Dashboard, Settings, General; text)",
    docs: "https://sendbird.com/docs/chat/platform-api/v3/webhook/overview",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"category":"group_channel:message_send","sender":{"user_id":"u1"},"payload":{"message_id":7400000000,"message":"hello","created_at":1700000000000},"channel":{"channel_url":"sendbird_group_channel_1"},"app_id":"B4F4B2E9-6A7F-4E6C-9C3B-1D2E3F4A5B6C"}"#,
    },
};

pub(crate) const SINCH: Preset = Preset {
    name: "sinch",
    provider: "Sinch (Conversation API callbacks)",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["x-sinch-webhook-signature"],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Base64,
        // `{body}.{nonce}.{timestamp}`
        message: &[
            Part::Body,
            Part::Text("."),
            Part::Header("x-sinch-webhook-signature-nonce"),
            Part::Text("."),
            Part::Timestamp,
        ],
        timestamp: in_header("x-sinch-webhook-signature-timestamp", TimeFormat::Seconds),
    }),
    // Sinch documents no window: the usual 5 minutes.
    tolerance_secs: Some(300),
    // Each trigger has its own body (message, event, delivery report…).
    event_id: Absent,
    event_type: Absent,
    handshake: None,
    secret: "the webhook's secret (set on the Conversation API webhook; text)",
    docs: "https://developers.sinch.com/docs/conversation/callbacks/#validating-callback-requests",
    sample: Sample {
        headers: &[
            (
                "x-sinch-webhook-signature-nonce",
                "01FJA8B4A7BM43YGWSG9GBV067",
            ),
            ("x-sinch-webhook-signature-algorithm", "HmacSHA256"),
        ],
        body: r#"{"app_id":"01EB37HMH1M6SV18ASNS3G135H","accepted_time":"2023-11-14T22:13:20.000Z","event_time":"2023-11-14T22:13:19.000Z","project_id":"c36f3d3d-1513-4edd-ae42-11995557ff61","message":{"id":"01EQBC1A3BEK731GY4YXEN0C2R","direction":"TO_APP","contact_message":{"text_message":{"text":"hello"}}}}"#,
    },
};

pub(crate) const TELEGRAM: Preset = Preset {
    name: "telegram",
    provider: "Telegram Bot API",
    // The `secret_token` given to `setWebhook`, sent as is.
    recipe: Recipe::Token {
        header: "X-Telegram-Bot-Api-Secret-Token",
    },
    tolerance_secs: None,
    event_id: Json("/update_id"),
    event_type: Absent,
    handshake: None,
    secret: "the `secret_token` given to `setWebhook` (1 to 256 of `A-Z`, `a-z`, `0-9`, `_`, `-`)",
    docs: "https://core.telegram.org/bots/api#setwebhook",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"update_id":10000,"message":{"message_id":1365,"date":1700000000,"chat":{"id":1111111,"type":"private"},"from":{"id":1111111,"is_bot":false,"first_name":"Test"},"text":"/start"}}"#,
    },
};

pub(crate) const TELNYX: Preset = Preset {
    name: "telnyx",
    provider: "Telnyx (API v2 webhooks)",
    recipe: Recipe::Signed(Signed {
        primitive: Primitive::Ed25519,
        signature: SignatureAt::Headers {
            names: &["telnyx-signature-ed25519"],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Base64,
        // `{timestamp}|{body}`
        message: &[Part::Timestamp, Part::Text("|"), Part::Body],
        timestamp: in_header("telnyx-timestamp", TimeFormat::Seconds),
    }),
    // The official SDKs' default tolerance.
    tolerance_secs: Some(300),
    event_id: Json("/data/id"),
    event_type: Json("/data/event_type"),
    handshake: None,
    secret: "Telnyx's public key (Mission Control, Keys & Credentials, Public Key) as 64 hexadecimal digits: the portal shows it in base64 (`base64 -d | xxd -p -c 32` converts it)",
    docs: "https://developers.telnyx.com/docs/messaging/messages/receiving-webhooks",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"data":{"event_type":"message.received","id":"b301ed3f-1490-491f-995f-6e64e69674d4","occurred_at":"2023-11-14T22:13:20.000+00:00","payload":{"id":"84cca175-9755-4859-b67f-4730d7f58aa3","text":"hello"},"record_type":"event"},"meta":{"attempt":1,"delivered_to":"https://example.com/webhooks"}}"#,
    },
};

pub(crate) const VAPI: Preset = Preset {
    name: "vapi",
    provider: "Vapi (server URL, secret header)",
    recipe: Recipe::Token {
        header: "X-Vapi-Secret",
    },
    tolerance_secs: None,
    event_id: Absent,
    event_type: Json("/message/type"),
    handshake: None,
    secret: "the server URL's secret (assistant or phone number `server.secret`), sent as is in `X-Vapi-Secret`",
    docs: "https://docs.vapi.ai/server-url/server-authentication",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"message":{"type":"end-of-call-report","timestamp":1700000000000,"call":{"id":"3c2e9f0a-6b1d-4e8f-9a7b-2c4d6e8f0a1b"},"endedReason":"customer-ended-call"}}"#,
    },
};

pub(crate) const VIBER: Preset = Preset {
    name: "viber",
    provider: "Viber (REST bot API callbacks)",
    recipe: body_hmac(SHA256, &["X-Viber-Content-Signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Composite(&[Json("/event"), Json("/message_token")]),
    event_type: Json("/event"),
    handshake: None,
    secret: "the bot's authentication token (text)",
    docs: "https://developers.viber.com/docs/api/rest-bot-api/#callbacks",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"event":"message","timestamp":1700000000000,"chat_hostname":"SN-376_","message_token":4912661846655238145,"sender":{"id":"01234567890A=","name":"John McClane","language":"en","country":"UK","api_version":1},"message":{"type":"text","text":"a message to the service"},"silent":false}"#,
    },
};

//! Messaging, e-mail, chat, voice and video.

use super::*;

pub(crate) const DISCORD: Preset = Preset {
    name: "discord",
    provider: "Discord (interactions)",
    recipe: Recipe::Signed(Signed {
        primitive: Primitive::Ed25519,
        signature: SignatureAt::Headers {
            names: &["X-Signature-Ed25519"],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Hex,
        message: &[Part::Timestamp, Part::Body],
        timestamp: in_header("X-Signature-Timestamp", TimeFormat::Seconds),
    }),
    // Discord documents no window; the timestamp is signed but not aged.
    tolerance_secs: None,
    event_id: Json("/id"),
    event_type: Json("/type"),
    handshake: Some(Handshake::DiscordPing),
    secret: "the application's public key (64 hexadecimal digits)",
    docs: "https://discord.com/developers/docs/interactions/overview#setting-up-an-endpoint-validating-security-request-headers",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"id":"1","type":1,"application_id":"2","token":"t","version":1}"#,
    },
};

pub(crate) const ELEVENLABS: Preset = Preset {
    name: "elevenlabs",
    provider: "ElevenLabs",
    recipe: t_dot_body(&["ElevenLabs-Signature"], &["v0="], TimeFormat::Seconds),
    // The official SDK's `constructEvent` refuses a signature over 30
    // minutes old.
    tolerance_secs: Some(1800),
    event_id: Composite(&[Json("/data/conversation_id"), Json("/type")]),
    event_type: Json("/type"),
    handshake: None,
    secret: "the webhook's HMAC secret (its text is the key)",
    docs: "https://elevenlabs.io/docs/eleven-agents/workflows/post-call-webhooks",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"type":"post_call_transcription","event_timestamp":1700000000,"data":{"agent_id":"agent_01","conversation_id":"conv_01"}}"#,
    },
};

pub(crate) const INTERCOM: Preset = Preset {
    name: "intercom",
    provider: "Intercom",
    recipe: body_hmac(SHA1, &["X-Hub-Signature"], &["sha1="], Encoding::Hex),
    tolerance_secs: None,
    event_id: Json("/id"),
    event_type: Json("/topic"),
    handshake: None,
    secret: "the app's client secret (text)",
    docs: "https://developers.intercom.com/docs/references/webhooks/webhook-models#signed-notifications",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"type":"notification_event","id":"notif_ccd8a4d0","topic":"conversation.user.created","data":{}}"#,
    },
};

pub(crate) const LINE: Preset = Preset {
    name: "line",
    provider: "LINE Messaging API",
    recipe: body_hmac(SHA256, &["x-line-signature"], &[""], Encoding::Base64),
    tolerance_secs: None,
    event_id: Json("/events/0/webhookEventId"),
    event_type: Json("/events/0/type"),
    handshake: None,
    secret: "the channel secret (text, Basic settings of the channel)",
    docs: "https://developers.line.biz/en/docs/messaging-api/verify-webhook-signature/",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"destination":"U0000000000000000000000000000000","events":[{"type":"message","webhookEventId":"01HBKZ0000000000000000000","timestamp":1700000000000,"mode":"active","message":{"type":"text","id":"1","text":"hi"}}]}"#,
    },
};

pub(crate) const MAILGUN: Preset = Preset {
    name: "mailgun",
    provider: "Mailgun",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Json("/signature/signature"),
        encoding: Encoding::Hex,
        // Mailgun signs its timestamp and token only, not the event:
        // the signature proves the sender knows the key, the event data
        // is not covered.
        message: &[
            Part::Json("/signature/timestamp"),
            Part::Json("/signature/token"),
        ],
        timestamp: Some(TimestampAt {
            source: TimestampSource::Json("/signature/timestamp"),
            format: TimeFormat::Seconds,
        }),
    }),
    tolerance_secs: None,
    event_id: Json("/event-data/id"),
    event_type: Json("/event-data/event"),
    handshake: None,
    secret: "the HTTP webhook signing key (text)",
    docs: "https://documentation.mailgun.com/docs/mailgun/user-manual/tracking-messages/#securing-webhooks",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"signature":{"timestamp":"1529006854","token":"a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0","signature":"d2271d12299f6592d9d44cd9d250f0704e4674c30d79d07c47a66f95ce71cf55"},"event-data":{"id":"CPgfbmQMTCKtHW6uIWtuVe","event":"delivered"}}"#,
    },
};

/// Mailchimp Transactional (Mandrill): a form-encoded POST whose one
/// parameter, `mandrill_events`, is a JSON array of up to 1,000 events;
/// `X-Mandrill-Signature` is base64 HMAC-SHA1, keyed with the webhook's
/// key, of the webhook URL exactly as entered in Mandrill, then each POST
/// parameter's name and value sorted by name: Twilio's recipe under
/// another header, without Twilio's port spellings of the URL. When a
/// webhook is added, Mandrill sends a HEAD request and, on anything but
/// 200 (API Gateway's answer to a HEAD), a POST with `mandrill_events=[]`
/// signed with the generic key `test-webhook`, not the webhook's key: the
/// webhook is saved only once that POST is answered 200.
pub(crate) const MANDRILL: Preset = Preset {
    name: "mandrill",
    provider: "Mailchimp Transactional (Mandrill)",
    recipe: Recipe::Signed(Signed {
        primitive: SHA1,
        signature: SignatureAt::Headers {
            names: &["X-Mandrill-Signature"],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Base64,
        message: &[Part::Url, Part::Form],
        timestamp: None,
    }),
    tolerance_secs: None,
    // A POST carries up to 1,000 events: none for the POST (the batch
    // splitting reads each event).
    event_id: Absent,
    // The body is form-encoded: no JSON pointer reads it.
    event_type: Absent,
    handshake: None,
    secret: "the webhook's key (Settings, Webhooks, its Key column; text). The URL is signed too, exactly as entered in Mandrill: set the partner's `public_url` to it when it differs from API Gateway's. While adding the webhook, list `test-webhook` too (Mandrill signs its test POST with that public key), and remove it once the webhook is saved",
    docs: "https://mailchimp.com/developer/transactional/guides/track-respond-activity-webhooks/#authenticating-webhook-requests",
    sample: Sample {
        headers: NO_HEADERS,
        body: "mandrill_events=%5B%7B%22event%22%3A%22send%22%2C%22msg%22%3A%7B%22ts%22%3A1365109999%2C%22email%22%3A%22example.webhook%40mandrillapp.com%22%2C%22state%22%3A%22sent%22%2C%22_id%22%3A%22exampleaaaaaaaaaaaaaaaaaaaaaaaaa%22%7D%2C%22_id%22%3A%22exampleaaaaaaaaaaaaaaaaaaaaaaaaa%22%2C%22ts%22%3A1365111111%7D%5D",
    },
};

pub(crate) const META: Preset = Preset {
    name: "meta",
    provider: "Meta (WhatsApp, Messenger, Instagram)",
    recipe: body_hmac(
        SHA256,
        &["X-Hub-Signature-256"],
        &["sha256="],
        Encoding::Hex,
    ),
    tolerance_secs: None,
    event_id: Absent,
    event_type: Json("/object"),
    handshake: Some(Handshake::MetaVerifyToken),
    secret: "the app secret (text); the verify token is configured apart",
    docs: "https://developers.facebook.com/docs/graph-api/webhooks/getting-started#validate-payloads",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[]}]}"#,
    },
};

pub(crate) const MUX: Preset = Preset {
    name: "mux",
    provider: "Mux (video)",
    recipe: t_dot_body(&["Mux-Signature"], &["v1="], TimeFormat::Seconds),
    // Mux's SDKs allow 5 minutes by default.
    tolerance_secs: Some(300),
    event_id: Json("/id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the webhook's signing secret (text)",
    docs: "https://docs.mux.com/core/verify-webhook-signatures",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"type":"video.asset.ready","object":{"type":"asset","id":"0201p02fGKPE7MrbC269XRD7LpcHhrmbu0002"},"id":"3a56ac3d-33da-4366-855b-f592d898409d","data":{"status":"ready"}}"#,
    },
};

pub(crate) const POSTMARK: Preset = Preset {
    name: "postmark",
    provider: "Postmark",
    recipe: Recipe::BasicAuth,
    tolerance_secs: None,
    event_id: Composite(&[Json("/RecordType"), Json("/MessageID")]),
    event_type: Json("/RecordType"),
    handshake: None,
    secret: "`user:password` put in the webhook URL (`https://user:password@…`)",
    docs: "https://postmarkapp.com/developer/webhooks/webhooks-overview#protecting-your-webhook",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"RecordType":"Delivery","MessageID":"883953f4-6105-42a2-a16a-77a8eac79483","Recipient":"john@example.com"}"#,
    },
};

pub(crate) const PUSHER: Preset = Preset {
    name: "pusher",
    provider: "Pusher Channels",
    recipe: body_hmac(SHA256, &["X-Pusher-Signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Absent,
    event_type: Json("/events/0/name"),
    handshake: None,
    secret: "the app's secret (App Keys; `X-Pusher-Key` names the key)",
    docs: "https://pusher.com/docs/channels/server_api/webhooks/",
    sample: Sample {
        headers: &[("X-Pusher-Key", "hookbox-app-key")],
        body: r#"{"time_ms":1700000000000,"events":[{"name":"channel_occupied","channel":"presence-room"}]}"#,
    },
};

pub(crate) const RETELL: Preset = Preset {
    name: "retell",
    provider: "Retell AI",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["x-retell-signature"],
            prefixes: &["d="],
            separator: Some(','),
        },
        encoding: Encoding::Hex,
        // `v=<ms>,d=<hex>`: the body, then the timestamp, no separator.
        message: &[Part::Body, Part::Timestamp],
        timestamp: Some(TimestampAt {
            source: TimestampSource::SignatureItem("v"),
            format: TimeFormat::Millis,
        }),
    }),
    // The official SDK's `verify` allows 5 minutes.
    tolerance_secs: Some(300),
    event_id: Composite(&[Json("/call/call_id"), Json("/event")]),
    event_type: Json("/event"),
    handshake: None,
    secret: "the API key that has the webhook badge (Retell signs with it)",
    docs: "https://docs.retellai.com/features/secure-webhook",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"event":"call_ended","call":{"call_id":"call_01","agent_id":"agent_01"}}"#,
    },
};

pub(crate) const SENDGRID: Preset = Preset {
    name: "sendgrid",
    provider: "Twilio SendGrid (Event Webhook)",
    recipe: Recipe::Signed(Signed {
        primitive: Primitive::EcdsaP256,
        signature: SignatureAt::Headers {
            names: &["X-Twilio-Email-Event-Webhook-Signature"],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Base64,
        message: &[Part::Timestamp, Part::Body],
        timestamp: in_header(
            "X-Twilio-Email-Event-Webhook-Timestamp",
            TimeFormat::Seconds,
        ),
    }),
    // SendGrid documents no window.
    tolerance_secs: None,
    event_id: Absent,
    event_type: Absent,
    handshake: None,
    secret: "the verification key: base64 of the DER public key (P-256)",
    docs: "https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"[{"email":"hello@world.com","event":"dropped","sg_event_id":"ZHJvcC0x","timestamp":1600112492}]"#,
    },
};

/// SparkPost (Bird) event webhooks: a JSON array of batched events,
/// `[{"msys":{"message_event":{"type":"delivery","event_id":…,…}}},…]`.
/// SparkPost signs nothing: a webhook authenticates with HTTP basic
/// credentials of yours (`auth_type` `basic`) or an OAuth 2.0 bearer token
/// SparkPost fetches from a token URL of yours (`oauth2`), which changes
/// and which a configured secret cannot check: choose basic. SparkPost
/// POSTs a test batch when a webhook is created or its target changed,
/// and keeps the change only if it is answered 200: hookbox answers it as
/// any batch (401 without the credentials).
pub(crate) const SPARKPOST: Preset = Preset {
    name: "sparkpost",
    provider: "SparkPost (event webhooks)",
    recipe: Recipe::BasicAuth,
    tolerance_secs: None,
    // The batch's id, the same on SparkPost's retries of the batch (its
    // API docs: for detecting duplicate batches); each event's own
    // `event_id` is for the batch splitting.
    event_id: Header("X-MessageSystems-Batch-ID"),
    // A batch mixes kinds (`message_event`, `track_event`, `gen_event`…):
    // each event's `type` is for the batch splitting.
    event_type: Absent,
    handshake: None,
    secret: "`user:password` of the webhook's basic authentication (`auth_credentials`: `username`, and `password`, which SparkPost makes optional: `user:` without one)",
    docs: "https://support.sparkpost.com/docs/tech-resources/webhook-authentication",
    sample: Sample {
        headers: &[(
            "X-MessageSystems-Batch-ID",
            "77c2b630-d712-11e4-b7cd-47b0a8e2f1f0",
        )],
        body: r#"[{"msys":{"message_event":{"type":"delivery","event_id":"92356927693813856","message_id":"000443ee14578172be22","rcpt_to":"recipient@example.com","timestamp":"1460989507"}}}]"#,
    },
};

pub(crate) const SLACK: Preset = Preset {
    name: "slack",
    provider: "Slack",
    recipe: Recipe::Scheme(SchemeKind::Slack),
    tolerance_secs: Some(300),
    event_id: Json("/event_id"),
    event_type: Json("/event/type"),
    handshake: Some(Handshake::SlackUrlVerification),
    secret: "the app's signing secret (text)",
    docs: "https://api.slack.com/authentication/verifying-requests-from-slack",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"type":"event_callback","event_id":"Ev08MFMKH6","event":{"type":"app_mention","text":"hi"}}"#,
    },
};

pub(crate) const STREAM_CHAT: Preset = Preset {
    name: "stream-chat",
    provider: "Stream Chat",
    recipe: body_hmac(SHA256, &["X-Signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Header("X-Webhook-Id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the app's API secret",
    docs: "https://getstream.io/chat/docs/php/webhooks_overview/",
    sample: Sample {
        headers: &[("X-Webhook-Id", "6a1f0c3e-6d6b-4a43-9a25-9e3f5d3c2b10")],
        body: r#"{"type":"message.new","cid":"messaging:general","message":{"id":"msg_01","text":"hi"}}"#,
    },
};

pub(crate) const TWILIO: Preset = Preset {
    name: "twilio",
    provider: "Twilio",
    recipe: Recipe::Scheme(SchemeKind::Twilio),
    tolerance_secs: None,
    event_id: Header("I-Twilio-Idempotency-Token"),
    event_type: Absent,
    handshake: None,
    secret: "the account's auth token (text); the request URL is signed",
    docs: "https://www.twilio.com/docs/usage/security#validating-requests",
    sample: Sample {
        headers: &[(
            "I-Twilio-Idempotency-Token",
            "2b2d7b13-0d52-4d9e-a7bb-5b1a4c5a1e0e",
        )],
        body: "CallSid=CA1234567890ABCDE&Caller=%2B14158675310&Digits=1234&From=%2B14158675310&To=%2B18005551212",
    },
};

pub(crate) const TWILIO_SHA256: Preset = Preset {
    name: "twilio-sha256",
    provider: "Twilio (HMAC-SHA256 signature settings)",
    // Where a Webhooks Rule matches the URL, Twilio signs with the
    // Setting's SharedKey and HMAC-SHA256 (and says so in
    // `X-Twilio-Webhooks-Signature-Settings`); the signed string is the
    // same as with the auth token.
    recipe: Recipe::Twilio(Algorithm::Sha256),
    tolerance_secs: None,
    event_id: Header("I-Twilio-Idempotency-Token"),
    event_type: Absent,
    handshake: None,
    secret: "the Webhooks Setting's SharedKey secret (text); the request URL is signed",
    docs: "https://github.com/twilio/twilio-node/blob/main/examples/WebhookSignatureValidation.md",
    sample: TWILIO.sample,
};

pub(crate) const TWITCH_EVENTSUB: Preset = Preset {
    name: "twitch-eventsub",
    provider: "Twitch EventSub",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["Twitch-Eventsub-Message-Signature"],
            prefixes: &["sha256="],
            separator: None,
        },
        encoding: Encoding::Hex,
        message: &[
            Part::Header("Twitch-Eventsub-Message-Id"),
            Part::Timestamp,
            Part::Body,
        ],
        timestamp: in_header("Twitch-Eventsub-Message-Timestamp", TimeFormat::Rfc3339),
    }),
    tolerance_secs: Some(600),
    event_id: Header("Twitch-Eventsub-Message-Id"),
    event_type: Header("Twitch-Eventsub-Subscription-Type"),
    handshake: Some(Handshake::TwitchCallbackVerification),
    secret: "the subscription's secret (10 to 100 ASCII characters)",
    docs: "https://dev.twitch.tv/docs/eventsub/handling-webhook-events/#verifying-the-event-message",
    sample: Sample {
        headers: &[
            (
                "Twitch-Eventsub-Message-Id",
                "e76c6bd4-55c9-4987-8304-da1588d8988b",
            ),
            ("Twitch-Eventsub-Subscription-Type", "channel.follow"),
        ],
        body: r#"{"subscription":{"type":"channel.follow"},"event":{}}"#,
    },
};

pub(crate) const ZOOM: Preset = Preset {
    name: "zoom",
    provider: "Zoom",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["x-zm-signature"],
            prefixes: &["v0="],
            separator: None,
        },
        encoding: Encoding::Hex,
        message: &[
            Part::Text("v0:"),
            Part::Timestamp,
            Part::Text(":"),
            Part::Body,
        ],
        timestamp: in_header("x-zm-request-timestamp", TimeFormat::Seconds),
    }),
    tolerance_secs: Some(300),
    event_id: Composite(&[Json("/event"), Json("/event_ts")]),
    event_type: Json("/event"),
    handshake: Some(Handshake::ZoomUrlValidation),
    secret: "the app's secret token (text)",
    docs: "https://developers.zoom.us/docs/api/webhooks/#verify-with-zooms-header",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"event":"meeting.started","event_ts":1626230691572,"payload":{"account_id":"AAAAAABBBB"}}"#,
    },
};

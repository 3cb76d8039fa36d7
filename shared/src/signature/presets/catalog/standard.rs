//! Standard Webhooks senders (Svix and the providers that send through it).

use super::*;

pub(crate) const CLERK: Preset = Preset {
    name: "clerk",
    provider: "Clerk",
    recipe: Recipe::Scheme(SchemeKind::StandardWebhooks),
    tolerance_secs: Some(300),
    event_id: Header("svix-id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the endpoint's signing secret (`whsec_…`)",
    docs: "https://clerk.com/docs/webhooks/sync-data",
    sample: Sample {
        headers: &[("svix-id", "msg_2cGUZ2CNMr3LPvMPFGKZj3ZNWFb")],
        body: r#"{"data":{"id":"user_29w83sxmDNGwOuEthce5gg56FcC"},"object":"event","type":"user.created"}"#,
    },
};

pub(crate) const DODO_PAYMENTS: Preset = Preset {
    name: "dodo-payments",
    provider: "Dodo Payments",
    recipe: Recipe::Scheme(SchemeKind::StandardWebhooks),
    tolerance_secs: Some(300),
    event_id: Header("webhook-id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the webhook's signing secret (`whsec_…`)",
    docs: "https://docs.dodopayments.com/developer-resources/webhooks",
    sample: Sample {
        headers: &[("webhook-id", "msg_2bTz0000000000000000000000")],
        body: r#"{"business_id":"bus_01","type":"payment.succeeded","timestamp":"2023-11-14T22:13:20Z","data":{"payment_id":"pay_01"}}"#,
    },
};

pub(crate) const LITHIC: Preset = Preset {
    name: "lithic",
    provider: "Lithic",
    recipe: Recipe::Scheme(SchemeKind::StandardWebhooks),
    tolerance_secs: Some(300),
    event_id: Header("webhook-id"),
    event_type: Json("/event_type"),
    handshake: None,
    secret: "the event subscription's secret (`whsec_…`)",
    docs: "https://docs.lithic.com/docs/events-api",
    sample: Sample {
        headers: &[("webhook-id", "msg_2bTz0000000000000000000001")],
        body: r#"{"event_type":"card.created","token":"00000000-0000-0000-0000-000000000001","card_token":"00000000-0000-0000-0000-000000000002"}"#,
    },
};

pub(crate) const LIVEBLOCKS: Preset = Preset {
    name: "liveblocks",
    provider: "Liveblocks",
    recipe: Recipe::Scheme(SchemeKind::StandardWebhooks),
    tolerance_secs: Some(300),
    event_id: Header("webhook-id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the webhook endpoint's signing secret (`whsec_…`)",
    docs: "https://liveblocks.io/docs/platform/webhooks",
    sample: Sample {
        headers: &[("webhook-id", "msg_2bTz0000000000000000000002")],
        body: r#"{"type":"storageUpdated","data":{"roomId":"room-1","projectId":"proj_01","updatedAt":"2023-11-14T22:13:20.000Z"}}"#,
    },
};

pub(crate) const OPENAI: Preset = Preset {
    name: "openai",
    provider: "OpenAI",
    recipe: Recipe::Scheme(SchemeKind::StandardWebhooks),
    tolerance_secs: Some(300),
    event_id: Header("webhook-id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the endpoint's signing secret (`whsec_…`)",
    docs: "https://platform.openai.com/docs/guides/webhooks",
    sample: Sample {
        headers: &[("webhook-id", "wh_685c059ae39c8190af8c71ed1022a24d")],
        body: r#"{"id":"evt_685c059ae3a481909bdc86819b066fb6","object":"event","type":"response.completed","data":{"id":"resp_123"}}"#,
    },
};

pub(crate) const REPLICATE: Preset = Preset {
    name: "replicate",
    provider: "Replicate",
    recipe: Recipe::Scheme(SchemeKind::StandardWebhooks),
    tolerance_secs: Some(300),
    event_id: Header("webhook-id"),
    event_type: Json("/status"),
    handshake: None,
    secret: "the account's webhook signing secret (`whsec_…`)",
    docs: "https://replicate.com/docs/topics/webhooks/verify-webhook",
    sample: Sample {
        headers: &[("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")],
        body: r#"{"id":"ufawqhfynnddngldkgtslldrkq","status":"succeeded"}"#,
    },
};

pub(crate) const RESEND: Preset = Preset {
    name: "resend",
    provider: "Resend",
    recipe: Recipe::Scheme(SchemeKind::StandardWebhooks),
    tolerance_secs: Some(300),
    event_id: Header("svix-id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the webhook's signing secret (`whsec_…`)",
    docs: "https://resend.com/docs/dashboard/webhooks/verify-webhooks-requests",
    sample: Sample {
        headers: &[("svix-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")],
        body: r#"{"type":"email.sent","created_at":"2024-01-01T00:00:00.000Z","data":{"email_id":"56761188-7520-42d8-8898-ff6fc54ce618"}}"#,
    },
};

pub(crate) const STANDARD_WEBHOOKS: Preset = Preset {
    name: "standard-webhooks",
    provider: "Standard Webhooks senders",
    recipe: Recipe::Scheme(SchemeKind::StandardWebhooks),
    tolerance_secs: Some(300),
    event_id: Header("webhook-id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the endpoint's secret (`whsec_…`), or a `whpk_…` Ed25519 public key",
    docs: "https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md",
    sample: Sample {
        headers: &[("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")],
        body: r#"{"type":"contact.created","timestamp":"2022-11-03T20:26:10.344522Z","data":{}}"#,
    },
};

pub(crate) const SVIX: Preset = Preset {
    name: "svix",
    provider: "Svix",
    recipe: Recipe::Scheme(SchemeKind::StandardWebhooks),
    tolerance_secs: Some(300),
    event_id: Header("svix-id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the endpoint's signing secret (`whsec_…`)",
    docs: "https://docs.svix.com/receiving/verifying-payloads/how-manual",
    sample: Sample {
        headers: &[("svix-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")],
        body: r#"{"type":"invoice.paid","data":{}}"#,
    },
};

//! CRMs, support desks and marketing automation.

use super::*;

pub(crate) const ATTIO: Preset = Preset {
    name: "attio",
    provider: "Attio",
    recipe: body_hmac(
        SHA256,
        &["Attio-Signature", "X-Attio-Signature"],
        &[""],
        Encoding::Hex,
    ),
    tolerance_secs: None,
    // One delivery may carry several events: the first one's type.
    event_id: Absent,
    event_type: Json("/events/0/event_type"),
    handshake: None,
    secret: "the webhook's secret (returned when the webhook is created; text)",
    docs: "https://docs.attio.com/rest-api/guides/webhooks",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"webhook_id":"c6b3b0f4-6a1b-4b5e-9c2d-3e4f5a6b7c8d","events":[{"event_type":"record.created","id":{"workspace_id":"14beef7a-99f7-4534-a87e-70b564330a4c","object_id":"97052eb9-e65e-443f-a297-f2d9a4a7f795","record_id":"bf071e1f-6035-429d-b874-d83ea64ea13b"},"actor":{"type":"workspace-member","id":"50cf242c-7fa3-4cad-87d0-75b1af71c57b"}}]}"#,
    },
};

pub(crate) const CLOSE: Preset = Preset {
    name: "close",
    provider: "Close (CRM)",
    // The key is the hex-decoded signature key; the message is the
    // timestamp, then the body.
    recipe: Recipe::Signed(Signed {
        primitive: Primitive::Hmac(Algorithm::Sha256, KeyFormat::Hex),
        signature: SignatureAt::Headers {
            names: &["close-sig-hash"],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Hex,
        message: &[Part::Timestamp, Part::Body],
        timestamp: in_header("close-sig-timestamp", TimeFormat::Seconds),
    }),
    // Close documents no window: the usual 5 minutes.
    tolerance_secs: Some(300),
    event_id: Json("/event/id"),
    event_type: Composite(&[Json("/event/object_type"), Json("/event/action")]),
    handshake: None,
    secret: "the subscription's `signature_key` (hexadecimal, returned when the webhook subscription is created; the key is its decoded bytes)",
    docs: "https://developer.close.com/topics/webhooks/",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"subscription_id":"whsub_5KGGCOr5TcUTrQt3v93gxE","event":{"id":"ev_2CBP0xyDRfcRA6bmsi07Rx","date_created":"2023-11-14T22:13:20.000000","object_type":"lead","action":"created","object_id":"lead_3fWkyq1Cgp6jS7dn9fJqKZ","organization_id":"orga_XbVPx5fFbKlYTz9PW5Ih1XDhViV10YihIaEgMEb6fVW","data":{}}}"#,
    },
};

pub(crate) const CUSTOMER_IO: Preset = Preset {
    name: "customer-io",
    provider: "Customer.io (reporting webhooks)",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["X-CIO-Signature"],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Hex,
        // `v0:{timestamp}:{body}`
        message: &[
            Part::Text("v0:"),
            Part::Timestamp,
            Part::Text(":"),
            Part::Body,
        ],
        timestamp: in_header("X-CIO-Timestamp", TimeFormat::Seconds),
    }),
    // Customer.io documents no window: the usual 5 minutes.
    tolerance_secs: Some(300),
    event_id: Json("/event_id"),
    event_type: Composite(&[Json("/object_type"), Json("/metric")]),
    handshake: None,
    secret: "the reporting webhook's signing key (Data & Integrations, Reporting Webhooks, Copy signing key; text)",
    docs: "https://docs.customer.io/journeys/webhooks/#securely-verify-requests",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"data":{"customer_id":"42","email_address":"test@example.com","delivery_id":"RPILAgABcRhIBqSp7kiPekGBIeVh"},"event_id":"01E4C4HDQ7P6GNP8ACQ4P2JW8V","metric":"sent","object_type":"email","timestamp":1700000000}"#,
    },
};

pub(crate) const HELP_SCOUT: Preset = Preset {
    name: "help-scout",
    provider: "Help Scout",
    recipe: body_hmac(SHA1, &["X-HelpScout-Signature"], &[""], Encoding::Base64),
    tolerance_secs: None,
    event_id: Absent,
    event_type: Header("X-HelpScout-Event"),
    handshake: None,
    secret: "the webhook's secret key (Manage, Apps, Webhooks; text)",
    docs: "https://developer.helpscout.com/webhooks/",
    sample: Sample {
        headers: &[("X-HelpScout-Event", "convo.created")],
        body: r#"{"id":10,"number":12345,"type":"email","status":"active","subject":"Hello","mailbox":{"id":1}}"#,
    },
};

pub(crate) const MAILJET: Preset = Preset {
    name: "mailjet",
    provider: "Mailjet (event webhooks)",
    // Mailjet signs nothing: the event URL carries basic credentials
    // (`https://user:password@…`), sent as `Authorization: Basic`.
    recipe: Recipe::BasicAuth,
    tolerance_secs: None,
    event_id: Absent,
    event_type: Json("/event"),
    handshake: None,
    secret: "`user:password` of the event URL's basic authentication (one event per request: leave the grouping option off)",
    docs: "https://dev.mailjet.com/email/guides/webhooks/",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"event":"sent","time":1700000000,"MessageID":19421777835146490,"Message_GUID":"1ab23cd4-e567-8901-2345-6789f0gh1i2j","email":"api@mailjet.com","mj_campaign_id":7257,"mj_contact_id":4,"customcampaign":"","mj_message_id":"19421777835146490"}"#,
    },
};

pub(crate) const ZENDESK: Preset = Preset {
    name: "zendesk",
    provider: "Zendesk (webhooks)",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["X-Zendesk-Webhook-Signature"],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Base64,
        // The timestamp, then the body, no separator.
        message: &[Part::Timestamp, Part::Body],
        timestamp: in_header("X-Zendesk-Webhook-Signature-Timestamp", TimeFormat::Rfc3339),
    }),
    // Zendesk signs the timestamp against replays but documents no
    // window: the usual 5 minutes.
    tolerance_secs: Some(300),
    // Event-subscription webhooks; a trigger's webhook has the body its
    // trigger writes.
    event_id: Json("/id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the webhook's signing secret (Admin Center, Webhooks, Reveal secret; text)",
    docs: "https://developer.zendesk.com/documentation/webhooks/verifying/",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"account_id":12345,"detail":{"id":"35436"},"event":{},"id":"cbe4028c-7239-495d-b020-f22348516046","subject":"zen:ticket:35436","time":"2023-11-14T22:13:20.000Z","type":"zen:event-type:ticket.created","zendesk_event_version":"2022-11-06"}"#,
    },
};

//! Commerce, documents, files, forms, CRM and the rest.

use super::*;

pub(crate) const ACUITY_SCHEDULING: Preset = Preset {
    name: "acuity-scheduling",
    provider: "Acuity Scheduling",
    recipe: body_hmac(SHA256, &["X-Acuity-Signature"], &[""], Encoding::Base64),
    tolerance_secs: None,
    // A form body (`action=scheduled&id=…`): nothing to read by JSON pointer.
    event_id: Absent,
    event_type: Absent,
    handshake: None,
    secret: "the account's API key (Integrations, API)",
    docs: "https://developers.acuityscheduling.com/docs/webhooks",
    sample: Sample {
        headers: &[("Content-Type", "application/x-www-form-urlencoded")],
        body: "action=scheduled&id=1234567890&calendarID=1234&appointmentTypeID=5678",
    },
};

pub(crate) const AIRTABLE: Preset = Preset {
    name: "airtable",
    provider: "Airtable",
    recipe: Recipe::Signed(Signed {
        primitive: Primitive::Hmac(Algorithm::Sha256, KeyFormat::Base64),
        signature: SignatureAt::Headers {
            names: &["X-Airtable-Content-MAC"],
            prefixes: &["hmac-sha256="],
            separator: None,
        },
        encoding: Encoding::Hex,
        message: BODY,
        timestamp: None,
    }),
    tolerance_secs: None,
    event_id: Composite(&[Json("/webhook/id"), Json("/timestamp")]),
    event_type: Absent,
    handshake: None,
    secret: "the webhook's `macSecretBase64` (base64; the key is its decoded bytes)",
    docs: "https://airtable.com/developers/web/api/webhooks-overview",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"base":{"id":"appXXX"},"webhook":{"id":"achXXX"},"timestamp":"2022-02-01T21:25:05.663Z"}"#,
    },
};

pub(crate) const ASANA: Preset = Preset {
    name: "asana",
    provider: "Asana",
    recipe: body_hmac(SHA256, &["X-Hook-Signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Absent,
    event_type: Absent,
    handshake: Some(Handshake::AsanaHookSecret),
    secret: "the `X-Hook-Secret` Asana sent in the handshake",
    docs: "https://developers.asana.com/docs/webhooks-guide",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"events":[{"action":"changed","resource":{"gid":"1","resource_type":"task"}}]}"#,
    },
};

pub(crate) const BOX: Preset = Preset {
    name: "box",
    provider: "Box",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["BOX-SIGNATURE-PRIMARY", "BOX-SIGNATURE-SECONDARY"],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Base64,
        message: &[Part::Body, Part::Timestamp],
        timestamp: in_header("BOX-DELIVERY-TIMESTAMP", TimeFormat::Rfc3339),
    }),
    tolerance_secs: Some(600),
    event_id: Header("BOX-DELIVERY-ID"),
    event_type: Json("/trigger"),
    handshake: None,
    secret: "the app's primary and secondary signature keys (two secrets)",
    docs: "https://developer.box.com/guides/webhooks/v2/signatures-v2/",
    sample: Sample {
        headers: &[("BOX-DELIVERY-ID", "f96bb54b-ee16-4fc5-aa65-8c2d9e5b546f")],
        body: r#"{"type":"webhook_event","id":"eb0c4e06","trigger":"FILE.UPLOADED","source":{"id":"1","type":"file"}}"#,
    },
};

pub(crate) const CALENDLY: Preset = Preset {
    name: "calendly",
    provider: "Calendly",
    recipe: t_dot_body(
        &["Calendly-Webhook-Signature"],
        &["v1="],
        TimeFormat::Seconds,
    ),
    tolerance_secs: Some(180),
    event_id: Composite(&[Json("/event"), Json("/payload/uri")]),
    event_type: Json("/event"),
    handshake: None,
    secret: "the webhook signing key (text)",
    docs: "https://developer.calendly.com/api-docs/4c305798a61d3-webhook-signatures",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"event":"invitee.created","created_at":"2024-01-01T00:00:00.000000Z","payload":{"uri":"https://api.calendly.com/scheduled_events/E/invitees/I"}}"#,
    },
};

pub(crate) const DOCUSIGN: Preset = Preset {
    name: "docusign",
    provider: "DocuSign Connect",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            // One header per active key (Connect numbers them).
            names: &[
                "X-DocuSign-Signature-1",
                "X-DocuSign-Signature-2",
                "X-DocuSign-Signature-3",
                "X-DocuSign-Signature-4",
                "X-DocuSign-Signature-5",
            ],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Base64,
        message: BODY,
        timestamp: None,
    }),
    tolerance_secs: None,
    event_id: Composite(&[
        Json("/event"),
        Json("/data/envelopeId"),
        Json("/generatedDateTime"),
    ]),
    event_type: Json("/event"),
    handshake: None,
    secret: "a Connect HMAC key (text); up to five active keys",
    docs: "https://developers.docusign.com/platform/webhooks/connect/hmac/",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"event":"envelope-sent","generatedDateTime":"2024-01-01T00:00:00.000Z","data":{"envelopeId":"93be49ab"}}"#,
    },
};

pub(crate) const DROPBOX: Preset = Preset {
    name: "dropbox",
    provider: "Dropbox",
    recipe: body_hmac(SHA256, &["X-Dropbox-Signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Absent,
    event_type: Absent,
    handshake: Some(Handshake::DropboxChallenge),
    secret: "the app secret (text)",
    docs: "https://www.dropbox.com/developers/reference/webhooks",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"list_folder":{"accounts":["dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"]},"delta":{"users":[12345678]}}"#,
    },
};

pub(crate) const EASYPOST: Preset = Preset {
    name: "easypost",
    provider: "EasyPost",
    recipe: body_hmac(
        SHA256,
        &["X-Hmac-Signature"],
        &["hmac-sha256-hex="],
        Encoding::Hex,
    ),
    tolerance_secs: None,
    event_id: Json("/id"),
    event_type: Json("/description"),
    handshake: None,
    secret: "the webhook's secret (set when the webhook is created; the key is its NFKD form, as typed for ASCII)",
    docs: "https://docs.easypost.com/guides/webhooks-guide",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"id":"evt_01","object":"Event","description":"tracker.updated","mode":"test","result":{"id":"trk_01","object":"Tracker","status":"in_transit"}}"#,
    },
};

pub(crate) const FINCH: Preset = Preset {
    name: "finch",
    provider: "Finch",
    recipe: Recipe::Signed(Signed {
        primitive: Primitive::Hmac(Algorithm::Sha256, KeyFormat::Base64),
        signature: SignatureAt::Headers {
            names: &["finch-signature"],
            prefixes: &["v1,"],
            separator: Some(' '),
        },
        encoding: Encoding::Base64,
        message: &[
            Part::Header("finch-event-id"),
            Part::Text("."),
            Part::Timestamp,
            Part::Text("."),
            Part::Body,
        ],
        timestamp: in_header("finch-timestamp", TimeFormat::Seconds),
    }),
    // The official SDK's `verifySignature` allows 5 minutes.
    tolerance_secs: Some(300),
    event_id: Header("finch-event-id"),
    event_type: Json("/event_type"),
    handshake: None,
    secret: "the webhook's secret (base64; the key is its decoded bytes)",
    docs: "https://developer.tryfinch.com/developer-resources/Webhooks",
    sample: Sample {
        headers: &[("finch-event-id", "evt_01")],
        body: r#"{"company_id":"00000000-0000-0000-0000-000000000001","account_id":"00000000-0000-0000-0000-000000000002","event_type":"job.benefit_create.completed","data":{"job_id":"job_01"}}"#,
    },
};

pub(crate) const HUBSPOT: Preset = Preset {
    name: "hubspot",
    provider: "HubSpot (signature v3)",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["X-HubSpot-Signature-v3"],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Base64,
        message: &[Part::Method, Part::Url, Part::Body, Part::Timestamp],
        timestamp: in_header("X-HubSpot-Request-Timestamp", TimeFormat::Millis),
    }),
    tolerance_secs: Some(300),
    event_id: Absent,
    event_type: Absent,
    handshake: None,
    secret: "the app's client secret (text)",
    docs: "https://developers.hubspot.com/docs/api/webhooks/validating-requests",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"[{"eventId":100,"subscriptionType":"contact.creation","objectId":123}]"#,
    },
};

pub(crate) const IMAGEKIT: Preset = Preset {
    name: "imagekit",
    provider: "ImageKit",
    recipe: t_dot_body(&["x-ik-signature"], &["v1="], TimeFormat::Millis),
    // ImageKit's SDK checks no window; 5 minutes, as Standard Webhooks.
    tolerance_secs: Some(300),
    event_id: Json("/id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the webhook endpoint's secret (`whsec_…`; the whole text, prefix included, is the key)",
    docs: "https://imagekit.io/docs/webhooks",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"type":"video.transformation.accepted","id":"58e6d24d-6098-4319-be8d-40c3cb0a402d","created_at":"2023-11-14T22:13:20.000Z","data":{"asset":{"url":"https://ik.imagekit.io/demo/video.mp4"}}}"#,
    },
};

pub(crate) const ONFIDO: Preset = Preset {
    name: "onfido",
    provider: "Onfido (Entrust)",
    recipe: body_hmac(SHA256, &["X-SHA2-Signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Composite(&[Json("/payload/object/id"), Json("/payload/action")]),
    event_type: Json("/payload/action"),
    handshake: None,
    secret: "the webhook's token (shown when the webhook is created)",
    docs: "https://documentation.identity.entrust.com/api/manual-webhook-signature-verification/",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"payload":{"resource_type":"check","action":"check.completed","object":{"id":"chk_01","status":"complete","completed_at_iso8601":"2023-11-14T22:13:20Z","href":"https://api.eu.onfido.com/v3.6/checks/chk_01"}}}"#,
    },
};

pub(crate) const SEGMENT: Preset = Preset {
    name: "segment",
    provider: "Segment",
    recipe: body_hmac(SHA1, &["X-Signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Json("/messageId"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the webhook destination's shared secret (text)",
    docs: "https://segment.com/docs/connections/destinations/catalog/webhooks/#authentication",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"messageId":"ajs-next-1","type":"track","event":"Signed Up"}"#,
    },
};

pub(crate) const SHOPIFY: Preset = Preset {
    name: "shopify",
    provider: "Shopify",
    recipe: Recipe::Scheme(SchemeKind::Shopify),
    tolerance_secs: None,
    event_id: Header("X-Shopify-Webhook-Id"),
    event_type: Header("X-Shopify-Topic"),
    handshake: None,
    secret: "the app's client secret (text)",
    docs: "https://shopify.dev/docs/apps/build/webhooks/subscribe/https#step-2-validate-the-origin-of-your-webhook-to-ensure-its-coming-from-shopify",
    sample: Sample {
        headers: &[
            (
                "X-Shopify-Webhook-Id",
                "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
            ),
            ("X-Shopify-Topic", "orders/create"),
        ],
        body: r#"{"id":820982911946154508,"email":"jon@example.com"}"#,
    },
};

pub(crate) const TYPEFORM: Preset = Preset {
    name: "typeform",
    provider: "Typeform",
    recipe: body_hmac(
        SHA256,
        &["Typeform-Signature"],
        &["sha256="],
        Encoding::Base64,
    ),
    tolerance_secs: None,
    event_id: Json("/event_id"),
    event_type: Json("/event_type"),
    handshake: None,
    secret: "the webhook's secret (text)",
    docs: "https://www.typeform.com/developers/webhooks/secure-your-webhooks/",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"event_id":"LtWXD3crgy","event_type":"form_response","form_response":{}}"#,
    },
};

pub(crate) const WEBFLOW: Preset = Preset {
    name: "webflow",
    provider: "Webflow",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["x-webflow-signature"],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Hex,
        message: &[Part::Timestamp, Part::Text(":"), Part::Body],
        timestamp: in_header("x-webflow-timestamp", TimeFormat::Millis),
    }),
    tolerance_secs: Some(300),
    event_id: Absent,
    event_type: Json("/triggerType"),
    handshake: None,
    secret: "the webhook's secret (OAuth apps: the client secret)",
    docs: "https://developers.webflow.com/data/docs/working-with-webhooks#validating-request-signatures",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"triggerType":"form_submission","payload":{"name":"Contact"}}"#,
    },
};

pub(crate) const WOOCOMMERCE: Preset = Preset {
    name: "woocommerce",
    provider: "WooCommerce",
    recipe: body_hmac(SHA256, &["X-WC-Webhook-Signature"], &[""], Encoding::Base64),
    tolerance_secs: None,
    event_id: Header("X-WC-Webhook-Delivery-ID"),
    event_type: Header("X-WC-Webhook-Topic"),
    handshake: None,
    secret: "the webhook's secret (text)",
    docs: "https://woocommerce.github.io/woocommerce-rest-api-docs/#webhooks",
    sample: Sample {
        headers: &[
            ("X-WC-Webhook-Delivery-ID", "d1b1ad2d8a3c4f5c"),
            ("X-WC-Webhook-Topic", "order.created"),
        ],
        body: r#"{"id":727,"status":"processing"}"#,
    },
};

pub(crate) const CAL_COM: Preset = Preset {
    name: "cal-com",
    provider: "Cal.com",
    recipe: body_hmac(SHA256, &["X-Cal-Signature-256"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Absent,
    event_type: Json("/triggerEvent"),
    handshake: None,
    secret: "the webhook's secret (Settings, Developer, Webhooks; text)",
    docs: "https://cal.com/docs/developing/guides/automation/webhooks#verifying-the-authenticity-of-the-received-payload",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"triggerEvent":"BOOKING_CREATED","createdAt":"2023-11-14T22:13:20.000Z","payload":{"type":"30min","title":"30 min meeting","startTime":"2023-11-20T10:00:00Z","uid":"bFJeNb2uX8ANpT3JL5EfXw"}}"#,
    },
};

pub(crate) const CLICKUP: Preset = Preset {
    name: "clickup",
    provider: "ClickUp",
    recipe: body_hmac(SHA256, &["X-Signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    // The change's history item: one per change, the same on a retry.
    event_id: Json("/history_items/0/id"),
    event_type: Json("/event"),
    handshake: None,
    secret: "the webhook's secret (returned when the webhook is created; text)",
    docs: "https://developer.clickup.com/docs/webhooksignature",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"event":"taskCreated","history_items":[{"id":"2800763136717140857","type":1,"date":"1700000000000","field":"status"}],"task_id":"1vj37mc","webhook_id":"7fa3ec74-69a8-4530-a251-8a13730bd204"}"#,
    },
};

pub(crate) const TALLY: Preset = Preset {
    name: "tally",
    provider: "Tally (forms)",
    recipe: body_hmac(SHA256, &["Tally-Signature"], &[""], Encoding::Base64),
    tolerance_secs: None,
    event_id: Json("/eventId"),
    event_type: Json("/eventType"),
    handshake: None,
    secret: "the webhook's signing secret (Integrations, Webhooks; text)",
    docs: "https://tally.so/help/webhooks",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"eventId":"a4cb511e-d513-4fa5-baee-b815d718dfd1","eventType":"FORM_RESPONSE","createdAt":"2023-11-14T22:13:20.000Z","data":{"responseId":"2wgx4n","formId":"VwbNEw","fields":[]}}"#,
    },
};

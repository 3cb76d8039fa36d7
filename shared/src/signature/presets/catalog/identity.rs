//! Identity, authentication and KYC (identity verification).

use super::*;

pub(crate) const OKTA: Preset = Preset {
    name: "okta",
    provider: "Okta (event hooks)",
    // The event hook's authentication field: a header name and a secret
    // value the admin sets, sent as is on every request (the one-time
    // verification GET included).
    recipe: Recipe::Token {
        header: "Authorization",
    },
    tolerance_secs: None,
    event_id: Json("/eventId"),
    event_type: Json("/eventType"),
    handshake: Some(Handshake::OktaVerification),
    secret: "the event hook's authentication secret (the value of its `Authorization` header field, as set in Workflow, Event Hooks)",
    docs: "https://developer.okta.com/docs/concepts/event-hooks/",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"eventType":"com.okta.event_hook","eventTypeVersion":"1.0","cloudEventsVersion":"0.1","source":"https://example.okta.com/api/v1/eventHooks/whoql0HfiLGPWc8Jx0g3","eventId":"b5a188b9-5ece-4636-b041-482ffda96311","data":{"events":[{"uuid":"9c6d0b6e-57f9-11ee-8c99-0242ac120002","eventType":"user.session.start"}]},"eventTime":"2023-11-14T22:13:20.000Z","contentType":"application/json"}"#,
    },
};

pub(crate) const PERSONA: Preset = Preset {
    name: "persona",
    provider: "Persona",
    // `t=<s>,v1=<hex>`. While a secret rotates Persona sends two such sets
    // separated by a space (`t=A,v1=X t=B,v1=Y`); split at `,` the first
    // signature runs into the second set (`v1=X t=B`) and does not decode,
    // so only `Y` is checked, over `A`: during a rotation a request
    // verifies only with the new secret and when both sets carry the same
    // time. Splitting at both separators needs a recipe change.
    recipe: t_dot_body(&["Persona-Signature"], &["v1="], TimeFormat::Seconds),
    // Persona documents no window: the 5 minutes of Stripe's layout.
    tolerance_secs: Some(300),
    event_id: Json("/data/id"),
    event_type: Json("/data/attributes/name"),
    handshake: None,
    secret: "the webhook's secret (Dashboard, Webhooks; text)",
    docs: "https://docs.withpersona.com/docs/webhooks-best-practices#checking-signatures",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"data":{"type":"event","id":"evt_XGuYWp7WdGxYuYNGKDwJ3Fha","attributes":{"name":"inquiry.completed","created-at":"2023-11-14T22:13:20.000Z","payload":{"data":{"type":"inquiry","id":"inq_2CVZ4HyVg7qaboXz2bAzWyoD"}}}}}"#,
    },
};

pub(crate) const SUMSUB: Preset = Preset {
    name: "sumsub",
    provider: "Sumsub",
    // `X-Payload-Digest-Alg` names the algorithm the webhook was set up
    // with: this preset is `HMAC_SHA256_HEX`.
    recipe: body_hmac(SHA256, &["X-Payload-Digest"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Absent,
    event_type: Json("/type"),
    handshake: None,
    secret: "the webhook's secret key (Dev space, Webhooks), with the signature algorithm set to HMAC_SHA256_HEX",
    docs: "https://docs.sumsub.com/docs/webhook-manager",
    sample: Sample {
        headers: &[("X-Payload-Digest-Alg", "HMAC_SHA256_HEX")],
        body: r#"{"applicantId":"5c9e177b0a975a6eeccf5960","inspectionId":"5c9e177b0a975a6eeccf5961","correlationId":"req-63f92830-4d68-4eee-98d5-875d53a12258","levelName":"basic-kyc-level","externalUserId":"12672","type":"applicantReviewed","reviewStatus":"completed","createdAtMs":"2023-11-14 22:13:20.000"}"#,
    },
};

pub(crate) const VERIFF: Preset = Preset {
    name: "veriff",
    provider: "Veriff",
    recipe: body_hmac(SHA256, &["X-HMAC-SIGNATURE"], &[""], Encoding::Hex),
    tolerance_secs: None,
    // Decision and event webhooks have different bodies and no common id.
    event_id: Absent,
    event_type: Absent,
    handshake: None,
    secret: "the integration's shared secret key (Station, Integrations; text)",
    docs: "https://devdocs.veriff.com/docs/hmac-authentication-and-endpoint-security",
    sample: Sample {
        headers: &[("X-AUTH-CLIENT", "8e4f7cd8-7a19-4d7d-971f-a076407ee03c")],
        body: r#"{"id":"f04bdb47-d3be-4b28-b028-a652feb060b5","attemptId":"e30122d1-740b-4764-853f-470374a7abf4","feature":"selfid","code":7002,"action":"submitted","vendorData":"12345678"}"#,
    },
};

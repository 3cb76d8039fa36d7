//! Payments and billing.

use super::*;

pub(crate) const ADYEN: Preset = Preset {
    name: "adyen",
    provider: "Adyen (platform and management webhooks)",
    // The `HmacSignature` header of the Balance Platform and Management
    // webhooks. Standard payment notifications carry the HMAC inside each
    // notification item, over selected fields: not this recipe.
    recipe: Recipe::Signed(Signed {
        primitive: Primitive::Hmac(Algorithm::Sha256, KeyFormat::Hex),
        signature: SignatureAt::Headers {
            names: &["HmacSignature"],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Base64,
        message: BODY,
        timestamp: None,
    }),
    tolerance_secs: None,
    event_id: Absent,
    event_type: Json("/type"),
    handshake: None,
    secret: "the webhook's HMAC key (hexadecimal; the key is its decoded bytes)",
    docs: "https://docs.adyen.com/development-resources/webhooks/verify-hmac-signatures/",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"type":"merchant.created","environment":"test","data":{"merchantId":"YOUR_MERCHANT_ACCOUNT"}}"#,
    },
};

/// Adyen's standard notifications (payments: AUTHORISATION, CAPTURE,
/// REFUND, CHARGEBACK…): a JSON body `{"live":…,"notificationItems":
/// [{"NotificationRequestItem":{…}},…]}` in which each item carries its own
/// HMAC, `additionalData.hmacSignature`: base64 HMAC-SHA256, keyed with the
/// hex-decoded HMAC key, of the item's `pspReference`, `originalReference`,
/// `merchantAccountCode`, `merchantReference`, `amount.value`,
/// `amount.currency`, `eventCode` and `success` joined with `:`, an absent
/// field as empty text and no value escaped (Adyen's libraries:
/// Adyen/adyen-java-api-library `src/main/java/com/adyen/util/HMACValidator.java`
/// `getDataToSign(NotificationRequestItem)`, Adyen/adyen-dotnet-api-library
/// `Adyen/Webhooks/HmacValidator.cs`, Adyen/adyen-python-api-library
/// `Adyen/util.py` `generate_notification_sig`; the vectors are those
/// libraries' tests, `shared/tests/presets/official.rs`). Every item must
/// verify, each with any of the secrets (Adyen keeps signing with the
/// previous key for a while after a new one is generated); one unsigned or
/// forged item refuses the POST. Not signed: the rest of an item
/// (`reason`, `eventDate`, `paymentMethod`, `operations`, the other
/// `additionalData`) and `live`.
pub(crate) const ADYEN_STANDARD: Preset = Preset {
    name: "adyen-standard",
    provider: "Adyen (standard notifications)",
    recipe: Recipe::Signed(Signed {
        primitive: Primitive::Hmac(Algorithm::Sha256, KeyFormat::Hex),
        signature: SignatureAt::EachItem {
            items: "/notificationItems",
            item: "/NotificationRequestItem",
            signature: "/additionalData/hmacSignature",
        },
        encoding: Encoding::Base64,
        message: &[
            Part::Json("/pspReference"),
            Part::Text(":"),
            Part::Json("/originalReference"),
            Part::Text(":"),
            Part::Json("/merchantAccountCode"),
            Part::Text(":"),
            Part::Json("/merchantReference"),
            Part::Text(":"),
            Part::Json("/amount/value"),
            Part::Text(":"),
            Part::Json("/amount/currency"),
            Part::Text(":"),
            Part::Json("/eventCode"),
            Part::Text(":"),
            Part::Json("/success"),
        ],
        timestamp: None,
    }),
    tolerance_secs: None,
    // A POST may carry several items, each its own event: none for the
    // POST (the batch splitting reads each item's `pspReference` and
    // `eventCode`).
    event_id: Absent,
    // The first item's (one per POST is what Adyen sends by default).
    event_type: Json("/notificationItems/0/NotificationRequestItem/eventCode"),
    handshake: None,
    secret: "the HMAC key of the Standard webhook (Developers, Webhooks; hexadecimal, the key is its decoded bytes)",
    docs: "https://docs.adyen.com/development-resources/webhooks/secure-webhooks/verify-hmac-signatures/",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"live":"false","notificationItems":[{"NotificationRequestItem":{"amount":{"currency":"EUR","value":1130},"eventCode":"AUTHORISATION","eventDate":"2019-05-06T17:15:34.121+02:00","merchantAccountCode":"TestMerchant","merchantReference":"TestPayment-1407325143704","operations":["CANCEL","CAPTURE","REFUND"],"paymentMethod":"visa","pspReference":"7914073381342284","reason":"1234:7777:12/2012","success":"true"}}]}"#,
    },
};

pub(crate) const CASHFREE: Preset = Preset {
    name: "cashfree",
    provider: "Cashfree Payments",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["x-webhook-signature"],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Base64,
        // The timestamp, then the body, no separator.
        message: &[Part::Timestamp, Part::Body],
        timestamp: in_header("x-webhook-timestamp", TimeFormat::Millis),
    }),
    // The SDK checks no window; Cashfree's docs advise 5 minutes.
    tolerance_secs: Some(300),
    // Unique for each payload (Cashfree's docs).
    event_id: Header("x-idempotency-key"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the client secret of the Payment Gateway API keys",
    docs: "https://www.cashfree.com/docs/payments/online/webhooks/signature-verification",
    sample: Sample {
        headers: &[("x-idempotency-key", "c2FtcGxlLWlkZW1wb3RlbmN5LWtleQ==")],
        body: r#"{"data":{"order":{"order_id":"order_01"},"payment":{"cf_payment_id":"5114910000001","payment_status":"SUCCESS"}},"event_time":"2023-11-14T22:13:20+05:30","type":"PAYMENT_SUCCESS_WEBHOOK"}"#,
    },
};

pub(crate) const CHARGEBEE: Preset = Preset {
    name: "chargebee",
    provider: "Chargebee",
    recipe: Recipe::BasicAuth,
    tolerance_secs: None,
    event_id: Json("/id"),
    event_type: Json("/event_type"),
    handshake: None,
    secret: "`user:password` of the webhook's basic authentication",
    docs: "https://www.chargebee.com/docs/2.0/webhook_settings.html",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"id":"ev_16BPgETyVrQbiGhA","occurred_at":1700000000,"event_type":"subscription_created","content":{}}"#,
    },
};

pub(crate) const COINBASE_COMMERCE: Preset = Preset {
    name: "coinbase-commerce",
    provider: "Coinbase Commerce",
    recipe: body_hmac(SHA256, &["X-CC-Webhook-Signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Json("/event/id"),
    event_type: Json("/event/type"),
    handshake: None,
    secret: "the shared secret from the webhook settings (text)",
    docs: "https://docs.cdp.coinbase.com/commerce-onchain/docs/webhooks-security",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"id":1,"event":{"id":"24934862-d980-46cb-9402-43c81b0cdba6","type":"charge:created"}}"#,
    },
};

pub(crate) const GOCARDLESS: Preset = Preset {
    name: "gocardless",
    provider: "GoCardless",
    recipe: body_hmac(SHA256, &["Webhook-Signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Json("/meta/webhook_id"),
    event_type: Composite(&[Json("/events/0/resource_type"), Json("/events/0/action")]),
    handshake: None,
    secret: "the webhook endpoint's secret (Developers, Webhook endpoints)",
    docs: "https://developer.gocardless.com/getting-started/api/staying-up-to-date-with-webhooks",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"events":[{"id":"EV0000000000AA","created_at":"2023-11-14T22:13:20.000Z","resource_type":"payments","action":"confirmed","links":{"payment":"PM0000000000AA"}}],"meta":{"webhook_id":"WB0000000000AA"}}"#,
    },
};

pub(crate) const LEMON_SQUEEZY: Preset = Preset {
    name: "lemon-squeezy",
    provider: "Lemon Squeezy",
    recipe: body_hmac(SHA256, &["X-Signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Absent,
    event_type: Json("/meta/event_name"),
    handshake: None,
    secret: "the webhook's signing secret (text)",
    docs: "https://docs.lemonsqueezy.com/help/webhooks/signing-requests",
    sample: Sample {
        headers: &[("X-Event-Name", "order_created")],
        body: r#"{"meta":{"event_name":"order_created"},"data":{"type":"orders","id":"1"}}"#,
    },
};

pub(crate) const MODERN_TREASURY: Preset = Preset {
    name: "modern-treasury",
    provider: "Modern Treasury",
    recipe: body_hmac(SHA256, &["X-Signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Header("X-Webhook-ID"),
    event_type: Json("/event"),
    handshake: None,
    secret: "the webhook key (Developer Settings)",
    docs: "https://docs.moderntreasury.com/platform/docs/verifying-webhooks",
    sample: Sample {
        headers: &[("X-Webhook-ID", "0c6e1d1e-2d8b-4b83-9a51-0f5b7c1d2e3f")],
        body: r#"{"event":"completed","data":{"id":"po_01","object":"payment_order","status":"completed"}}"#,
    },
};

pub(crate) const MOLLIE: Preset = Preset {
    name: "mollie",
    provider: "Mollie (next-gen webhooks)",
    recipe: body_hmac(
        SHA256,
        &["X-Mollie-Signature"],
        // Mollie's SDK accepts the hex digest with or without `sha256=`.
        &["sha256=", ""],
        Encoding::Hex,
    ),
    tolerance_secs: None,
    event_id: Json("/id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the webhook's signing secret (text)",
    docs: "https://docs.mollie.com/reference/webhooks-new#signature-verification",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"resource":"event","id":"event_GvJ8WHrp5isUdRub9CJyH","type":"payment-link.paid","entityId":"pl_qng5gbbv8NAZ5gpM5ZYgx"}"#,
    },
};

pub(crate) const ORB: Preset = Preset {
    name: "orb",
    provider: "Orb",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["X-Orb-Signature"],
            prefixes: &["v1="],
            separator: Some(' '),
        },
        encoding: Encoding::Hex,
        message: &[
            Part::Text("v1:"),
            Part::Timestamp,
            Part::Text(":"),
            Part::Body,
        ],
        timestamp: in_header("X-Orb-Timestamp", TimeFormat::UtcDateTime),
    }),
    // The official SDK's `verifySignature` allows 5 minutes.
    tolerance_secs: Some(300),
    event_id: Json("/id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the webhook endpoint's signing secret (text)",
    docs: "https://docs.withorb.com/integrations-and-exports/webhooks",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"id":"evt_01","type":"subscription.started","created_at":"2023-11-14T22:13:20+00:00","properties":{}}"#,
    },
};

pub(crate) const PADDLE: Preset = Preset {
    name: "paddle",
    provider: "Paddle Billing",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["Paddle-Signature"],
            prefixes: &["h1="],
            separator: Some(';'),
        },
        encoding: Encoding::Hex,
        message: &[Part::Timestamp, Part::Text(":"), Part::Body],
        timestamp: Some(TimestampAt {
            source: TimestampSource::SignatureItem("ts"),
            format: TimeFormat::Seconds,
        }),
    }),
    // Paddle's SDKs allow 5 s by default.
    tolerance_secs: Some(5),
    event_id: Json("/event_id"),
    event_type: Json("/event_type"),
    handshake: None,
    secret: "the notification destination's secret key (`pdl_ntfset_…`, text)",
    docs: "https://developer.paddle.com/webhooks/signature-verification",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"event_id":"evt_01hv8x2acma2gz4r8h4wxptgr0","event_type":"transaction.completed","data":{}}"#,
    },
};

pub(crate) const PAYSTACK: Preset = Preset {
    name: "paystack",
    provider: "Paystack",
    recipe: body_hmac(SHA512, &["x-paystack-signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Composite(&[Json("/event"), Json("/data/id")]),
    event_type: Json("/event"),
    handshake: None,
    secret: "the secret API key (`sk_…`)",
    docs: "https://paystack.com/docs/payments/webhooks/#verify-event-origin",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"event":"charge.success","data":{"id":302961,"reference":"qTPrJoy9Bx"}}"#,
    },
};

pub(crate) const RAZORPAY: Preset = Preset {
    name: "razorpay",
    provider: "Razorpay",
    recipe: body_hmac(SHA256, &["X-Razorpay-Signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Header("x-razorpay-event-id"),
    event_type: Json("/event"),
    handshake: None,
    secret: "the webhook secret (text)",
    docs: "https://razorpay.com/docs/webhooks/validate-test/",
    sample: Sample {
        headers: &[("x-razorpay-event-id", "HVtj7xW8BrhgB8")],
        body: r#"{"entity":"event","event":"payment.authorized","payload":{}}"#,
    },
};

pub(crate) const RECURLY: Preset = Preset {
    name: "recurly",
    provider: "Recurly",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["recurly-signature"],
            prefixes: &[""],
            separator: Some(','),
        },
        encoding: Encoding::Hex,
        message: &[Part::Timestamp, Part::Text("."), Part::Body],
        timestamp: Some(TimestampAt {
            source: TimestampSource::FirstSignatureItem,
            format: TimeFormat::Millis,
        }),
    }),
    tolerance_secs: Some(300),
    event_id: Json("/id"),
    event_type: Composite(&[Json("/object_type"), Json("/event_type")]),
    handshake: None,
    secret: "the endpoint's signature key (text)",
    docs: "https://recurly.com/developers/guides/signature-verification.html",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"id":"rsqr0fekbwgs","object_type":"account","site_id":"s","event_type":"created","event_time":"2022-01-01T00:00:00Z"}"#,
    },
};

pub(crate) const SQUARE: Preset = Preset {
    name: "square",
    provider: "Square",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["x-square-hmacsha256-signature"],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Base64,
        message: &[Part::Url, Part::Body],
        timestamp: None,
    }),
    tolerance_secs: None,
    event_id: Json("/event_id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the subscription's signature key (text); the notification URL is signed too",
    docs: "https://developer.squareup.com/docs/webhooks/step3validate",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","data":{}}"#,
    },
};

pub(crate) const STRIPE: Preset = Preset {
    name: "stripe",
    provider: "Stripe",
    recipe: Recipe::Scheme(SchemeKind::Stripe),
    tolerance_secs: Some(300),
    event_id: Json("/id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the endpoint's signing secret (`whsec_…`, used as text)",
    docs: "https://docs.stripe.com/webhooks#verify-manually",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"id":"evt_123","object":"event","type":"customer.created","data":{"object":{}}}"#,
    },
};

pub(crate) const AIRWALLEX: Preset = Preset {
    name: "airwallex",
    provider: "Airwallex",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["x-signature"],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Hex,
        // The timestamp, then the body, no separator.
        message: &[Part::Timestamp, Part::Body],
        timestamp: in_header("x-timestamp", TimeFormat::Millis),
    }),
    // Airwallex documents no window: the 5 minutes most providers use (a
    // captured request is refused once older).
    tolerance_secs: Some(300),
    event_id: Json("/id"),
    event_type: Json("/name"),
    handshake: None,
    secret: "the notification URL's secret key (Developer, Webhooks; text)",
    docs: "https://www.airwallex.com/docs/developer-tools/webhooks/listen-for-webhook-events",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"id":"evt_hkdmr7yvtgsfsrpxd2u","name":"payment_intent.succeeded","account_id":"acct_01","data":{"object":{"id":"int_01","status":"SUCCEEDED"}},"created_at":"2023-11-14T22:13:20+0000"}"#,
    },
};

pub(crate) const BOLT: Preset = Preset {
    name: "bolt",
    provider: "Bolt",
    recipe: body_hmac(SHA256, &["X-Bolt-Hmac-Sha256"], &[""], Encoding::Base64),
    tolerance_secs: None,
    event_id: Absent,
    event_type: Json("/type"),
    handshake: None,
    secret: "the signing secret (Merchant Dashboard, Administration, API; text)",
    docs: "https://help.bolt.com/developers/webhooks/hook-verification/",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"type":"payment","object":"transaction","data":{"id":"TAd9Zf3vtWZQg","reference":"XXXX-XXXX-XXXX","status":"authorized"}}"#,
    },
};

pub(crate) const CHECKOUT_COM: Preset = Preset {
    name: "checkout-com",
    provider: "Checkout.com",
    recipe: body_hmac(SHA256, &["Cko-Signature"], &[""], Encoding::Hex),
    // No timestamp is sent or signed.
    tolerance_secs: None,
    event_id: Json("/id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the webhook's signature key (the key of the workflow's webhook action; text)",
    docs: "https://www.checkout.com/docs/developer-resources/event-notifications/receive-webhooks",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"id":"evt_az5sblvku4ge3dwpztvyizgcau","type":"payment_captured","version":"1.0.0","created_on":"2023-11-14T22:13:20Z","data":{"id":"pay_mbabizu24mvu3mela5njyhpit4","amount":6540,"currency":"USD"}}"#,
    },
};

pub(crate) const FLUTTERWAVE: Preset = Preset {
    name: "flutterwave",
    provider: "Flutterwave (v3 webhooks)",
    recipe: Recipe::Token {
        header: "verif-hash",
    },
    tolerance_secs: None,
    event_id: Composite(&[Json("/event"), Json("/data/id")]),
    event_type: Json("/event"),
    handshake: None,
    secret: "the secret hash set in the dashboard (Settings, Webhooks), sent as is in `verif-hash`",
    docs: "https://developer.flutterwave.com/docs/webhooks",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"event":"charge.completed","data":{"id":285959875,"tx_ref":"Links-616626414629","status":"successful","amount":100,"currency":"NGN"}}"#,
    },
};

pub(crate) const MAXIO: Preset = Preset {
    name: "maxio",
    provider: "Maxio Advanced Billing (Chargify)",
    recipe: body_hmac(
        SHA256,
        &["X-Chargify-Webhook-Signature-Hmac-Sha-256"],
        &[""],
        Encoding::Hex,
    ),
    tolerance_secs: None,
    // The body is form-encoded: the id and event are form fields, the id
    // is also this header.
    event_id: Header("X-Chargify-Webhook-Id"),
    event_type: Absent,
    handshake: None,
    secret: "the site's shared key (Config, Settings, Webhooks; text)",
    docs: "https://docs.maxio.com/hc/en-us/articles/24266136649869-Webhooks-Reference",
    sample: Sample {
        headers: &[("X-Chargify-Webhook-Id", "100000001")],
        body: "id=100000001&event=signup_success&payload[subscription][id]=42&payload[subscription][state]=active",
    },
};

pub(crate) const SQUARESPACE: Preset = Preset {
    name: "squarespace",
    provider: "Squarespace (Commerce webhooks)",
    // The secret is hexadecimal; the key is its decoded bytes.
    recipe: body_hmac(
        Primitive::Hmac(Algorithm::Sha256, KeyFormat::Hex),
        &["Squarespace-Signature"],
        &[""],
        Encoding::Hex,
    ),
    tolerance_secs: None,
    event_id: Json("/id"),
    event_type: Json("/topic"),
    handshake: None,
    secret: "the subscription's secret (hexadecimal, as the Webhook Subscriptions API returns it; the key is its decoded bytes)",
    docs: "https://developers.squarespace.com/commerce-apis/webhooks/verifying-notifications",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"id":"7aa5f7cf-1fd5-4ad4-9dba-7a4d0e0d6a5c","websiteId":"5f7c4c7a8d3e2a1b0c9d8e7f","subscriptionId":"0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d","topic":"order.create","createdOn":"2023-11-14T22:13:20.000Z","data":{"orderId":"5f7c4c7a8d3e2a1b0c9d8e80"}}"#,
    },
};

pub(crate) const XENDIT: Preset = Preset {
    name: "xendit",
    provider: "Xendit",
    recipe: Recipe::Token {
        header: "x-callback-token",
    },
    tolerance_secs: None,
    // Xendit's id of the notification, the same on its retries.
    event_id: Header("webhook-id"),
    event_type: Json("/event"),
    handshake: None,
    secret: "the account's webhook verification token (Settings, Webhooks), sent as is in `x-callback-token`",
    docs: "https://docs.xendit.co/webhook/getting-started/",
    sample: Sample {
        headers: &[("webhook-id", "whk_01hf6j2q1y7v9k3m5n8p0r2t4w")],
        body: r#"{"event":"payment.succeeded","business_id":"5f27a14a9bf05c73dd040bc8","created":"2023-11-14T22:13:20.000Z","data":{"id":"py-01","status":"SUCCEEDED"}}"#,
    },
};

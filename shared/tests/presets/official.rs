//! Vectors published by the providers: in their documentation or in their
//! official SDKs' tests. Each cites where it comes from; the values are
//! copied as published (bodies byte for byte).

use super::{Source, V, Vector};

const STRIPE_BODY: &str = r#"{
  "id": "evt_123",
  "object": "event",
  "account": "acct_123",
  "api_version": "2017-05-25",
  "created": 1533204620,
  "data": {
    "object": {
      "id": "cus_123",
      "object": "customer",
      "created": 123456789,
      "email": "test@stripe.com",
      "livemode": false,
      "metadata": {}
    }
  },
  "livemode": false,
  "pending_webhooks": 1,
  "request": {
    "id": "req_123",
    "idempotency_key": "idempotency-key-123"
  },
  "type": "customer.created"
}
"#;

const SLACK_BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";

/// The Standard Webhooks / Svix reference vector.
const SW_BODY: &str = r#"{"test": 2432232314}"#;
const SW_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SW_SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
const SW_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";

const COINBASE_BODY: &str = r#"{"id":1,"scheduled_for":"2017-01-31T20:50:02Z","attempt_number":1,"event":{"id":"24934862-d980-46cb-9402-43c81b0cdba6","type":"charge:created","api_version":"2018-03-22","created_at":"2017-01-31T20:49:02Z","data":{"code":"66BEOV2A","name":"The Sovereign Individual","description":"Mastering the Transition to the Information Age","hosted_url":"https://commerce.coinbase.com/charges/66BEOV2A","created_at":"2017-01-31T20:49:02Z","expires_at":"2017-01-31T21:04:02Z","timeline":[{"time":"2017-01-31T20:49:02Z","status":"NEW"}],"metadata":{},"pricing_type":"no_price","payments":[],"addresses":{"bitcoin":"0000000000000000000000000000000000","ethereum":"0x0000000000000000000000000000000000000000","litecoin":"3000000000000000000000000000000000","bitcoincash":"bitcoincash:000000000000000000000000000000000000000000"}}}}"#;

const BOX_BODY: &str = r#"{"type":"webhook_event","webhook":{"id":"1234567890"},"trigger":"FILE.UPLOADED","source":{"id":"1234567890","type":"file","name":"Test.txt"}}"#;

const SENDGRID_BODY: &str = "[{\"email\":\"hello@world.com\",\"event\":\"dropped\",\"reason\":\"Bounced Address\",\"sg_event_id\":\"ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA\",\"sg_message_id\":\"LRzXl_NHStOGhQ4kofSm_A.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0\",\"smtp-id\":\"<LRzXl_NHStOGhQ4kofSm_A@ismtpd0039p1iad1.sendgrid.net>\",\"timestamp\":1600112492}]\r\n";

const SQUARE_BODY: &str = r#"{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","created_at":"2022-07-13T20:30:59.037339943Z","data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}}"#;

const OPENAI_BODY: &str = r#"{"id": "evt_685c059ae3a481909bdc86819b066fb6", "object": "event", "created_at": 1750861210, "type": "response.completed", "data": {"id": "resp_123"}}"#;

/// Mailgun's JSON webhook carries the signature in the body; the values
/// of `signature` are the SDK test's, the rest is the documented shape.
const MAILGUN_BODY: &str = r#"{"signature":{"timestamp":"1403645220","token":"5egbgr1vjgqxtrnp65xfznchgdccwh5d6i09vijqi3whgowmn6","signature":"9cfc5c41582e51246e73c88d34db3af0a3a2692a76fbab81492842f000256d33"},"event-data":{"id":"CPgfbmQMTCKtHW6uIWtuVe","event":"delivered"}}"#;

/// Adyen's standard notifications: each item carries its own HMAC. Items
/// of Adyen's libraries' tests (their signatures are the tests' expected
/// values); the notification around an item is ours where the test has
/// the item alone. Macros, so that `concat!` builds the bodies.
///
/// Adyen/adyen-python-api-library `test/UtilTest.py`
/// (`test_notification_request_item_hmac`, the item of Adyen's docs), its
/// fields as the test has them, as JSON.
macro_rules! adyen_docs_item {
    () => {
        r#"{"pspReference":"7914073381342284","merchantReference":"TestPayment-1407325143704","merchantAccountCode":"TestMerchant","amount":{"currency":"EUR","value":1130},"eventCode":"AUTHORISATION","success":"true","eventDate":"2019-05-06T17:15:34.121+02:00","operations":["CANCEL","CAPTURE","REFUND"],"paymentMethod":"visa","additionalData":{"hmacSignature":"coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0="}}"#
    };
}

/// Adyen/adyen-node-api-library `src/__tests__/hmacValidator.spec.ts`
/// (`notificationRequestItem`, "should have valid hmac"), as JSON without
/// its `eventDate` (not signed; the test makes it from the local clock's
/// time zone).
macro_rules! adyen_node_item {
    () => {
        r#"{"pspReference":"pspReference","originalReference":"originalReference","merchantAccountCode":"merchantAccount","merchantReference":"reference","amount":{"currency":"EUR","value":1000},"eventCode":"CAPTURE","paymentMethod":"VISA","reason":"reason","success":"true","additionalData":{"hmacSignature":"xhpHvYq2u2Np0rstbZ6QjLGu7JWhvf7Iwaa6EviJSX0="}}"#
    };
}

/// Adyen/adyen-java-api-library
/// `src/test/java/com/adyen/util/HMACValidatorTest.java`
/// (`testValidateHMAC`), verbatim but for the whitespace: an amount whose
/// value is a JSON string, no `originalReference`.
macro_rules! adyen_java_item {
    () => {
        r#"{"additionalData":{"hmacSignature":"NuEkADFmlCC6VgX+wcoPAegIWxVPNBPCuKlM4Hzo5qc="},"amount":{"currency":"EUR","value":"0"},"eventCode":"REPORT_AVAILABLE","eventDate":"2019-11-20T14:35:36+01:00","merchantAccountCode":"Magento2Rik","merchantReference":"testMerchantRef1","pspReference":"test_REPORT_AVAILABLE","reason":"will contain the url to the report","success":"true"}"#
    };
}

/// A notification of the items given (JSON objects), each as
/// `{"NotificationRequestItem": item}`.
macro_rules! adyen_notification {
    ($first:expr $(, $rest:expr)* $(,)?) => {
        concat!(
            r#"{"live":"false","notificationItems":[{"NotificationRequestItem":"#,
            $first,
            "}",
            $(r#",{"NotificationRequestItem":"#, $rest, "}",)*
            "]}"
        )
    };
}

/// The HMAC key of [`adyen_docs_item`].
pub(super) const ADYEN_DOCS_KEY: &str =
    "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";
/// The HMAC key of [`adyen_node_item`].
pub(super) const ADYEN_NODE_KEY: &str =
    "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00";
/// The HMAC key of the four items of [`ADYEN_SLASHES`].
pub(super) const ADYEN_SLASHES_KEY: &str =
    "74F490DD33F7327BAECC88B2947C011FC02D014A473AAA33A8EC93E4DC069174";
/// The four items of Adyen/adyen-python-api-library
/// `test/mocks/util/{backslash,colon,forwardslash,mixed}_notification.json`
/// (`test_webhooks_with_slashes`), verbatim, in one notification: values
/// with `\`, `:` and `/`, signed unescaped, and no `originalReference`.
pub(super) const ADYEN_SLASHES: &str = include_str!("adyen_standard_slashes.json");
/// One item of the docs.
pub(super) const ADYEN_DOCS_NOTIFICATION: &str = adyen_notification!(adyen_docs_item!());
/// Two items signed with two keys, as during a rotation: the docs' with
/// [`ADYEN_DOCS_KEY`], then Node's with [`ADYEN_NODE_KEY`].
pub(super) const ADYEN_TWO_KEYS: &str = adyen_notification!(adyen_docs_item!(), adyen_node_item!());

/// Svix's reference vector (svix-* headers) for `preset`: Svix itself and
/// the providers that deliver through it.
const fn svix_vector(preset: &'static str, source: &'static str) -> Vector {
    Vector {
        preset,
        source: Source::Official(source),
        headers: &[
            ("svix-id", SW_ID),
            ("svix-timestamp", "1614265330"),
            ("svix-signature", SW_SIGNATURE),
        ],
        body: SW_BODY,
        secrets: &[SW_SECRET],
        now: 1_614_265_330,
        wrong_secret: "whsec_c2VjcmV0",
        ..V
    }
}

pub(super) const VECTORS: &[Vector] = &[
    Vector {
        preset: "stripe",
        source: Source::Official(
            "stripe/stripe-dotnet src/StripeTests/Services/Events/EventUtilityTest.cs (fixture Resources/event_test_signature.json)",
        ),
        headers: &[(
            "Stripe-Signature",
            "t=1533204620,v1=2220f87ef101a04665f11cdf770523143f875572008577fa0f20882ddb9cc3c7,v0=63f3a72374a733066c4be69ed7f8e5ac85c22c9f0a6a612ab9a025a9e4ee7eef",
        )],
        body: STRIPE_BODY,
        secrets: &["webhook_secret"],
        now: 1_533_204_620,
        ..V
    },
    Vector {
        preset: "github",
        source: Source::Official(
            "https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries (test values)",
        ),
        headers: &[(
            "X-Hub-Signature-256",
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        )],
        body: "Hello, World!",
        secrets: &["It's a Secret to Everybody"],
        ..V
    },
    Vector {
        preset: "github",
        source: Source::Official("octokit/webhooks-methods.js README.md (sign(\"mysecret\", …))"),
        headers: &[(
            "X-Hub-Signature-256",
            "sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3",
        )],
        body: r#"{"foo":"bar"}"#,
        secrets: &["mysecret"],
        ..V
    },
    Vector {
        preset: "slack",
        source: Source::Official(
            "https://api.slack.com/authentication/verifying-requests-from-slack and slackapi/python-slack-sdk tests/slack_sdk/signature/test_signature_verifier.py",
        ),
        headers: &[
            ("X-Slack-Request-Timestamp", "1531420618"),
            (
                "X-Slack-Signature",
                "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
            ),
        ],
        body: SLACK_BODY,
        secrets: &["8f742231b10e8888abcd99yyyzzz85a5"],
        now: 1_531_420_618,
        ..V
    },
    Vector {
        preset: "twilio",
        source: Source::Official("twilio/twilio-python tests/unit/test_request_validator.py"),
        headers: &[
            ("X-Twilio-Signature", "RSOYDt4T1cUTdK1PDd93/VVr8B8="),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        body: "CallSid=CA1234567890ABCDE&Digits=1234&From=%2B14158675309&To=%2B18005551212&Caller=%2B14158675309",
        url: Some("https://mycompany.com/myapp.php?foo=1&bar=2"),
        secrets: &["12345"],
        ..V
    },
    Vector {
        preset: "standard-webhooks",
        source: Source::Official(
            "standard-webhooks/standard-webhooks libraries/python/tests/test_webhooks.py",
        ),
        headers: &[
            ("webhook-id", SW_ID),
            ("webhook-timestamp", "1614265330"),
            ("webhook-signature", SW_SIGNATURE),
        ],
        body: SW_BODY,
        secrets: &[SW_SECRET],
        now: 1_614_265_330,
        wrong_secret: "whsec_c2VjcmV0",
        ..V
    },
    // GitLab's signing token follows the Standard Webhooks specification
    // (gitlab-org/gitlab merge request 230944, "Add webhook HMAC signing
    // token": `webhook-signature` is `v1,<base64>` of HMAC-SHA256 over
    // `{webhook-id}.{timestamp}.{body}`, checked there with the
    // standardwebhooks library), so the specification's vector is the
    // signature GitLab sends.
    Vector {
        preset: "gitlab-signed",
        source: Source::Official(
            "standard-webhooks/standard-webhooks libraries/python/tests/test_webhooks.py (GitLab signs as the specification: gitlab-org/gitlab!230944)",
        ),
        headers: &[
            ("webhook-id", SW_ID),
            ("webhook-timestamp", "1614265330"),
            ("webhook-signature", SW_SIGNATURE),
            ("X-Gitlab-Event", "Push Hook"),
        ],
        body: SW_BODY,
        secrets: &[SW_SECRET],
        now: 1_614_265_330,
        wrong_secret: "whsec_c2VjcmV0",
        ..V
    },
    svix_vector(
        "svix",
        "svix/svix-webhooks javascript/src/webhook.test.ts (the fixed vector, svix-* headers)",
    ),
    // Clerk and Resend deliver their webhooks through Svix (svix-* headers),
    // so Svix's reference vector is the signature they send.
    svix_vector(
        "clerk",
        "svix/svix-webhooks python/tests/test_webhooks.py test_sign_function (Clerk signs with Svix)",
    ),
    svix_vector(
        "resend",
        "svix/svix-webhooks python/tests/test_webhooks.py test_sign_function (Resend signs with Svix)",
    ),
    Vector {
        preset: "shopify",
        source: Source::Official(
            "Shopify/shopify-api-php tests/Webhooks/RegistryTest.php ($processHeaders, $processBody; the secret 'steffi' of tests/BaseTestCase.php)",
        ),
        headers: &[(
            "X-Shopify-Hmac-Sha256",
            "/Redz4YXHLnSmmSN8grr5/Jl/Ua3d7yX3iWbjb8R8wo=",
        )],
        body: r#"{"foo":"bar"}"#,
        secrets: &["steffi"],
        ..V
    },
    Vector {
        // The timestamp is in milliseconds; checked at its own second.
        preset: "recurly",
        source: Source::Official(
            "recurly/recurly-client-ruby spec/recurly/webhooks_spec.rb (\"raises no error when tolerance is large enough\")",
        ),
        headers: &[(
            "recurly-signature",
            "1663103925004,ad24699f3beaa24c9af2cc7ada3ce4c835da0090194241b9d3add83d27f14bc3",
        )],
        body: r#"{"id":"rjxwmwedwqug","object_type":"account","site_id":"qc326l1hl8k9","event_type":"created","event_time":"2022-09-13T21:18:40Z","account_code":"adfas23zzz14123"}"#,
        secrets: &["354fab5bd35f5a0d50845ee7e30165244468b13c2c343f104e4e730a59326d9d"],
        now: 1_663_103_925,
        ..V
    },
    Vector {
        preset: "replicate",
        source: Source::Official(
            "replicate/replicate-javascript index.test.ts (validateWebhook: \"Can be used to validate webhook\")",
        ),
        headers: &[
            ("webhook-id", SW_ID),
            ("webhook-timestamp", "1614265330"),
            ("webhook-signature", SW_SIGNATURE),
        ],
        body: SW_BODY,
        secrets: &[SW_SECRET],
        now: 1_614_265_330,
        wrong_secret: "whsec_c2VjcmV0",
        ..V
    },
    Vector {
        preset: "openai",
        source: Source::Official("openai/openai-python tests/lib/test_webhooks.py"),
        headers: &[
            ("webhook-id", "wh_685c059ae39c8190af8c71ed1022a24d"),
            ("webhook-timestamp", "1750861210"),
            (
                "webhook-signature",
                "v1,gUAg4R2hWouRZqRQG4uJypNS8YK885G838+EHb4nKBY=",
            ),
        ],
        body: OPENAI_BODY,
        secrets: &["whsec_RdvaYFYUXuIFuEbvZHwMfYFhUf7aMYjYcmM24+Aj40c="],
        now: 1_750_861_210,
        wrong_secret: "whsec_c2VjcmV0",
        ..V
    },
    Vector {
        preset: "paddle",
        source: Source::Official(
            "PaddleHQ/paddle-python-sdk tests/Unit/Notification/test_Verifier.py (test_validate_paddle_signature_header_integrity: three secrets, the third matches)",
        ),
        headers: &[(
            "Paddle-Signature",
            "ts=1696195954;h1=dummy;h1=d96299976a6eb066f484d7fde011ac56fc32b38fc9940bc419d6e537fdc6ef02",
        )],
        body: "hello-world",
        secrets: &[
            "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_TjIG2BXbm83HPXqNfziwe506sBEdqL/4",
            "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_vB/yIOnTOCWIvpBadM5jzBZPHc7OmdSo",
            "pdl_ntf_01hbpjmytsa32fhr36nqgc3kgb_WvRO0eL4Bj9rgYYIBZY6wZhG4EHy9jzh",
        ],
        matching: 2,
        now: 1_696_195_954,
        ..V
    },
    Vector {
        preset: "razorpay",
        source: Source::Official(
            "razorpay/razorpay-python tests/test_client_utility.py (test_verify_webhook_signature, body tests/mocks/fake_payment_authorized_webhook.json, secret from tests/helpers.py)",
        ),
        headers: &[(
            "X-Razorpay-Signature",
            "d60e67fd884556c045e9be7dad57903e33efc7172c17c6e3ef77db42d2b366e9",
        )],
        body: include_str!("razorpay_payment_authorized.json"),
        secrets: &["key_secret"],
        ..V
    },
    Vector {
        preset: "square",
        source: Source::Official(
            "square/square-python-sdk tests/integration/test_webhooks_helper.py",
        ),
        headers: &[(
            "x-square-hmacsha256-signature",
            "GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4=",
        )],
        body: SQUARE_BODY,
        url: Some("https://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9"),
        secrets: &["Ibxx_5AKakO-3qeNVR61Dw"],
        wrong_secret: "MCmhFRxGX82xMwg5FsaoQA",
        ..V
    },
    Vector {
        preset: "square",
        source: Source::Official(
            "square/square-python-sdk tests/integration/test_webhooks_helper.py (escaped body)",
        ),
        headers: &[(
            "x-square-hmacsha256-signature",
            "Cxt7+aTi4rKgcA0bC4g9EHdVtLSDWdqccmL5MvihU4U=",
        )],
        body: r#"{"data":{"type":"webhooks","id":">id<"}}"#,
        url: Some("https://webhook.site/webhooks"),
        secrets: &["signature-key"],
        ..V
    },
    Vector {
        preset: "hubspot",
        source: Source::Official(
            "HubSpot/hubspot-api-python tests/spec/utils/test_signature.py (test_get_signature__v3)",
        ),
        headers: &[
            (
                "X-HubSpot-Signature-v3",
                "K36dawei4A+QBNolUOqo7s91KQDWQ5MXZ/QufNYuk/Y=",
            ),
            ("X-HubSpot-Request-Timestamp", "1693657560000"),
        ],
        body: "{'example_field':'example_value'}",
        url: Some("https://www.example.com/webhook_uri"),
        method: Some("POST"),
        secrets: &["yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy"],
        now: 1_693_657_560,
        ..V
    },
    Vector {
        preset: "coinbase-commerce",
        source: Source::Official("coinbase/coinbase-commerce-python tests/test_webhook.py"),
        headers: &[(
            "X-CC-Webhook-Signature",
            "8be7742c7d372f08a6a3224edadf18a22b65fa9e28f3f2de97376cdaa092590d",
        )],
        body: COINBASE_BODY,
        secrets: &["30291a20-0bd1-4267-9b0f-e6e7b123c0bf"],
        ..V
    },
    Vector {
        preset: "sendgrid",
        source: Source::Official(
            "sendgrid/sendgrid-python test/unit/test_eventwebhook.py (payload: json.dumps(sort_keys=True, separators=(',', ':')) + CRLF)",
        ),
        headers: &[
            (
                "X-Twilio-Email-Event-Webhook-Signature",
                "MEUCIGHQVtGj+Y3LkG9fLcxf3qfI10QysgDWmMOVmxG0u6ZUAiEAyBiXDWzM+uOe5W0JuG+luQAbPIqHh89M15TluLtEZtM=",
            ),
            ("X-Twilio-Email-Event-Webhook-Timestamp", "1600112502"),
        ],
        body: SENDGRID_BODY,
        secrets: &[
            "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g==",
        ],
        now: 1_600_112_502,
        // The SDK test's "bad key".
        wrong_secret: "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEqTxd43gyp8IOEto2LdIfjRQrIbsd4SXZkLW6jDutdhXSJCWHw8REntlo7aNDthvj+y7GjUuFDb/R1NGe1OPzpA==",
        ..V
    },
    Vector {
        preset: "box",
        source: Source::Official(
            "box/box-python-sdk test/webhooks.py (testWebhookValidation: primary and secondary keys)",
        ),
        headers: &[
            ("box-delivery-id", "f96bb54b-ee16-4fc5-aa65-8c2d9e5b546f"),
            ("box-delivery-timestamp", "2020-01-01T00:00:00-07:00"),
            ("box-signature-algorithm", "HmacSHA256"),
            (
                "box-signature-primary",
                "6TfeAW3A1PASkgboxxA5yqHNKOwFyMWuEXny/FPD5hI=",
            ),
            (
                "box-signature-secondary",
                "v+1CD1Jdo3muIcbpv5lxxgPglOqMfsNHPV899xWYydo=",
            ),
            ("box-signature-version", "1"),
        ],
        body: BOX_BODY,
        secrets: &["IncorrectKey", "SampleSecondaryKey"],
        matching: 1,
        // 2020-01-01T07:00:00Z
        now: 1_577_862_000,
        wrong_secret: "IncorrectKey",
        ..V
    },
    Vector {
        preset: "mailgun",
        source: Source::Official(
            "mailgun/mailgun-php tests/Api/WebhookTest.php (testVerifyWebhookGood: key, timestamp, token, signature)",
        ),
        body: MAILGUN_BODY,
        secrets: &["key-3ax6xnjp29jd6fds4gc373sgvjxteol0"],
        now: 1_403_645_220,
        tamper: Some("5egbgr"),
        ..V
    },
    Vector {
        preset: "pagerduty",
        source: Source::Official(
            "PagerDuty/go-pagerduty webhookv3/webhookv3_test.go (TestVerifySignature \"valid\")",
        ),
        headers: &[(
            "X-PagerDuty-Signature",
            "v1=0c0b9495b893a39e70d1fea2fe11fbe0a825f88b9f67846f6cc07dd2bc5476cd",
        )],
        body: include_str!("pagerduty_incident_priority_updated.json"),
        secrets: &["lDQHScfUeXUKaQRNF+8XIiDKZ7XX3itBAYzwU0TARw8lJqRnkKl2iB1anSb0Z+IK"],
        ..V
    },
    Vector {
        preset: "adyen",
        source: Source::Official(
            "Adyen/adyen-python-api-library test/UtilTest.py (test_is_valid_hmac_payload; the payload keeps the test's newlines and indentation)",
        ),
        headers: &[(
            "HmacSignature",
            "fX74xUdztFmaXAn3IusMFFUBUSkLmDQUK0tm8xL6ZTU=",
        )],
        body: include_str!("adyen_merchant_created.json"),
        secrets: &["44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056"],
        // Valid hexadecimal, another key.
        wrong_secret: "74F490DD33F7327BAECC88B2947C011FC02D014A473AAA33A8EC93E4DC069174",
        ..V
    },
    Vector {
        preset: "adyen-standard",
        source: Source::Official(
            "Adyen/adyen-dotnet-api-library Adyen.Test/mocks/notification-response-refund-fail.json with the key of Adyen.Test/Webhooks/HmacValidatorTest.cs (TestHmacCalculationNotificationRequestWithSpecialChars), verbatim",
        ),
        body: include_str!("adyen_standard_refund_fail.json"),
        secrets: &["66B61474A0AA3736BA8789EDC6D6CD9EBA0C4F414A554E32A407F849C045C69D"],
        wrong_secret: ADYEN_DOCS_KEY,
        // The item's pspReference: signed (the body as a whole is not).
        tamper: Some("TEST_CUSTOM_881578412137072J"),
        ..V
    },
    Vector {
        preset: "adyen-standard",
        source: Source::Official(
            "Adyen/adyen-python-api-library test/mocks/util/{backslash,colon,forwardslash,mixed}_notification.json (UtilTest.py test_webhooks_with_slashes), the four items in one notification",
        ),
        body: ADYEN_SLASHES,
        secrets: &[ADYEN_SLASHES_KEY],
        wrong_secret: ADYEN_DOCS_KEY,
        // The third item's merchantReference.
        tamper: Some("//slashes are fun"),
        ..V
    },
    Vector {
        preset: "adyen-standard",
        source: Source::Official(
            "Adyen/adyen-python-api-library test/UtilTest.py (test_notification_request_item_hmac: the docs' item)",
        ),
        body: ADYEN_DOCS_NOTIFICATION,
        secrets: &[ADYEN_DOCS_KEY],
        wrong_secret: ADYEN_NODE_KEY,
        tamper: Some("TestPayment"),
        ..V
    },
    Vector {
        preset: "adyen-standard",
        source: Source::Official(
            "Adyen/adyen-java-api-library src/test/java/com/adyen/util/HMACValidatorTest.java (testValidateHMAC)",
        ),
        body: adyen_notification!(adyen_java_item!()),
        secrets: &["9064450A8892A093D9E97EFCC9639DE31B74F3A7803135555A3C96F5A57915D6"],
        wrong_secret: ADYEN_DOCS_KEY,
        tamper: Some("Magento2Rik"),
        ..V
    },
    Vector {
        preset: "adyen-standard",
        source: Source::Official(
            "Adyen/adyen-python-api-library test/UtilTest.py and Adyen/adyen-node-api-library src/__tests__/hmacValidator.spec.ts: their items, signed with two keys, in one notification (a rotation: new key first)",
        ),
        body: ADYEN_TWO_KEYS,
        secrets: &[ADYEN_NODE_KEY, ADYEN_DOCS_KEY],
        // The docs' item needs the old key: the oldest any item needs.
        matching: 1,
        wrong_secret: "74F490DD33F7327BAECC88B2947C011FC02D014A473AAA33A8EC93E4DC069174",
        // Node's item's merchantAccountCode.
        tamper: Some("merchantAccount\""),
        ..V
    },
    Vector {
        preset: "mux",
        source: Source::Official(
            "muxinc/mux-node-sdk tests/api-resources/webhooks.test.ts (verifySignature \"should pass for valid signature\")",
        ),
        headers: &[(
            "Mux-Signature",
            "t=1565125718,v1=854ece4c22acef7c66b57d4e504153bc512595e8e9c772ece2a68150548c19a7",
        )],
        body: r#"{"test":"body"}"#,
        secrets: &["SuperSecret123"],
        now: 1_565_125_718,
        ..V
    },
];

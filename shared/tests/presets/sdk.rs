//! Vectors generated, or confirmed, by the providers' OFFICIAL SDK packages
//! where no published vector was found: `tools/presets/sdk/generate.mjs`
//! (exact versions in `tools/presets/sdk/package-lock.json`; run it as its
//! README says) prints every value below. Each cite names the package,
//! version and function, and whether the SDK signed (produced the value)
//! or only verifies (then Node's `crypto` produced it, and the script
//! asserts that the SDK accepts it and refuses it with one byte changed).

use super::{Source, V, Vector};

const TWILIO_SHARED_KEY: &str = "hookbox-sdk-twilio-shared-key";
const TWILIO_SETTINGS: &str = "key=webhooks_sharedkey_hookbox,algorithm=HMAC_SHA256";

pub(super) const VECTORS: &[Vector] = &[
    Vector {
        preset: "twilio-sha256",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: twilio@6.3.1 getExpectedTwilioSignature(key, url, params, 'HMAC_SHA256') signs it; validateRequest accepts it",
        ),
        headers: &[
            (
                "X-Twilio-Signature",
                "pYWxkbBC4VBM376EQFIGA6Ba/PavpUVRM2FtZtM5HKM=",
            ),
            ("X-Twilio-Webhooks-Signature-Settings", TWILIO_SETTINGS),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        body: "AccountSid=AC00000000000000000000000000000000&CallSid=CA00000000000000000000000000000001&CallStatus=ringing&From=%2B14155550100&To=%2B14155550199",
        url: Some("https://hooks.example.com/twilio/voice?partner=acme"),
        secrets: &[TWILIO_SHARED_KEY],
        ..V
    },
    Vector {
        // A JSON body, bound by the URL's `bodySHA256`.
        preset: "twilio-sha256",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: twilio@6.3.1 getExpectedBodyHash and getExpectedTwilioSignature(key, url, {}, 'HMAC_SHA256') sign it; validateRequestWithBody accepts it",
        ),
        headers: &[
            (
                "X-Twilio-Signature",
                "KIJJY8B7EDXMWPZflikBDAKRkkkc7pfV+giKpgevehE=",
            ),
            ("X-Twilio-Webhooks-Signature-Settings", TWILIO_SETTINGS),
            ("Content-Type", "application/json"),
        ],
        body: r#"{"CallSid":"CA00000000000000000000000000000001","CallStatus":"ringing"}"#,
        url: Some(
            "https://hooks.example.com/twilio/status?bodySHA256=a1759fb763256a1fd2cb892426d9430d3cd02a0710e43af5a8123b5e6fa1859a",
        ),
        secrets: &[TWILIO_SHARED_KEY],
        ..V
    },
    Vector {
        preset: "discord",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: verify only, discord-interactions@4.4.0 verifyKey accepts it (Ed25519 signed by node:crypto from a fixed seed) and refuses a changed body",
        ),
        headers: &[
            (
                "X-Signature-Ed25519",
                "499bf4ea56fc5cf4430faad9e2489f588ae9b3c95af8a46646af3afd8ef5a567d9eed04fe1d4477e6e0f7358b0386b0970bbeb8978bf7b3c23df42976497510e",
            ),
            ("X-Signature-Timestamp", "1700000000"),
        ],
        body: r#"{"id":"1170000000000000000","application_id":"1160000000000000000","type":1,"token":"sdk-token","version":1}"#,
        secrets: &["c8376d5379346ed377897019a910f7ecedbe2cbc6eaa0aaa016f38a8be53a7d2"],
        // RFC 8032 test 1 public key: valid, not the signer's.
        wrong_secret: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        now: 1_700_000_000,
        ..V
    },
    Vector {
        preset: "linear",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: verify only, @linear/sdk@98.0.0 LinearWebhookClient#verify accepts it at the body's webhookTimestamp (HMAC by node:crypto) and refuses a changed body",
        ),
        headers: &[
            (
                "Linear-Signature",
                "fcb996e3618cdac24fd7db52e5cd3dc5e551ea10aeb3961515f2b8c304b2ab68",
            ),
            ("Linear-Delivery", "6b5e1e2c-3c4d-4e5f-8a9b-0c1d2e3f4a5b"),
            ("Linear-Event", "Issue"),
        ],
        body: r#"{"action":"create","type":"Issue","data":{"id":"9cfb482a-81e3-4154-b5b9-2c805e70a02d","title":"SDK vector"},"webhookTimestamp":1700000000000}"#,
        secrets: &["hookbox-sdk-linear-secret"],
        now: 1_700_000_000,
        // A value, not a key: the body stays valid JSON with its timestamp.
        tamper: Some("SDK vector"),
        ..V
    },
    Vector {
        preset: "webflow",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: verify only, webflow-api@3.3.4 WebflowClient#webhooks.verifySignature accepts it (HMAC by node:crypto) and refuses a changed body",
        ),
        headers: &[
            ("x-webflow-timestamp", "1700000000000"),
            (
                "x-webflow-signature",
                "01a8f29088f9dcbb3ac7f43acf91814b3f2175c5c9d4266c4da2ff1b77a10f9c",
            ),
        ],
        body: r#"{"triggerType":"form_submission","payload":{"name":"Contact","siteId":"65427cf400e02b306eaa049c","data":{"email":"sdk@example.com"}}}"#,
        secrets: &["hookbox-sdk-webflow-secret"],
        now: 1_700_000_000,
        ..V
    },
    Vector {
        preset: "zoom",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: verify only, @zoom/rivet@0.4.0 AwsLambdaReceiver (@zoom/rivet/meetings) answers 200 for it (HMAC by node:crypto) and 400 for a changed body",
        ),
        headers: &[
            ("x-zm-request-timestamp", "1700000000"),
            (
                "x-zm-signature",
                "v0=0eb68aacfff97c19d4b2e5ce84824c7c248831e161625196db0f168444dc20b6",
            ),
        ],
        body: r#"{"event":"meeting.started","event_ts":1700000000123,"payload":{"account_id":"AAAAAABBBB","object":{"id":"85746065432","topic":"SDK vector"}}}"#,
        secrets: &["hookbox-sdk-zoom-secret-token"],
        now: 1_700_000_000,
        ..V
    },
    Vector {
        // Chargebee does not sign: HTTP Basic auth, the body is not bound.
        preset: "chargebee",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: verify only, chargebee@3.33.0 basicAuthValidator accepts the header (built with Buffer base64) and refuses it with a byte changed",
        ),
        headers: &[(
            "Authorization",
            "Basic aG9va2JveC1zZGs6Y2hhcmdlYmVlLXA0c3M=",
        )],
        body: r#"{"id":"ev_sdk_1","occurred_at":1700000000,"event_type":"customer_created","content":{"customer":{"id":"cust_1"}}}"#,
        secrets: &["hookbox-sdk:chargebee-p4ss"],
        wrong_secret: "hookbox-sdk:other",
        ..V
    },
];

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
    Vector {
        preset: "line",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: verify only, @line/bot-sdk@11.0.0 validateSignature accepts it (HMAC by node:crypto) and refuses a changed body",
        ),
        headers: &[(
            "x-line-signature",
            "M+8TlrA/6ytkcAUV/lFxxQhvQutAthO0zqVy6658PDY=",
        )],
        body: r#"{"destination":"U0123456789abcdef0123456789abcdef","events":[{"type":"message","message":{"type":"text","id":"480000000000000001","text":"Hello"},"webhookEventId":"01HF6J2Q1Y7V9K3M5N8P0R2T4W","deliveryContext":{"isRedelivery":false},"timestamp":1700000000000,"source":{"type":"user","userId":"U4af4980629aabbccddeeff0011223344"},"replyToken":"b60d1f2a3c4e5f60718293a4b5c6d7e8","mode":"active"}]}"#,
        secrets: &["hookbox-sdk-line-secret"],
        now: 1_700_000_000,
        ..V
    },
    Vector {
        // Pusher Channels: X-Pusher-Key names the app key whose secret signed.
        preset: "pusher",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: pusher@5.3.4 Token#sign signs it; Pusher#webhook({ headers, rawBody }).isValid accepts it",
        ),
        headers: &[
            ("X-Pusher-Key", "hookboxsdkpusherkey0"),
            (
                "X-Pusher-Signature",
                "dbd8fd44bfd3e98b34b357506a63a2a6392a7ac35568b71dc1e0870c7fed3ad1",
            ),
            ("Content-Type", "application/json"),
        ],
        body: r#"{"time_ms":1700000000000,"events":[{"name":"channel_occupied","channel":"presence-room"}]}"#,
        secrets: &["hookbox-sdk-pusher-secret"],
        now: 1_700_000_000,
        ..V
    },
    Vector {
        preset: "stream-chat",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: verify only, stream-chat@9.53.0 StreamChat#verifyWebhook accepts it (HMAC by node:crypto) and refuses a changed body",
        ),
        headers: &[
            ("X-Webhook-Id", "6f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f"),
            ("X-Webhook-Attempt", "1"),
            ("X-Api-Key", "hookboxsdkkey"),
            (
                "X-Signature",
                "c9f44b64cb15b14fc975f8cea4972f47b060d58337dd9054156fa0425522626b",
            ),
        ],
        body: r#"{"type":"message.new","cid":"messaging:general","channel_type":"messaging","channel_id":"general","message":{"id":"msg-1700000000","text":"Hello","type":"regular","user":{"id":"alice"}},"user":{"id":"alice"},"created_at":"2023-11-14T22:13:20.000000Z"}"#,
        secrets: &["hookbox-sdk-stream-chat-secret"],
        now: 1_700_000_000,
        ..V
    },
    Vector {
        preset: "gocardless",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: verify only, gocardless-nodejs@10.1.2 webhooks.parse accepts it (HMAC by node:crypto) and refuses a changed body",
        ),
        headers: &[(
            "Webhook-Signature",
            "292f044a297faa744bff0cc16d6ff9bf1370295970a116d31e9c2929fd0280d2",
        )],
        body: r#"{"events":[{"id":"EV00AB12CD34EF","created_at":"2023-11-14T22:13:20.000Z","resource_type":"payments","action":"confirmed","links":{"payment":"PM00AB12CD34EF"},"details":{"origin":"gocardless","cause":"payment_confirmed","description":"Payment confirmed."},"metadata":{}}],"meta":{"webhook_id":"WB00AB12CD34EF"}}"#,
        secrets: &["hookbox-sdk-gocardless-secret"],
        now: 1_700_000_000,
        ..V
    },
    Vector {
        preset: "onfido",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: verify only, @onfido/api@6.2.0 WebhookEventVerifier#readPayload accepts it (HMAC by node:crypto) and refuses a changed body",
        ),
        headers: &[(
            "X-SHA2-Signature",
            "847c7b90281e5f33a2b6c93025746b54885882ad4bb139cd268e016e1e8b48b8",
        )],
        body: r#"{"payload":{"resource_type":"check","action":"check.completed","object":{"id":"8546b5d1-5ef0-4a11-9d2f-3b8c1f2e0a4d","status":"complete","completed_at_iso8601":"2023-11-14T22:13:20Z","href":"https://api.eu.onfido.com/v3.6/checks/8546b5d1-5ef0-4a11-9d2f-3b8c1f2e0a4d"}}}"#,
        secrets: &["hookbox-sdk-onfido-webhook-token"],
        now: 1_700_000_000,
        ..V
    },
    Vector {
        // No "weight" key: the SDK rewrites integer weights before hashing.
        preset: "easypost",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: verify only, @easypost/api@8.9.0 EasyPostClient#Utils.validateWebhook accepts it (HMAC by node:crypto) and refuses a changed body",
        ),
        headers: &[(
            "X-Hmac-Signature",
            "hmac-sha256-hex=54f5e3f9d08f912b7a3053df397ad3fa2012fd5f7224611a07845b838bee92eb",
        )],
        body: r#"{"id":"evt_0a1b2c3d4e5f60718293a4b5c6d7e8f9","object":"Event","created_at":"2023-11-14T22:13:20Z","updated_at":"2023-11-14T22:13:20Z","description":"tracker.updated","mode":"test","previous_attributes":{"status":"pre_transit"},"result":{"id":"trk_0a1b2c3d4e5f60718293a4b5c6d7e8f9","object":"Tracker","mode":"test","tracking_code":"EZ1000000001","status":"in_transit","carrier":"USPS"},"status":"pending","pending_urls":[],"completed_urls":[]}"#,
        secrets: &["hookbox-sdk-easypost-secret"],
        now: 1_700_000_000,
        ..V
    },
    Vector {
        // A form-encoded body; the key is the account's API key.
        preset: "acuity-scheduling",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: verify only, acuityscheduling@0.1.9 verifyMessageSignature accepts it (HMAC by node:crypto) and refuses a changed body",
        ),
        headers: &[
            (
                "X-Acuity-Signature",
                "TCT3Z3M9x3zkG9extkcqpL9mxFzJ0vHEnJRqdV6j+nE=",
            ),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        body: "action=scheduled&id=1234567890&calendarID=1234&appointmentTypeID=5678",
        secrets: &["hookbox-sdk-acuity-api-key"],
        now: 1_700_000_000,
        ..V
    },
    Vector {
        preset: "modern-treasury",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: modern-treasury@3.3.0 client.webhooks.getSignature signs it; client.webhooks.validateSignature accepts it",
        ),
        headers: &[
            (
                "X-Signature",
                "49af9856c551944878644c96fde21aba71bbcf72a8b968bc9400dffd0eefd77c",
            ),
            ("X-Webhook-ID", "3f2e1d0c-9b8a-4765-8432-10fedcba9876"),
        ],
        body: r#"{"event":"completed","data":{"id":"7c1a2b3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d","object":"payment_order","type":"ach","amount":10000,"direction":"credit","currency":"USD","status":"completed","live_mode":false,"created_at":"2023-11-14T22:13:20Z","updated_at":"2023-11-14T22:13:20Z"}}"#,
        secrets: &["hookbox-sdk-modern-treasury-webhook-key"],
        now: 1_700_000_000,
        ..V
    },
    Vector {
        // Secret base64 (no prefix), decoded for the key.
        preset: "finch",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: @tryfinch/finch-api@10.7.0 client.webhooks.signPayload signs it; client.webhooks.verifySignature accepts it",
        ),
        headers: &[
            ("finch-event-id", "msg_2YbW1Fq4hkRyhPDWzbVXi1nJvTc"),
            ("finch-timestamp", "1700000000"),
            (
                "finch-signature",
                "v1,ur97Bw+r/GDtk3y7mmsKrl+HGFXdPIdJE14EW8ESSjw=",
            ),
        ],
        body: r#"{"company_id":"5a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d","account_id":"6b2c3d4e-5f60-4b7c-8d9e-0f1a2b3c4d5e","connection_id":"7c3d4e5f-6071-4c8d-9e0f-1a2b3c4d5e6f","event_type":"job.benefit_create.completed","data":{"job_id":"8d4e5f60-7182-4d9e-8f1a-2b3c4d5e6f70","job_url":"https://api.tryfinch.com/jobs/automated/8d4e5f60-7182-4d9e-8f1a-2b3c4d5e6f70"}}"#,
        secrets: &["zoVpvhhZyTC/Bjlr7uQBUk+pXNzzZid7XsZJo9FjQTA="],
        // A valid base64 secret, not the signer's.
        wrong_secret: "1G1+N0PLWKLTfPuY6D7SWzuQOUnNkFBUxP10Y+qHvkg=",
        now: 1_700_000_000,
        ..V
    },
    Vector {
        // x-webhook-timestamp in milliseconds, concatenated before the body.
        preset: "cashfree",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: verify only, cashfree-pg@6.0.6 Cashfree#PGVerifyWebhookSignature accepts it (HMAC by node:crypto) and refuses a changed body",
        ),
        headers: &[
            (
                "x-webhook-signature",
                "XgCHIpuUcT/6QSB7/lIizIxixYWjUurJs/5K8GkUnZU=",
            ),
            ("x-webhook-timestamp", "1700000000000"),
            ("x-webhook-version", "2025-01-01"),
            ("x-idempotency-key", "hookbox-sdk-cashfree-idempotency-1"),
        ],
        body: r#"{"data":{"order":{"order_id":"order_hookbox_sdk_1","order_amount":1.00,"order_currency":"INR","order_tags":null},"payment":{"cf_payment_id":"5114910000001","payment_status":"SUCCESS","payment_amount":1.00,"payment_currency":"INR","payment_time":"2023-11-15T03:43:20+05:30","payment_group":"upi"}},"event_time":"2023-11-15T03:43:20+05:30","type":"PAYMENT_SUCCESS_WEBHOOK"}"#,
        secrets: &["hookbox-sdk-cashfree-client-secret"],
        now: 1_700_000_000,
        ..V
    },
    Vector {
        preset: "elevenlabs",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: verify only, @elevenlabs/elevenlabs-js@2.73.0 client.webhooks.constructEvent accepts it (HMAC by node:crypto) and refuses a changed body",
        ),
        headers: &[(
            "ElevenLabs-Signature",
            "t=1700000000,v0=0a577c082156096903560f79eff14f4c8140275cc7fe6254a51f6366af0279df",
        )],
        body: r#"{"type":"post_call_transcription","event_timestamp":1700000000,"data":{"agent_id":"agent_01hf6j2q1y7v9k3m5n8p0r2t4w","conversation_id":"conv_01hf6j2q1y7v9k3m5n8p0r2t4x","status":"done"}}"#,
        secrets: &["hookbox-sdk-elevenlabs-secret"],
        now: 1_700_000_000,
        ..V
    },
    Vector {
        // The secret is used as UTF-8 as shown, "whsec_" included (not base64-decoded).
        preset: "imagekit",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: verify only, imagekit@6.0.0 ImageKit#verifyWebhookEvent accepts it (HMAC by node:crypto) and refuses a changed body",
        ),
        headers: &[(
            "x-ik-signature",
            "t=1700000000000,v1=623c37b76f8fe479c5ff5f812bd46ccf053763a5ea47b4083954f0135a92996f",
        )],
        body: r#"{"type":"video.transformation.accepted","id":"58e6d24d-6098-4319-be8d-40c3cb0a402d","created_at":"2023-11-14T22:13:20.000Z","request":{"x_request_id":"fa98fa2e-d6cd-45b4-acf5-bc1d2bbb8ba9","url":"https://ik.imagekit.io/hookbox/sample.mp4?tr=f-webm","user_agent":"Mozilla/5.0"},"data":{"asset":{"url":"https://ik.imagekit.io/hookbox/sample.mp4"},"transformation":{"type":"video-transformation","options":{"video_codec":"vp9","audio_codec":"opus","format":"webm"}}}}"#,
        secrets: &["whsec_hookbox-sdk-imagekit-secret"],
        // Same format (the whole string is the key), not the signer's.
        wrong_secret: "whsec_hookbox-sdk-imagekit-other",
        now: 1_700_000_000,
        ..V
    },
    Vector {
        preset: "retell",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: retell-sdk@5.66.1 Retell.sign signs it; Retell.verify accepts it",
        ),
        headers: &[(
            "x-retell-signature",
            "v=1700000000000,d=bf2912b4c5b3dac4a78278855b01bbb80d4cb90340cb1a60362ac72f49011059",
        )],
        body: r#"{"event":"call_ended","call":{"call_id":"Jabr9TXYYJHfvl6Syypi88rdAHYHmcq6","agent_id":"oBeDLoLOeuAbiuaMFXRtDOLriTJ5tSxD","call_type":"phone_call","call_status":"ended","start_timestamp":1699999940000,"end_timestamp":1700000000000}}"#,
        secrets: &["key_hookbox_sdk_retell_webhook"],
        now: 1_700_000_000,
        ..V
    },
    Vector {
        preset: "lithic",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: verify only, lithic@0.145.0 client.webhooks.verifySignature accepts it (Standard Webhooks HMAC by node:crypto) and refuses a changed body",
        ),
        headers: &[
            ("webhook-id", "msg_2YbW1Fq4hkRyhPDWzbVXi1nJvTd"),
            ("webhook-timestamp", "1700000000"),
            (
                "webhook-signature",
                "v1,VG7JHpswYCN0LadMRfVT2R2ehx3+DxNGCnCZUdXPcjg=",
            ),
        ],
        body: r#"{"event_type":"card.created","token":"0f1e2d3c-4b5a-4697-8887-a9b8c7d6e5f4","card_token":"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","created":"2023-11-14T22:13:20Z"}"#,
        secrets: &["whsec_YMASqVuHTvvJNoHforWDh8LE+IC30hB09fPqZSVFN5I="],
        // A valid whsec_ secret, not the signer's.
        wrong_secret: "whsec_58oIY04EhdhXBgcCs+2IGhhMlLykIAt0i1cv8sAMA2U=",
        now: 1_700_000_000,
        ..V
    },
    Vector {
        preset: "dodo-payments",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: verify only, dodopayments@2.52.0 client.webhooks.unwrap accepts it (Standard Webhooks HMAC by node:crypto) and refuses a changed body",
        ),
        headers: &[
            ("webhook-id", "evt_2YbW1Fq4hkRyhPDWzbVXi1"),
            ("webhook-timestamp", "1700000000"),
            (
                "webhook-signature",
                "v1,5/0u2HG/DwxAUIrn/IEikpvJMdgUxDxMaGLJ/uWtqu8=",
            ),
        ],
        body: r#"{"business_id":"bus_0a1b2c3d4e5f6g7h8i9j","type":"payment.succeeded","timestamp":"2023-11-14T22:13:20Z","data":{"payload_type":"Payment","payment_id":"pay_0a1b2c3d4e5f6g7h8i9j","status":"succeeded","total_amount":1000,"currency":"USD"}}"#,
        secrets: &["whsec_MO51EfSA/XmQ0XkbmvVta2iuwRxkNd+35NP/siuINDY="],
        // A valid whsec_ secret, not the signer's.
        wrong_secret: "whsec_ANvDD4ewS4LHyhYgt7DHXQxOfKX/rDY6xC3odp+73Q4=",
        now: 1_700_000_000,
        ..V
    },
    Vector {
        preset: "liveblocks",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: verify only, @liveblocks/node@3.24.2 WebhookHandler#verifyRequest accepts it (Standard Webhooks HMAC by node:crypto) and refuses a changed body",
        ),
        headers: &[
            ("webhook-id", "msg_2YbW1Fq4hkRyhPDWzbVXi1nJvTe"),
            ("webhook-timestamp", "1700000000"),
            (
                "webhook-signature",
                "v1,2x1Q7YZmM+omWgGbR8X04BIJasF4p5UMJ9bzlaaRtt0=",
            ),
        ],
        body: r#"{"type":"storageUpdated","data":{"roomId":"hookbox-room","projectId":"605a50b01a36d5ea7a2e9104","updatedAt":"2023-11-14T22:13:20.000Z"}}"#,
        secrets: &["whsec_3l6acBEjhcta4UPr6KzwidAFkNJLNiRI8PFwunCiWTM="],
        // A valid whsec_ secret, not the signer's.
        wrong_secret: "whsec_nsVaCWP/h8zKrpSfuh+gTNC/vhYljOW2pkGY/pnb8hs=",
        now: 1_700_000_000,
        ..V
    },
    Vector {
        // X-Orb-Timestamp is ISO 8601 without a zone (UTC); the key is the secret's UTF-8 bytes.
        preset: "orb",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: orb-billing@6.11.0 client.webhooks.signPayload signs it; client.webhooks.verifySignature accepts it",
        ),
        headers: &[
            ("X-Orb-Timestamp", "2023-11-14T22:13:20.000000"),
            (
                "X-Orb-Signature",
                "v1=803d72fd9a640d0e30251f326ce9f0737d300f59fc4cc185dad2d29ee642fcbe",
            ),
        ],
        body: r#"{"id":"evt_hookboxSdkOrb0001","created_at":"2023-11-14T22:13:20.000000+00:00","type":"customer.created","customer":{"id":"cus_hookboxSdkOrb0001","external_customer_id":"acme-1","name":"Acme"},"properties":{}}"#,
        secrets: &["hookbox-sdk-orb-secret"],
        now: 1_700_000_000,
        ..V
    },
    Vector {
        // The body is JSON.stringify of the signed payload; WorkOS sends ", v1=" (with a space).
        preset: "workos",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: @workos-inc/node@8.13.0 workos.webhooks.computeSignature signs it; workos.webhooks.constructEvent accepts it",
        ),
        headers: &[(
            "WorkOS-Signature",
            "t=1700000000000, v1=ad108caa99bbc0ba77ce1580070f92e2095dae22f12ab69139a6722cca0b42b2",
        )],
        body: r#"{"id":"event_01HF6J2Q1Y7V9K3M5N8P0R2T4W","event":"user.created","data":{"object":"user","id":"user_01HF6J2Q1Y7V9K3M5N8P0R2T4X","email":"sdk@example.com","first_name":"Sdk","last_name":"Vector","email_verified":true,"created_at":"2023-11-14T22:13:20.000Z","updated_at":"2023-11-14T22:13:20.000Z"},"created_at":"2023-11-14T22:13:20.000Z"}"#,
        secrets: &["hookbox-sdk-workos-secret"],
        now: 1_700_000_000,
        ..V
    },
    Vector {
        // The key as hex: the portal's base64 `gAmiL6XkJ5HGyF62QnL9zUYxVWMPNAznacaA/h3WuDI=`.
        preset: "telnyx",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: telnyx@7.24.0 new TelnyxWebhook(publicKey).verify(payload, headers) (lib/webhooks.js), verify only: Ed25519 by node:crypto from a fixed seed; verify accepts it at the vector's time, refuses a changed body and a clock 301 s later",
        ),
        headers: &[
            (
                "telnyx-signature-ed25519",
                "vsDMOCQFQZ/NgvHO1uWhod3xyEGk329gdepGwRnybALrI/QrJRnVKZoZXJp2JjRPTHqOPOqvh5rAasduqeWzAg==",
            ),
            ("telnyx-timestamp", "1700000000"),
        ],
        body: r#"{"data":{"event_type":"message.received","id":"b301ed3f-1490-491f-995f-6e64e69674d4","occurred_at":"2023-11-14T22:13:20.000+00:00","payload":{"id":"84cca175-9755-4859-b67f-4730d7f58aa3","text":"SDK vector"},"record_type":"event"},"meta":{"attempt":1,"delivered_to":"https://example.com/webhooks"}}"#,
        secrets: &["8009a22fa5e42791c6c85eb64272fdcd463155630f340ce769c680fe1dd6b832"],
        // RFC 8032 test 1 public key: valid, not the signer's.
        wrong_secret: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        now: 1_700_000_000,
        ..V
    },
    Vector {
        // V2 signs the URL (without a query string) and the nonce, not the
        // form body.
        preset: "plivo",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: plivo@4.79.0 validateSignature(uri, nonce, signature, auth_token) (dist/utils/security.js), verify only: HMAC by node:crypto; validateSignature accepts it, refuses a changed nonce and a changed URL",
        ),
        headers: &[
            (
                "X-Plivo-Signature-V2",
                "nEgfwuyKC5S57kUwkcm986cjTH0jsbPnCWPQCTuq78w=",
            ),
            ("X-Plivo-Signature-V2-Nonce", "05429567804466091622"),
        ],
        body: "CallUUID=2b2d0b0a-1b7e-4b5f-9a58-6b7c3a1e2f11&CallStatus=ringing&Direction=inbound&From=14155550100&To=14155550199",
        url: Some("https://hooks.example.com/webhooks/plivo"),
        secrets: &["hookbox-sdk-plivo-auth-token"],
        ..V
    },
    Vector {
        preset: "sinch",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: @sinch/sdk-client@1.5.0 calculateWebhookSignature(computeSignedData(body, nonce, timestamp), secret) signs it; @sinch/conversation@1.4.0 ConversationCallbackWebhooks#validateAuthenticationHeader accepts it and refuses a changed body",
        ),
        headers: &[
            (
                "x-sinch-webhook-signature",
                "yYVePPGmo+y1ESDQX0ZWgWxdq5BIYHB9ZBZVIUOWHUE=",
            ),
            (
                "x-sinch-webhook-signature-nonce",
                "01FJA8B4A7BM43YGWSG9GBV067",
            ),
            ("x-sinch-webhook-signature-timestamp", "1700000000"),
            ("x-sinch-webhook-signature-algorithm", "HmacSHA256"),
        ],
        body: r#"{"app_id":"01EB37HMH1M6SV18ASNS3G135H","accepted_time":"2023-11-14T22:13:20.000Z","event_time":"2023-11-14T22:13:19.000Z","project_id":"c36f3d3d-1513-4edd-ae42-11995557ff61","message":{"id":"01EQBC1A3BEK731GY4YXEN0C2R","direction":"TO_APP","contact_message":{"text_message":{"text":"SDK vector"}}}}"#,
        secrets: &["hookbox-sdk-sinch-secret"],
        now: 1_700_000_000,
        ..V
    },
    Vector {
        preset: "viber",
        source: Source::Sdk(
            "tools/presets/sdk/generate.mjs: viber-bot@1.0.18 new MessageValidator(logger, authToken).validateMessage(signature, body) (lib/message/message-validator.js, what its middleware checks), verify only: HMAC by node:crypto; validateMessage accepts it and refuses a changed body",
        ),
        headers: &[(
            "X-Viber-Content-Signature",
            "7adfc9ea0c6bd6a5cd74e3e99da6717480f29e558689f34fdb25846c35f912a7",
        )],
        body: r#"{"event":"message","timestamp":1700000000000,"chat_hostname":"SN-376_","message_token":4912661846655238145,"sender":{"id":"01234567890A=","name":"SDK Vector","language":"en","country":"UK","api_version":1},"message":{"type":"text","text":"a message to the service"},"silent":false}"#,
        secrets: &["445da6az1s345z78-dazcczb2542zv51a-e0vc5fva17480im9"],
        ..V
    },
];

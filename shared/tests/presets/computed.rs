//! Vectors computed here, NOT published by the providers: no published
//! vector was found for these presets yet. Each value comes from
//! `tools/presets/compute_vectors.py` (Python's `hmac`, `hashlib`, `base64`
//! and `cryptography`, an implementation independent of ours) following
//! the provider's documented recipe (the preset's `docs` link). They test
//! the recipe as we read it, not that we read it right: they do not count
//! as official vectors.

use super::{Source, V, Vector};

const HOW: Source = Source::Computed("tools/presets/compute_vectors.py");
const SECRET: &str = "hookbox-test-secret";
const BODY: &str = r#"{"id":"evt_1","type":"test.event","data":{"n":42}}"#;
const HEX: &str = "0eb9a12b79a295c1d785376a8bbef343d79f5b1d300d4b99e1862ab3d60e1f41";
const PREFIXED_HEX: &str =
    "sha256=0eb9a12b79a295c1d785376a8bbef343d79f5b1d300d4b99e1862ab3d60e1f41";
const B64: &str = "DrmhK3milcHXhTdqi77zQ9efWx0wDUuZ4YYqs9YOH0E=";
const SHA1_HEX: &str = "96e9c867c2c43fa566899e51c8b2c1540925b929";
const TWILIO_SHARED_KEY: &str = "hookbox-twilio-shared-key";
pub(super) const NETLIFY_JWS: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJuZXRsaWZ5Iiwic2hhMjU2IjoiZjVkZDFjYWQ2NmRlNTNmMDA1MmZmNzkzNDU5ODYzMTZkMDNlOTk3NGUxNWM5M2RmMWIwYjMyZTdlYzUyOWZmMiJ9.IP_r7k7MiwGDLHgJssc6JD95bBXMK1ezsf9OrR5bzyE";
/// Signed correctly with [`SECRET`], but by another issuer.
pub(super) const OTHER_ISSUER_JWS: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJub3QtbmV0bGlmeSIsInNoYTI1NiI6ImY1ZGQxY2FkNjZkZTUzZjAwNTJmZjc5MzQ1OTg2MzE2ZDAzZTk5NzRlMTVjOTNkZjFiMGIzMmU3ZWM1MjlmZjIifQ.d8RrOpFcfQOUzExXPWzJ-0r-zhtnxR_zi1ngV3_ZK70";

/// A computed vector of `preset` over [`BODY`] with [`SECRET`]; each entry
/// adds its headers.
const fn body(preset: &'static str) -> Vector {
    Vector {
        preset,
        source: HOW,
        body: BODY,
        secrets: &[SECRET],
        ..V
    }
}

macro_rules! headers {
    ($($name:expr => $value:expr),* $(,)?) => {
        &[$(($name, $value)),*]
    };
}

pub(super) const VECTORS: &[Vector] = &[
    Vector {
        headers: headers!("X-Hook-Signature" => HEX),
        ..body("asana")
    },
    Vector {
        headers: headers!("X-Hub-Signature" => PREFIXED_HEX),
        ..body("bitbucket")
    },
    Vector {
        headers: headers!("X-Dropbox-Signature" => HEX),
        ..body("dropbox")
    },
    Vector {
        headers: headers!("X-Hub-Signature" => PREFIXED_HEX),
        ..body("jira")
    },
    Vector {
        headers: headers!("X-Signature" => HEX),
        ..body("lemon-squeezy")
    },
    Vector {
        headers: headers!("X-Hub-Signature-256" => PREFIXED_HEX),
        ..body("meta")
    },
    Vector {
        headers: headers!("X-Mollie-Signature" => PREFIXED_HEX),
        ..body("mollie")
    },
    Vector {
        // Mollie's SDK also accepts the bare hex digest.
        headers: headers!("X-Mollie-Signature" => HEX),
        ..body("mollie")
    },
    Vector {
        headers: headers!("Sentry-Hook-Signature" => HEX),
        ..body("sentry")
    },
    Vector {
        headers: headers!("X-Hub-Signature" => "sha1=96e9c867c2c43fa566899e51c8b2c1540925b929"),
        ..body("intercom")
    },
    Vector {
        headers: headers!("X-Signature" => SHA1_HEX),
        ..body("segment")
    },
    Vector {
        headers: headers!("x-vercel-signature" => SHA1_HEX),
        ..body("vercel")
    },
    Vector {
        headers: headers!("x-paystack-signature" => "49807b48470b1139134169e8a088a19fa4e99be87d56928f05efef5d5e6059e0ef39b1d3178ddb8634c87cd40e13a6df9396dac5a93aa9b070a6fc0e96b059db"),
        ..body("paystack")
    },
    Vector {
        headers: headers!("Typeform-Signature" => "sha256=DrmhK3milcHXhTdqi77zQ9efWx0wDUuZ4YYqs9YOH0E="),
        ..body("typeform")
    },
    Vector {
        headers: headers!("X-WC-Webhook-Signature" => B64),
        ..body("woocommerce")
    },
    Vector {
        headers: headers!("X-Shopify-Hmac-Sha256" => B64),
        ..body("shopify")
    },
    Vector {
        // The key in slot 2 signed: DocuSign numbers the header by key.
        headers: headers!("X-DocuSign-Signature-2" => B64),
        secrets: &["other-connect-key", SECRET],
        matching: 1,
        ..body("docusign")
    },
    Vector {
        // Rotation: two v1 signatures, the second is the current secret's.
        headers: headers!("X-PagerDuty-Signature" => "v1=bbdf058fef1a71228d2a70bbbd9de25ebbd9682e32947573972521338597d585,v1=0eb9a12b79a295c1d785376a8bbef343d79f5b1d300d4b99e1862ab3d60e1f41"),
        ..body("pagerduty")
    },
    Vector {
        headers: headers!("X-Airtable-Content-MAC" => "hmac-sha256=a8ac4cb885a68638471248181023cae472f2b43214fd17a4fd9e8ee905060266"),
        secrets: &["YWlydGFibGUtbWFjLXNlY3JldC0zMi1ieXRlcyEhISE="],
        wrong_secret: "c2VjcmV0",
        ..body("airtable")
    },
    Vector {
        headers: headers!("Calendly-Webhook-Signature" => "t=1700000000,v1=c67c06f43a7c737b66abd1e0bf1b42717e8669ec70a5ae0a80a817ab6663d049"),
        now: 1_700_000_000,
        ..body("calendly")
    },
    Vector {
        headers: headers!(
            "x-webflow-timestamp" => "1700000000000",
            "x-webflow-signature" => "1e906ae4b192b21fa1a5c0a47a6ffca659e49e05145bb36d7ff3c05f08f51488",
        ),
        now: 1_700_000_000,
        ..body("webflow")
    },
    Vector {
        headers: headers!(
            "x-zm-request-timestamp" => "1700000000",
            "x-zm-signature" => "v0=d020d2aea1d8df033324ec12de12a3821f45653e08a08620b5e7a01e8414e437",
        ),
        now: 1_700_000_000,
        ..body("zoom")
    },
    Vector {
        // Rotation: the first signature is the old secret's.
        headers: headers!("recurly-signature" => "1700000000000,ca56adb8d863b598c1ee515377898023d51d0c1ba9c1e9481e7de042cabb1756,c64682ebd2c271808adc2080f790d146582799674853b7b8a4287b12cdb113a9"),
        now: 1_700_000_000,
        ..body("recurly")
    },
    Vector {
        headers: headers!(
            "Twitch-Eventsub-Message-Id" => "e76c6bd4-55c9-4987-8304-da1588d8988b",
            "Twitch-Eventsub-Message-Timestamp" => "2023-11-14T22:13:20.123456789Z",
            "Twitch-Eventsub-Message-Signature" => "sha256=aa06ac04353632c4de5b8a7347f8cd30023a2efb6dde45edf9f695d207c78dce",
        ),
        now: 1_700_000_000,
        ..body("twitch-eventsub")
    },
    Vector {
        headers: headers!("Linear-Signature" => "8f907dcb89784bd6bc197feb5443fb4f4d49acaf389d1e974ecf358607923a57"),
        body: r#"{"action":"create","type":"Issue","webhookTimestamp":1700000000000}"#,
        now: 1_700_000_000,
        // A value, not a key: the body stays valid JSON with its timestamp.
        tamper: Some("create"),
        ..body("linear")
    },
    Vector {
        headers: headers!(
            "svix-id" => "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
            "svix-timestamp" => "1700000000",
            "svix-signature" => "v1,11WGT9uIr+ci5rwFj02eBXBBBiKaq/b3CukaMJFwM1c=",
        ),
        secrets: &["whsec_c3RhbmRhcmQtd2ViaG9va3Mta2V5LTMyLWJ5dGVzISE="],
        wrong_secret: "whsec_c2VjcmV0",
        now: 1_700_000_000,
        ..body("clerk")
    },
    Vector {
        headers: headers!(
            "svix-id" => "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
            "svix-timestamp" => "1700000000",
            "svix-signature" => "v1,11WGT9uIr+ci5rwFj02eBXBBBiKaq/b3CukaMJFwM1c=",
        ),
        secrets: &["whsec_c3RhbmRhcmQtd2ViaG9va3Mta2V5LTMyLWJ5dGVzISE="],
        wrong_secret: "whsec_c2VjcmV0",
        now: 1_700_000_000,
        ..body("resend")
    },
    Vector {
        headers: headers!(
            "X-Signature-Timestamp" => "1700000000",
            "X-Signature-Ed25519" => "9d8acd4960808ff4b10d12533b226aa92b7021fad3a29d84186b0c1429124ced1cad2dccde7ef41054c4e312bd5978996fd9156279b09c3a34bbb98cf23ab803",
        ),
        body: r#"{"id":"1","type":1,"application_id":"2","token":"t","version":1}"#,
        secrets: &["0d15438587449c35ac9577a4cc5b6687004e1648a87e2b8f2ab993e8b6372fe0"],
        // RFC 8032 test 1 public key: valid, not the signer's.
        wrong_secret: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        now: 1_700_000_000,
        ..body("discord")
    },
    Vector {
        // twilio-python's published SHA-1 request (its signature
        // `RSOYDt4T1cUTdK1PDd93/VVr8B8=` with the token `12345`, which the
        // script reproduces), signed with SHA-256 and a SharedKey.
        headers: headers!(
            "X-Twilio-Signature" => "myLckOh2V8YL3ZCHi/Nu/uceAttGJvz9WFn53J8+vV4=",
            "Content-Type" => "application/x-www-form-urlencoded",
        ),
        body: "CallSid=CA1234567890ABCDE&Digits=1234&From=%2B14158675309&To=%2B18005551212&Caller=%2B14158675309",
        url: Some("https://mycompany.com/myapp.php?foo=1&bar=2"),
        secrets: &[TWILIO_SHARED_KEY],
        ..body("twilio-sha256")
    },
    Vector {
        // A JSON body bound by the URL's `bodySHA256`.
        headers: headers!(
            "X-Twilio-Signature" => "OfY+DCkWWqlykxgb2JpRocjAWm6KcqkiO3s3VK+qR84=",
            "Content-Type" => "application/json",
        ),
        body: r#"{"CallSid":"CA1234567890ABCDE","Caller":"+12349013030"}"#,
        url: Some(
            "https://example.com/myapp?bodySHA256=5ccde7145dfb8f56479710896586cb9d5911809d83afbe34627818790db0aec9",
        ),
        secrets: &[TWILIO_SHARED_KEY],
        ..body("twilio-sha256")
    },
    Vector {
        // A compact JWS (HS256): claims `iss` and the body's `sha256`.
        headers: headers!("X-Webhook-Signature" => NETLIFY_JWS),
        ..body("netlify")
    },
    Vector {
        // A token is compared as it is: the same text in the header.
        headers: headers!("X-Gitlab-Token" => SECRET),
        ..body("gitlab")
    },
    Vector {
        headers: headers!("Authorization" => "Basic aG9va2JveDpzM2NyZXQ="),
        secrets: &["hookbox:s3cret"],
        wrong_secret: "hookbox:other",
        ..body("chargebee")
    },
    Vector {
        headers: headers!("Authorization" => "Basic aG9va2JveDpzM2NyZXQ="),
        secrets: &["hookbox:s3cret"],
        wrong_secret: "hookbox:other",
        ..body("postmark")
    },
    // Presets added for issue #45 (2026-12-04): no published vector, and
    // no official SDK function that signs or verifies them (see
    // tools/presets/official-vectors-research.md).
    Vector {
        headers: headers!("X-Alchemy-Signature" => HEX),
        ..body("alchemy")
    },
    Vector {
        headers: headers!("Attio-Signature" => HEX),
        ..body("attio")
    },
    Vector {
        headers: headers!("X-Cal-Signature-256" => HEX),
        ..body("cal-com")
    },
    Vector {
        headers: headers!("Cko-Signature" => HEX),
        ..body("checkout-com")
    },
    Vector {
        headers: headers!("X-Signature" => HEX),
        ..body("clickup")
    },
    Vector {
        headers: headers!("X-Gitea-Signature" => HEX),
        ..body("gitea")
    },
    Vector {
        headers: headers!("X-Chargify-Webhook-Signature-Hmac-Sha-256" => HEX),
        ..body("maxio")
    },
    Vector {
        headers: headers!("x-sendbird-signature" => HEX),
        ..body("sendbird")
    },
    Vector {
        headers: headers!(
            "X-Payload-Digest" => HEX,
            "X-Payload-Digest-Alg" => "HMAC_SHA256_HEX",
        ),
        ..body("sumsub")
    },
    Vector {
        headers: headers!("X-HMAC-SIGNATURE" => HEX),
        ..body("veriff")
    },
    Vector {
        headers: headers!("X-Bolt-Hmac-Sha256" => B64),
        ..body("bolt")
    },
    Vector {
        headers: headers!("Heroku-Webhook-Hmac-SHA256" => B64),
        ..body("heroku")
    },
    Vector {
        headers: headers!("Tally-Signature" => B64),
        ..body("tally")
    },
    Vector {
        headers: headers!("x-twitter-webhooks-signature" => "sha256=DrmhK3milcHXhTdqi77zQ9efWx0wDUuZ4YYqs9YOH0E="),
        ..body("x-activity")
    },
    Vector {
        headers: headers!("X-HelpScout-Signature" => "lunIZ8LEP6VmiZ5RyLLBVAkluSk="),
        ..body("help-scout")
    },
    Vector {
        // The key is the base64-decoded security token.
        headers: headers!("Authorization" => "HMAC i5son9g2DFmO8tYsnPWZV2Ci58YATwipLApviI0VGHY="),
        secrets: &["dGVhbXMtb3V0Z29pbmctd2ViaG9vay10b2tlbi0zMmI="],
        wrong_secret: "c2VjcmV0",
        ..body("microsoft-teams")
    },
    Vector {
        // The key is the hex-decoded secret.
        headers: headers!("Squarespace-Signature" => "1e1c96fae044cfc81e2ce1eac1daaa596271cabd84f1c31740eb9ee4892d1c4b"),
        secrets: &["e8e9c55551a368c30fbb4cafd81f648ad6e032f2ab41d830cf338e219972244b"],
        wrong_secret: "00ff",
        ..body("squarespace")
    },
    Vector {
        headers: headers!(
            "close-sig-timestamp" => "1700000000",
            "close-sig-hash" => "64aac5b2f450eb6b2472f4c8deba3e321aef58fba696156c14a3e964c3280017",
        ),
        secrets: &["e8e9c55551a368c30fbb4cafd81f648ad6e032f2ab41d830cf338e219972244b"],
        wrong_secret: "00ff",
        now: 1_700_000_000,
        ..body("close")
    },
    Vector {
        headers: headers!(
            "x-timestamp" => "1700000000000",
            "x-signature" => "2200b9667807cec326bc0ba0032701cb63db4fe80ae401dcf79d412fd15990a4",
        ),
        now: 1_700_000_000,
        ..body("airwallex")
    },
    Vector {
        headers: headers!("Persona-Signature" => "t=1700000000,v1=c67c06f43a7c737b66abd1e0bf1b42717e8669ec70a5ae0a80a817ab6663d049"),
        now: 1_700_000_000,
        ..body("persona")
    },
    Vector {
        headers: headers!(
            "X-Buildkite-Signature" => "timestamp=1700000000,signature=c67c06f43a7c737b66abd1e0bf1b42717e8669ec70a5ae0a80a817ab6663d049",
        ),
        now: 1_700_000_000,
        ..body("buildkite")
    },
    Vector {
        headers: headers!(
            "X-Frameio-Request-Timestamp" => "1700000000",
            "X-Frameio-Signature" => "v0=d020d2aea1d8df033324ec12de12a3821f45653e08a08620b5e7a01e8414e437",
        ),
        now: 1_700_000_000,
        ..body("frame-io")
    },
    Vector {
        headers: headers!(
            "X-CIO-Timestamp" => "1700000000",
            "X-CIO-Signature" => "d020d2aea1d8df033324ec12de12a3821f45653e08a08620b5e7a01e8414e437",
        ),
        now: 1_700_000_000,
        ..body("customer-io")
    },
    Vector {
        headers: headers!(
            "X-Zendesk-Webhook-Signature-Timestamp" => "2023-11-14T22:13:20Z",
            "X-Zendesk-Webhook-Signature" => "58wbRYZx1aGgqYW5h6G9ACacBw59Iae6eOe+F1wln2A=",
        ),
        now: 1_700_000_000,
        ..body("zendesk")
    },
    Vector {
        headers: headers!("verif-hash" => SECRET),
        ..body("flutterwave")
    },
    Vector {
        headers: headers!("x-callback-token" => SECRET),
        ..body("xendit")
    },
    Vector {
        headers: headers!("Authorization" => SECRET),
        ..body("okta")
    },
    Vector {
        headers: headers!("X-Telegram-Bot-Api-Secret-Token" => SECRET),
        ..body("telegram")
    },
    Vector {
        headers: headers!("X-Vapi-Secret" => SECRET),
        ..body("vapi")
    },
    Vector {
        headers: headers!("Authorization" => "Basic aG9va2JveDpzM2NyZXQ="),
        secrets: &["hookbox:s3cret"],
        wrong_secret: "hookbox:other",
        ..body("mailjet")
    },
    Vector {
        // `an-important-request-payload` with `hunter123`: one of the
        // examples a third-party reference (hookdeck/webhook-skills,
        // circleci-webhooks) attributes to CircleCI's validation guide,
        // which could not be read here.
        headers: headers!("circleci-signature" => "v1=9be2242094a9a8c00c64306f382a7f9d691de910b4a266f67bd314ef18ac49fa"),
        body: "an-important-request-payload",
        secrets: &["hunter123"],
        ..body("circleci")
    },
    // Batched webhooks (issue #45): SparkPost signs nothing; its basic
    // credentials are those of its API docs' example.
    Vector {
        headers: headers!(
            "Authorization" => "Basic YmFzaWNhdXRodXNlcjpteXBhc3N3b3Jk",
            "X-MessageSystems-Batch-ID" => "77c2b630-d712-11e4-b7cd-47b0a8e2f1f0",
        ),
        body: SPARKPOST_BATCH,
        secrets: &["basicauthuser:mypassword"],
        wrong_secret: "basicauthuser:other",
        ..body("sparkpost")
    },
    // Mandrill: the URL, then `mandrill_events` and its decoded value.
    Vector {
        headers: headers!(
            "X-Mandrill-Signature" => "5zJiSweeckKy1/XtjADuGxi6S2A=",
            "Content-Type" => "application/x-www-form-urlencoded",
        ),
        body: MANDRILL_EVENTS,
        url: Some(MANDRILL_URL),
        // An event's `ts`, inside the signed parameter.
        tamper: Some("1365111111"),
        ..body("mandrill")
    },
    // The POST that adds a webhook: no event, the generic key.
    Vector {
        headers: headers!(
            "X-Mandrill-Signature" => "C3rJOk0zIRTP8UIkTTkUtgDTnSg=",
            "Content-Type" => "application/x-www-form-urlencoded",
        ),
        body: "mandrill_events=%5B%5D",
        url: Some(MANDRILL_URL),
        secrets: &[SECRET, "test-webhook"],
        matching: 1,
        ..body("mandrill")
    },
];

const MANDRILL_URL: &str = "https://hooks.example.com/webhooks/mandrill";
/// One `send` event as Mandrill's examples write it, form-encoded.
const MANDRILL_EVENTS: &str = "mandrill_events=%5B%7B%22event%22%3A%22send%22%2C%22msg%22%3A%7B%22ts%22%3A1365109999%2C%22email%22%3A%22example.webhook%40mandrillapp.com%22%2C%22state%22%3A%22sent%22%2C%22_id%22%3A%22exampleaaaaaaaaaaaaaaaaaaaaaaaaa%22%7D%2C%22_id%22%3A%22exampleaaaaaaaaaaaaaaaaaaaaaaaaa%22%2C%22ts%22%3A1365111111%7D%5D";

/// A batch of two events as SparkPost documents them (developers.sparkpost.com/api/webhooks/),
/// shortened.
const SPARKPOST_BATCH: &str = r#"[{"msys":{"message_event":{"type":"delivery","event_id":"92356927693813856","message_id":"000443ee14578172be22","rcpt_to":"recipient@example.com","timestamp":"1460989507"}}},{"msys":{"track_event":{"type":"click","event_id":"92356927693813857","message_id":"000443ee14578172be22","target_link_url":"https://example.com","timestamp":"1460989508"}}}]"#;

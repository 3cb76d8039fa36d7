//! Issue #28, acceptance 2 and 7: on the local stack, through the real
//! authorizer and ingest handlers with the events API Gateway builds, every
//! provider handshake hookbox answers is answered byte for byte as the
//! provider documents it, and stores nothing: the POST ones signed as the
//! provider signs them (Slack, Zoom, Twitch, Discord's Ed25519 PING), the
//! GET ones (Meta's `hub.challenge` with its verify token, Dropbox's
//! `challenge`). A wrongly signed POST handshake, a GET with the wrong
//! verify token, an over-long challenge and a GET to a partner whose
//! provider sends none are refused with a 4xx. Asana's unsigned first
//! request is echoed only for a partner that enrols (`enroll_key`), 403
//! otherwise. Through PostgreSQL and through the Data API.

use hookbox::signature::Secret;
use hookbox::signature::presets::{self, Outgoing, SigningKey};
use hookbox_e2e::{number, stack};
use hookbox_testkit::TestDb;
use serde_json::json;

const SLACK_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const ZOOM_SECRET: &str = "zoom-secret-token";
const TWITCH_SECRET: &str = "twitch-subscription-secret";
const META_APP_SECRET: &str = "meta-app-secret";
const META_VERIFY_TOKEN: &str = "meatyhamhock";
const DROPBOX_APP_SECRET: &str = "dropbox-app-secret";
const OKTA_SECRET: &str = "okta-hook-authentication-value";
const X_SECRET: &str = "x-consumer-secret";
/// Discord signs with the application's private key; its public key is
/// the partner's secret.
const DISCORD_SEED: [u8; 32] = [7; 32];
/// The secret of Asana's documented handshake ("Establish a webhook").
const ASANA_SECRET: &str = "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81";

/// The answer: status, content type, `X-Content-Type-Options`, body.
type Answer = (u16, Option<String>, Option<String>, String);

async fn answer(response: reqwest::Response) -> Answer {
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (content_type, nosniff) = (header("content-type"), header("x-content-type-options"));
    let status = response.status().as_u16();
    (
        status,
        content_type,
        nosniff,
        response.text().await.expect("body"),
    )
}

struct Client {
    base: String,
    http: reqwest::Client,
}

impl Client {
    /// POSTs `body` to `partner`, signed now by preset `preset` with `key`.
    async fn post(
        &self,
        partner: &str,
        preset: &str,
        key: SigningKey<'_>,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        let signed = presets::get(preset)
            .expect("preset")
            .sign(
                &Outgoing {
                    body: body.as_bytes(),
                    headers,
                    url: None,
                    method: "POST",
                    timestamp: chrono::Utc::now(),
                },
                key,
            )
            .expect("sign");
        let mut request = self
            .http
            .post(format!("{}/webhooks/{partner}", self.base))
            .header("content-type", "application/json")
            .body(body.to_owned());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        for (name, value) in signed {
            request = request.header(name, value);
        }
        answer(request.send().await.expect("POST")).await
    }

    /// GETs `partner`'s webhook URL with `query` (sent encoded).
    async fn get(&self, partner: &str, query: &[(&str, &str)]) -> Answer {
        self.get_with(partner, query, &[]).await
    }

    /// A GET with `headers` too (Okta's challenge and authentication).
    async fn get_with(
        &self,
        partner: &str,
        query: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> Answer {
        let query = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(query)
            .finish();
        let mut request = self
            .http
            .get(format!("{}/webhooks/{partner}?{query}", self.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        answer(request.send().await.expect("GET")).await
    }
}

/// An echoed challenge: plain text the browser may not sniff as HTML.
fn text(body: &str) -> Answer {
    (
        200,
        Some("text/plain".into()),
        Some("nosniff".into()),
        body.into(),
    )
}

async fn handshakes_on_the_local_stack(data_api: bool) {
    let test_db = TestDb::create().await;
    let discord_public = SigningKey::Ed25519Seed(&DISCORD_SEED)
        .verifying_secret()
        .expect("public key");
    let mut config: serde_json::Value =
        serde_json::from_str(&hookbox_local::demo_config(0)).expect("demo config");
    let partners = &mut config["partners"];
    partners["slack"] = json!({"signature": {"scheme": "slack"}, "secrets": [SLACK_SECRET]});
    partners["zoom"] = json!({"signature": {"scheme": "preset", "name": "zoom"},
                              "secrets": ["old-zoom-token", ZOOM_SECRET]});
    partners["twitch"] = json!({"signature": {"scheme": "preset", "name": "twitch-eventsub"},
                                "secrets": [TWITCH_SECRET]});
    partners["discord"] = json!({"signature": {"scheme": "preset", "name": "discord"},
                                 "secrets": [discord_public.expose_secret()]});
    partners["meta"] = json!({"signature": {"scheme": "preset", "name": "meta"},
                              "secrets": [META_APP_SECRET],
                              "verify_tokens": ["old-token", META_VERIFY_TOKEN]});
    partners["dropbox"] = json!({"signature": {"scheme": "preset", "name": "dropbox"},
                                 "secrets": [DROPBOX_APP_SECRET]});
    partners["okta"] = json!({"preset": "okta", "secrets": ["old-okta-value", OKTA_SECRET]});
    partners["x"] = json!({"preset": "x-activity", "secrets": [X_SECRET]});
    let operator = hookbox::config::enroll::EnrollPrivateKey::generate();
    partners["asana"] = json!({"preset": "asana", "enroll_key": operator.public().to_base64()});
    partners["asana-enrolled"] = json!({"preset": "asana", "secrets": [ASANA_SECRET]});
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("hookbox.json");
    std::fs::write(&path, config.to_string()).expect("write config");
    let stack = stack(&test_db, |o| {
        o.config = Some(path.clone());
        o.data_api = data_api;
    })
    .await;
    let client = Client {
        base: stack.url().to_owned(),
        http: reqwest::Client::new(),
    };
    let secret = |s: &str| Secret::new(s);

    // POST handshakes, signed as each provider signs them
    let slack = r#"{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;
    let slack_secret = secret(SLACK_SECRET);
    assert_eq!(
        client
            .post(
                "slack",
                "slack",
                SigningKey::Secret(&slack_secret),
                &[],
                slack
            )
            .await,
        text("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P")
    );
    let zoom = r#"{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}"#;
    let zoom_secret = secret(ZOOM_SECRET);
    assert_eq!(
        client
            .post("zoom", "zoom", SigningKey::Secret(&zoom_secret), &[], zoom)
            .await,
        (
            200,
            Some("application/json".into()),
            None,
            r#"{"plainToken":"qgg8vlvZRS6UYooatFL8Aw","encryptedToken":"d9e0d764a78494688ba3f2d5c0ed4ca311394b4834d959759213424d2df961e3"}"#.into()
        )
    );
    let twitch_headers = [
        (
            "Twitch-Eventsub-Message-Id",
            "e76c6bd4-55c9-4987-8304-da1588d8988b",
        ),
        (
            "Twitch-Eventsub-Message-Type",
            "webhook_callback_verification",
        ),
    ];
    let twitch = r#"{"challenge":"pogchamp-kappa-360noscope-vohiyo","subscription":{"type":"channel.follow"}}"#;
    let twitch_secret = secret(TWITCH_SECRET);
    assert_eq!(
        client
            .post(
                "twitch",
                "twitch-eventsub",
                SigningKey::Secret(&twitch_secret),
                &twitch_headers,
                twitch,
            )
            .await,
        text("pogchamp-kappa-360noscope-vohiyo")
    );
    // Discord's PING (its documentation's shape), Ed25519-signed
    let ping =
        r#"{"id":"1234567890","application_id":"0987654321","type":1,"token":"t","version":1}"#;
    assert_eq!(
        client
            .post(
                "discord",
                "discord",
                SigningKey::Ed25519Seed(&DISCORD_SEED),
                &[],
                ping
            )
            .await,
        (
            200,
            Some("application/json".into()),
            None,
            r#"{"type":1}"#.into()
        )
    );

    // Asana's unsigned first request, to a partner that enrols: the header
    // echoed, 200, no body; to one that does not: 403, nothing echoed
    let asana = |partner: &'static str| {
        client
            .http
            .post(format!("{}/webhooks/{partner}", client.base))
            .header("X-Hook-Secret", ASANA_SECRET)
            .send()
    };
    let echoed = asana("asana").await.expect("POST");
    assert_eq!(echoed.status(), 200);
    assert_eq!(
        echoed
            .headers()
            .get("x-hook-secret")
            .and_then(|v| v.to_str().ok()),
        Some(ASANA_SECRET)
    );
    assert!(echoed.headers().get("content-type").is_none());
    assert_eq!(echoed.text().await.expect("body"), "");
    let refused = asana("asana-enrolled").await.expect("POST");
    assert_eq!(refused.status(), 403);
    assert!(refused.headers().get("x-hook-secret").is_none());
    assert!(!refused.text().await.expect("body").contains(ASANA_SECRET));

    // GET handshakes: Meta's example request, Dropbox's challenge
    let meta = [
        ("hub.mode", "subscribe"),
        ("hub.challenge", "1158201444"),
        ("hub.verify_token", META_VERIFY_TOKEN),
    ];
    assert_eq!(client.get("meta", &meta).await, text("1158201444"));
    let dropbox = [("challenge", "F4bTjvZEuAu7C2yF0DhDtb0Ed6ZtWdHN")];
    assert_eq!(
        client.get("dropbox", &dropbox).await,
        text("F4bTjvZEuAu7C2yF0DhDtb0Ed6ZtWdHN")
    );
    // Okta's one-time verification: the challenge header, answered once
    // its authentication header is one of the partner's secrets; X's CRC,
    // answered with the token signed by the consumer secret
    let okta_challenge = "X5PhkuYcHW1ktEuMELEz";
    let (status, _, _, body) = client
        .get_with(
            "okta",
            &[],
            &[
                ("X-Okta-Verification-Challenge", okta_challenge),
                ("Authorization", OKTA_SECRET),
            ],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let okta: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(okta, json!({"verification": okta_challenge}));
    let (status, _, _, body) = client
        .get_with(
            "okta",
            &[],
            &[
                ("X-Okta-Verification-Challenge", okta_challenge),
                ("Authorization", "guessed"),
            ],
        )
        .await;
    assert_eq!(status, 403, "{body}");
    assert!(!body.contains(okta_challenge), "{body}");
    let (status, _, _, body) = client.get("x", &[("crc_token", "crc-abc")]).await;
    assert_eq!(status, 200, "{body}");
    let x_headers = hookbox::signature::Headers::new();
    let expected = presets::Handshake::XCrc
        .answer_get_request(
            &presets::GetRequest {
                query: &[("crc_token", "crc-abc")],
                headers: &x_headers,
            },
            &[],
            &[Secret::new(X_SECRET)],
        )
        .expect("the CRC answer");
    assert_eq!(body.as_bytes(), expected.body.as_slice());
    assert!(body.contains("sha256="), "{body}");
    assert_eq!(
        number(stack.db().as_ref(), "SELECT count(*) AS n FROM inbox").await,
        0,
        "a handshake stores nothing"
    );

    // refused: 4xx, no challenge echoed
    let wrong = secret("not-the-secret-at-all");
    let wrong_seed = [9u8; 32];
    for (partner, preset, key, headers, body) in [
        ("slack", "slack", SigningKey::Secret(&wrong), &[][..], slack),
        ("zoom", "zoom", SigningKey::Secret(&wrong), &[][..], zoom),
        (
            "twitch",
            "twitch-eventsub",
            SigningKey::Secret(&wrong),
            &twitch_headers[..],
            twitch,
        ),
        (
            "discord",
            "discord",
            SigningKey::Ed25519Seed(&wrong_seed),
            &[][..],
            ping,
        ),
    ] {
        let (status, _, _, body) = client.post(partner, preset, key, headers, body).await;
        assert_eq!(status, 401, "{partner}: {body}");
        assert!(
            !body.contains("challenge") && !body.contains("3eZbrw"),
            "{partner}: {body}"
        );
    }
    let refused_get = [
        (
            "meta",
            vec![
                ("hub.mode", "subscribe"),
                ("hub.challenge", "1158201444"),
                ("hub.verify_token", "guessed"),
            ],
        ),
        ("meta", vec![("hub.challenge", "1158201444")]),
        ("dropbox", vec![("challenge", "")]),
        ("demo", vec![("challenge", "abc")]),
        ("slack", vec![("challenge", "abc")]),
        ("nobody", vec![("challenge", "abc")]),
    ];
    for (partner, query) in &refused_get {
        let (status, _, _, body) = client.get(partner, query).await;
        assert_eq!(status, 403, "GET {partner} {query:?}: {body}");
        assert!(
            !body.contains("1158201444") && !body.contains("abc"),
            "{body}"
        );
    }
    let long = "a".repeat(presets::MAX_CHALLENGE_BYTES + 1);
    let (status, _, _, body) = client.get("dropbox", &[("challenge", &long)]).await;
    assert_eq!(status, 403, "{body}");
    assert!(!body.contains(&long));
    assert_eq!(
        number(stack.db().as_ref(), "SELECT count(*) AS n FROM inbox").await,
        0
    );
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshakes_are_answered_on_the_local_stack_through_postgres() {
    handshakes_on_the_local_stack(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshakes_are_answered_on_the_local_stack_through_the_data_api() {
    handshakes_on_the_local_stack(true).await;
}

//! Issue #28, item 4 (POST handshakes), through both database adapters and
//! the real ingest use case: a provider's handshake, signed as the provider
//! signs it, is answered byte for byte and stores nothing; a wrongly
//! signed one is a 401 and stores nothing; a malformed one is a 400 naming
//! the field; the partner's ordinary events are still stored. Asana's
//! unsigned first request is answered only while the partner enrols, and
//! the secret it hands over leaves ingest only sealed to the operator's key.

mod common;

use std::sync::Arc;

use common::{Adapter, count, migrated_db};
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::enroll::EnrollPrivateKey;
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::inbox::ingest::{Ingest, IngestRequest, IngestResponse, Outcome};
use hookbox::metrics::Metrics;
use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
use hookbox::signature::{Headers, presets};
use hookbox::store::Database;

const SLACK_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const ZOOM_SECRET: &str = "zoom-secret-token";
const TWITCH_SECRET: &str = "twitch-subscription-secret";

fn config() -> HookboxConfig {
    HookboxConfig::parse(
        &serde_json::json!({
            "partners": {
                "slack": {"signature": {"scheme": "slack"}, "secrets": [SLACK_SECRET],
                          "event_id": {"json_pointer": "/event_id"}},
                "zoom": {"signature": {"scheme": "preset", "name": "zoom"},
                         "secrets": ["old-zoom-token", ZOOM_SECRET]},
                "twitch": {"signature": {"scheme": "preset", "name": "twitch-eventsub"},
                           "secrets": [TWITCH_SECRET],
                           "event_id": {"header": "twitch-eventsub-message-id"}},
            }
        })
        .to_string(),
        "test",
    )
    .expect("valid")
}

struct Rig {
    db: Arc<dyn Database>,
    clock: Arc<ManualClock>,
    ingest: Ingest,
}

impl Rig {
    fn new(db: Arc<dyn Database>) -> Self {
        Self::with(db, config())
    }

    fn with(db: Arc<dyn Database>, config: HookboxConfig) -> Self {
        let clock = Arc::new(ManualClock::new(common::t0()));
        let queue = MemoryQueue::new(MemoryQueueConfig::default(), clock.clone());
        let store = Arc::new(ConfigStore::fixed(config, clock.clone()));
        let ingest = Ingest::new(
            store,
            db.clone(),
            Arc::new(queue),
            Arc::new(MemoryBlobStore::new()),
            clock.clone(),
        );
        Self { db, clock, ingest }
    }

    /// `body` with `headers`, signed by preset `preset` with `secret`, to
    /// `partner`.
    async fn post(
        &self,
        partner: &str,
        preset: &str,
        secret: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> IngestResponse {
        common::ingest_signed_by_preset(
            &self.ingest,
            partner,
            presets::get(preset).expect("preset"),
            secret,
            headers,
            body,
            self.clock.now(),
        )
        .await
    }

    /// An unsigned POST.
    async fn raw(&self, partner: &str, headers: &[(&str, &str)], body: &str) -> IngestResponse {
        let request = IngestRequest {
            partner,
            headers: Headers::from_pairs(headers.iter().copied()),
            body: body.as_bytes(),
            url: None,
        };
        self.ingest.handle(&request, &mut Metrics::new()).await
    }

    async fn rows(&self) -> i64 {
        count(self.db.as_ref(), "SELECT count(*) AS n FROM inbox").await
    }
}

fn answered(response: &IngestResponse) -> (Option<&'static str>, String) {
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(response.outcome, Outcome::Handshake);
    let answer = response.handshake.as_ref().expect("a handshake answer");
    assert_eq!(answer.status, 200);
    (
        answer.content_type,
        String::from_utf8(answer.body.clone()).expect("text"),
    )
}

async fn handshakes_are_answered_byte_for_byte_and_store_nothing(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let rig = Rig::new(db);

    // Slack's url_verification (the example of Slack's Events API docs)
    let slack = r#"{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;
    let r = rig.post("slack", "slack", SLACK_SECRET, &[], slack).await;
    assert_eq!(
        answered(&r),
        (
            Some("text/plain"),
            "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P".to_owned()
        )
    );

    // Zoom's endpoint.url_validation, answered with the secret that
    // verified it (the second of the partner's secrets); the HMAC computed
    // with Python's hmac module
    let zoom = r#"{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}"#;
    let r = rig.post("zoom", "zoom", ZOOM_SECRET, &[], zoom).await;
    assert_eq!(
        answered(&r),
        (
            Some("application/json"),
            r#"{"plainToken":"qgg8vlvZRS6UYooatFL8Aw","encryptedToken":"d9e0d764a78494688ba3f2d5c0ed4ca311394b4834d959759213424d2df961e3"}"#.to_owned()
        )
    );

    // Twitch's webhook_callback_verification: the raw challenge
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
    let r = rig
        .post(
            "twitch",
            "twitch-eventsub",
            TWITCH_SECRET,
            &twitch_headers,
            twitch,
        )
        .await;
    assert_eq!(
        answered(&r),
        (
            Some("text/plain"),
            "pogchamp-kappa-360noscope-vohiyo".to_owned()
        )
    );
    assert_eq!(rig.rows().await, 0, "a handshake stores nothing");

    // signed with another secret: refused, nothing stored, no challenge
    for (partner, preset, body, headers) in [
        ("slack", "slack", slack, &[][..]),
        ("zoom", "zoom", zoom, &[][..]),
        ("twitch", "twitch-eventsub", twitch, &twitch_headers[..]),
    ] {
        let r = rig
            .post(partner, preset, "not-the-secret-at-all", headers, body)
            .await;
        assert_eq!(r.status, 401, "{partner}: {r:?}");
        assert!(r.handshake.is_none(), "{partner}");
        assert!(
            !r.body.to_string().contains("challenge"),
            "{partner}: {r:?}"
        );
    }

    // a malformed handshake: 400 naming the field
    let r = rig
        .post(
            "zoom",
            "zoom",
            ZOOM_SECRET,
            &[],
            r#"{"event":"endpoint.url_validation","payload":{"plainToken":""}}"#,
        )
        .await;
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(r.body["error"], "bad_handshake");
    assert!(
        r.body["detail"]
            .as_str()
            .is_some_and(|d| d.contains("payload.plainToken")),
        "{r:?}"
    );
    assert_eq!(rig.rows().await, 0);

    // the partners' events are stored as before
    let event =
        r#"{"type":"event_callback","event_id":"Ev08MFMKH6","event":{"type":"app_mention"}}"#;
    let r = rig.post("slack", "slack", SLACK_SECRET, &[], event).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.handshake.is_none());
    assert!(matches!(r.outcome, Outcome::Accepted { .. }), "{r:?}");
    let notification = [
        (
            "Twitch-Eventsub-Message-Id",
            "f1c2a387-161a-49f9-a165-0f21d7a4e1c4",
        ),
        ("Twitch-Eventsub-Message-Type", "notification"),
    ];
    let r = rig
        .post(
            "twitch",
            "twitch-eventsub",
            TWITCH_SECRET,
            &notification,
            r#"{"challenge":"not-a-handshake","event":{}}"#,
        )
        .await;
    assert!(matches!(r.outcome, Outcome::Accepted { .. }), "{r:?}");
    assert_eq!(rig.rows().await, 2);
}

/// The secret of Asana's documented handshake (developers.asana.com,
/// "Establish a webhook").
const ASANA_SECRET: &str = "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81";

async fn asana_enrols_only_with_a_key_and_its_secret_leaves_only_sealed(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let operator = EnrollPrivateKey::generate();
    let config = HookboxConfig::parse(
        &serde_json::json!({"partners": {
            "asana": {"preset": "asana", "enroll_key": operator.public().to_base64()},
            "asana-enrolled": {"preset": "asana", "secrets": [ASANA_SECRET]},
        }})
        .to_string(),
        "test",
    )
    .expect("valid");
    let rig = Rig::with(db, config);
    let handshake = [("X-Hook-Secret", ASANA_SECRET)];

    // the handshake: the header echoed, 200, no body, as Asana documents
    let r = rig.raw("asana", &handshake, "").await;
    assert_eq!(answered(&r), (None, String::new()));
    let answer = r.handshake.as_ref().expect("answer");
    assert_eq!(
        answer.headers,
        vec![("X-Hook-Secret", ASANA_SECRET.to_owned())]
    );
    // the secret is kept nowhere in clear: only sealed, for the operator
    let sealed = r.sealed_secret.as_deref().expect("sealed");
    assert!(!sealed.contains(ASANA_SECRET));
    assert!(!r.body.to_string().contains(ASANA_SECRET), "{r:?}");
    assert_eq!(operator.open(sealed).expect("opens"), ASANA_SECRET);
    assert!(EnrollPrivateKey::generate().open(sealed).is_err());
    assert_eq!(rig.rows().await, 0, "a handshake stores nothing");

    // until the operator adds it, the partner's events cannot verify: 401
    let event = r#"{"events":[{"action":"changed","resource":{"gid":"1"}}]}"#;
    let r = rig.post("asana", "asana", ASANA_SECRET, &[], event).await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (401, Some("no_secret_yet")),
        "{r:?}"
    );

    // a secret that could not be echoed: 400 naming the header
    let r = rig
        .raw("asana", &[("X-Hook-Secret", "two words")], "")
        .await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (400, Some("bad_handshake")),
        "{r:?}"
    );
    assert!(
        r.body["detail"]
            .as_str()
            .is_some_and(|d| d.contains("X-Hook-Secret"))
    );

    // a partner that is not enrolling answers no handshake: 403, no echo
    let r = rig.raw("asana-enrolled", &handshake, "").await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (403, Some("not_enrolling")),
        "{r:?}"
    );
    assert!(r.handshake.is_none() && r.sealed_secret.is_none());
    assert!(!r.body.to_string().contains(ASANA_SECRET), "{r:?}");

    // an unsigned event is still refused, a signed one stored
    let r = rig.raw("asana-enrolled", &[], event).await;
    assert_eq!(r.status, 401, "{r:?}");
    let r = rig
        .post("asana-enrolled", "asana", ASANA_SECRET, &[], event)
        .await;
    assert!(matches!(r.outcome, Outcome::Accepted { .. }), "{r:?}");
    assert_eq!(rig.rows().await, 1);
}

for_each_adapter!(
    handshakes_are_answered_byte_for_byte_and_store_nothing,
    asana_enrols_only_with_a_key_and_its_secret_leaves_only_sealed,
);

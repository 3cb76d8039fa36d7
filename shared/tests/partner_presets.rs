//! Issue #28, item 1: a partner names a preset (`"preset": "github"`) and
//! takes from it the signature, where the event id and the event type are
//! (a header, a JSON pointer or a composite) and the handshake; what it
//! gives itself overrides the preset. Parsing and its errors, then ingest
//! through both database adapters: the row's event id and type are read
//! where the preset says.

mod common;

use std::sync::Arc;

use common::{Adapter, migrated_db};
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, EventIdSource, FieldSource, HookboxConfig};
use hookbox::inbox::ingest::{Ingest, IngestResponse};
use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
use hookbox::signature::presets;
use hookbox::signature::{Headers, SchemeKind};
use hookbox::store::Database;
use serde_json::json;

fn parse(partners: serde_json::Value) -> Result<HookboxConfig, String> {
    HookboxConfig::parse(&json!({ "partners": partners }).to_string(), "test")
        .map_err(|e| e.to_string())
}

fn header(name: &str) -> FieldSource {
    FieldSource::Header(name.into())
}

fn pointer(p: &str) -> FieldSource {
    FieldSource::JsonPointer(p.into())
}

#[test]
fn a_partner_takes_its_presets_signature_event_id_type_and_handshake() {
    let config = parse(json!({
        "gh": {"preset": "github", "secrets": ["It's a Secret to Everybody"]},
        "stripe": {"preset": "stripe", "secrets": ["whsec_test"]},
        "recurly": {"preset": "recurly", "secrets": ["recurly-key"]},
        "calendly": {"preset": "calendly", "secrets": ["calendly-key"]},
        "meta": {"preset": "meta", "secrets": ["app"], "verify_tokens": ["tok"]},
        "slack": {"preset": "slack", "secrets": ["s"]},
    }))
    .expect("valid");
    let gh = config.partner("gh").expect("gh");
    assert_eq!(gh.preset, Some("github"));
    assert_eq!(gh.verifier.scheme(), SchemeKind::Github);
    assert_eq!(
        gh.event_id,
        EventIdSource::Header("x-github-delivery".into())
    );
    assert_eq!(gh.event_type, Some(header("x-github-event")));
    let stripe = config.partner("stripe").expect("stripe");
    assert_eq!(stripe.verifier.scheme(), SchemeKind::Stripe);
    assert_eq!(stripe.event_id, EventIdSource::JsonPointer("/id".into()));
    assert_eq!(stripe.event_type, Some(pointer("/type")));
    // every preset's fields, as the registry states them
    for (name, preset) in [("recurly", "recurly"), ("calendly", "calendly")] {
        let partner = config.partner(name).expect("partner");
        let preset = presets::get(preset).expect("preset");
        assert_eq!(partner.verifier.scheme(), SchemeKind::Preset, "{name}");
        match (&partner.event_id, preset.event_id) {
            (EventIdSource::Composite(parts), presets::EventField::Composite(fields)) => {
                assert_eq!(parts.len(), fields.len(), "{name}");
            }
            (EventIdSource::BodyHash, presets::EventField::Absent) => {}
            (EventIdSource::Header(h), presets::EventField::Header(f)) => {
                assert!(h.eq_ignore_ascii_case(f), "{name}");
            }
            (EventIdSource::JsonPointer(p), presets::EventField::Json(f)) => {
                assert_eq!(p, f, "{name}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    let calendly = config.partner("calendly").expect("calendly");
    assert!(
        matches!(&calendly.event_id, EventIdSource::Composite(parts) if parts.len() == 2),
        "{:?}",
        calendly.event_id
    );
    // handshakes come with the preset
    assert_eq!(
        config.partner("meta").expect("meta").handshake,
        presets::get("meta").expect("meta").handshake
    );
    assert!(config.partner("slack").expect("slack").handshake.is_some());
    // the headers it reads are kept with the row by default
    assert!(gh.keep_headers.iter().any(|h| h == "x-github-event"));
    assert!(gh.keep_headers.iter().any(|h| h == "x-github-delivery"));
}

#[test]
fn what_a_partner_gives_overrides_its_preset() {
    let config = parse(json!({
        "gh": {"preset": "github", "secrets": ["s"],
               "event_id": {"json_pointer": "/delivery"},
               "event_type": {"header": "X-Custom-Event"}},
        "slow": {"preset": "stripe", "secrets": ["whsec_test"],
                 "signature": {"scheme": "stripe", "tolerance_secs": 900}},
        "parts": {"preset": "github", "secrets": ["s"],
                  "event_id": {"composite": [{"header": "X-GitHub-Hook-ID"}, {"json_pointer": "/id"}]},
                  "event_type": "/action"},
    }))
    .expect("valid");
    let gh = config.partner("gh").expect("gh");
    assert_eq!(gh.event_id, EventIdSource::JsonPointer("/delivery".into()));
    assert_eq!(gh.event_type, Some(header("x-custom-event")));
    assert_eq!(gh.verifier.scheme(), SchemeKind::Github);
    let slow = config.partner("slow").expect("slow");
    assert_eq!(slow.verifier.scheme(), SchemeKind::Stripe);
    assert_eq!(
        slow.event_type,
        Some(pointer("/type")),
        "still the preset's"
    );
    let parts = config.partner("parts").expect("parts");
    assert_eq!(
        parts.event_id,
        EventIdSource::Composite(vec![header("x-github-hook-id"), pointer("/id")])
    );
    assert_eq!(parts.event_type, Some(pointer("/action")));
}

#[test]
fn a_bad_preset_field_is_refused_naming_the_partner_and_field() {
    let operator = hookbox::config::enroll::EnrollPrivateKey::generate();
    let enroll_key = operator.public().to_base64();
    const ENROLL_KEY: &str = "9kS7bdvCYPSYrnk5SUAiuc5GA3zuhR/iH3pFqNjsvUU=";
    // an enrolling partner needs no secret; an enrolled one may keep both
    for partner in [
        json!({"preset": "asana", "enroll_key": enroll_key}),
        json!({"preset": "asana", "enroll_key": enroll_key, "secrets": ["old"]}),
    ] {
        let config = parse(json!({ "p": partner })).expect("valid");
        let p = config.partner("p").expect("partner");
        assert_eq!(
            p.enroll_key.as_ref().map(|k| k.to_base64()),
            Some(enroll_key.clone())
        );
    }
    for (partner, want) in [
        (
            json!({"preset": "strype", "secrets": ["s"]}),
            "partner \"p\": preset: \"strype\" is not a preset",
        ),
        (
            json!({"secrets": ["s"]}),
            "partner \"p\": signature: give \"preset\"",
        ),
        (
            json!({"preset": "meta", "secrets": ["s"]}),
            "partner \"p\": verify_tokens: this provider's GET handshake checks a verify token",
        ),
        (
            json!({"preset": "github", "secrets": ["s"], "verify_tokens": ["t"]}),
            "partner \"p\": verify_tokens: only a partner whose handshake checks a verify token",
        ),
        (
            json!({"preset": "meta", "secrets": ["s"], "verify_tokens": ["has space"]}),
            "partner \"p\": verify_tokens[0]: a verify token is 1 to 1024 bytes of visible ASCII",
        ),
        (
            json!({"preset": "github", "secrets": ["s"],
                   "event_id": {"composite": [{"header": "a"}]}}),
            "partner \"p\": event_id: give exactly one",
        ),
        (
            json!({"preset": "github", "secrets": ["s"],
                   "event_id": {"composite": [{"header": "a"}, {"composite": []}]}}),
            "partner \"p\": event_id.composite[1]: give exactly one",
        ),
        (
            json!({"preset": "github", "secrets": ["s"], "event_type": {"json_pointer": "type"}}),
            "partner \"p\": event_type.json_pointer: \"type\" is not a JSON pointer",
        ),
        (
            json!({"preset": "github", "secrets": ["s"], "event_type": "type"}),
            "partner \"p\": event_type: \"type\" is not a JSON pointer",
        ),
        // enrolment (Asana hands its secret over in the handshake)
        (
            json!({"preset": "github", "enroll_key": ENROLL_KEY}),
            "partner \"p\": enroll_key: only a partner whose provider hands its secret over",
        ),
        (
            json!({"preset": "asana", "enroll_key": "has space"}),
            "partner \"p\": enroll_key: an enroll key must be standard base64 of 32 bytes",
        ),
        (
            json!({"preset": "asana", "enroll_key": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}),
            "partner \"p\": enroll_key: an enroll key must be the public key `hookbox enroll-key new` prints",
        ),
        (
            json!({"preset": "asana"}),
            "partner \"p\": secrets: at least one secret is required; to get it from the \
             provider's handshake, give \"enroll_key\"",
        ),
        (
            json!({"preset": "github", "secrets": []}),
            "partner \"p\": secrets: at least one secret is required",
        ),
    ] {
        let error = parse(json!({ "p": partner })).expect_err("refused");
        assert!(error.contains(want), "{partner}: {error}");
        assert!(!error.contains("has space"), "no token in errors: {error}");
    }
}

struct Rig {
    db: Arc<dyn Database>,
    clock: Arc<ManualClock>,
    ingest: Ingest,
}

const GITHUB_SECRET: &str = "It's a Secret to Everybody";
const CALENDLY_SECRET: &str = "calendly-signing-key";
const META_SECRET: &str = "meta-app-secret";
const DROPBOX_SECRET: &str = "dropbox-app-secret";
const OKTA_SECRET: &str = "okta-hook-authorization";

impl Rig {
    fn new(db: Arc<dyn Database>) -> Self {
        let clock = Arc::new(ManualClock::new(common::t0()));
        let config = parse(json!({
            "gh": {"preset": "github", "secrets": [GITHUB_SECRET]},
            "calendly": {"preset": "calendly", "secrets": [CALENDLY_SECRET]},
            "meta": {"preset": "meta", "secrets": [META_SECRET], "verify_tokens": ["tok"]},
            "dropbox": {"preset": "dropbox", "secrets": [DROPBOX_SECRET]},
            "okta": {"preset": "okta", "secrets": [OKTA_SECRET]},
        }))
        .expect("valid");
        let ingest = Ingest::new(
            Arc::new(ConfigStore::fixed(config, clock.clone())),
            db.clone(),
            Arc::new(MemoryQueue::new(
                MemoryQueueConfig::default(),
                clock.clone(),
            )),
            Arc::new(MemoryBlobStore::new()),
            clock.clone(),
        );
        Self { db, clock, ingest }
    }

    async fn post(
        &self,
        partner: &str,
        secret: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> IngestResponse {
        let preset = self
            .ingest_preset(partner)
            .unwrap_or_else(|| panic!("{partner}"));
        common::ingest_signed_by_preset(
            &self.ingest,
            partner,
            preset,
            secret,
            headers,
            body,
            self.clock.now(),
        )
        .await
    }

    fn ingest_preset(&self, partner: &str) -> Option<&'static presets::Preset> {
        presets::get(match partner {
            "gh" => "github",
            other => other,
        })
    }

    async fn row(&self, response: &IngestResponse) -> (String, Option<String>) {
        // a batch (meta's entries) answers the id of each event
        let id = response.body["id"]
            .as_str()
            .or(response.body["ids"][0].as_str())
            .unwrap_or_else(|| panic!("{response:?}"))
            .parse()
            .expect("uuid");
        let row = hookbox::inbox::get(self.db.as_ref(), id)
            .await
            .expect("get")
            .expect("row");
        (row.event_id, row.event_type)
    }
}

async fn ingest_reads_the_id_and_type_where_the_preset_says(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let rig = Rig::new(db);

    // GitHub: id and type in headers
    let push = [
        ("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"),
        ("X-GitHub-Event", "push"),
    ];
    let r = rig
        .post("gh", GITHUB_SECRET, &push, r#"{"ref":"refs/heads/main"}"#)
        .await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        rig.row(&r).await,
        (
            "72d3162e-cc78-11e3-81ab-4c9367dc0958".to_owned(),
            Some("push".to_owned())
        )
    );
    // the type header repeated with different values: ambiguous
    let twice = [
        ("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0959"),
        ("X-GitHub-Event", "push"),
        ("X-GitHub-Event", "release"),
    ];
    let r = rig
        .post("gh", GITHUB_SECRET, &twice, r#"{"ref":"x"}"#)
        .await;
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(r.body["error"], "ambiguous_event_type");

    // Calendly: no single id, a composite of the event and the invitee
    let created = r#"{"event":"invitee.created","created_at":"2020-11-23T17:51:19.000000Z","payload":{"uri":"https://api.calendly.com/scheduled_events/AAA/invitees/BBB"}}"#;
    let r = rig.post("calendly", CALENDLY_SECRET, &[], created).await;
    assert_eq!(r.status, 200, "{r:?}");
    let (id, kind) = rig.row(&r).await;
    let expected = match presets::get("calendly").expect("calendly").event_id {
        presets::EventField::Composite(_) => presets::get("calendly")
            .expect("calendly")
            .event_id(&Headers::from_pairs([]), created.as_bytes())
            .expect("composite id"),
        other => panic!("calendly's id is {other:?}"),
    };
    assert_eq!(id, expected);
    assert!(id.contains("invitee.created") && id.contains(':'), "{id}");
    assert_eq!(kind.as_deref(), Some("invitee.created"));
    // the same again: a duplicate of the composite id
    let r = rig.post("calendly", CALENDLY_SECRET, &[], created).await;
    assert_eq!(r.body["status"], "duplicate", "{r:?}");
    // a part missing: refused naming the parts
    let r = rig
        .post(
            "calendly",
            CALENDLY_SECRET,
            &[],
            r#"{"event":"invitee.created","payload":{}}"#,
        )
        .await;
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(r.body["error"], "missing_event_id");
    assert!(
        r.body["detail"]
            .as_str()
            .is_some_and(|d| d.contains("/payload/uri")),
        "{r:?}"
    );
}

async fn a_signed_post_to_a_provider_whose_handshake_is_a_get_is_stored(adapter: Adapter) {
    // Meta, Dropbox and Okta answer their handshakes by GET: every POST is
    // an event. answer_post used to take such a POST for a handshake sent
    // by the wrong method, and ingest refused every signed event with 400
    // bad_handshake.
    let (_t, db) = migrated_db(adapter).await;
    let rig = Rig::new(db);
    for (partner, secret) in [
        ("meta", META_SECRET),
        ("dropbox", DROPBOX_SECRET),
        ("okta", OKTA_SECRET),
    ] {
        let preset = presets::get(partner).expect("preset");
        assert!(preset.handshake.is_some_and(|h| h.is_get()), "{partner}");
        let r = rig
            .post(partner, secret, preset.sample.headers, preset.sample.body)
            .await;
        assert_eq!(r.status, 200, "{partner}: {r:?}");
        assert_eq!(r.body["status"], "accepted", "{partner}: {r:?}");
        let (_, kind) = rig.row(&r).await;
        // a provider that batches (Meta's entries): the first event's type
        let expected = match hookbox::config::batch::of_preset(partner) {
            Some(batch) => hookbox::inbox::split::split(&batch, preset.sample.body.as_bytes())
                .expect("the sample splits")[0]
                .event_type
                .clone(),
            None => preset.event_type(&Headers::new(), preset.sample.body.as_bytes()),
        };
        assert_eq!(kind, expected, "{partner}");
        // the wrong secret is still refused
        let r = rig
            .post(
                partner,
                "not-the-secret",
                preset.sample.headers,
                preset.sample.body,
            )
            .await;
        assert_eq!(r.status, 401, "{partner}: {r:?}");
    }
}

for_each_adapter!(
    ingest_reads_the_id_and_type_where_the_preset_says,
    a_signed_post_to_a_provider_whose_handshake_is_a_get_is_stored,
);

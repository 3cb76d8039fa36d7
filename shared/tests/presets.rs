//! The preset registry against vectors: every preset verifies at least one
//! vector (the providers' own where published: `presets/official.rs`;
//! where none is, generated or confirmed by the provider's official SDK:
//! `presets/sdk.rs`; computed ones, labelled: `presets/computed.rs`), and each
//! vector also runs the negative cases: one body byte changed, the wrong
//! secret, a stale timestamp where the preset checks one. A preset without
//! any vector fails `every_preset_has_a_vector`.

#[path = "presets/adyen_standard.rs"]
mod adyen_standard;
#[path = "presets/computed.rs"]
mod computed;
#[path = "presets/docs.rs"]
mod docs;
#[path = "presets/official.rs"]
mod official;
#[path = "presets/refusals.rs"]
mod refusals;
#[path = "presets/sdk.rs"]
mod sdk;
#[path = "presets/signing.rs"]
mod signing;

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use hookbox::signature::presets::{self, EventField, Preset};
use hookbox::signature::{
    Headers, Recipe, SchemeConfig, Secret, SignatureError, SignedRequest, Verified, Verifier,
};

/// Where a vector comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Published by the provider: documentation or official SDK tests
    /// (the file or page).
    Official(&'static str),
    /// Generated, or confirmed, by the provider's official SDK package
    /// (or that of the signer it delivers through) by the named script
    /// (`tools/presets/sdk/generate.mjs`): the cite names package@version
    /// and the function, and says "verify only" where the SDK only
    /// verifies (the value then comes from Node's `crypto`, and the script
    /// asserts that the SDK accepts it and refuses one byte changed).
    Sdk(&'static str),
    /// Computed by us from the documented recipe (how).
    Computed(&'static str),
}

/// One request that must verify with a preset.
#[derive(Debug, Clone, Copy)]
pub struct Vector {
    pub preset: &'static str,
    pub source: Source,
    pub headers: &'static [(&'static str, &'static str)],
    pub body: &'static str,
    pub url: Option<&'static str>,
    pub method: Option<&'static str>,
    pub secrets: &'static [&'static str],
    /// Index of the secret that matches.
    pub matching: usize,
    /// Unix seconds at which the vector is checked.
    pub now: i64,
    /// A secret that must not verify it.
    pub wrong_secret: &'static str,
    /// Text of the body whose first letter or digit is changed for the
    /// tampering case (default: the first one past the middle).
    pub tamper: Option<&'static str>,
}

/// Defaults for `..V`.
pub const V: Vector = Vector {
    preset: "",
    source: Source::Computed(""),
    headers: &[],
    body: "",
    url: None,
    method: None,
    secrets: &[],
    matching: 0,
    now: 1_700_000_000,
    wrong_secret: "not-the-secret",
    tamper: None,
};

fn all_vectors() -> impl Iterator<Item = &'static Vector> {
    official::VECTORS
        .iter()
        .chain(sdk::VECTORS.iter())
        .chain(computed::VECTORS.iter())
}

fn at(secs: i64) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp(secs, 0).expect("in range")
}

fn preset(name: &str) -> &'static Preset {
    presets::get(name).unwrap_or_else(|| panic!("no preset named {name:?}"))
}

fn verify(
    vector: &Vector,
    body: &[u8],
    secrets: &[&str],
    now: i64,
) -> Result<Verified<'static>, SignatureError> {
    let verifier = preset(vector.preset).verifier().expect("preset compiles");
    let mut request = SignedRequest::new(body, Headers::from_pairs(vector.headers.iter().copied()));
    request.url = vector.url;
    request.method = vector.method;
    let secrets: Vec<Secret> = secrets.iter().map(|s| Secret::new(*s)).collect();
    verifier
        .verify_at(&request, &secrets, at(now))
        .map(Verified::into_owned)
}

/// The body with one letter or digit changed (still valid JSON or form
/// data: only the value changes).
fn tampered(vector: &Vector) -> Vec<u8> {
    let mut body = vector.body.as_bytes().to_vec();
    let start = match vector.tamper {
        Some(text) => vector
            .body
            .find(text)
            .unwrap_or_else(|| panic!("{}: tamper text not in body", vector.preset)),
        None => body.len() / 2,
    };
    let index = (start..body.len())
        .chain(0..start)
        .find(|&i| body[i].is_ascii_alphanumeric())
        .expect("the body has a letter or digit");
    body[index] = match body[index] {
        b'9' => b'0',
        b'z' => b'a',
        b'Z' => b'A',
        other => other + 1,
    };
    body
}

fn signs_whole_body(preset: &Preset) -> bool {
    match preset.recipe {
        Recipe::Scheme(_) => true,
        // Adyen's standard notifications sign fields of each item only:
        // their vectors say which text is signed (`tamper`).
        Recipe::Signed(signed) => signed.signs_body(),
        // The `sha256` claim binds the body.
        Recipe::Jws { .. } => true,
        // Form parameters, or the body bound by the URL's `bodySHA256`.
        Recipe::Twilio(_) => true,
        Recipe::Token { .. } | Recipe::BasicAuth => false,
    }
}

#[test]
fn every_vector_verifies_with_its_preset() {
    for vector in all_vectors() {
        let verified = verify(vector, vector.body.as_bytes(), vector.secrets, vector.now)
            .unwrap_or_else(|e| panic!("{} ({:?}): {e}", vector.preset, vector.source));
        assert_eq!(
            verified.secret_index, vector.matching,
            "{}: matched another secret",
            vector.preset
        );
    }
}

#[test]
fn every_vector_passes_the_authorizer_precheck() {
    for vector in all_vectors() {
        let verifier = preset(vector.preset).verifier().expect("preset compiles");
        let headers = Headers::from_pairs(vector.headers.iter().copied());
        verifier
            .precheck(&headers, at(vector.now))
            .unwrap_or_else(|e| panic!("{}: {e}", vector.preset));
    }
}

#[test]
fn one_changed_body_byte_is_refused_where_the_body_is_signed() {
    for vector in all_vectors() {
        let result = verify(vector, &tampered(vector), vector.secrets, vector.now);
        let covered = signs_whole_body(preset(vector.preset)) || vector.tamper.is_some();
        if covered {
            assert!(
                matches!(
                    result,
                    Err(SignatureError::NoMatchingSignature { .. }
                        | SignatureError::BodyHashMismatch)
                ),
                "{}: {result:?}",
                vector.preset
            );
        } else {
            // Token and basic-auth presets do not sign the body: the
            // registry says so (`Recipe::Token`, `Recipe::BasicAuth`), and
            // a changed body still passes.
            assert!(result.is_ok(), "{}: {result:?}", vector.preset);
        }
    }
}

#[test]
fn the_wrong_secret_is_refused() {
    for vector in all_vectors() {
        let result = verify(
            vector,
            vector.body.as_bytes(),
            &[vector.wrong_secret],
            vector.now,
        );
        assert!(
            matches!(result, Err(SignatureError::NoMatchingSignature { .. })),
            "{}: {result:?}",
            vector.preset
        );
    }
}

#[test]
fn a_stale_timestamp_is_refused_where_the_preset_checks_one() {
    let mut checked = BTreeSet::new();
    for vector in all_vectors() {
        let preset = preset(vector.preset);
        let Some(tolerance) = preset.tolerance_secs else {
            continue;
        };
        let verified = verify(vector, vector.body.as_bytes(), vector.secrets, vector.now)
            .expect("the vector verifies");
        let signed_at = verified
            .timestamp_secs
            .unwrap_or_else(|| panic!("{}: a tolerance but no timestamp", vector.preset));
        let tolerance = i64::try_from(tolerance).expect("small");
        let edge = verify(
            vector,
            vector.body.as_bytes(),
            vector.secrets,
            signed_at + tolerance,
        );
        assert!(edge.is_ok(), "{}: at the bound: {edge:?}", vector.preset);
        let stale = verify(
            vector,
            vector.body.as_bytes(),
            vector.secrets,
            signed_at + tolerance + 1,
        );
        assert!(
            matches!(stale, Err(SignatureError::TimestampTooOld { .. })),
            "{}: {stale:?}",
            vector.preset
        );
        checked.insert(preset.name);
    }
    // The presets that carry a tolerance, all exercised.
    let expected: BTreeSet<&str> = presets::all()
        .iter()
        .filter(|p| p.tolerance_secs.is_some())
        .map(|p| p.name)
        .collect();
    assert_eq!(checked, expected);
}

#[test]
fn every_preset_has_a_vector() {
    let covered: BTreeSet<&str> = all_vectors().map(|v| v.preset).collect();
    let missing: Vec<&str> = presets::names().filter(|n| !covered.contains(n)).collect();
    assert!(
        missing.is_empty(),
        "presets without a vector test: {missing:?}"
    );
    let unknown: Vec<&str> = covered
        .iter()
        .copied()
        .filter(|n| presets::get(n).is_none())
        .collect();
    assert!(
        unknown.is_empty(),
        "vectors of unknown presets: {unknown:?}"
    );
}

#[test]
fn official_vectors_cover_these_presets() {
    // A floor that only grows: a new preset's official vector raises it
    // without an edit here, and removing one (or citing it as computed)
    // drops below it. 22 presets had an official vector when it was set.
    let official: BTreeSet<&str> = all_vectors()
        .filter(|v| matches!(v.source, Source::Official(_)))
        .map(|v| v.preset)
        .collect();
    assert!(
        official.len() >= 22,
        "official vectors cover only {} presets: {official:?}",
        official.len()
    );
    for preset in [
        "github",
        "shopify",
        "slack",
        "standard-webhooks",
        "stripe",
        "svix",
        "twilio",
    ] {
        assert!(official.contains(preset), "{preset}: official vector lost");
    }
    for vector in all_vectors() {
        match vector.source {
            Source::Official(cite) | Source::Sdk(cite) | Source::Computed(cite) => {
                assert!(!cite.is_empty(), "{}: no source", vector.preset)
            }
        }
        if let Source::Sdk(cite) = vector.source {
            assert!(
                cite.starts_with("tools/presets/sdk/") && cite.contains('@'),
                "{}: an SDK vector names its script and package@version: {cite}",
                vector.preset
            );
        }
    }
}

#[test]
fn official_or_sdk_vectors_cover_these_presets() {
    // A floor that only grows, as above: the presets with a vector that the
    // provider published or that its official SDK generated or confirmed
    // (`tools/presets/sdk/generate.mjs`). 29 when it was set, 30 with
    // gitlab-signed, 47 with the presets added with an SDK vector on
    // 2026-12-03 (issue #28 asks for 45), 51 with telnyx, plivo, sinch and
    // viber (2026-12-04).
    let vouched: BTreeSet<&str> = all_vectors()
        .filter(|v| matches!(v.source, Source::Official(_) | Source::Sdk(_)))
        .map(|v| v.preset)
        .collect();
    let computed_only: BTreeSet<&str> = presets::names().filter(|n| !vouched.contains(n)).collect();
    println!(
        "{} of {} presets have an official or SDK vector; computed only: {computed_only:?}",
        vouched.len(),
        presets::names().count()
    );
    assert!(
        vouched.len() >= 51,
        "official or SDK vectors cover only {} presets: {vouched:?}",
        vouched.len()
    );
    // The presets whose providers publish no vector and whose official
    // packages neither sign nor verify their webhooks
    // (tools/presets/official-vectors-research.md): the only ones allowed
    // a computed vector alone. A new preset comes with an official or SDK
    // vector; one of these that gets one leaves the list.
    let computed_allowed: BTreeSet<&str> = COMPUTED_ONLY.iter().copied().collect();
    assert!(
        computed_only.is_subset(&computed_allowed),
        "presets with only a computed vector: {:?}",
        computed_only
            .difference(&computed_allowed)
            .collect::<Vec<_>>()
    );
    let sdk: BTreeSet<&str> = sdk::VECTORS.iter().map(|v| v.preset).collect();
    for preset in [
        "acuity-scheduling",
        "cashfree",
        "chargebee",
        "discord",
        "dodo-payments",
        "easypost",
        "elevenlabs",
        "finch",
        "gocardless",
        "imagekit",
        "line",
        "linear",
        "lithic",
        "liveblocks",
        "modern-treasury",
        "onfido",
        "orb",
        "plivo",
        "pusher",
        "retell",
        "sinch",
        "stream-chat",
        "telnyx",
        "twilio-sha256",
        "viber",
        "webflow",
        "zoom",
    ] {
        assert!(sdk.contains(preset), "{preset}: SDK vector lost");
    }
}

/// Presets with no published vector and no official SDK function to make
/// one (see `official_or_sdk_vectors_cover_these_presets`).
const COMPUTED_ONLY: &[&str] = &[
    "airtable",
    "airwallex",
    "alchemy",
    "asana",
    "attio",
    "bitbucket",
    "bolt",
    "buildkite",
    "cal-com",
    "calendly",
    "checkout-com",
    "circleci",
    "clickup",
    "close",
    "customer-io",
    "docusign",
    "dropbox",
    "flutterwave",
    "frame-io",
    "gitea",
    "gitlab",
    "help-scout",
    "heroku",
    "intercom",
    "jira",
    "lemon-squeezy",
    "mailjet",
    "mandrill",
    "maxio",
    "meta",
    "microsoft-teams",
    "mollie",
    "netlify",
    "okta",
    "paystack",
    "persona",
    "postmark",
    "segment",
    "sendbird",
    "sentry",
    "sparkpost",
    "squarespace",
    "sumsub",
    "tally",
    "telegram",
    "twitch-eventsub",
    "typeform",
    "vapi",
    "vercel",
    "veriff",
    "woocommerce",
    "x-activity",
    "xendit",
    "zendesk",
];

#[test]
fn names_are_unique_lowercase_and_sorted() {
    let names: Vec<&str> = presets::names().collect();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "duplicate names");
    for name in &names {
        assert!(
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !name.starts_with('-')
                && !name.ends_with('-'),
            "{name:?} is not a lowercase registry name"
        );
    }
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "keep the catalog alphabetical");
    assert!(names.len() >= 45, "{} presets", names.len());
}

#[test]
fn the_registry_lists_at_least_94_presets_one_summary_line_each() {
    // `hookbox presets` prints `summary()` of every entry, one a line, name
    // first (issue #45 asks for 94 or more).
    let lines: Vec<String> = presets::all().iter().map(Preset::summary).collect();
    assert!(lines.len() >= 94, "{} presets", lines.len());
    for (line, name) in lines.iter().zip(presets::names()) {
        assert_eq!(line.split('\t').next(), Some(name), "{line}");
        assert_eq!(line.split('\t').count(), 3, "{line}");
    }
}

#[test]
fn every_preset_compiles_and_round_trips_as_configuration() {
    for preset in presets::all() {
        let verifier = preset.verifier().expect(preset.name);
        let json = serde_json::to_string(&verifier).expect("serializes");
        let back: Verifier = serde_json::from_str(&json).expect(&json);
        assert_eq!(back, verifier, "{}", preset.name);
        // By name, through the configuration: the same checks.
        let named: SchemeConfig = serde_json::from_str(&format!(
            r#"{{"scheme":"preset","name":"{}"}}"#,
            preset.name
        ))
        .expect("preset configuration");
        let named = Verifier::new(named).expect(preset.name);
        // A preset that is a hand-written scheme is that scheme.
        assert_eq!(named.scheme(), preset.scheme_kind(), "{}", preset.name);
        assert_eq!(verifier.scheme(), preset.scheme_kind(), "{}", preset.name);
        assert!(preset.docs.starts_with("https://"), "{}", preset.name);
        assert!(!preset.secret.is_empty(), "{}", preset.name);
    }
    let unknown: SchemeConfig =
        serde_json::from_str(r#"{"scheme":"preset","name":"nope"}"#).expect("parses");
    assert!(Verifier::new(unknown).is_err());
    assert!(
        serde_json::from_str::<SchemeConfig>(r#"{"scheme":"preset","name":"stripe","x":1}"#)
            .is_err()
    );
}

#[test]
fn a_configured_tolerance_replaces_the_presets_default() {
    let zoom = preset("zoom");
    let vector = computed::VECTORS
        .iter()
        .find(|v| v.preset == "zoom")
        .expect("zoom vector");
    let verifier = zoom.verifier_with_tolerance(10).expect("compiles");
    let request = SignedRequest::new(
        vector.body.as_bytes(),
        Headers::from_pairs(vector.headers.iter().copied()),
    );
    let secrets = [Secret::new(vector.secrets[0])];
    assert!(
        verifier
            .verify_at(&request, &secrets, at(vector.now + 10))
            .is_ok()
    );
    assert!(matches!(
        verifier.verify_at(&request, &secrets, at(vector.now + 11)),
        Err(SignatureError::TimestampTooOld {
            tolerance_secs: 10,
            ..
        })
    ));
}

#[test]
fn the_sample_events_carry_the_id_and_type_where_the_preset_reads_them() {
    for preset in presets::all() {
        let headers = Headers::from_pairs(preset.sample.headers.iter().copied());
        let body = preset.sample.body.as_bytes();
        for (what, field, value) in [
            ("event id", preset.event_id, preset.event_id(&headers, body)),
            (
                "event type",
                preset.event_type,
                preset.event_type(&headers, body),
            ),
        ] {
            match field {
                EventField::Absent => assert_eq!(value, None, "{} {what}", preset.name),
                _ => assert!(value.is_some(), "{}: no {what} at {field}", preset.name),
            }
        }
    }
    let stripe = preset("stripe");
    let body = stripe.sample.body.as_bytes();
    assert_eq!(
        stripe.event_id(&Headers::new(), body).as_deref(),
        Some("evt_123")
    );
    let zoom = preset("zoom");
    assert_eq!(
        zoom.event_id(&Headers::new(), zoom.sample.body.as_bytes())
            .as_deref(),
        Some("meeting.started:1626230691572")
    );
}

#[test]
fn a_missing_signature_is_named_and_no_error_shows_a_secret() {
    for vector in all_vectors() {
        let verifier = preset(vector.preset).verifier().expect("compiles");
        // No headers, and a body without the fields a body-carried
        // signature (Mailgun) would need.
        let request = SignedRequest::new(b"{}", Headers::new()).with_url("https://example.com/");
        let secrets: Vec<Secret> = vector.secrets.iter().map(|s| Secret::new(*s)).collect();
        let error = verifier
            .verify_at(&request, &secrets, at(vector.now))
            .expect_err("no headers");
        let shown = format!("{error} {error:?} {verifier:?} {secrets:?}");
        // A public key the preset's own help names (Mandrill's generic
        // `test-webhook`) is no secret.
        let documented = preset(vector.preset).secret;
        for secret in vector.secrets.iter().filter(|s| !documented.contains(**s)) {
            assert!(!shown.contains(secret), "{}: {shown}", vector.preset);
        }
    }
}

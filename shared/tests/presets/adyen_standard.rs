//! Adyen's standard notifications (`adyen-standard`): every item of a
//! POST carries its own HMAC, and the POST is accepted only when each one
//! verifies. One forged or unsigned item, an empty list or a body of
//! another shape refuses it, naming the item (or the list), never a secret
//! or an expected MAC. The vectors are Adyen's libraries' (`official.rs`).

use hookbox::signature::{Headers, Secret, SignatureError, SignedRequest, Verified};
use serde_json::Value;

use super::official::{
    ADYEN_DOCS_KEY, ADYEN_DOCS_NOTIFICATION, ADYEN_NODE_KEY, ADYEN_SLASHES, ADYEN_SLASHES_KEY,
    ADYEN_TWO_KEYS,
};
use super::{at, preset};

const ITEMS: &str = "/notificationItems";

/// Verifies `body` with the preset and `secrets`.
fn check(body: &str, secrets: &[&str]) -> Result<Verified<'static>, SignatureError> {
    let verifier = preset("adyen-standard").verifier().expect("compiles");
    let request = SignedRequest::new(body.as_bytes(), Headers::new());
    let secrets: Vec<Secret> = secrets.iter().map(|s| Secret::new(*s)).collect();
    verifier
        .verify_at(&request, &secrets, at(1_700_000_000))
        .map(Verified::into_owned)
}

/// `body` with `edit` applied to item `index`'s `NotificationRequestItem`.
fn edited(body: &str, index: usize, edit: impl FnOnce(&mut Value)) -> String {
    let mut value: Value = serde_json::from_str(body).expect("JSON");
    let item = value
        .pointer_mut(&format!("{ITEMS}/{index}/NotificationRequestItem"))
        .expect("the item");
    edit(item);
    value.to_string()
}

/// A change to an item, named.
type Edit = (&'static str, fn(&mut Value));

/// What an error shows, in full.
fn shown(error: &SignatureError) -> String {
    format!("{error} {error:?}")
}

/// Nothing secret in `error`: no key, and no signature of the body's items
/// (none is an expected MAC, but a forged item's would be close to one).
fn assert_discreet(error: &SignatureError, body: &str, secrets: &[&str]) {
    let text = shown(error);
    for secret in secrets {
        assert!(!text.contains(secret), "{text}");
        assert!(!text.contains(&secret.to_lowercase()), "{text}");
    }
    let value: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    for item in value
        .pointer(ITEMS)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(signature) = item
            .pointer("/NotificationRequestItem/additionalData/hmacSignature")
            .and_then(Value::as_str)
        {
            assert!(signature.is_empty() || !text.contains(signature), "{text}");
        }
    }
}

#[test]
fn every_item_of_a_batch_verifies() {
    let verified = check(ADYEN_SLASHES, &[ADYEN_SLASHES_KEY]).expect("four items");
    assert_eq!(verified.secret_index, 0);
    let items: Value = serde_json::from_str(ADYEN_SLASHES).expect("JSON");
    assert_eq!(
        items.pointer(ITEMS).and_then(Value::as_array).map(Vec::len),
        Some(4)
    );
}

#[test]
fn one_forged_item_of_two_refuses_the_post_naming_it() {
    // The first two items of the four.
    let four: Value = serde_json::from_str(ADYEN_SLASHES).expect("JSON");
    let mut items = four
        .pointer(ITEMS)
        .and_then(Value::as_array)
        .cloned()
        .expect("items");
    items.truncate(2);
    let body = serde_json::json!({"live": "false", "notificationItems": items}).to_string();
    assert!(
        check(&body, &[ADYEN_SLASHES_KEY]).is_ok(),
        "the two items verify"
    );

    // A signed field of the second item changed, its signature kept.
    let forged = edited(&body, 1, |item| {
        item["merchantReference"] = Value::from("another order");
    });
    let error = check(&forged, &[ADYEN_SLASHES_KEY]).expect_err("forged");
    assert!(
        matches!(
            error,
            SignatureError::NoMatchingSignature {
                item: Some(1),
                secrets: 1,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("item #1"), "{error}");
    assert_discreet(&error, &forged, &[ADYEN_SLASHES_KEY]);

    // The second item's signature swapped for the first's: each item has
    // its own.
    let first = serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|v| {
            v.pointer("/notificationItems/0/NotificationRequestItem/additionalData/hmacSignature")
                .cloned()
        })
        .expect("a signature");
    let swapped = edited(&body, 1, |item| {
        item["additionalData"]["hmacSignature"] = first;
    });
    assert!(matches!(
        check(&swapped, &[ADYEN_SLASHES_KEY]),
        Err(SignatureError::NoMatchingSignature { item: Some(1), .. })
    ));

    // The first forged: refused at the first, whatever follows.
    let forged_first = edited(&body, 0, |item| {
        item["success"] = Value::from("false");
    });
    assert!(matches!(
        check(&forged_first, &[ADYEN_SLASHES_KEY]),
        Err(SignatureError::NoMatchingSignature { item: Some(0), .. })
    ));
}

#[test]
fn an_item_without_its_signature_refuses_the_post_naming_it() {
    let pointer = "/notificationItems/3/NotificationRequestItem/additionalData/hmacSignature";
    let edits: [Edit; 4] = [
        ("removed", |item| {
            if let Some(data) = item["additionalData"].as_object_mut() {
                data.remove("hmacSignature");
            }
        }),
        ("empty", |item| {
            item["additionalData"]["hmacSignature"] = Value::from("")
        }),
        ("null", |item| {
            item["additionalData"]["hmacSignature"] = Value::Null
        }),
        ("no additionalData", |item| {
            if let Some(item) = item.as_object_mut() {
                item.remove("additionalData");
            }
        }),
    ];
    for (what, edit) in edits {
        let body = edited(ADYEN_SLASHES, 3, edit);
        let error = check(&body, &[ADYEN_SLASHES_KEY]).expect_err(what);
        assert!(
            matches!(&error, SignatureError::MissingHeader { header } if header == pointer),
            "{what}: {error:?}"
        );
        assert_discreet(&error, &body, &[ADYEN_SLASHES_KEY]);
    }
    // A signature that is not base64 of 32 bytes, or not a string.
    for (what, value) in [
        ("short", Value::from("AAAA")),
        (
            "not base64",
            Value::from("not base64 at all, not at all!!!!!!!!!!!"),
        ),
        ("a number", Value::from(7)),
    ] {
        let body = edited(ADYEN_SLASHES, 3, |item| {
            item["additionalData"]["hmacSignature"] = value;
        });
        let error = check(&body, &[ADYEN_SLASHES_KEY]).expect_err(what);
        assert!(
            matches!(&error, SignatureError::MalformedHeader { header, .. } if header == pointer),
            "{what}: {error:?}"
        );
    }
}

#[test]
fn an_empty_list_or_a_body_of_another_shape_is_refused_clearly() {
    let secrets = [ADYEN_SLASHES_KEY];
    let empty = check(r#"{"live":"false","notificationItems":[]}"#, &secrets).expect_err("no item");
    assert!(
        matches!(&empty, SignatureError::MalformedHeader { header, .. } if header == ITEMS),
        "{empty:?}"
    );
    assert!(empty.to_string().contains("empty"), "{empty}");
    for (body, missing) in [
        (r#"{"live":"false"}"#, true),
        ("{}", true),
        (r#"[{"NotificationRequestItem":{}}]"#, true),
        (
            r#"{"notificationItems":{"NotificationRequestItem":{}}}"#,
            false,
        ),
        (r#"{"notificationItems":"none"}"#, false),
        ("not json", false),
        ("", false),
        (
            r#"{"notificationItems":[{"NotificationRequestItem":{}}]"#,
            false,
        ),
    ] {
        let error = check(body, &secrets).expect_err(body);
        let named = match &error {
            SignatureError::MissingHeader { header } => missing && header == ITEMS,
            SignatureError::MalformedHeader { header, .. } => !missing && header == ITEMS,
            _ => false,
        };
        assert!(named, "{body}: {error:?}");
    }
    // An element without its item, or whose item is not an object.
    for (body, reason) in [
        (r#"{"notificationItems":[{"Other":{}}]}"#, "missing"),
        (
            r#"{"notificationItems":[{"NotificationRequestItem":[]}]}"#,
            "not an object",
        ),
        (r#"{"notificationItems":["x"]}"#, "missing"),
    ] {
        let error = check(body, &secrets).expect_err(body);
        let header = match &error {
            SignatureError::MissingHeader { header }
            | SignatureError::MalformedHeader { header, .. } => header.as_ref(),
            _ => "",
        };
        assert_eq!(
            header, "/notificationItems/0/NotificationRequestItem",
            "{reason}: {error:?}"
        );
    }
    // A signed field that is an object is refused, naming it.
    let body = edited(ADYEN_DOCS_NOTIFICATION, 0, |item| {
        item["merchantReference"] = serde_json::json!({"a": 1});
    });
    let error = check(&body, &[ADYEN_DOCS_KEY]).expect_err("an object");
    assert!(
        matches!(&error, SignatureError::MalformedHeader { header, .. }
            if header == "/notificationItems/0/NotificationRequestItem/merchantReference"),
        "{error:?}"
    );
}

#[test]
fn during_a_rotation_each_item_verifies_with_either_key() {
    // The docs' item is signed with one key, Node's with another.
    for (secrets, oldest) in [
        ([ADYEN_NODE_KEY, ADYEN_DOCS_KEY], 1),
        ([ADYEN_DOCS_KEY, ADYEN_NODE_KEY], 1),
    ] {
        let verified = check(ADYEN_TWO_KEYS, &secrets).expect("both keys");
        // The largest index any item needed: the oldest key still in use.
        assert_eq!(verified.secret_index, oldest, "{secrets:?}");
    }
    // One key alone: the other key's item is refused, by its index.
    assert!(matches!(
        check(ADYEN_TWO_KEYS, &[ADYEN_DOCS_KEY]),
        Err(SignatureError::NoMatchingSignature {
            item: Some(1),
            secrets: 1,
            ..
        })
    ));
    let error = check(ADYEN_TWO_KEYS, &[ADYEN_NODE_KEY]).expect_err("docs' key missing");
    assert!(
        matches!(
            error,
            SignatureError::NoMatchingSignature { item: Some(0), .. }
        ),
        "{error:?}"
    );
    assert_discreet(&error, ADYEN_TWO_KEYS, &[ADYEN_NODE_KEY]);
    // A key that is not hexadecimal is the configuration's error, named by
    // its index even when another key would match.
    let error = check(
        ADYEN_TWO_KEYS,
        &[ADYEN_NODE_KEY, ADYEN_DOCS_KEY, "zz-secret-key"],
    )
    .expect_err("bad key");
    assert!(
        matches!(error, SignatureError::InvalidSecret { index: 2, .. }),
        "{error:?}"
    );
    assert!(error.is_configuration_error());
    assert!(!shown(&error).contains("zz-secret-key"), "{error:?}");
}

#[test]
fn the_authorizer_has_nothing_to_check_and_the_post_has_no_single_id() {
    let adyen = preset("adyen-standard");
    let verifier = adyen.verifier().expect("compiles");
    assert!(verifier.precheck(&Headers::new(), at(0)).is_ok());
    // Neither a timestamp nor an id is signed: ingest also deduplicates
    // on the body.
    assert!(!verifier.signs_a_timestamp_or_id());
    assert_eq!(
        adyen.event_id(&Headers::new(), ADYEN_SLASHES.as_bytes()),
        None
    );
    assert_eq!(
        adyen
            .event_type(&Headers::new(), ADYEN_SLASHES.as_bytes())
            .as_deref(),
        Some("AUTHORISATION")
    );
    assert!(adyen.signature_headers().is_empty());
    // The platform webhooks' preset is another one: the standard
    // notifications' items do not verify with it.
    let request = SignedRequest::new(ADYEN_SLASHES.as_bytes(), Headers::new());
    assert!(
        preset("adyen")
            .verifier()
            .expect("compiles")
            .verify_at(&request, &[Secret::new(ADYEN_SLASHES_KEY)], at(0))
            .is_err()
    );
}

#[test]
fn a_signature_in_each_item_is_an_hmac_without_a_timestamp() {
    // What `each_item.rs` verifies: an HMAC over fields of the item. A
    // preset that gave it another primitive or a timestamp would be
    // refused on every request (or its timestamp ignored).
    use hookbox::signature::presets::{self, EventField};
    use hookbox::signature::{Primitive, Recipe, SignatureAt};
    let mut each_item = 0;
    for preset in presets::all() {
        let Recipe::Signed(signed) = preset.recipe else {
            continue;
        };
        if !matches!(signed.signature, SignatureAt::EachItem { .. }) {
            continue;
        }
        each_item += 1;
        assert!(
            matches!(signed.primitive, Primitive::Hmac(..)),
            "{}",
            preset.name
        );
        assert!(
            signed.timestamp.is_none() && preset.tolerance_secs.is_none(),
            "{}",
            preset.name
        );
        // One POST holds several events: no id for the POST.
        assert_eq!(preset.event_id, EventField::Absent, "{}", preset.name);
    }
    assert_eq!(each_item, 1);
}

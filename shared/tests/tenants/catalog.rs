//! The event type catalog (migration 30): a type that enforces its schema
//! has every payload published to it checked, whoever publishes
//! (`hookbox_publish_to`, a message, `hookbox_publish`), refused naming
//! where it fails; a type that does not, or is archived, is not checked;
//! a schema enforcement cannot apply is refused when the type is put.

use hookbox::outbox::{self, NewEvent};
use hookbox::store::Database;
use hookbox::tenants::catalog::{
    delete_event_type, get_event_type, list_event_types, put_event_type,
};
use hookbox::tenants::messages::create_message;
use hookbox::tenants::{ManageError, TenantEvent, manage, publish_to};
use serde_json::{Value, json};

use super::common::{self, Adapter, at, migrated_db};
use crate::for_each_adapter;

for_each_adapter!(
    a_type_that_enforces_its_schema_refuses_what_it_does_not_accept,
    a_schema_enforcement_cannot_apply_is_refused_when_the_type_is_put,
);

fn invoice_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["amount", "currency"],
        "properties": {
            "amount": {"type": "integer", "minimum": 1},
            "currency": {"enum": ["EUR", "USD"]},
            "note": {"type": ["string", "null"], "maxLength": 20},
            "lines": {"type": "array", "maxItems": 3,
                      "items": {"type": "object", "required": ["sku"],
                                "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"}}}},
            "kind": {"anyOf": [{"const": "card"}, {"const": "transfer"}]}
        },
        "additionalProperties": false
    })
}

/// Publishes `payload` as `event_type` to acme; the error's text, if any.
async fn publish(db: &dyn Database, event_type: &str, payload: Value) -> Option<String> {
    let tx = db.begin().await.expect("begin");
    let event = TenantEvent {
        event_type: event_type.into(),
        payload,
        aggregate: None,
        channels: None,
    };
    let outcome = publish_to(tx.as_ref(), "acme", &event, at(0)).await;
    let _ = tx.rollback().await;
    outcome.err().map(|e| e.to_string())
}

async fn a_type_that_enforces_its_schema_refuses_what_it_does_not_accept(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let db = db.as_ref();
    manage::create_tenant(db, &json!({"uid": "acme", "name": "Acme"}), None)
        .await
        .expect("tenant");
    manage::create_endpoint(
        db,
        "acme",
        &json!({"url": "https://acme.example/hook"}),
        None,
    )
    .await
    .expect("endpoint");
    let put = put_event_type(
        db,
        &json!({"name": "invoice.paid", "description": "An invoice was paid",
                "schema": invoice_schema(), "example": {"amount": 5, "currency": "EUR"},
                "enforce_schema": true}),
        None,
    )
    .await
    .expect("put");
    assert!(put.enforce_schema);
    assert_eq!(put.example, Some(json!({"amount": 5, "currency": "EUR"})));
    put_event_type(
        db,
        &json!({"name": "invoice.voided", "description": "not enforced",
                "schema": invoice_schema()}),
        None,
    )
    .await
    .expect("put");

    assert_eq!(
        publish(
            db,
            "invoice.paid",
            json!({"amount": 5, "currency": "EUR", "note": null,
                                           "lines": [{"sku": "ABC-1"}], "kind": "card"})
        )
        .await,
        None
    );
    for (payload, failure) in [
        (
            json!({"amount": "5", "currency": "EUR"}),
            "$.amount: expected integer, got string",
        ),
        (
            json!({"amount": 5.5, "currency": "EUR"}),
            "$.amount: expected integer, got a fraction",
        ),
        (json!({"amount": 5}), "$: currency is required"),
        (
            json!({"amount": 0, "currency": "EUR"}),
            "$.amount: 0 is less than the minimum 1",
        ),
        (
            json!({"amount": 5, "currency": "GBP"}),
            "$.currency: \"GBP\" is not one of",
        ),
        (
            json!({"amount": 5, "currency": "EUR", "x": 1}),
            "$: x is not allowed",
        ),
        (
            json!({"amount": 5, "currency": "EUR", "note": "a".repeat(21)}),
            "$.note: longer than 20",
        ),
        (
            json!({"amount": 5, "currency": "EUR", "lines": [{"sku": "ABC-1"}, {}]}),
            "$.lines[1]: sku is required",
        ),
        (
            json!({"amount": 5, "currency": "EUR", "lines": [{"sku": "abc"}]}),
            "$.lines[0].sku: does not match the pattern",
        ),
        (
            json!({"amount": 5, "currency": "EUR", "lines": [{"sku": "ABC-1"}, {"sku": "ABC-2"}, {"sku": "ABC-3"}, {"sku": "ABC-4"}]}),
            "$.lines: more than 3 items",
        ),
        (
            json!({"amount": 5, "currency": "EUR", "kind": "cash"}),
            "$.kind: matches none of anyOf",
        ),
        (json!([1, 2]), "$: expected object, got array"),
    ] {
        let err = publish(db, "invoice.paid", payload.clone())
            .await
            .unwrap_or_else(|| panic!("{payload} was accepted"));
        assert!(
            err.contains(
                "hookbox_publish_to: the payload does not match the schema of event type 'invoice.paid'"
            ) && err.contains(failure),
            "{payload}: {err}"
        );
    }
    // not enforced: anything goes
    assert_eq!(
        publish(db, "invoice.voided", json!({"amount": "x"})).await,
        None
    );
    assert_eq!(publish(db, "not.in.catalog", json!([])).await, None);

    // a message, and hookbox_publish to configured destinations, alike
    let err = create_message(
        db,
        "acme",
        &json!({"event_type": "invoice.paid", "payload": {"amount": -1, "currency": "EUR"}}),
        None,
    )
    .await
    .expect_err("refused");
    assert!(
        matches!(&err, ManageError::Invalid(m) if m.contains("hookbox_message_create: the payload does not match")
            && m.contains("$.amount: -1 is less than the minimum 1")),
        "{err:?}"
    );
    let tx = db.begin().await.expect("begin");
    let err = outbox::publish(
        tx.as_ref(),
        &NewEvent {
            event_type: "invoice.paid".into(),
            payload: json!({"currency": "EUR"}),
            aggregate_type: "invoice".into(),
            aggregate_id: "in_1".into(),
        },
        at(0),
    )
    .await
    .expect_err("refused");
    assert!(
        err.to_string().contains("hookbox_publish: the payload does not match the schema of event type 'invoice.paid': $: amount is required"),
        "{err}"
    );
    let _ = tx.rollback().await;

    // archived: no longer enforced; the catalog reads
    put_event_type(
        db,
        &json!({"name": "invoice.paid", "description": "old", "schema": invoice_schema(),
                "enforce_schema": true, "archived": true}),
        None,
    )
    .await
    .expect("archive");
    assert_eq!(publish(db, "invoice.paid", json!({})).await, None);
    let listed = list_event_types(db, None, 10, false).await.expect("list");
    let names: Vec<&str> = listed.data.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["invoice.voided"]);
    let all = list_event_types(db, None, 1, true).await.expect("list");
    assert_eq!((all.data.len(), all.done), (1, false));
    let got = get_event_type(db, "invoice.paid").await.expect("get");
    assert!(got.archived && got.schema == Some(invoice_schema()));
    assert_eq!(
        delete_event_type(db, "invoice.paid", None)
            .await
            .expect("delete")
            .name,
        "invoice.paid"
    );
    assert!(matches!(
        get_event_type(db, "invoice.paid").await,
        Err(ManageError::NotFound(_))
    ));
}

async fn a_schema_enforcement_cannot_apply_is_refused_when_the_type_is_put(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let db = db.as_ref();
    for (spec, failure) in [
        (
            json!({"name": "a.b", "description": "d", "enforce_schema": true,
                   "schema": {"type": "object", "properties": {"x": {"$ref": "#/$defs/x"}}}}),
            "schema keyword #/properties/x/$ref cannot be enforced",
        ),
        (
            json!({"name": "a.b", "description": "d", "enforce_schema": true,
                   "schema": {"type": "object", "patternProperties": {}}}),
            "schema keyword #/patternProperties cannot be enforced",
        ),
        (
            json!({"name": "a.b", "description": "d", "enforce_schema": true,
                   "schema": {"type": "object", "required": ["x"]}, "example": {}}),
            "the example does not match the schema: $: x is required",
        ),
        (
            json!({"name": "a.b", "description": "d", "enforce_schema": true}),
            "enforce_schema needs a schema",
        ),
        (
            json!({"name": "a b", "description": "d"}),
            "name 'a b' must be",
        ),
        (json!({"name": "a.b"}), "description is required"),
        (
            json!({"name": "a.b", "description": "d", "colour": 1}),
            "unknown field 'colour'",
        ),
        (
            json!({"name": "a.b", "description": "d", "schemas": {"v1": {}}}),
            "schemas must map versions",
        ),
    ] {
        let err = put_event_type(db, &spec, None).await.expect_err("refused");
        assert!(
            matches!(&err, ManageError::Invalid(m) if m.contains(failure)),
            "{spec}: {err:?}"
        );
    }
    // without enforcement any schema is kept, for the portal to show
    let kept = put_event_type(
        db,
        &json!({"name": "a.b", "description": "d",
                "schemas": {"1": {"$ref": "#/x"}, "2": {"type": "object", "examples": [{"n": 1}]}}}),
        None,
    )
    .await
    .expect("put");
    assert_eq!(
        kept.schema,
        Some(json!({"type": "object", "examples": [{"n": 1}]}))
    );
    assert_eq!(kept.example, Some(json!({"n": 1})));

    // heavy schemas: a page stops before 48 KiB (a Data API answer), and
    // its iterator goes on
    for name in ["big.1", "big.2", "big.3"] {
        put_event_type(
            db,
            &json!({"name": name, "description": "heavy",
                    "schema": {"type": "object", "description": "x".repeat(30_000)}}),
            None,
        )
        .await
        .expect("put");
    }
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = list_event_types(db, after.as_deref(), 250, false)
            .await
            .expect("list");
        assert!(
            !page.data.is_empty() && page.data.len() <= 2,
            "{}",
            page.data.len()
        );
        seen.extend(page.data.iter().map(|t| t.name.clone()));
        if page.done {
            break;
        }
        after = page.iterator;
    }
    assert_eq!(seen, ["a.b", "big.1", "big.2", "big.3"]);
}

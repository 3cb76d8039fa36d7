//! Managing tenants and endpoints: one model, clear refusals, the trail.

use super::common::{self, Adapter, migrated_db};
use crate::for_each_adapter;
use hookbox::tenants::manage::{self, ManageError};
use hookbox::tenants::{Actor, Face};
use serde_json::json;

for_each_adapter!(
    tenants_are_created_read_listed_updated_and_refused_by_field,
    endpoints_are_managed_and_every_bad_field_is_named,
    every_change_is_in_the_audit_trail_and_secrets_never_are,
);

fn invalid(e: ManageError) -> String {
    match e {
        ManageError::Invalid(m) => m,
        other => panic!("expected a refusal naming a field, got {other:?}"),
    }
}

async fn tenants_are_created_read_listed_updated_and_refused_by_field(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let db = db.as_ref();
    let acme = manage::create_tenant(
        db,
        &json!({"uid": "acme", "name": "Acme", "metadata": {"plan": "pro"}}),
        None,
    )
    .await
    .expect("create");
    assert!(acme.id.starts_with("app_"), "{}", acme.id);
    assert_eq!(acme.uid.as_deref(), Some("acme"));
    assert_eq!(acme.metadata["plan"], "pro");
    assert!(!acme.disabled);

    // by uid and by id alike
    assert_eq!(manage::get_tenant(db, "acme").await.expect("by uid"), acme);
    assert_eq!(manage::get_tenant(db, &acme.id).await.expect("by id"), acme);
    assert!(matches!(
        manage::get_tenant(db, "nobody").await,
        Err(ManageError::NotFound(m)) if m.contains("'nobody'")
    ));

    // a uid is one tenant's
    let err = manage::create_tenant(db, &json!({"uid": "acme", "name": "Other"}), None)
        .await
        .expect_err("taken");
    assert!(
        matches!(&err, ManageError::Conflict(m) if m.contains("uid 'acme' exists")),
        "{err:?}"
    );
    // refusals name the field
    for (spec, field) in [
        (json!({"uid": "x"}), "name is required"),
        (json!({"name": "n", "uid": "app_x"}), "uid 'app_x'"),
        (json!({"name": "n", "uid": "a b"}), "uid 'a b'"),
        (
            json!({"name": "n", "colour": "red"}),
            "unknown field 'colour'",
        ),
        (
            json!({"name": "n", "rate_limit": 0}),
            "rate_limit must be a whole number",
        ),
        (
            json!({"name": "n", "metadata": {"a": 1}}),
            "metadata.a must be a string",
        ),
        (json!(["not", "an", "object"]), "expected a JSON object"),
    ] {
        let m = invalid(
            manage::create_tenant(db, &spec, None)
                .await
                .expect_err("refused"),
        );
        assert!(
            m.contains(field) && m.starts_with("hookbox_tenant_create: "),
            "{spec}: {m}"
        );
    }

    // pages in creation order
    for i in 0..3 {
        manage::create_tenant(db, &json!({"name": format!("t{i}")}), None)
            .await
            .expect("create");
    }
    // pages in id order (ids grow with creation time, to the millisecond):
    // every tenant once, the last page done
    let first = manage::list_tenants(db, None, 3).await.expect("page 1");
    assert_eq!(first.data.len(), 3);
    assert!(!first.done);
    let second = manage::list_tenants(db, first.iterator.as_deref(), 3)
        .await
        .expect("page 2");
    assert_eq!(second.data.len(), 1);
    assert!(second.done);
    let ids: Vec<&str> = first
        .data
        .iter()
        .chain(&second.data)
        .map(|t| t.id.as_str())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let mut names: Vec<&str> = first
        .data
        .iter()
        .chain(&second.data)
        .map(|t| t.name.as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, vec!["Acme", "t0", "t1", "t2"]);
    assert_eq!(first.iterator.as_deref(), Some(ids[2]));

    let renamed = manage::update_tenant(
        db,
        "acme",
        &json!({"name": "Acme Inc", "uid": "acme-inc"}),
        None,
    )
    .await
    .expect("update");
    assert_eq!(
        (renamed.name.as_str(), renamed.uid.as_deref()),
        ("Acme Inc", Some("acme-inc"))
    );
    assert_eq!(renamed.metadata, acme.metadata, "fields not named stay");
    assert!(
        manage::get_tenant(db, "acme").await.is_err(),
        "the old uid is free"
    );
}

async fn endpoints_are_managed_and_every_bad_field_is_named(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let db = db.as_ref();
    manage::create_tenant(db, &json!({"uid": "acme", "name": "Acme"}), None)
        .await
        .expect("tenant");
    let ep = manage::create_endpoint(
        db,
        "acme",
        &json!({"uid": "main", "url": "https://hooks.acme.example/in", "filter_types": ["order.*", "invoice.paid"],
                "headers": {"X-Acme-Token": "t0ps3cret"}, "metadata": {"team": "billing"}, "ordered": true}),
        None,
    )
    .await
    .expect("endpoint");
    assert!(ep.id.starts_with("ep_"));
    assert_eq!(
        ep.filter_types,
        Some(vec!["invoice.paid".to_string(), "order.*".to_string()])
    );
    assert_eq!(ep.header_names, vec!["X-Acme-Token".to_string()]);
    assert!(ep.ordered && !ep.disabled && !ep.held);
    let shown = serde_json::to_string(&ep).expect("json");
    assert!(
        !shown.contains("t0ps3cret"),
        "a header's value is never shown: {shown}"
    );

    assert_eq!(
        manage::get_endpoint(db, "acme", "main")
            .await
            .expect("by uid"),
        ep
    );
    let err = manage::create_endpoint(
        db,
        "acme",
        &json!({"uid": "main", "url": "https://b.example"}),
        None,
    )
    .await
    .expect_err("uid taken");
    assert!(matches!(err, ManageError::Conflict(_)), "{err:?}");
    assert!(matches!(
        manage::create_endpoint(db, "nobody", &json!({"url": "https://b.example"}), None).await,
        Err(ManageError::NotFound(_))
    ));

    for (spec, says) in [
        (json!({}), "url is required"),
        (json!({"url": "ftp://x.example"}), "url 'ftp://x.example'"),
        (
            json!({"url": "https://x.example/a b"}),
            "is not an http:// or https:// URL",
        ),
        (
            json!({"url": "https://x.example", "headers": {"webhook-signature": "v1,x"}}),
            "header 'webhook-signature'",
        ),
        (
            json!({"url": "https://x.example", "headers": {"Host": "evil"}}),
            "header 'Host'",
        ),
        (
            json!({"url": "https://x.example", "headers": {"X-A": "a\nb"}}),
            "header 'X-A'",
        ),
        (
            json!({"url": "https://x.example", "filter_types": []}),
            "filter_types holds 0 entries",
        ),
        (
            json!({"url": "https://x.example", "filter_types": [1]}),
            "filter_types holds 1",
        ),
        (
            json!({"url": "https://x.example", "channels": ["a b"]}),
            "channels holds \"a b\"",
        ),
        (
            json!({"url": "https://x.example", "disabled": "yes"}),
            "disabled must be true or false",
        ),
        (
            json!({"url": "https://x.example", "secret": "whsec_x"}),
            "unknown field 'secret'",
        ),
    ] {
        let m = invalid(
            manage::create_endpoint(db, "acme", &spec, None)
                .await
                .expect_err("refused"),
        );
        assert!(
            m.contains(says) && m.starts_with("hookbox_endpoint_create: "),
            "{spec}: {m}"
        );
    }

    let two = manage::create_endpoint(db, "acme", &json!({"url": "http://b.example/hook"}), None)
        .await
        .expect("second");
    let page = manage::list_endpoints(db, "acme", None, 1)
        .await
        .expect("list");
    assert_eq!((page.data.len(), page.done), (1, false));
    let rest = manage::list_endpoints(db, "acme", page.iterator.as_deref(), 10)
        .await
        .expect("rest");
    assert!(rest.done);
    let mut listed: Vec<String> = page
        .data
        .iter()
        .chain(&rest.data)
        .map(|e| e.id.clone())
        .collect();
    listed.sort();
    let mut expected = vec![ep.id.clone(), two.id.clone()];
    expected.sort();
    assert_eq!(listed, expected);

    let changed = manage::update_endpoint(
        db,
        "acme",
        &two.id,
        &json!({"filter_types": null, "description": "B"}),
        None,
    )
    .await
    .expect("update");
    assert_eq!(
        (changed.filter_types.clone(), changed.description.as_str()),
        (None, "B")
    );
    let err = manage::update_endpoint(db, "acme", &two.id, &json!({"url": null}), None)
        .await
        .expect_err("url cannot be cleared");
    assert!(invalid(err).starts_with("hookbox_endpoint_update: url"));
    // another tenant's endpoint is not found through this one
    manage::create_tenant(db, &json!({"uid": "globex", "name": "Globex"}), None)
        .await
        .expect("globex");
    assert!(matches!(
        manage::get_endpoint(db, "globex", &two.id).await,
        Err(ManageError::NotFound(_))
    ));
    assert!(matches!(
        manage::delete_endpoint(db, "globex", &two.id, None).await,
        Err(ManageError::NotFound(_))
    ));
    let deleted = manage::delete_endpoint(db, "acme", &two.id, None)
        .await
        .expect("delete");
    assert_eq!((deleted.secrets, deleted.undelivered), (0, 0));
    assert_eq!(
        common::count(
            db,
            &format!(
                "SELECT count(*) AS n FROM outbox_destinations WHERE name = '{}'",
                two.id
            )
        )
        .await,
        0
    );
}

async fn every_change_is_in_the_audit_trail_and_secrets_never_are(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let db = db.as_ref();
    // the tests connect as a superuser: a member of hookbox_management, so
    // the face and principal named are recorded
    let cli = Actor::new(Face::Cli, "ops@example");
    manage::create_tenant(db, &json!({"uid": "acme", "name": "Acme"}), Some(&cli))
        .await
        .expect("tenant");
    let ep = manage::create_endpoint(
        db,
        "acme",
        &json!({"url": "https://a.example", "headers": {"Authorization": "Bearer zz-secret"}}),
        None,
    )
    .await
    .expect("endpoint");
    manage::update_endpoint(db, "acme", &ep.id, &json!({"disabled": true}), Some(&cli))
        .await
        .expect("disable");
    manage::update_endpoint(
        db,
        "acme",
        &ep.id,
        &json!({"headers": {"Authorization": "Bearer zz-other"}}),
        None,
    )
    .await
    .expect("headers");
    manage::rotate_secret_later(db, "acme", &ep.id, 60, None)
        .await
        .expect("rotate");
    let trail = manage::audit(db, "acme", None, 100).await.expect("audit");
    let actions: Vec<(&str, &str)> = trail
        .data
        .iter()
        .map(|a| (a.action.as_str(), a.face.as_str()))
        .collect();
    assert_eq!(
        actions,
        vec![
            ("tenant.created", "cli"),
            ("endpoint.created", "sql"),
            ("endpoint.disabled", "cli"),
            ("endpoint.updated", "sql"),
            ("endpoint.secret_rotated", "sql"),
        ]
    );
    assert_eq!(trail.data[0].principal, "ops@example");
    assert_eq!(
        trail.data[2].changes["disabled"],
        json!({"from": false, "to": true})
    );
    let text = serde_json::to_string(&trail).expect("json");
    assert!(
        !text.contains("zz-secret") && !text.contains("zz-other"),
        "{text}"
    );
    assert_eq!(
        trail.data[3].changes["headers"],
        "changed (values not recorded)"
    );
    let next = manage::audit(db, &trail.data[0].tenant_id, Some(trail.data[1].seq), 100)
        .await
        .expect("after");
    assert_eq!(next.data.len(), 3);
}

//! `hookbox tenant …`, `hookbox endpoint …` and `hookbox message …`
//! (messages.rs: publish, list, attempts, recover): the built binary through a
//! whole tenant's life against a fresh, migrated PostgreSQL database, through
//! both database adapters (direct PostgreSQL, and the RDS Data API served
//! locally): refusals naming the field (exit 1), usage errors (exit 2),
//! held endpoints, secrets revealed and rotated under the local key vault,
//! the audit trail's face and principal, and deletions' counts. A header's
//! value never appears in any output, nor a secret outside `endpoint
//! secret` / `endpoint rotate`.

#[path = "tenants/support.rs"]
mod support;

#[path = "tenants/messages.rs"]
mod messages;

use base64::Engine as _;
use chrono::Utc;
use hookbox::tenants::{TenantEvent, publish_to};
use serde_json::Value;

use support::{Adapter, HEADER_VALUE, HEADER_VALUE_2, setup, str_of};

async fn tenants_and_endpoints_are_managed_through_the_cli(adapter: Adapter) {
    let (_test_db, db, mut cli) = setup(adapter).await;
    let vault_key = base64::engine::general_purpose::STANDARD.encode([42u8; 32]);

    // tenants: created, a uid taken refused naming it, read, listed, updated
    let acme = cli
        .ok(&[
            "tenant",
            "create",
            "--name",
            "Acme",
            "--uid",
            "acme",
            "--metadata",
            "plan=pro",
            "--rate-limit",
            "10",
        ])
        .await;
    let acme_id = str_of(&acme, "id").to_owned();
    assert!(acme_id.starts_with("app_"), "{acme}");
    assert_eq!(acme["uid"], "acme");
    assert_eq!(acme["metadata"]["plan"], "pro");
    assert_eq!(acme["rate_limit"], 10);
    assert_eq!(acme["disabled"], false);
    let err = cli
        .fails(
            &["tenant", "create", "--name", "Other", "--uid", "acme"],
            1,
            &[],
        )
        .await;
    assert!(err.contains("uid 'acme' exists"), "{err}");
    cli.fails(&["tenant", "create", "--uid", "x"], 2, &[]).await;
    let err = cli.fails(&["tenant", "get", "nobody"], 1, &[]).await;
    assert!(err.contains("'nobody'"), "{err}");
    assert_eq!(cli.ok(&["tenant", "get", "acme"]).await["id"], acme_id);
    let beta = cli.ok(&["tenant", "create", "--name", "Beta"]).await;

    let page = cli.ok(&["tenant", "list", "--limit", "1"]).await;
    assert_eq!(page["data"].as_array().expect("data").len(), 1);
    assert_eq!(page["data"][0]["id"], acme_id);
    assert_eq!(page["done"], false);
    let next = cli
        .ok(&["tenant", "list", "--after", str_of(&page, "iterator")])
        .await;
    assert_eq!(next["data"][0]["id"], beta["id"]);
    assert_eq!(next["done"], true);

    let renamed = cli
        .ok(&[
            "tenant",
            "update",
            "acme",
            "--name",
            "Acme Inc",
            "--metadata",
            "plan=enterprise",
        ])
        .await;
    assert_eq!(renamed["name"], "Acme Inc");
    assert_eq!(renamed["uid"], "acme", "fields not named stay");
    assert_eq!(renamed["metadata"]["plan"], "enterprise");
    let err = cli.fails(&["tenant", "update", "acme"], 2, &[]).await;
    assert!(err.contains("nothing to change"), "{err}");

    // endpoints: created with a header (its name shown, never its value)
    let header = format!("X-Api-Key={HEADER_VALUE}");
    let main = cli
        .ok(&[
            "endpoint",
            "create",
            "acme",
            "--url",
            "https://hooks.example.com/acme",
            "--uid",
            "main",
            "--description",
            "the main one",
            "--filter-type",
            "order.*",
            "--channel",
            "eu",
            "--header",
            &header,
            "--metadata",
            "team=core",
            "--rate-limit",
            "5",
            "--ordered",
        ])
        .await;
    let main_id = str_of(&main, "id").to_owned();
    assert!(main_id.starts_with("ep_"), "{main}");
    assert_eq!(main["tenant_id"], acme_id);
    assert_eq!(main["header_names"], serde_json::json!(["X-Api-Key"]));
    assert_eq!(main["filter_types"], serde_json::json!(["order.*"]));
    assert_eq!(main["channels"], serde_json::json!(["eu"]));
    assert_eq!(main["ordered"], true);
    assert_eq!(main["held"], false);

    let err = cli
        .fails(
            &[
                "endpoint",
                "create",
                "acme",
                "--url",
                "ftp://files.example.com",
            ],
            1,
            &[],
        )
        .await;
    assert!(
        err.contains("url 'ftp://files.example.com' is not an http:// or https:// URL"),
        "{err}"
    );
    // a malformed header is refused without echoing what was given
    let err = cli
        .fails(
            &[
                "endpoint",
                "create",
                "acme",
                "--url",
                "https://a.example.com",
                "--header",
                HEADER_VALUE,
            ],
            2,
            &[],
        )
        .await;
    assert!(err.contains("NAME=VALUE"), "{err}");
    let err = cli
        .fails(
            &[
                "endpoint",
                "create",
                "acme",
                "--url",
                "https://a.example.com",
                "--header",
                "Host=evil.example.com",
            ],
            1,
            &[],
        )
        .await;
    assert!(err.contains("header 'Host' is not allowed"), "{err}");

    let second = cli
        .ok(&[
            "endpoint",
            "create",
            "acme",
            "--url",
            "https://b.example.com/hook",
            "--uid",
            "second",
            "--disabled",
        ])
        .await;
    assert_eq!(
        (&second["disabled"], &second["held"]),
        (&Value::Bool(true), &Value::Bool(true))
    );
    let list = cli.ok(&["endpoint", "list", "acme"]).await;
    let ids: Vec<&str> = list["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|e| str_of(e, "id"))
        .collect();
    assert_eq!(ids, [main_id.as_str(), str_of(&second, "id")]);

    let header_2 = format!("X-Api-Key={HEADER_VALUE_2}");
    let updated = cli
        .ok(&[
            "endpoint",
            "update",
            "acme",
            "main",
            "--url",
            "https://hooks.example.com/v2",
            "--all-types",
            "--header",
            &header_2,
        ])
        .await;
    assert_eq!(updated["url"], "https://hooks.example.com/v2");
    assert_eq!(updated["filter_types"], Value::Null);
    assert_eq!(
        updated["description"], "the main one",
        "fields not named stay"
    );
    assert_eq!(updated["header_names"], serde_json::json!(["X-Api-Key"]));
    cli.fails(
        &[
            "endpoint",
            "update",
            "acme",
            "main",
            "--all-types",
            "--filter-type",
            "a",
        ],
        2,
        &[],
    )
    .await;
    let err = cli
        .fails(&["endpoint", "get", "acme", "nope"], 1, &[])
        .await;
    assert!(err.contains("'nope'"), "{err}");

    // disabled and enabled: held shows, the tenant's own state too
    let disabled = cli.ok(&["endpoint", "disable", "acme", "main"]).await;
    assert_eq!(
        (&disabled["disabled"], &disabled["held"]),
        (&Value::Bool(true), &Value::Bool(true))
    );
    let enabled = cli.ok(&["endpoint", "enable", "acme", "main"]).await;
    assert_eq!(
        (&enabled["disabled"], &enabled["held"]),
        (&Value::Bool(false), &Value::Bool(false))
    );
    let t = cli
        .ok(&["tenant", "disable", "acme", "--as", "alice"])
        .await;
    assert_eq!(t["disabled"], true);
    assert_eq!(
        cli.ok(&["endpoint", "get", "acme", "main"]).await["held"],
        true
    );
    assert_eq!(
        cli.ok(&["tenant", "enable", &acme_id]).await["disabled"],
        false
    );
    assert_eq!(
        cli.ok(&["endpoint", "get", &acme_id, &main_id]).await["held"],
        false
    );

    // secrets: the key vault is required, named when missing
    for args in [
        &["endpoint", "rotate", "acme", "main"][..],
        &["endpoint", "secret", "acme", "main"][..],
    ] {
        let err = cli.fails(args, 1, &[]).await;
        assert!(
            err.contains("HOOKBOX_KMS_KEY_ID") && err.contains("HOOKBOX_LOCAL_VAULT_KEY"),
            "{err}"
        );
    }
    let rotated = cli
        .secret(
            &["endpoint", "rotate", "acme", "main", "--grace-secs", "60"],
            &vault_key,
        )
        .await;
    let key = str_of(&rotated, "key").to_owned();
    assert!(key.starts_with("whsec_"), "{rotated}");
    assert_eq!(rotated["id"], main_id);
    let shown = cli
        .secret(&["endpoint", "secret", "acme", "main"], &vault_key)
        .await;
    assert_eq!(shown["key"], key.as_str());
    let chosen = format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode([7u8; 32])
    );
    let rotated = cli
        .secret(
            &["endpoint", "rotate", "acme", &main_id, "--key", &chosen],
            &vault_key,
        )
        .await;
    assert_eq!(rotated["key"], chosen.as_str());
    let shown = cli
        .secret(&["endpoint", "secret", &acme_id, "main"], &vault_key)
        .await;
    assert_eq!(shown["key"], chosen.as_str());
    let err = cli
        .fails(
            &[
                "endpoint",
                "rotate",
                "acme",
                "main",
                "--key",
                "whsec_c2hvcnQ=",
            ],
            1,
            &[("HOOKBOX_LOCAL_VAULT_KEY", &vault_key)],
        )
        .await;
    assert!(err.contains("key must be"), "{err}");
    cli.fails(
        &[
            "endpoint",
            "rotate",
            "acme",
            "main",
            "--grace-secs",
            "604801",
        ],
        2,
        &[],
    )
    .await;

    // a portal link (docs/portal.md): its key shown once, revoked by session
    let link = cli
        .ok(&[
            "tenant",
            "link",
            "acme",
            "--expiry",
            "2h",
            "--read-only",
            "--session",
            "support-7",
            "--portal-url",
            "https://hooks.example/Prod/",
        ])
        .await;
    let link_key = str_of(&link, "key").to_string();
    assert!(link_key.starts_with("hbp_"), "{link}");
    assert_eq!(
        link["url"],
        format!("https://hooks.example/Prod/portal/#key={link_key}")
    );
    assert_eq!(
        (&link["read_only"], &link["session_id"]),
        (&Value::Bool(true), &"support-7".into())
    );
    let lives = chrono::DateTime::parse_from_rfc3339(str_of(&link, "expires_at")).expect("expires")
        - chrono::DateTime::parse_from_rfc3339(str_of(&link, "created_at")).expect("created");
    assert_eq!(lives.num_seconds(), 7200);
    let portal_key = hookbox::tenants::links::PortalKey::parse(&link_key).expect("a key");
    let opens = |db: std::sync::Arc<dyn hookbox::store::Database>,
                 key: hookbox::tenants::links::PortalKey| async move {
        hookbox::tenants::links::session(db.as_ref(), &key, Utc::now())
            .await
            .expect("session")
            .is_some()
    };
    assert!(opens(db.clone(), portal_key.clone()).await);
    let err = cli
        .fails(&["tenant", "link", "acme", "--expiry", "30m"], 1, &[])
        .await;
    assert!(
        err.contains("expiry must be 3600 to 604800 seconds"),
        "{err}"
    );
    cli.fails(&["tenant", "link", "acme", "--expiry", "1w"], 2, &[])
        .await;
    let revoked = cli
        .ok(&["tenant", "unlink", "acme", "--session", "support-7"])
        .await;
    assert_eq!(revoked["revoked"], 1);
    assert!(!opens(db.clone(), portal_key).await);

    // the audit trail: every change through the CLI face, by whom
    let first = cli.ok(&["tenant", "audit", "acme", "--limit", "2"]).await;
    assert_eq!(first["data"].as_array().expect("data").len(), 2);
    let rest = cli
        .ok(&[
            "tenant",
            "audit",
            "acme",
            "--after",
            str_of(&first, "iterator"),
        ])
        .await;
    let entries: Vec<&Value> = first["data"]
        .as_array()
        .expect("data")
        .iter()
        .chain(rest["data"].as_array().expect("data"))
        .collect();
    let actions: Vec<&str> = entries.iter().map(|e| str_of(e, "action")).collect();
    for action in [
        "tenant.created",
        "tenant.updated",
        "endpoint.created",
        "endpoint.updated",
        "endpoint.disabled",
        "endpoint.enabled",
        "endpoint.secret_sealed",
        "portal.link_created",
        "portal.links_revoked",
    ] {
        assert!(actions.contains(&action), "{action} in {actions:?}");
    }
    for entry in &entries {
        assert_eq!(entry["face"], "cli", "{entry}");
        let expected = if entry["action"] == "tenant.disabled" {
            "alice"
        } else {
            "operator-ann"
        };
        assert_eq!(entry["principal"], expected, "{entry}");
    }

    // deletions say what they removed
    let gone = cli.ok(&["endpoint", "delete", "acme", "second"]).await;
    assert_eq!(gone["id"], second["id"]);
    assert_eq!(
        (&gone["secrets"], &gone["undelivered"]),
        (&0.into(), &0.into())
    );
    assert!(gone.get("endpoints").is_none(), "{gone}");
    let tx = db.begin().await.expect("begin");
    let event = TenantEvent {
        event_type: "order.paid".into(),
        payload: serde_json::json!({"order": 7}),
        aggregate: None,
        channels: Some(vec!["eu".into()]),
    };
    let deliveries = publish_to(tx.as_ref(), "acme", &event, Utc::now())
        .await
        .expect("publish");
    tx.commit().await.expect("commit");
    assert_eq!(deliveries.len(), 1);
    let gone = cli.ok(&["tenant", "delete", "acme"]).await;
    assert_eq!(gone["id"], acme_id);
    assert_eq!(gone["endpoints"], 1);
    assert_eq!(
        gone["secrets"], 2,
        "the current one and the one in its grace"
    );
    assert_eq!(gone["undelivered"], 1);
    cli.fails(&["tenant", "get", "acme"], 1, &[]).await;
    let trail = cli
        .ok(&["tenant", "audit", &acme_id, "--limit", "1000"])
        .await;
    let last = trail["data"]
        .as_array()
        .and_then(|d| d.last())
        .expect("entry");
    assert_eq!(last["action"], "tenant.deleted");
    assert_eq!(last["face"], "cli");

    // never a header's value, nor a secret, outside `secret` and `rotate`
    for hidden in [HEADER_VALUE, HEADER_VALUE_2, &key, &chosen] {
        assert!(
            !cli.transcript.contains(hidden),
            "{hidden} printed: {}",
            cli.transcript
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_tenants_and_endpoints_are_managed_through_the_cli() {
    tenants_and_endpoints_are_managed_through_the_cli(Adapter::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_api_tenants_and_endpoints_are_managed_through_the_cli() {
    tenants_and_endpoints_are_managed_through_the_cli(Adapter::DataApi).await;
}

/// `hookbox event-type put|get|list|delete`: the catalog, a schema from a
/// file, an example, enforcement (a publish the schema refuses names where
/// it fails; a schema enforcement cannot apply is refused at put).
async fn the_event_catalog_is_managed_through_the_cli(adapter: Adapter) {
    let (_test_db, db, mut cli) = setup(adapter).await;
    let schema = tempfile::NamedTempFile::new().expect("file");
    std::fs::write(
        schema.path(),
        r#"{"type": "object", "required": ["order"], "properties": {"order": {"type": "string"}}}"#,
    )
    .expect("write");
    let path = schema.path().to_string_lossy().into_owned();
    let put = cli
        .ok(&[
            "event-type",
            "put",
            "order.paid",
            "--description",
            "An order was paid",
            "--schema",
            &path,
            "--example",
            r#"{"order": "o-1"}"#,
            "--enforce",
        ])
        .await;
    assert_eq!(put["enforce_schema"], true);
    assert_eq!(put["example"], serde_json::json!({"order": "o-1"}));
    assert_eq!(
        cli.ok(&["event-type", "get", "order.paid"]).await["schema"]["required"][0],
        "order"
    );
    let listed = cli.ok(&["event-type", "list"]).await;
    assert_eq!(listed["data"][0]["name"], "order.paid");
    let err = cli
        .fails(
            &[
                "event-type",
                "put",
                "order.paid",
                "--description",
                "d",
                "--schema",
                &path,
                "--example",
                r#"{"order": 1}"#,
                "--enforce",
            ],
            1,
            &[],
        )
        .await;
    assert!(
        err.contains("the example does not match the schema: $.order: expected string, got number"),
        "{err}"
    );
    cli.fails(
        &[
            "event-type",
            "put",
            "x",
            "--description",
            "d",
            "--example",
            "{",
        ],
        2,
        &[],
    )
    .await;

    cli.ok(&["tenant", "create", "--name", "Acme", "--uid", "acme"])
        .await;
    let tx = db.begin().await.expect("begin");
    let event = TenantEvent {
        event_type: "order.paid".into(),
        payload: serde_json::json!({"order": 7}),
        aggregate: None,
        channels: None,
    };
    let err = publish_to(tx.as_ref(), "acme", &event, Utc::now())
        .await
        .expect_err("the schema refuses it");
    assert!(
        err.to_string()
            .contains("$.order: expected string, got number"),
        "{err}"
    );
    let _ = tx.rollback().await;

    assert_eq!(
        cli.ok(&["event-type", "delete", "order.paid"]).await["deleted"],
        true
    );
    cli.fails(&["event-type", "get", "order.paid"], 1, &[])
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_the_event_catalog_is_managed_through_the_cli() {
    the_event_catalog_is_managed_through_the_cli(Adapter::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_api_the_event_catalog_is_managed_through_the_cli() {
    the_event_catalog_is_managed_through_the_cli(Adapter::DataApi).await;
}

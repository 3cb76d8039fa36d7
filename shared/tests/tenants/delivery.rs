//! The relay delivering to tenants' endpoints: signed with their sealed
//! secrets (both during a rotation's grace), held while disabled (and
//! dropped only by an explicit, counted choice), a tampered secret refused
//! by endpoint, deletion counted; a first data key made in a transaction
//! that rolls back is not used again.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::outbox::{self, OutboxStatus};
use hookbox::relay::{Relay, RelaySettings};
use hookbox::signature::{Secret, sign_standard_webhooks};
use hookbox::store::Database;
use hookbox::tenants::{
    Actor, EndpointDirectory, Face, ManageError, SecretKeeper, TenantEvent, manage, messages,
    publish_to,
};
use hookbox::vault::local::LocalVault;
use hookbox_testkit::http_sink::{HttpSink, Recorded};
use serde_json::json;
use uuid::Uuid;

use super::common::{self, Adapter, migrated_db, sql};
use crate::for_each_adapter;

for_each_adapter!(
    endpoints_get_deliveries_signed_with_their_sealed_secrets_through_a_rotation,
    a_disabled_endpoint_or_tenant_holds_its_deliveries_and_sends_them_in_order_on_enable,
    what_a_held_endpoint_waits_with_is_dropped_only_by_a_choice_that_says_how_many,
    a_tampered_secret_is_refused_naming_the_endpoint_never_the_value,
    deleting_a_tenant_says_what_it_removed,
    without_a_key_vault_an_endpoints_delivery_fails_naming_what_to_set,
    a_first_data_key_rolled_back_with_its_transaction_is_not_sealed_with_again,
);

pub(super) struct Setup {
    t: hookbox_testkit::TestDb,
    pub(super) db: Arc<dyn Database>,
    pub(super) clock: Arc<ManualClock>,
    pub(super) keeper: SecretKeeper,
    relay: Relay,
    pub(super) store: ConfigStore,
    pub(super) sink: HttpSink,
}

/// The relay with endpoints on a clock at the database's time (secrets'
/// grace periods are the database's), and one tenant, `acme`.
pub(super) async fn setup(adapter: Adapter) -> Setup {
    let (t, db) = migrated_db(adapter).await;
    let now: DateTime<Utc> = hookbox::store::fetch_one(
        db.as_ref(),
        &sql("SELECT CAST(extract(epoch FROM now()) AS bigint) AS s"),
        &hookbox::params! {},
    )
    .await
    .expect("now")
    .i64("s")
    .map(|s| Utc.timestamp_opt(s, 0).single().expect("instant"))
    .expect("s");
    let clock = Arc::new(ManualClock::new(now));
    let keeper = SecretKeeper::new(Arc::new(LocalVault::random()));
    let directory =
        EndpointDirectory::new(keeper.clone(), vec!["127.0.0.0/8".parse().expect("net")])
            .with_ttl(Duration::from_secs(10));
    let relay = common::http_relay(
        db.clone(),
        clock.clone(),
        RelaySettings::new("tenants-test"),
    )
    .with_endpoints(Arc::new(directory));
    let config = HookboxConfig::parse("{}", "test").expect("config");
    let store = ConfigStore::fixed(config, clock.clone());
    manage::create_tenant(db.as_ref(), &json!({"uid": "acme", "name": "Acme"}), None)
        .await
        .expect("tenant");
    Setup {
        t,
        db,
        clock,
        keeper,
        relay,
        store,
        sink: HttpSink::start().await,
    }
}

impl Setup {
    pub(super) async fn endpoint(&self, spec: serde_json::Value) -> String {
        manage::create_endpoint(self.db.as_ref(), "acme", &spec, None)
            .await
            .expect("endpoint")
            .id
    }

    pub(super) async fn publish(&self, tenant: &str, n: i64, aggregate: Option<&str>) -> Vec<Uuid> {
        let tx = self.db.begin().await.expect("begin");
        let out = publish_to(
            tx.as_ref(),
            tenant,
            &TenantEvent {
                event_type: "order.paid".into(),
                payload: json!({"n": n}),
                aggregate: aggregate.map(|a| ("order".to_string(), a.to_string())),
                channels: None,
            },
            self.clock.now(),
        )
        .await
        .expect("publish");
        tx.commit().await.expect("commit");
        out.into_iter().map(|d| d.id).collect()
    }

    /// The first `n` requests the sink received (a test that would wait
    /// for ever fails instead, with what arrived).
    pub(super) async fn received(&self, n: usize) -> Vec<Recorded> {
        tokio::time::timeout(Duration::from_secs(30), self.sink.wait_for(n))
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{n} requests expected, {} arrived: {:?}",
                    self.sink.requests().len(),
                    self.sink.requests()
                )
            })
    }

    async fn status(&self, id: Uuid) -> outbox::OutboxRow {
        outbox::get(self.db.as_ref(), id)
            .await
            .expect("get")
            .expect("row")
    }
}

/// Whether `secret` signed `request` (Standard Webhooks: one entry per
/// secret in `webhook-signature`).
pub(super) fn signed_by(request: &Recorded, secret: &Secret) -> bool {
    let id = request.header("webhook-id").expect("webhook-id");
    let at: i64 = request
        .header("webhook-timestamp")
        .expect("timestamp")
        .parse()
        .expect("seconds");
    let expected = sign_standard_webhooks(
        id,
        Utc.timestamp_opt(at, 0).single().expect("instant"),
        &request.body,
        std::slice::from_ref(secret),
    )
    .expect("sign")
    .signature;
    request
        .header("webhook-signature")
        .expect("signature")
        .split(' ')
        .any(|s| s == expected)
}

async fn endpoints_get_deliveries_signed_with_their_sealed_secrets_through_a_rotation(
    adapter: Adapter,
) {
    let s = setup(adapter).await;
    let ep = s
        .endpoint(json!({"url": s.sink.url("/acme"), "headers": {"X-Acme-Token": "tok-1"}}))
        .await;
    let first = s.publish("acme", 1, None).await;
    assert_eq!(first.len(), 1);
    s.relay.drain(&s.store).await;
    let got = s.received(1).await;
    assert_eq!(got[0].target, "/acme");
    assert_eq!(got[0].header("x-acme-token"), Some("tok-1"));
    assert_eq!(
        got[0].header("webhook-id"),
        Some(first[0].to_string().as_str())
    );
    assert_eq!(got[0].json(), json!({"n": 1}));
    assert_eq!(s.status(first[0]).await.status, OutboxStatus::Delivered);

    // the relay sealed the endpoint's first secret: it verifies, and the
    // database holds it only sealed
    let old = s
        .keeper
        .reveal(s.db.as_ref(), &ep, s.clock.now(), None)
        .await
        .expect("reveal");
    assert!(signed_by(&got[0], &old));
    assert_eq!(
        hookbox::store::fetch_one(
            s.db.as_ref(),
            &sql("SELECT count(*) AS n FROM hookbox_endpoint_secrets
                   WHERE position(convert_to(:secret, 'UTF8') IN sealed) > 0
                      OR position(decode(:b64, 'base64') IN sealed) > 0"),
            &hookbox::params! {
                "secret" => old.expose_secret(),
                "b64" => old.expose_secret().trim_start_matches("whsec_"),
            },
        )
        .await
        .expect("grep")
        .i64("n")
        .expect("n"),
        0
    );

    // rotated with an hour's grace: both sign (once the relay's copy is
    // older than its ttl), then only the new one
    let api = Actor::new(Face::Api, "token:test");
    let new = s
        .keeper
        .rotate(
            s.db.as_ref(),
            &ep,
            None,
            Duration::from_secs(3_600),
            Some(&api),
        )
        .await
        .expect("rotate");
    assert_ne!(new.expose_secret(), old.expose_secret());
    s.clock.advance(chrono::Duration::seconds(11));
    s.publish("acme", 2, None).await;
    s.relay.drain(&s.store).await;
    let got = s.received(2).await;
    assert!(
        signed_by(&got[1], &old) && signed_by(&got[1], &new),
        "both during the grace"
    );

    s.clock.advance(chrono::Duration::hours(2));
    s.publish("acme", 3, None).await;
    s.relay.drain(&s.store).await;
    let got = s.received(3).await;
    assert!(
        signed_by(&got[2], &new) && !signed_by(&got[2], &old),
        "the old one retired"
    );

    // a dump of the whole database holds neither secret in clear
    let dump = std::process::Command::new(
        hookbox_testkit::find_bindir()
            .expect("PostgreSQL binaries")
            .join("pg_dump"),
    )
    .arg("--no-owner")
    .arg(s.t.url())
    .output()
    .expect("pg_dump");
    assert!(
        dump.status.success(),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    let dump = String::from_utf8_lossy(&dump.stdout);
    assert!(
        dump.contains("hookbox_endpoint_secrets"),
        "a dump of the schema"
    );
    for secret in [&old, &new] {
        let key = secret.expose_secret().trim_start_matches("whsec_");
        assert!(!dump.contains(key), "a secret in clear in pg_dump's output");
    }

    let trail = manage::audit(s.db.as_ref(), "acme", None, 100)
        .await
        .expect("audit");
    let sealed: Vec<&str> = trail
        .data
        .iter()
        .filter(|a| a.action == "endpoint.secret_sealed")
        .map(|a| a.face.as_str())
        .collect();
    assert_eq!(sealed, vec!["relay", "api"]);
}

async fn a_disabled_endpoint_or_tenant_holds_its_deliveries_and_sends_them_in_order_on_enable(
    adapter: Adapter,
) {
    let s = setup(adapter).await;
    let ep = s
        .endpoint(json!({"url": s.sink.url("/held"), "ordered": true, "disabled": true}))
        .await;
    let mut ids = Vec::new();
    for n in 1..=3 {
        ids.extend(s.publish("acme", n, Some("o-1")).await);
    }
    s.relay.drain(&s.store).await;
    assert!(
        s.sink.requests().is_empty(),
        "a disabled endpoint receives nothing"
    );
    for id in &ids {
        let row = s.status(*id).await;
        assert_eq!(
            (row.status, row.attempts),
            (OutboxStatus::Pending, 0),
            "held, untouched"
        );
    }

    let enabled = manage::update_endpoint(
        s.db.as_ref(),
        "acme",
        &ep,
        &json!({"disabled": false}),
        None,
    )
    .await
    .expect("enable");
    assert!(!enabled.held);
    s.relay.drain(&s.store).await;
    let got: Vec<i64> = s
        .sink
        .wait_for(3)
        .await
        .iter()
        .map(|r| r.json()["n"].as_i64().expect("n"))
        .collect();
    assert_eq!(got, vec![1, 2, 3], "everything it missed, in order");

    // a disabled tenant holds every endpoint of it the same way
    manage::set_tenant_disabled(s.db.as_ref(), "acme", true, None)
        .await
        .expect("disable tenant");
    assert!(
        manage::get_endpoint(s.db.as_ref(), "acme", &ep)
            .await
            .expect("ep")
            .held
    );
    let later = s.publish("acme", 4, Some("o-1")).await;
    s.relay.drain(&s.store).await;
    assert_eq!(s.sink.requests().len(), 3);
    assert_eq!(s.status(later[0]).await.status, OutboxStatus::Pending);
    manage::set_tenant_disabled(s.db.as_ref(), "acme", false, None)
        .await
        .expect("enable tenant");
    s.relay.drain(&s.store).await;
    assert_eq!(s.received(4).await[3].json()["n"], 4);
}

/// Migration 27: refused for an endpoint that is not held; for a held one,
/// the deliveries created before `until` are dead with the reason and who
/// chose it, the later one still waits and is the only one sent on enable;
/// the audit trail has the count; recover can still send a dropped one.
async fn what_a_held_endpoint_waits_with_is_dropped_only_by_a_choice_that_says_how_many(
    adapter: Adapter,
) {
    let s = setup(adapter).await;
    let db = s.db.as_ref();
    let live = s
        .endpoint(json!({"url": s.sink.url("/live"), "uid": "live"}))
        .await;
    let refused = messages::drop_held(db, "acme", &live, None, None).await;
    assert!(
        matches!(&refused, Err(ManageError::Invalid(m))
            if m.contains("is not held") && m.contains(&live) && m.contains("disable it first")),
        "{refused:?}"
    );
    manage::delete_endpoint(db, "acme", &live, None)
        .await
        .expect("delete");
    let ep = s
        .endpoint(json!({"url": s.sink.url("/held"), "uid": "held", "disabled": true}))
        .await;
    let mut ids = Vec::new();
    for n in 1..=3 {
        ids.extend(s.publish("acme", n, None).await);
    }
    let t0 = s.clock.now();
    db.execute(
        &sql("UPDATE outbox SET created_at = CAST(:old AS timestamptz)
               WHERE id = ANY(ARRAY[CAST(:a AS uuid), CAST(:b AS uuid)])"),
        &hookbox::params! { "old" => t0 - chrono::Duration::hours(2),
        "a" => ids[0].to_string(), "b" => ids[1].to_string() },
    )
    .await
    .expect("two older deliveries");
    let ann = Actor::new(Face::Cli, "ann");
    let dropped = messages::drop_held(
        db,
        "acme",
        "held",
        Some(t0 - chrono::Duration::hours(1)),
        Some(&ann),
    )
    .await
    .expect("drop");
    assert_eq!((dropped.id.as_str(), dropped.dropped), (ep.as_str(), 2));
    for id in &ids[..2] {
        let row = s.status(*id).await;
        assert_eq!((row.status, row.attempts), (OutboxStatus::Dead, 0), "{id}");
        let error = row.last_error.unwrap_or_default();
        assert!(error.contains("dropped while held, by cli ann"), "{error}");
    }
    assert_eq!(s.status(ids[2]).await.status, OutboxStatus::Pending);
    let audit = manage::audit(db, "acme", None, 50)
        .await
        .expect("audit")
        .data;
    let entry = audit
        .iter()
        .find(|a| a.action == "endpoint.held_dropped")
        .expect("recorded");
    assert_eq!(entry.changes["dropped"], 2);
    assert_eq!(entry.principal, "ann");

    manage::update_endpoint(db, "acme", &ep, &json!({"disabled": false}), None)
        .await
        .expect("enable");
    s.relay.drain(&s.store).await;
    let got = s.received(1).await;
    assert_eq!(got[0].json()["n"], 3, "only what was not dropped");
    let again =
        messages::recover_endpoint(db, "acme", &ep, t0 - chrono::Duration::hours(3), None, None)
            .await
            .expect("recover");
    assert_eq!(again.dead, 2, "a dropped delivery can still be recovered");
}

async fn a_tampered_secret_is_refused_naming_the_endpoint_never_the_value(adapter: Adapter) {
    let s = setup(adapter).await;
    let ep = s.endpoint(json!({"url": s.sink.url("/t")})).await;
    let secret = s
        .keeper
        .rotate(s.db.as_ref(), &ep, None, Duration::ZERO, None)
        .await
        .expect("seal");
    s.db.execute(
        &sql("UPDATE hookbox_endpoint_secrets
                     SET sealed = set_byte(sealed, 20, get_byte(sealed, 20) # 1)"),
        &hookbox::params! {},
    )
    .await
    .expect("tamper");
    let ids = s.publish("acme", 1, None).await;
    s.relay.drain(&s.store).await;
    assert!(
        s.sink.requests().is_empty(),
        "nothing is sent unsigned or missigned"
    );
    let row = s.status(ids[0]).await;
    let error = row.last_error.unwrap_or_default();
    assert_eq!(
        (row.status, row.attempts),
        (OutboxStatus::Pending, 1),
        "{error}"
    );
    assert!(
        error.contains(&ep) && error.contains("does not open"),
        "{error}"
    );
    assert!(
        !error.contains(secret.expose_secret().trim_start_matches("whsec_")),
        "{error}"
    );
}

async fn deleting_a_tenant_says_what_it_removed(adapter: Adapter) {
    let s = setup(adapter).await;
    let a = s.endpoint(json!({"url": s.sink.url("/a")})).await;
    s.endpoint(json!({"url": s.sink.url("/b"), "disabled": true}))
        .await;
    s.keeper
        .rotate(s.db.as_ref(), &a, None, Duration::ZERO, None)
        .await
        .expect("seal");
    s.publish("acme", 1, None).await;
    s.relay.drain(&s.store).await;
    s.received(1).await;
    // one delivered (kept as history), one held for the disabled endpoint,
    // then two more undelivered
    s.publish("acme", 2, None).await;
    let deleted = manage::delete_tenant(s.db.as_ref(), "acme", None)
        .await
        .expect("delete");
    assert_eq!(
        (deleted.endpoints, deleted.secrets, deleted.undelivered),
        (Some(2), 1, 3)
    );
    let db = s.db.as_ref();
    assert_eq!(
        common::count(
            db,
            "SELECT count(*) AS n FROM outbox WHERE status = 'pending'"
        )
        .await,
        0
    );
    assert_eq!(
        common::count(
            db,
            "SELECT count(*) AS n FROM outbox WHERE status = 'delivered'"
        )
        .await,
        1
    );
    for table in [
        "hookbox_tenants",
        "hookbox_endpoints",
        "hookbox_endpoint_secrets",
    ] {
        assert_eq!(
            common::count(db, &format!("SELECT count(*) AS n FROM {table}")).await,
            0,
            "{table}"
        );
    }
    assert_eq!(
        common::count(
            db,
            "SELECT count(*) AS n FROM outbox_destinations WHERE tenant_id IS NOT NULL"
        )
        .await,
        0
    );
    let trail = manage::audit(db, &deleted.id, None, 100)
        .await
        .expect("trail");
    assert_eq!(
        trail.data.last().map(|a| a.action.as_str()),
        Some("tenant.deleted")
    );
}

async fn without_a_key_vault_an_endpoints_delivery_fails_naming_what_to_set(adapter: Adapter) {
    let s = setup(adapter).await;
    s.endpoint(json!({"url": s.sink.url("/nv")})).await;
    let ids = s.publish("acme", 1, None).await;
    let bare = common::http_relay(
        s.db.clone(),
        s.clock.clone(),
        RelaySettings::new("no-vault"),
    );
    bare.drain(&s.store).await;
    assert!(s.sink.requests().is_empty());
    let row = s.status(ids[0]).await;
    let error = row.last_error.unwrap_or_default();
    assert!(
        error.contains("no key vault") && error.contains("HOOKBOX_KMS_KEY_ID"),
        "{error}"
    );
}

async fn a_first_data_key_rolled_back_with_its_transaction_is_not_sealed_with_again(
    adapter: Adapter,
) {
    let s = setup(adapter).await;
    let ep = s.endpoint(json!({"url": s.sink.url("/a")})).await;
    // the first seal of the process makes the first data key, inside a
    // transaction that rolls back: the key's row goes with it
    let tx = s.db.begin().await.expect("begin");
    s.keeper
        .rotate(tx.as_ref(), &ep, None, Duration::ZERO, None)
        .await
        .expect("rotate inside");
    tx.rollback().await.expect("rollback");
    assert_eq!(
        common::count(s.db.as_ref(), "SELECT count(*) AS n FROM hookbox_data_keys").await,
        0
    );
    // the same keeper seals again, with a key that exists
    s.keeper
        .rotate(s.db.as_ref(), &ep, None, Duration::ZERO, None)
        .await
        .expect("a later seal is not refused for a key that was rolled back");
    assert_eq!(
        common::count(s.db.as_ref(), "SELECT count(*) AS n FROM hookbox_data_keys").await,
        1
    );
    // and keeps sealing with it
    s.keeper
        .rotate(s.db.as_ref(), &ep, None, Duration::ZERO, None)
        .await
        .expect("third");
    assert_eq!(
        common::count(s.db.as_ref(), "SELECT count(*) AS n FROM hookbox_data_keys").await,
        1
    );
}

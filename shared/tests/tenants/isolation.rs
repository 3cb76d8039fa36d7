//! Isolation under change: 200 tenants with 3 endpoints each, events
//! published to random tenants while endpoints are added, rotated,
//! disabled, enabled and deleted between relay runs. Every delivery reaches
//! exactly one endpoint of the publishing tenant that matched it, once,
//! signed with a secret that endpoint had (verified by Standard Webhooks'
//! own Python library, `standardwebhooks`, as a receiver would); nothing
//! reaches another tenant; a deleted endpoint's undelivered rows are the
//! ones its deletion counted.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::signature::Secret;
use hookbox::tenants::{EndpointDirectory, SecretKeeper, TenantEvent, manage, publish_to};
use hookbox::vault::local::LocalVault;
use hookbox_testkit::http_sink::{HttpSink, Recorded};
use serde_json::json;

use super::common::{self, Adapter, migrated_db, sql};
use crate::for_each_adapter;

for_each_adapter!(two_hundred_tenants_get_exactly_their_own_deliveries_while_endpoints_change);

const TENANTS: usize = 200;
const ROUNDS: usize = 8;
const EVENTS_PER_ROUND: usize = 40;
const TYPES: [&str; 3] = ["order.paid", "invoice.sent", "user.created"];

/// What the test knows of one endpoint.
struct Known {
    tenant: usize,
    id: String,
    filter: Option<&'static str>,
    /// Every secret it has had (a delivery must verify with one of them).
    secrets: Vec<Secret>,
    deleted: bool,
}

/// What Standard Webhooks' own Python library checks of `request`
/// against `secret` (`hookbox_testkit::python::standard_webhooks_verify`).
fn line(request: &Recorded, secret: &Secret) -> serde_json::Value {
    let header = |name: &str| request.header(name).unwrap_or_default();
    json!({
        "secret": secret.expose_secret(),
        "body": String::from_utf8_lossy(&request.body),
        "headers": {
            "webhook-id": header("webhook-id"),
            "webhook-timestamp": header("webhook-timestamp"),
            "webhook-signature": header("webhook-signature"),
        },
    })
}

async fn two_hundred_tenants_get_exactly_their_own_deliveries_while_endpoints_change(
    adapter: Adapter,
) {
    let (_t, db) = migrated_db(adapter).await;
    let mut rng = fastrand::Rng::with_seed(41);
    let sink = HttpSink::start().await;
    // the database's time: secrets' grace periods are counted there
    let now = hookbox::store::fetch_one(
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
    let relay = common::http_relay(
        db.clone(),
        clock.clone(),
        hookbox::relay::RelaySettings::new("isolation"),
    )
    .with_endpoints(Arc::new(
        EndpointDirectory::new(keeper.clone(), vec!["127.0.0.0/8".parse().expect("net")])
            .with_ttl(Duration::ZERO),
    ));
    let store = ConfigStore::fixed(
        HookboxConfig::parse("{}", "test").expect("config"),
        clock.clone(),
    );
    let db = db.as_ref();

    let mut endpoints: BTreeMap<String, Known> = BTreeMap::new(); // by uid
    let mut next_uid = 0usize;
    let add = |tenant: usize, next_uid: &mut usize| {
        *next_uid += 1;
        let uid = format!("e{next_uid}");
        let filter = [None, Some("order.*"), Some("invoice.sent")][*next_uid % 3];
        let mut spec = json!({"uid": uid, "url": sink.url(&format!("/t{tenant}/{uid}"))});
        if let Some(f) = filter {
            spec["filter_types"] = json!([f]);
        }
        (uid, filter, spec)
    };
    for tenant in 0..TENANTS {
        manage::create_tenant(
            db,
            &json!({"uid": format!("t{tenant}"), "name": format!("T{tenant}")}),
            None,
        )
        .await
        .expect("tenant");
        for _ in 0..3 {
            let (uid, filter, spec) = add(tenant, &mut next_uid);
            let id = manage::create_endpoint(db, &format!("t{tenant}"), &spec, None)
                .await
                .expect("endpoint")
                .id;
            endpoints.insert(
                uid,
                Known {
                    tenant,
                    id,
                    filter,
                    secrets: Vec::new(),
                    deleted: false,
                },
            );
        }
    }

    // delivery id → (tenant, endpoint uid), as publishing returned them
    let mut expected: BTreeMap<String, (usize, String)> = BTreeMap::new();
    let mut removed_undelivered = 0i64;
    let by_id = |endpoints: &BTreeMap<String, Known>, id: &str| {
        endpoints
            .iter()
            .find(|(_, k)| k.id == id)
            .map(|(uid, _)| uid.clone())
            .expect("a known endpoint")
    };
    for round in 0..ROUNDS {
        for n in 0..EVENTS_PER_ROUND {
            let tenant = rng.usize(..TENANTS);
            let event_type = TYPES[rng.usize(..TYPES.len())];
            let tx = db.begin().await.expect("begin");
            let out = publish_to(
                tx.as_ref(),
                &format!("t{tenant}"),
                &TenantEvent {
                    event_type: event_type.into(),
                    payload: json!({"tenant": tenant, "round": round, "n": n}),
                    aggregate: None,
                    channels: None,
                },
                clock.now(),
            )
            .await
            .expect("publish");
            tx.commit().await.expect("commit");
            // exactly the tenant's live endpoints whose filter matches
            let want: BTreeSet<&str> = endpoints
                .values()
                .filter(|k| k.tenant == tenant && !k.deleted)
                .filter(|k| match k.filter {
                    None => true,
                    Some("order.*") => event_type.starts_with("order."),
                    Some(f) => f == event_type,
                })
                .map(|k| k.id.as_str())
                .collect();
            let got: BTreeSet<&str> = out.iter().map(|d| d.endpoint_id.as_str()).collect();
            assert_eq!(
                got, want,
                "round {round} event {n} to t{tenant} ({event_type})"
            );
            for d in &out {
                expected.insert(
                    d.id.to_string(),
                    (tenant, by_id(&endpoints, &d.endpoint_id)),
                );
            }
        }

        // change endpoints between runs: add, rotate, disable, enable, delete
        for _ in 0..5 {
            let tenant = rng.usize(..TENANTS);
            let (uid, filter, spec) = add(tenant, &mut next_uid);
            let id = manage::create_endpoint(db, &format!("t{tenant}"), &spec, None)
                .await
                .expect("added");
            endpoints.insert(
                uid,
                Known {
                    tenant,
                    id: id.id,
                    filter,
                    secrets: Vec::new(),
                    deleted: false,
                },
            );
        }
        let live: Vec<String> = endpoints
            .iter()
            .filter(|(_, k)| !k.deleted)
            .map(|(u, _)| u.clone())
            .collect();
        for _ in 0..5 {
            let uid = &live[rng.usize(..live.len())];
            let known = endpoints.get_mut(uid).expect("known");
            if known.secrets.is_empty() {
                // the secret the relay sealed (or seals now), before it changes
                known.secrets.push(
                    keeper
                        .reveal(db, &known.id, clock.now(), None)
                        .await
                        .expect("reveal"),
                );
            }
            let new = keeper
                .rotate(db, &known.id, None, Duration::from_secs(3_600), None)
                .await
                .expect("rotate");
            known.secrets.push(new);
        }
        for _ in 0..5 {
            let uid = &live[rng.usize(..live.len())];
            let k = &endpoints[uid];
            manage::update_endpoint(
                db,
                &format!("t{}", k.tenant),
                &k.id,
                &json!({"disabled": rng.bool()}),
                None,
            )
            .await
            .expect("disable or enable");
        }
        for _ in 0..2 {
            let uid = live[rng.usize(..live.len())].clone();
            let known = endpoints.get_mut(&uid).expect("known");
            if known.deleted {
                continue;
            }
            if known.secrets.is_empty() {
                known.secrets.push(
                    keeper
                        .reveal(db, &known.id, clock.now(), None)
                        .await
                        .expect("reveal"),
                );
            }
            let gone = manage::delete_endpoint(db, &format!("t{}", known.tenant), &known.id, None)
                .await
                .expect("delete");
            removed_undelivered += gone.undelivered;
            known.deleted = true;
        }
        relay.drain(&store).await;
        clock.advance(chrono::Duration::seconds(1));
    }
    // everything held is let go
    for k in endpoints.values().filter(|k| !k.deleted) {
        manage::update_endpoint(
            db,
            &format!("t{}", k.tenant),
            &k.id,
            &json!({"disabled": false}),
            None,
        )
        .await
        .expect("enable");
    }
    relay.drain(&store).await;
    for k in endpoints
        .values_mut()
        .filter(|k| !k.deleted && k.secrets.is_empty())
    {
        k.secrets.push(
            keeper
                .reveal(db, &k.id, clock.now(), None)
                .await
                .expect("reveal"),
        );
    }

    let requests = sink.requests();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for r in &requests {
        let id = r.header("webhook-id").unwrap_or_default().to_string();
        let (tenant, uid) = expected
            .get(&id)
            .unwrap_or_else(|| panic!("{} got {id}, which was never published", r.target));
        assert_eq!(
            r.target,
            format!("/t{tenant}/{uid}"),
            "delivered to another endpoint"
        );
        assert_eq!(r.json()["tenant"], *tenant, "another tenant's event");
        assert!(seen.insert(id.clone()), "{id} delivered twice");
    }
    // each delivery verifies with one of its endpoint's secrets, by the
    // library a receiver uses; and not with another tenant's
    let mut lines = Vec::new();
    let mut of_request = Vec::new();
    for (i, r) in requests.iter().enumerate() {
        let (_, uid) = &expected[r.header("webhook-id").unwrap_or_default()];
        for secret in &endpoints[uid].secrets {
            lines.push(line(r, secret));
            of_request.push(i);
        }
    }
    let first = requests.first().expect("deliveries");
    let (first_tenant, _) = &expected[first.header("webhook-id").unwrap_or_default()];
    let foreign = endpoints
        .values()
        .find(|k| k.tenant != *first_tenant && !k.secrets.is_empty())
        .expect("another tenant's endpoint");
    lines.push(line(first, &foreign.secrets[0]));
    let verdicts = hookbox_testkit::python::standard_webhooks_verify(&lines);
    assert_eq!(verdicts.len(), lines.len(), "a verdict a line");
    assert_ne!(
        verdicts.last(),
        Some(&json!(true)),
        "verifies with another tenant's secret"
    );
    for (i, r) in requests.iter().enumerate() {
        let verified = of_request
            .iter()
            .zip(&verdicts)
            .any(|(of, v)| *of == i && *v == json!(true));
        assert!(
            verified,
            "{} does not verify with a secret of its endpoint: {:?}",
            r.target,
            of_request
                .iter()
                .zip(&verdicts)
                .filter(|(of, _)| **of == i)
                .map(|(_, v)| v)
                .collect::<Vec<_>>()
        );
    }
    let pending = common::count(
        db,
        "SELECT count(*) AS n FROM outbox WHERE status <> 'delivered'",
    )
    .await;
    assert_eq!(
        pending, 0,
        "every delivery delivered or deleted with its endpoint"
    );
    assert_eq!(
        seen.len() as i64 + removed_undelivered,
        expected.len() as i64,
        "each published delivery is delivered once or counted by its endpoint's deletion"
    );
}

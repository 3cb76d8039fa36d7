//! A claimed batch's endpoints come with its claim (their documents): the
//! relay reads no endpoint on its own while their documents fit the
//! claim's budget, so a change (URL, headers, a rotation) reaches the next
//! claim's deliveries whatever the directory's cache time; the endpoints
//! over the budget are read in one statement. Each document is kept on
//! its endpoint's row, rewritten in the transaction of every change to what
//! it holds, whichever way the change is made.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hookbox::clock::Clock;
use hookbox::relay::RelaySettings;
use hookbox::store::{Database, DbError, Executor, Params, Rows, Statement, Transaction};
use hookbox::tenants::{EndpointDirectory, manage};
use serde_json::json;

use super::common::{self, Adapter, sql};
use super::delivery::{Setup, setup, signed_by};
use crate::for_each_adapter;

for_each_adapter!(
    a_batchs_endpoints_come_with_its_claim_and_a_change_reaches_the_next_one,
    endpoints_over_the_claims_budget_are_read_in_one_statement,
    a_claim_full_of_payloads_and_endpoints_stays_under_the_data_apis_response_limit,
    each_endpoints_document_is_rewritten_by_every_change_to_what_it_holds,
);

/// The names of the statements run outside transactions, and how many
/// endpoints each read of endpoints named.
#[derive(Debug)]
struct Named {
    db: Arc<dyn Database>,
    names: Mutex<Vec<&'static str>>,
    endpoints_read: Mutex<Vec<usize>>,
}

impl Named {
    /// The relay's reads of endpoints on their own, each by the endpoints
    /// it named.
    fn reads_of_endpoints(&self) -> Vec<usize> {
        self.endpoints_read.lock().expect("reads").clone()
    }
}

#[async_trait]
impl Executor for Named {
    async fn execute(&self, statement: &Statement, params: &Params) -> Result<Rows, DbError> {
        self.names.lock().expect("names").push(statement.name);
        if statement.name == hookbox::tenants::directory::ENDPOINTS.name {
            let named = match params.get("ids") {
                Some(hookbox::store::Value::Json(serde_json::Value::Array(ids))) => ids.len(),
                other => panic!("ids: {other:?}"),
            };
            self.endpoints_read.lock().expect("reads").push(named);
        }
        self.db.execute(statement, params).await
    }
}

#[async_trait]
impl Database for Named {
    async fn begin(&self) -> Result<Box<dyn Transaction>, DbError> {
        self.db.begin().await
    }
}

/// A relay on `s`'s database, counting its statements, whose directory
/// keeps an endpoint read on its own for `ttl`.
fn counted_relay(s: &Setup, ttl: Duration) -> (Arc<Named>, hookbox::relay::Relay) {
    let named = Arc::new(Named {
        db: s.db.clone(),
        names: Mutex::default(),
        endpoints_read: Mutex::default(),
    });
    let directory =
        EndpointDirectory::new(s.keeper.clone(), vec!["127.0.0.0/8".parse().expect("net")])
            .with_ttl(ttl);
    let relay = common::http_relay(
        named.clone(),
        s.clock.clone(),
        RelaySettings::new("claim-docs"),
    )
    .with_endpoints(Arc::new(directory));
    (named, relay)
}

async fn a_batchs_endpoints_come_with_its_claim_and_a_change_reaches_the_next_one(
    adapter: Adapter,
) {
    let s = setup(adapter).await;
    let a = s
        .endpoint(json!({"url": s.sink.url("/a"), "headers": {"X-Token": "one"}}))
        .await;
    let b = s.endpoint(json!({"url": s.sink.url("/b")})).await;
    // (sealed first: the relay seals an endpoint's first secret itself,
    // and reads it back)
    for ep in [&a, &b] {
        s.keeper
            .signing_secrets(s.db.as_ref(), ep, s.clock.now())
            .await
            .expect("sealed");
    }
    let old = s
        .keeper
        .reveal(s.db.as_ref(), &b, s.clock.now(), None)
        .await
        .expect("reveal");
    // kept for five minutes when read on their own: only the claims'
    // documents can bring the changes below within this test's instant
    let (named, relay) = counted_relay(&s, Duration::from_secs(300));

    s.publish("acme", 1, None).await;
    relay.drain(&s.store).await;
    let got = s.received(2).await;
    let mut targets: Vec<&str> = got.iter().map(|r| r.target.as_str()).collect();
    targets.sort_unstable();
    assert_eq!(targets, ["/a", "/b"]);
    assert_eq!(named.reads_of_endpoints(), [0; 0], "{:?}", named.names);

    manage::update_endpoint(
        s.db.as_ref(),
        "acme",
        &a,
        &json!({"url": s.sink.url("/a2"), "headers": {"X-Token": "two"}}),
        None,
    )
    .await
    .expect("update");
    let new = s
        .keeper
        .rotate(s.db.as_ref(), &b, None, Duration::from_secs(3_600), None)
        .await
        .expect("rotate");
    s.publish("acme", 2, None).await;
    relay.drain(&s.store).await;
    let got = s.received(4).await;
    let to_a = got
        .iter()
        .find(|r| r.json() == json!({"n": 2}) && r.target.starts_with("/a"))
        .expect("the second event to a");
    assert_eq!(to_a.target, "/a2");
    assert_eq!(to_a.header("x-token"), Some("two"));
    let to_b = got
        .iter()
        .find(|r| r.json() == json!({"n": 2}) && r.target == "/b")
        .expect("the second event to b");
    assert!(
        signed_by(to_b, &new) && signed_by(to_b, &old),
        "the rotation's new secret at once, the old one through its grace"
    );
    assert_eq!(named.reads_of_endpoints(), [0; 0], "{:?}", named.names);
}

async fn endpoints_over_the_claims_budget_are_read_in_one_statement(adapter: Adapter) {
    let s = setup(adapter).await;
    // 15,700 bytes of headers each: six documents fit the claim's 98,304
    // bytes, the seventh does not
    let pad = "p".repeat(15_700);
    let mut endpoints = Vec::new();
    for i in 0..7 {
        let ep = s
            .endpoint(json!({"url": s.sink.url(&format!("/e{i}")), "headers": {"X-Pad": pad}}))
            .await;
        s.keeper
            .signing_secrets(s.db.as_ref(), &ep, s.clock.now())
            .await
            .expect("sealed");
        endpoints.push(ep);
    }
    let (named, relay) = counted_relay(&s, Duration::from_secs(10));
    s.publish("acme", 1, None).await;
    relay.drain(&s.store).await;
    let got = s.received(7).await;
    let mut targets: Vec<String> = got.iter().map(|r| r.target.clone()).collect();
    targets.sort_unstable();
    assert_eq!(
        targets,
        (0..7).map(|i| format!("/e{i}")).collect::<Vec<_>>()
    );
    assert!(got.iter().all(|r| r.header("x-pad") == Some(pad.as_str())));
    // one statement, for the seventh
    assert_eq!(named.reads_of_endpoints(), [1], "{:?}", named.names);
}

async fn a_claim_full_of_payloads_and_endpoints_stays_under_the_data_apis_response_limit(
    adapter: Adapter,
) {
    let s = setup(adapter).await;
    // 30 endpoints of 15,700 bytes of headers, a due row of a 40,000-byte
    // payload each (the most a claim returns inline): the rows fill the
    // rows' budget, the documents theirs; through the Data API (whose
    // local stand-in refuses an answer over 1 MiB, as AWS's does) the
    // claim is still one answer
    let pad = "p".repeat(15_700);
    for i in 0..30 {
        s.endpoint(json!({"url": s.sink.url(&format!("/e{i}")), "headers": {"X-Pad": pad}}))
            .await;
    }
    s.db.execute(
        &common::sql(
            "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, destination,
                                 payload, status, next_attempt_at, created_at)
             SELECT gen_random_uuid(), 'message', 'm-' || e.id, 'order.paid', e.id,
                    jsonb_build_object('pad', repeat('x', 39970)), 'pending',
                    now() - interval '1 minute', now()
               FROM hookbox_endpoints AS e",
        ),
        &hookbox::params! {},
    )
    .await
    .expect("rows");
    let claimed = hookbox::outbox::repo::claim_batch(
        s.db.as_ref(),
        hookbox::outbox::ClaimRequest {
            worker: "w",
            now: s.clock.now(),
            lease_until: s.clock.now() + chrono::Duration::seconds(60),
            limit: 100,
            ordered_destinations: &[],
            destination_caps: &[],
        },
        hookbox::outbox::repo::CLAIM_BUDGET_BYTES,
    )
    .await
    .expect("one answer under 1 MiB");
    assert!(
        (20..30).contains(&claimed.rows.len()),
        "the rows' budget stops the claim: {} rows",
        claimed.rows.len()
    );
    assert!(claimed.rows.iter().all(|r| {
        r.payload_storage == hookbox::outbox::PayloadStorage::Inline && r.payload.len() > 39_970
    }));
    assert_eq!(claimed.endpoints.len(), 6, "the documents' budget");
}

/// Endpoint `id`'s stored document, after checking that every endpoint's
/// stored document is the one its tables give now (none stale).
async fn stored_doc(s: &Setup, id: &str, after: &str) -> serde_json::Value {
    let stale = common::count(
        s.db.as_ref(),
        "SELECT count(*) AS n FROM hookbox_endpoints AS e
          WHERE e.relay_doc IS DISTINCT FROM hookbox_endpoint_relay_doc(e)",
    )
    .await;
    assert_eq!(stale, 0, "endpoints whose document is stale after {after}");
    endpoint_column(s, id, "relay_doc")
        .await
        .json("v")
        .expect("relay_doc")
}

/// Column expression `what` of endpoint `id`'s row, as `v`.
async fn endpoint_column(s: &Setup, id: &str, what: &str) -> hookbox::store::Row {
    hookbox::store::fetch_one(
        s.db.as_ref(),
        &sql(&format!(
            "SELECT {what} AS v FROM hookbox_endpoints WHERE id = :id"
        )),
        &hookbox::params! { "id" => id },
    )
    .await
    .expect(what)
}

/// The number of secrets in `doc`, and how many of them expire.
fn secrets(doc: &serde_json::Value) -> (usize, usize) {
    let all = doc["secrets"].as_array().expect("secrets");
    let expiring = all.iter().filter(|s| !s["expires_at"].is_null()).count();
    (all.len(), expiring)
}

async fn each_endpoints_document_is_rewritten_by_every_change_to_what_it_holds(adapter: Adapter) {
    let s = setup(adapter).await;
    let a = s
        .endpoint(json!({"url": s.sink.url("/a"), "headers": {"X-Token": "one"}}))
        .await;
    let b = s.endpoint(json!({"url": s.sink.url("/b")})).await;
    let doc = stored_doc(&s, &a, "create").await;
    assert_eq!(doc["url"], json!(s.sink.url("/a")));
    assert_eq!(doc["headers"], json!({"X-Token": "one"}));
    assert_eq!(secrets(&doc), (0, 0));

    // the relay seals the first secret
    s.keeper
        .signing_secrets(s.db.as_ref(), &a, s.clock.now())
        .await
        .expect("sealed");
    assert_eq!(secrets(&stored_doc(&s, &a, "sealing").await), (1, 0));

    manage::update_endpoint(
        s.db.as_ref(),
        "acme",
        &a,
        &json!({"url": s.sink.url("/a2"), "headers": {"X-Token": "two"},
                "rate_limit": 7, "ordered": true}),
        None,
    )
    .await
    .expect("update");
    let doc = stored_doc(&s, &a, "an update").await;
    assert_eq!(doc["url"], json!(s.sink.url("/a2")));
    assert_eq!(doc["headers"], json!({"X-Token": "two"}));
    assert_eq!(
        (&doc["rate_limit"], &doc["ordered"]),
        (&json!(7), &json!(true))
    );

    // the tenant's rate limit is b's (a has its own)
    manage::update_tenant(s.db.as_ref(), "acme", &json!({"rate_limit": 3}), None)
        .await
        .expect("tenant");
    assert_eq!(
        stored_doc(&s, &b, "the tenant's update").await["rate_limit"],
        json!(3)
    );
    assert_eq!(
        stored_doc(&s, &a, "the tenant's update").await["rate_limit"],
        json!(7)
    );

    s.keeper
        .rotate(s.db.as_ref(), &a, None, Duration::from_secs(3_600), None)
        .await
        .expect("rotate");
    assert_eq!(secrets(&stored_doc(&s, &a, "a rotation").await), (2, 1));
    // through SQL: the current one retires, the relay seals the next
    manage::rotate_secret_later(s.db.as_ref(), "acme", &a, 600, None)
        .await
        .expect("rotate later");
    assert_eq!(
        secrets(&stored_doc(&s, &a, "a rotation through SQL").await),
        (2, 2)
    );

    // direct writes to the tables
    let exec = |text: &'static str, id: String| {
        let db = s.db.clone();
        async move {
            db.execute(&sql(text), &hookbox::params! { "id" => id })
                .await
                .expect(text)
        }
    };
    exec(
        "UPDATE outbox_destinations SET trip_after = 9, cool_down_secs = 5 WHERE name = :id",
        a.clone(),
    )
    .await;
    let doc = stored_doc(&s, &a, "the destination's settings").await;
    assert_eq!(
        (&doc["trip_after"], &doc["cool_down_secs"]),
        (&json!(9), &json!(5))
    );
    exec(
        "UPDATE hookbox_endpoint_secrets SET expires_at = now() - interval '1 second'
          WHERE endpoint_id = :id AND expires_at > now() + interval '30 minutes'",
        a.clone(),
    )
    .await;
    assert_eq!(
        secrets(&stored_doc(&s, &a, "a secret retired").await),
        (1, 1)
    );
    exec(
        "DELETE FROM hookbox_endpoint_secrets WHERE endpoint_id = :id",
        a.clone(),
    )
    .await;
    assert_eq!(
        secrets(&stored_doc(&s, &a, "secrets deleted").await),
        (0, 0)
    );

    // the relay's health updates never rewrite an endpoint's row
    let version = async |id: &str| {
        endpoint_column(&s, id, "CAST(xmin AS text)")
            .await
            .text("v")
            .expect("xmin")
    };
    let before = version(&b).await;
    exec(
        "UPDATE outbox_destinations SET consecutive_failures = 3, failing_since = now(),
                ordered = ordered, trip_after = trip_after
          WHERE name = :id",
        b.clone(),
    )
    .await;
    assert_eq!(version(&b).await, before, "a health update rewrote it");
}

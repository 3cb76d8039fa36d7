//! A claimed batch's endpoints come with its claim (their documents): the
//! relay reads no endpoint on its own while their documents fit the
//! claim's budget, so a change (URL, headers, a rotation) reaches the next
//! claim's deliveries whatever the directory's cache time; the endpoints
//! over the budget are read in one statement.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hookbox::clock::Clock;
use hookbox::relay::RelaySettings;
use hookbox::store::{Database, DbError, Executor, Params, Rows, Statement, Transaction};
use hookbox::tenants::{EndpointDirectory, manage};
use serde_json::json;

use super::common::{self, Adapter};
use super::delivery::{Setup, setup, signed_by};
use crate::for_each_adapter;

for_each_adapter!(
    a_batchs_endpoints_come_with_its_claim_and_a_change_reaches_the_next_one,
    endpoints_over_the_claims_budget_are_read_in_one_statement,
    a_claim_full_of_payloads_and_endpoints_stays_under_the_data_apis_response_limit,
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

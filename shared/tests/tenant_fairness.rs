//! Fairness between tenants and the claim's bounded walk (migration 24),
//! through both adapters, on an injected clock: a tenant with 100 endpoints
//! and a backlog cannot starve a tenant with one endpoint (each tenant is
//! one share of a claim, split among its endpoints), and with more
//! destinations than one range every destination is still reached, a claim
//! taken again under its token takes its rows back; an endpoint's rate limit
//! holds from the relay's first claim of it; a claim whose walk finds
//! only rows a concurrent claim holds walks on (migration 28); the walk
//! reads each destination with one descent (migration 31).

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use common::{Adapter, at, claim, count, migrated_db, sql};
use hookbox::clock::{Clock, ManualClock, SystemClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::outbox;
use hookbox::relay::{MAX_SLOW_ENDPOINT_REQUESTS, ManualPause, RelaySettings, TokioPause};
use hookbox::store::{Executor, fetch_one};
use hookbox::tenants::{EndpointDirectory, SecretKeeper};
use hookbox::vault::local::LocalVault;
use hookbox_testkit::http_sink::HttpSink;
use hookbox_testkit::receivers::Tarpit;

/// Tenant `uid` with `endpoints` endpoints at `url` (one statement).
async fn tenant(db: &dyn Executor, uid: &str, endpoints: i64, url: &str) {
    fetch_one(
        db,
        &sql("SELECT count(*) AS n FROM
                (SELECT hookbox_tenant_create(jsonb_build_object('uid', CAST(:uid AS text),
                                                                 'name', CAST(:uid AS text)))) AS t,
                LATERAL (SELECT hookbox_endpoint_create(CAST(:uid AS text),
                                    jsonb_build_object('uid', 'e' || g, 'url', CAST(:url AS text)))
                           FROM generate_series(1, CAST(:n AS bigint)) AS g) AS e"),
        &hookbox::params! { "uid" => uid, "n" => endpoints, "url" => url },
    )
    .await
    .expect("tenant and endpoints");
}

/// `events` events published to tenant `uid` (one row per endpoint each),
/// all due at `now`.
async fn publish(db: &dyn Executor, uid: &str, events: i64, now: chrono::DateTime<chrono::Utc>) {
    fetch_one(
        db,
        &sql("SELECT count(*) AS n
                FROM generate_series(1, CAST(:n AS bigint)) AS g,
                     LATERAL hookbox_publish_to_at(CAST(:uid AS text), 'order.paid',
                                                   jsonb_build_object('n', g), NULL, NULL, NULL,
                                                   CAST(:now AS timestamptz)) AS p"),
        &hookbox::params! { "uid" => uid, "n" => events, "now" => now },
    )
    .await
    .expect("publish");
}

/// The tenant (uid) of each endpoint.
async fn owners(db: &dyn Executor) -> HashMap<String, String> {
    db.execute(
        &sql("SELECT e.id, t.uid FROM hookbox_endpoints AS e
                JOIN hookbox_tenants AS t ON t.id = e.tenant_id"),
        &hookbox::params! {},
    )
    .await
    .expect("owners")
    .rows
    .iter()
    .map(|r| (r.text("id").expect("id"), r.text("uid").expect("uid")))
    .collect()
}

/// Acceptance: `big` has 100 endpoints and a backlog published before
/// anything of `small` (one endpoint); a claim of 50 takes as many rows of
/// each tenant (25 and 25), where oldest-first took 50 of `big`'s; and once
/// `small` has only one new event, the next claim takes it.
async fn a_tenant_with_100_endpoints_cannot_starve_a_tenant_with_one(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    tenant(d, "big", 100, "http://127.0.0.1:9/big").await;
    tenant(d, "small", 1, "http://127.0.0.1:9/small").await;
    // big's backlog is older: 5 events x 100 endpoints
    publish(d, "big", 5, at(0)).await;
    publish(d, "small", 100, at(1)).await;
    let owner = owners(d).await;
    let claimed = outbox::claim_due(d, claim("w/1", at(10), at(40), 50))
        .await
        .expect("claim");
    let mut per_tenant: HashMap<&str, usize> = HashMap::new();
    for row in &claimed {
        *per_tenant
            .entry(owner[&row.destination].as_str())
            .or_default() += 1;
    }
    assert_eq!(claimed.len(), 50);
    assert_eq!(
        per_tenant.get("small").copied().unwrap_or(0),
        25,
        "one share each: {per_tenant:?}"
    );
    let big_endpoints: HashSet<&str> = claimed
        .iter()
        .filter(|r| owner[&r.destination] == "big")
        .map(|r| r.destination.as_str())
        .collect();
    assert_eq!(
        big_endpoints.len(),
        25,
        "big's share is split among its endpoints, one row each"
    );

    // small's backlog gone, one new event: the next claim takes it
    db.execute(
        &sql("UPDATE outbox SET status = 'delivered', processed_at = :t,
                     locked_until = NULL, locked_by = NULL
               WHERE destination IN (SELECT e.id FROM hookbox_endpoints AS e
                                       JOIN hookbox_tenants AS t ON t.id = e.tenant_id
                                      WHERE t.uid = 'small')"),
        &hookbox::params! { "t" => at(11) },
    )
    .await
    .expect("small's rows delivered");
    publish(d, "small", 1, at(12)).await;
    let next = outbox::claim_due(d, claim("w/2", at(13), at(43), 50))
        .await
        .expect("claim");
    assert!(
        next.iter().any(|r| owner[&r.destination] == "small"),
        "small's new event waited behind big's backlog"
    );
}

/// The same through the relay with its endpoint directory and the manual
/// clock: big's 100 endpoints and small's one all answer; small's new event,
/// published after big's backlog, is in the relay's first batch.
async fn the_relays_first_batch_carries_the_quiet_tenants_event(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let sink = HttpSink::start().await;
    let d = db.as_ref();
    tenant(d, "big", 100, &sink.url("/big")).await;
    tenant(d, "small", 1, &sink.url("/small")).await;
    // the database's time: endpoint secrets' validity is judged by it
    let seconds = fetch_one(
        d,
        &sql("SELECT CAST(extract(epoch FROM now()) AS bigint) AS s"),
        &hookbox::params! {},
    )
    .await
    .expect("now")
    .i64("s")
    .expect("seconds");
    let now = chrono::DateTime::from_timestamp(seconds, 0).expect("instant");
    let clock = Arc::new(ManualClock::new(now));
    publish(d, "big", 3, now).await;
    publish(d, "small", 1, now + chrono::Duration::seconds(1)).await;
    clock.advance(chrono::Duration::seconds(2));
    let keeper = SecretKeeper::new(Arc::new(LocalVault::random()));
    let directory = EndpointDirectory::new(keeper, vec!["127.0.0.0/8".parse().expect("net")]);
    let relay = common::http_relay(db.clone(), clock.clone(), RelaySettings::new("fair"))
        .with_endpoints(Arc::new(directory));
    let config = HookboxConfig::parse("{}", "test").expect("config");
    let store = ConfigStore::fixed(config, clock.clone());
    let report = relay
        .deliver_batch(
            store.current().await.as_ref(),
            clock.now() + chrono::Duration::seconds(20),
        )
        .await
        .expect("a batch");
    assert_eq!(report.delivered, 50, "{report:?}");
    let small = tokio::time::timeout(Duration::from_secs(10), sink.wait_for(50))
        .await
        .expect("the batch's requests")
        .iter()
        .filter(|r| r.target == "/small")
        .count();
    assert_eq!(small, 1, "the quiet tenant's event is in the first batch");
}

/// 300 destinations (three ranges), one due row each, claims of 10: every
/// row is claimed within 300 claims' worth of rows plus a bounded overshoot,
/// none twice; a claim's own token takes its rows back.
async fn every_destination_is_reached_beyond_one_range(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    tenant(d, "wide", 300, "http://127.0.0.1:9/w").await;
    publish(d, "wide", 1, at(0)).await;
    let mut seen = HashSet::new();
    let mut claims = 0;
    while seen.len() < 300 {
        claims += 1;
        assert!(
            claims <= 60,
            "{} of 300 rows claimed in 60 claims",
            seen.len()
        );
        let token = format!("w/{claims}");
        let rows = outbox::claim_due(d, claim(&token, at(10), at(600), 10))
            .await
            .expect("claim");
        assert!(!rows.is_empty(), "claim {claims} found nothing");
        for r in &rows {
            assert!(seen.insert(r.id), "{} claimed twice", r.id);
        }
        if claims == 1 {
            // the same token again takes the same rows back
            let again = outbox::claim_due(d, claim(&token, at(10), at(600), 10))
                .await
                .expect("claim again");
            let first: HashSet<_> = rows.iter().map(|r| r.id).collect();
            let second: HashSet<_> = again.iter().map(|r| r.id).collect();
            assert_eq!(
                first, second,
                "a claim under its own token takes its rows back"
            );
        }
    }
    assert_eq!(
        count(
            d,
            "SELECT count(*) AS n FROM outbox WHERE locked_by IS NOT NULL"
        )
        .await,
        300
    );
}

/// The start range (of three) a claim under `token` walks first.
async fn start_range(db: &dyn Executor, token: &str) -> i64 {
    fetch_one(
        db,
        &sql("SELECT (hashtext(CAST(:t AS text)) & 2147483647)
                     % (SELECT count(*) FROM outbox_claim_ranges) AS n"),
        &hookbox::params! { "t" => token },
    )
    .await
    .expect("start range")
    .i64("n")
    .expect("n")
}

/// Migration 28: two claims at once over the same range. The first, its
/// transaction still open, has locked every row of the 128 destinations of
/// its start range; the second starts at the same range, where its walk
/// reads those destinations as ready (the first's leases are not committed)
/// and finds their rows locked. It walks on to the next range and takes
/// rows there, none of the first's; it came back empty before, and a relay
/// lane that finds nothing pauses while rows are due.
async fn a_claim_walks_on_past_the_rows_a_concurrent_claim_holds(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    tenant(d, "wide", 300, "http://127.0.0.1:9/w").await;
    publish(d, "wide", 1, at(0)).await;
    // the ranges, computed (and committed) by a claim before anything is due
    let none = outbox::claim_due(d, claim("ranges", at(-10), at(600), 10))
        .await
        .expect("an early claim");
    assert!(none.is_empty(), "nothing is due yet");
    assert_eq!(
        count(d, "SELECT count(*) AS n FROM outbox_claim_ranges").await,
        3
    );
    // two tokens starting at range 0 or 1 (128 destinations each)
    let mut tokens = Vec::new();
    for i in 0.. {
        let token = format!("c/{i}");
        let start = start_range(d, &token).await;
        if start < 2 && tokens.first().is_none_or(|(_, s)| *s == start) {
            tokens.push((token, start));
        }
        if tokens.len() == 2 {
            break;
        }
        assert!(i < 1_000, "no two tokens share a start range");
    }
    let tx = db.begin().await.expect("begin");
    let first = outbox::claim_due(tx.as_ref(), claim(&tokens[0].0, at(10), at(600), 128))
        .await
        .expect("the first claim");
    assert_eq!(first.len(), 128, "the first claim takes its whole range");
    let second = outbox::claim_due(d, claim(&tokens[1].0, at(10), at(600), 100))
        .await
        .expect("the second claim");
    tx.commit().await.expect("commit");
    assert!(
        !second.is_empty(),
        "the second claim walked on past the rows the first holds"
    );
    let first: HashSet<_> = first.iter().map(|r| r.id).collect();
    assert!(
        second.iter().all(|r| !first.contains(&r.id)),
        "no row is claimed twice"
    );
    assert_eq!(
        count(
            d,
            "SELECT count(*) AS n FROM outbox WHERE locked_by IS NOT NULL"
        )
        .await,
        i64::try_from(first.len() + second.len()).expect("count")
    );
}

/// An endpoint with `rate_limit: 2`, unknown to the relay until its first
/// claim (which takes all 7 due rows: nothing caps an endpoint not yet
/// read): the rows over a second's tokens go back unattempted, so no second
/// on the relay's clock (as signed in `webhook-timestamp`) sees more than
/// twice the rate, 7 requests take at least 2.5 s, and every row is
/// delivered once with no attempt charged for the rows given back.
async fn an_endpoints_rate_limit_holds_from_the_first_claim(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let sink = HttpSink::start().await;
    let d = db.as_ref();
    fetch_one(
        d,
        &sql("SELECT hookbox_tenant_create(jsonb_build_object('uid', 'slowpoke', 'name', 'Slowpoke')) AS t,
                     hookbox_endpoint_create('slowpoke',
                         jsonb_build_object('url', CAST(:url AS text), 'rate_limit', 2)) AS e"),
        &hookbox::params! { "url" => sink.url("/limited") },
    )
    .await
    .expect("a rate-limited endpoint");
    let seconds = fetch_one(
        d,
        &sql("SELECT CAST(extract(epoch FROM now()) AS bigint) AS s"),
        &hookbox::params! {},
    )
    .await
    .expect("now")
    .i64("s")
    .expect("seconds");
    let now = chrono::DateTime::from_timestamp(seconds, 0).expect("instant");
    publish(d, "slowpoke", 7, now).await;
    let clock = Arc::new(ManualClock::new(now + chrono::Duration::seconds(1)));
    let keeper = SecretKeeper::new(Arc::new(LocalVault::random()));
    let directory = EndpointDirectory::new(keeper, vec!["127.0.0.0/8".parse().expect("net")]);
    let mut settings = RelaySettings::new("rated");
    settings.lanes = 2;
    let relay =
        common::http_relay(db.clone(), clock.clone(), settings).with_endpoints(Arc::new(directory));
    let config = HookboxConfig::parse("{}", "test").expect("config");
    let report = relay
        .run(
            &ConfigStore::fixed(config, clock.clone()),
            now + chrono::Duration::seconds(30),
            &ManualPause(clock.clone()),
        )
        .await;
    assert_eq!(report.errors, Vec::<String>::new());
    assert_eq!(report.deliveries.delivered, 7, "{report:?}");
    common::assert_seven_at_two_a_second(&common::requests_per_second(&sink));
    assert_eq!(
        count(d, "SELECT count(*) AS n FROM outbox WHERE attempts <> 1").await,
        0,
        "one attempt each: the rows given back were not charged"
    );
}

/// Index scans of the outbox's indexes so far in the transaction `tx` runs.
async fn outbox_index_scans(tx: &dyn Executor) -> i64 {
    count(
        tx,
        "SELECT CAST(coalesce(sum(pg_stat_get_xact_numscans(i.indexrelid)), 0) AS bigint) AS n
           FROM pg_index AS i WHERE i.indrelid = CAST('outbox' AS regclass)",
    )
    .await
}

/// Migration 31: the claim's walk reads each destination with one descent
/// of the pending rows' index (the skip scan's step reads the destination's
/// first row in due order, and that row decides), and probes on only where
/// that row is due but leased to another worker. 204 destinations walked:
/// at most 205 descents (the last finds nothing) and the two probes (version
/// 24 made 409: two per destination). What the walk answers is unchanged:
/// `odd`'s endpoints are ready when a due row past another worker's lease
/// is free (e1), not when every due row is leased (e2), ready under the
/// worker's own leases (e3), not while nothing is due (e4); and a walk that
/// has found enough ready destinations ends with the end of that range.
async fn the_walk_reads_each_destination_with_one_descent(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    tenant(d, "wide", 200, "http://127.0.0.1:9/w").await;
    tenant(d, "odd", 4, "http://127.0.0.1:9/o").await;
    publish(d, "wide", 2, at(0)).await;
    publish(d, "odd", 2, at(0)).await;
    let of = |uid: &str| {
        format!(
            "destination = (SELECT e.id FROM hookbox_endpoints AS e
                              JOIN hookbox_tenants AS t ON t.id = e.tenant_id
                             WHERE t.uid = 'odd' AND e.uid = '{uid}')"
        )
    };
    let first_of_e1 = format!(
        "id = (SELECT id FROM outbox WHERE {} ORDER BY id LIMIT 1)",
        of("e1")
    );
    let (until, early, late) = (
        at(600).to_rfc3339(),
        at(-5).to_rfc3339(),
        at(100).to_rfc3339(),
    );
    for statement in [
        // e1: its earliest due row leased to another worker, the next free
        format!(
            "UPDATE outbox SET locked_by = 'other', locked_until = CAST('{until}' AS timestamptz),
                               next_attempt_at = CAST('{early}' AS timestamptz)
              WHERE {first_of_e1}"
        ),
        format!(
            "UPDATE outbox SET locked_by = 'other', locked_until = CAST('{until}' AS timestamptz)
              WHERE {}",
            of("e2")
        ),
        format!(
            "UPDATE outbox SET locked_by = 'me', locked_until = CAST('{until}' AS timestamptz)
              WHERE {}",
            of("e3")
        ),
        format!(
            "UPDATE outbox SET next_attempt_at = CAST('{late}' AS timestamptz) WHERE {}",
            of("e4")
        ),
    ] {
        d.execute(&sql(&statement), &hookbox::params! {})
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    let tx = db.begin().await.expect("begin");
    let before = outbox_index_scans(tx.as_ref()).await;
    let walk = |bounds: Vec<String>, want: i64| {
        let tx = tx.as_ref();
        async move {
            tx.execute(
                &sql("SELECT w.r_name, w.r_ready
                        FROM outbox_claim_walk('', NULL, NULL,
                                               ARRAY(SELECT jsonb_array_elements_text(
                                                                CAST(:bounds AS jsonb))),
                                               512, CAST(:want AS integer),
                                               CAST(:now AS timestamptz), 'me') AS w"),
                &hookbox::params! {
                    "bounds" => serde_json::json!(bounds), "want" => want, "now" => at(10),
                },
            )
            .await
            .expect("the walk")
            .rows
        }
    };
    let walked = walk(Vec::new(), 512).await;
    let scans = outbox_index_scans(tx.as_ref()).await - before;
    // ranges from the 1st, 101st and 201st names: wanting 10 ready
    // destinations, the walk ends with the first range
    let mut names: Vec<String> = walked
        .iter()
        .map(|r| r.text("r_name").expect("name"))
        .collect();
    names.sort();
    let first_range = walk(
        vec![String::new(), names[100].clone(), names[200].clone()],
        10,
    )
    .await;
    let mut first_range: Vec<String> = first_range
        .iter()
        .map(|r| r.text("r_name").expect("name"))
        .collect();
    first_range.sort();
    assert_eq!(
        first_range,
        names[..100],
        "the walk ends with the range it found enough in"
    );
    tx.rollback().await.expect("rollback");
    let ready: HashMap<String, bool> = walked
        .iter()
        .map(|r| {
            (
                r.text("r_name").expect("name"),
                r.bool("r_ready").expect("ready"),
            )
        })
        .collect();
    assert_eq!(
        ready.len(),
        204,
        "every destination with pending rows walked once"
    );
    let owner = owners(d).await;
    let uid_of: HashMap<String, String> = d
        .execute(
            &sql("SELECT id, uid FROM hookbox_endpoints"),
            &hookbox::params! {},
        )
        .await
        .expect("endpoints")
        .rows
        .iter()
        .map(|r| (r.text("id").expect("id"), r.text("uid").expect("uid")))
        .collect();
    let mut odd: Vec<(String, bool)> = ready
        .iter()
        .filter(|(name, _)| owner[*name] == "odd")
        .map(|(name, ready)| (uid_of[name].clone(), *ready))
        .collect();
    odd.sort();
    assert_eq!(
        odd,
        [("e1", true), ("e2", false), ("e3", true), ("e4", false)]
            .map(|(uid, ready)| (uid.to_owned(), ready))
            .to_vec()
    );
    assert!(
        ready
            .iter()
            .filter(|(name, _)| owner[*name] == "wide")
            .all(|(_, r)| *r),
        "every endpoint of wide is ready"
    );
    assert!(
        scans <= 205 + 2,
        "{scans} descents of the outbox's indexes to walk 204 destinations"
    );
}

/// 100 endpoints of one tenant hang every request (timeout 10 s), 10 rows
/// due on each: the relay keeps at most `MAX_SLOW_ENDPOINT_REQUESTS` (200)
/// requests open to them, where each endpoint's 10 slots would make 1,000
/// (near a Lambda function's 1,024 file descriptors), also for the
/// endpoints a claim meets for the first time once their tenant is slow
/// (20 busy tenants beside it: the caps alone let 250 to 300 through);
/// meanwhile another tenant's events, published one after the other (each
/// a claim or more later), are delivered.
async fn a_tenants_hanging_endpoints_hold_a_bounded_number_of_requests(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let d = db.as_ref();
    let tarpit = Tarpit::start().await;
    let sink = HttpSink::start().await;
    tenant(d, "hung", 100, &tarpit.url("/hang")).await;
    tenant(d, "quiet", 1, &sink.url("/quiet")).await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    publish(d, "hung", 10, clock.now()).await;
    // busy tenants beside it: each claim gives the hung tenant one share
    // of many, so its endpoints are met a few at a time, claim after claim
    for t in 0..20 {
        tenant(d, &format!("busy{t}"), 1, &sink.url("/busy")).await;
        publish(d, &format!("busy{t}"), 50, clock.now()).await;
    }
    let keeper = SecretKeeper::new(Arc::new(LocalVault::random()));
    let directory = EndpointDirectory::new(keeper, vec!["127.0.0.0/8".parse().expect("net")]);
    let relay = common::live_relay(db.clone(), clock.clone(), RelaySettings::new("bounded"))
        .with_endpoints(Arc::new(directory));
    let store = ConfigStore::fixed(
        HookboxConfig::parse("{}", "test").expect("config"),
        clock.clone(),
    );
    let deadline = clock.now() + chrono::Duration::seconds(120);
    let watch = async {
        tokio::time::timeout(Duration::from_secs(60), tarpit.wait_for_open(100))
            .await
            .expect("the hung tenant's requests reach the tarpit");
        for n in 1..=6 {
            publish(d, "quiet", 1, clock.now()).await;
            tokio::time::timeout(Duration::from_secs(30), sink.wait_for(1_000 + n))
                .await
                .unwrap_or_else(|_| panic!("the quiet tenant's event {n} is delivered"));
        }
    };
    tokio::select! {
        _ = relay.run(&store, deadline, &TokioPause) => panic!("the run ended first"),
        () = watch => {}
    }
    let most = tarpit.most_open();
    eprintln!("{adapter:?}: at most {most} requests open at once to the hanging endpoints");
    assert!(
        (100..=MAX_SLOW_ENDPOINT_REQUESTS).contains(&most),
        "{most} requests were open at once to the hanging endpoints"
    );
}

for_each_adapter!(
    a_tenant_with_100_endpoints_cannot_starve_a_tenant_with_one,
    the_relays_first_batch_carries_the_quiet_tenants_event,
    every_destination_is_reached_beyond_one_range,
    a_claim_walks_on_past_the_rows_a_concurrent_claim_holds,
    an_endpoints_rate_limit_holds_from_the_first_claim,
    the_walk_reads_each_destination_with_one_descent,
    a_tenants_hanging_endpoints_hold_a_bounded_number_of_requests,
);

//! Fairness between destinations, through both adapters: a destination
//! that hangs every request with a backlog of 10,000 rows holds only its own
//! `max_in_flight` rows, and another destination's new row is delivered
//! within 2 s; a destination's `rate_limit_per_sec` bounds the requests it
//! gets per second.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Adapter, at, count, migrated_db, sql};
use hookbox::clock::{Clock, ManualClock, SystemClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::relay::{ManualPause, RelaySettings, TokioPause};
use hookbox::store::{Executor, fetch_one};
use hookbox_testkit::http_sink::HttpSink;
use hookbox_testkit::receivers::Tarpit;

const SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

async fn publish(db: &dyn Executor, destination: &str, n: i64) {
    fetch_one(
        db,
        &sql("SELECT count(*) AS n
               FROM generate_series(1, CAST(:n AS bigint)) AS g,
                    LATERAL hookbox_publish('order.created', jsonb_build_object('n', g),
                                            'order', 'o-' || g, :destination) AS p"),
        &hookbox::params! { "destination" => destination, "n" => n },
    )
    .await
    .expect("publish");
}

/// Acceptance 3 of the outbound product: destination `a` has 10,000 due
/// rows and hangs every request until its timeout (10 s); a new row for
/// `b` is delivered within 2 s, while `a` never has more than its
/// `max_in_flight` requests, and soon no more leased rows.
async fn a_hanging_destination_with_a_backlog_never_delays_another(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let tarpit = Tarpit::start().await;
    let sink = HttpSink::start().await;
    let cfg = HookboxConfig::parse(
        &serde_json::json!({ "destinations": {
            "a": { "url": tarpit.url("/hang"), "secrets": [SECRET], "timeout_secs": 10,
                   "max_in_flight": 10, "allowed_networks": ["127.0.0.0/8"] },
            "b": { "url": sink.url("/b"), "secrets": [SECRET],
                   "allowed_networks": ["127.0.0.0/8"] },
        }})
        .to_string(),
        "test",
    )
    .expect("config");
    publish(db.as_ref(), "a", 10_000).await;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let relay = common::live_relay(db.clone(), clock.clone(), RelaySettings::new("relay-a"));
    let store = ConfigStore::fixed(cfg, clock.clone());
    let deadline = clock.now() + chrono::Duration::seconds(120);
    let watch = async {
        tokio::time::timeout(Duration::from_secs(60), tarpit.wait_for_open(10))
            .await
            .expect("a's requests reach the tarpit");
        let published = std::time::Instant::now();
        publish(db.as_ref(), "b", 1).await;
        let received = tokio::time::timeout(Duration::from_secs(60), sink.wait_for(1))
            .await
            .expect("b's row is delivered");
        let waited = published.elapsed();
        // the rows of a claimed before a was found slow gave their place
        // back (recorded by each lane's next statement): only the hanging
        // ones stay leased
        let leased_query =
            "SELECT count(*) AS n FROM outbox WHERE destination = 'a' AND locked_by IS NOT NULL";
        let settled = std::time::Instant::now();
        loop {
            let leased = count(db.as_ref(), leased_query).await;
            if leased == 10 {
                break;
            }
            assert!(
                settled.elapsed() < Duration::from_secs(5),
                "{leased} rows of a still leased: its backlog is held beyond its slots"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        (waited, received.len())
    };
    let (waited, received) = tokio::select! {
        _ = relay.run(&store, deadline, &TokioPause) => panic!("the run ended first"),
        seen = watch => seen,
    };
    assert_eq!(received, 1);
    eprintln!("{adapter:?}: b's row was delivered {waited:?} after it was published");
    assert!(
        waited < Duration::from_secs(2),
        "b's row waited {waited:?} behind a's hanging requests"
    );
    assert_eq!(
        tarpit.most_open(),
        10,
        "a never had more requests than its max_in_flight"
    );
    let charged = count(
        db.as_ref(),
        "SELECT count(*) AS n FROM outbox WHERE destination = 'a' AND attempts > 0",
    )
    .await;
    assert_eq!(charged, 0, "no attempt of a has ended yet (10 s timeout)");
}

/// `rate_limit_per_sec: 2`: a token bucket of one second's worth, spent
/// when rows are claimed: 7 due rows take at least 2.5 s (2 at once, then 2
/// a second), and no second (on the relay's clock, as signed in
/// `webhook-timestamp`) sees more than twice the rate (a second's tokens
/// and the burst claimed just before it); every row is delivered.
async fn a_rate_limit_bounds_the_requests_per_second(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let sink = HttpSink::start().await;
    let cfg = HookboxConfig::parse(
        &serde_json::json!({ "destinations": {
            "limited": { "url": sink.url("/in"), "secrets": [SECRET],
                         "rate_limit_per_sec": 2, "allowed_networks": ["127.0.0.0/8"] },
        }})
        .to_string(),
        "test",
    )
    .expect("config");
    let clock = Arc::new(ManualClock::new(at(0)));
    // due at the manual clock's start
    publish(db.as_ref(), "limited", 7).await;
    db.execute(
        &sql("UPDATE outbox SET created_at = :t, next_attempt_at = :t"),
        &hookbox::params! { "t" => at(0) },
    )
    .await
    .expect("due at 0");
    let mut settings = RelaySettings::new("relay-a");
    settings.lanes = 2;
    let relay = common::http_relay(db.clone(), clock.clone(), settings);
    let report = relay
        .run(
            &ConfigStore::fixed(cfg, clock.clone()),
            at(30),
            &ManualPause(clock.clone()),
        )
        .await;
    assert_eq!(report.errors, Vec::<String>::new());
    assert_eq!(report.deliveries.delivered, 7);
    common::assert_seven_at_two_a_second(&common::requests_per_second(&sink));
}

/// A destination found slow gives its host's slots back: four
/// destinations on one host hang every request (timeout 50 s) and hold its
/// four slots (`requests_per_host` 4); ten other destinations on the same
/// host, published after, are delivered while those requests still hang
/// (a slow destination's requests are bounded apart and do not count
/// against its host).
async fn a_hanging_destination_gives_its_hosts_slots_back(adapter: Adapter) {
    use std::sync::atomic::Ordering::SeqCst;
    let (_t, db) = migrated_db(adapter).await;
    let mut destinations = serde_json::Map::new();
    for i in 0..4 {
        destinations.insert(
            format!("hang{i}"),
            serde_json::json!({ "url": format!("http://127.0.0.1:9/stuck/{i}"),
                                "secrets": [SECRET], "timeout_secs": 50 }),
        );
    }
    for i in 0..10 {
        destinations.insert(
            format!("ok{i}"),
            serde_json::json!({ "url": format!("http://127.0.0.1:9/ok/{i}"), "secrets": [SECRET] }),
        );
    }
    let cfg = HookboxConfig::parse(
        &serde_json::json!({ "destinations": destinations }).to_string(),
        "test",
    )
    .expect("config");
    for i in 0..4 {
        publish(db.as_ref(), &format!("hang{i}"), 1).await;
    }
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let sender = Arc::new(common::StuckPaths::default());
    let mut settings = RelaySettings::new("relay-a");
    settings.requests_per_host = 4;
    // longer than the test: a row never gets a host's slot by waiting it out
    settings.slot_wait = Duration::from_secs(60);
    // a lane finds its requests still out slow at its statement, an idle
    // after the last: the hanging ones then (and they give their host's
    // slots back), and, were those kept, the rows still waiting for one an
    // idle later (their destinations turn slow too, and no longer wait):
    // the other rows are delivered about one idle after they are published,
    // or, were the hanging requests to keep their host's slots, three
    settings.idle = Duration::from_secs(3);
    let relay = hookbox::relay::Relay::new(
        db.clone(),
        Arc::new(hookbox::blob::memory::MemoryBlobStore::new()),
        sender.clone(),
        None,
        clock.clone(),
        settings,
    );
    let store = ConfigStore::fixed(cfg, clock.clone());
    let deadline = clock.now() + chrono::Duration::seconds(120);
    let watch = async {
        while sender.stuck_started.load(SeqCst) < 4 {
            tokio::task::yield_now().await;
        }
        let published = std::time::Instant::now();
        for i in 0..10 {
            publish(db.as_ref(), &format!("ok{i}"), 2).await;
        }
        while sender.answered.load(SeqCst) < 20 {
            assert!(
                published.elapsed() < Duration::from_secs(6),
                "{} of 20 rows delivered two idles after they were published: the hanging \
                 requests hold their host's slots",
                sender.answered.load(SeqCst)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        published.elapsed()
    };
    let waited = tokio::select! {
        _ = relay.run(&store, deadline, &TokioPause) => panic!("the run ended first"),
        waited = watch => waited,
    };
    eprintln!("{adapter:?}: the other destinations' 20 rows delivered in {waited:?}");
    let charged = count(
        db.as_ref(),
        "SELECT count(*) AS n FROM outbox WHERE destination LIKE 'hang%' AND attempts > 0",
    )
    .await;
    assert_eq!(
        charged, 0,
        "the hanging requests are still out (50 s timeout)"
    );
}

for_each_adapter!(
    a_hanging_destination_with_a_backlog_never_delays_another,
    a_rate_limit_bounds_the_requests_per_second,
    a_hanging_destination_gives_its_hosts_slots_back,
);

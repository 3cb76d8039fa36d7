//! Unit tests of `fairness`: caps, slowness, suspects and the token bucket,
//! on a clock the tests set.

use super::*;

fn config(rate: Option<u32>) -> HookboxConfig {
    let mut a = serde_json::json!({ "url": "http://127.0.0.1:9/a",
        "secrets": ["whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA=="], "max_in_flight": 3 });
    if let Some(rate) = rate {
        a["rate_limit_per_sec"] = rate.into();
    }
    let text = serde_json::json!({ "destinations": { "a": a, "b": {
        "url": "http://127.0.0.1:9/b",
        "secrets": ["whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA=="] } } });
    HookboxConfig::parse(&text.to_string(), "test").expect("config")
}

fn at(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(1_700_000_000_000 + ms).expect("time")
}

/// The caps a claim would get now (it claims nothing).
fn caps(f: &Fairness, cfg: &HookboxConfig) -> Vec<(String, i64)> {
    let (caps, reserved) = f.caps(cfg, at(0), 50);
    f.claimed(reserved, std::iter::empty());
    caps
}

#[test]
fn a_slow_destination_is_capped_at_its_free_slots_until_an_attempt_ends_promptly() {
    let f = Fairness::default();
    let cfg = config(None);
    assert_eq!(caps(&f, &cfg), [], "prompt until found slow");
    f.claimed(Reserved::default(), ["a"; 40].into_iter());
    assert_eq!(caps(&f, &cfg), [], "a prompt destination holds any number");
    f.straggling("a");
    assert_eq!(
        caps(&f, &cfg),
        [("a".to_string(), 0)],
        "a straggler: capped (40 held of 3)"
    );
    for _ in 0..38 {
        f.finished("a", false, false);
    }
    let (first, r) = f.caps(&cfg, at(0), 50);
    assert_eq!(first, [("a".to_string(), 1)], "2 held of 3");
    let (second, r2) = f.caps(&cfg, at(0), 50);
    assert_eq!(
        second,
        [("a".to_string(), 0)],
        "a claim at the same time: the first one reserved the free slot"
    );
    f.claimed(r2, std::iter::empty());
    f.claimed(r, std::iter::empty());
    assert_eq!(caps(&f, &cfg), [("a".to_string(), 1)], "given back");
    f.finished("a", true, true);
    assert_eq!(caps(&f, &cfg), [], "answered promptly");
}

#[test]
fn a_slow_endpoint_is_capped_at_the_default_slots_and_holds_no_lane() {
    let f = Fairness::default();
    let cfg = config(None);
    let endpoint = "ep_0123456789abcdef0123456789abcdef";
    f.claimed(Reserved::default(), [endpoint; 4].into_iter());
    assert_eq!(caps(&f, &cfg), [], "prompt until found slow");
    assert!(!f.is_slow(endpoint));
    f.straggling(endpoint);
    assert!(f.is_slow(endpoint), "its rows no longer hold a lane");
    assert_eq!(
        caps(&f, &cfg),
        [(endpoint.to_string(), 6)],
        "the default 10 slots, 4 held"
    );
    f.finished(endpoint, true, true);
    assert!(!f.is_slow(endpoint));
    assert_eq!(caps(&f, &cfg), [], "answered promptly");
}

#[tokio::test]
async fn turning_slow_tells_the_rows_waiting_for_a_slot() {
    let f = Fairness::default();
    let slowed = f.slowed("a");
    let waiting = slowed.notified();
    tokio::pin!(waiting);
    waiting.as_mut().enable();
    f.straggling("b");
    assert!(
        futures::poll!(waiting.as_mut()).is_pending(),
        "another destination"
    );
    f.straggling("a");
    assert!(futures::poll!(waiting.as_mut()).is_ready());
}

#[test]
fn a_rate_limit_caps_claims_by_the_tokens_left_and_refills_on_the_clock() {
    let f = Fairness::default();
    let cfg = config(Some(4));
    let (caps, r) = f.caps(&cfg, at(0), 50);
    assert_eq!(caps, [("a".to_string(), 4)], "one second's worth to start");
    f.claimed(r, ["a", "a", "a"].into_iter());
    let (caps, r) = f.caps(&cfg, at(0), 50);
    assert_eq!(caps, [("a".to_string(), 1)], "the unused token came back");
    f.claimed(r, ["a"].into_iter());
    let (caps, r) = f.caps(&cfg, at(0), 50);
    assert_eq!(caps, [("a".to_string(), 0)]);
    f.claimed(r, std::iter::empty());
    let (caps, r) = f.caps(&cfg, at(500), 50);
    assert_eq!(caps, [("a".to_string(), 2)], "half a second: two more");
    f.claimed(r, std::iter::empty());
    assert_eq!(
        f.caps(&cfg, at(60_000), 50).0,
        [("a".to_string(), 4)],
        "never more than a second's worth"
    );
}

fn endpoint(name: &str, tenant: &str, rate: Option<u32>) -> Destination {
    let cfg = config(None);
    let mut d = cfg.destination("b").expect("b").clone();
    d.name = name.to_string();
    d.tenant = Some(tenant.to_string());
    d.rate_limit_per_sec = rate;
    d
}

fn row(destination: &str) -> OutboxRow {
    OutboxRow {
        id: uuid::Uuid::new_v4(),
        seq: 1,
        aggregate_type: "message".into(),
        aggregate_id: "m".into(),
        event_type: "order.paid".into(),
        destination: destination.into(),
        payload: "{}".into(),
        payload_storage: crate::outbox::payload::PayloadStorage::Inline,
        status: crate::outbox::OutboxStatus::Pending,
        attempts: 0,
        next_attempt_at: at(0),
        locked_until: None,
        locked_by: None,
        last_error: None,
        last_status_code: None,
        created_at: at(0),
        processed_at: None,
        origin: None,
    }
}

#[test]
fn one_slow_endpoint_makes_its_tenants_undelivered_endpoints_suspect() {
    let f = Fairness::default();
    let cfg = config(None);
    let (hung, sibling, proven) = ("ep_01", "ep_02", "ep_03");
    let other = "ep_04";
    let known = [
        endpoint(hung, "app_a", None),
        endpoint(sibling, "app_a", None),
        endpoint(proven, "app_a", None),
        endpoint(other, "app_b", None),
    ];
    let refs: Vec<&Destination> = known.iter().collect();
    assert!(f.admit(&refs, &mut Vec::new(), at(0)).is_empty());
    f.claimed(Reserved::default(), [proven].into_iter());
    f.finished(proven, true, true);
    assert!(!f.is_slow(sibling), "no endpoint of its tenant is slow");
    f.straggling(hung);
    assert!(f.is_slow(hung));
    assert!(f.is_slow(sibling), "its tenant has a slow endpoint");
    assert!(!f.is_slow(proven), "it delivered: not suspect");
    assert!(!f.is_slow(other), "another tenant");
    let capped: Vec<String> = caps(&f, &cfg).into_iter().map(|c| c.0).collect();
    assert!(capped.contains(&sibling.to_string()), "{capped:?}");
    assert!(!capped.contains(&other.to_string()), "{capped:?}");
    f.claimed(Reserved::default(), [sibling].into_iter());
    f.finished(sibling, false, true);
    assert!(!f.is_slow(sibling), "delivered once: on its own again");
    f.finished(hung, true, false);
    assert!(!f.is_slow(hung), "answered promptly");
    f.claimed(Reserved::default(), [sibling].into_iter());
    assert!(!f.is_slow(sibling));
}

#[test]
fn an_endpoints_rate_limit_gives_back_the_rows_over_it_due_when_a_token_is_there() {
    let f = Fairness::default();
    let cfg = config(None);
    let limited = endpoint("ep_0a", "app_a", Some(2));
    let free = endpoint("ep_0b", "app_a", None);
    let mut rows: Vec<OutboxRow> = ["ep_0a", "ep_0b", "ep_0a", "ep_0a", "ep_0a"]
        .into_iter()
        .map(row)
        .collect();
    f.claimed(
        Reserved::default(),
        rows.iter().map(|r| r.destination.as_str()),
    );
    let over = f.admit(&[&limited, &free], &mut rows, at(0));
    let kept: Vec<&str> = rows.iter().map(|r| r.destination.as_str()).collect();
    assert_eq!(kept, ["ep_0a", "ep_0b", "ep_0a"], "a second's worth: 2");
    let due: Vec<i64> = over
        .iter()
        .map(|(_, due)| (*due - at(0)).num_milliseconds())
        .collect();
    assert_eq!(due, [500, 1000], "one token per half second");
    assert_eq!(
        caps(&f, &cfg),
        [("ep_0a".to_string(), 0)],
        "no whole token left: claims take none of it"
    );
    let (caps_later, r) = f.caps(&cfg, at(500), 50);
    f.claimed(r, std::iter::empty());
    assert_eq!(caps_later, [("ep_0a".to_string(), 1)]);
    let mut again = vec![row("ep_0a"), row("ep_0a")];
    let over = f.admit(&[&limited], &mut again, at(500));
    assert_eq!((again.len(), over.len()), (1, 1), "one token at 500 ms");
}

#[test]
fn slow_endpoints_share_a_bound_on_their_requests_and_each_gets_its_turn() {
    let f = Fairness::default();
    let cfg = config(None);
    let names: Vec<String> = (0..100).map(|i| format!("ep_{i:032x}")).collect();
    let endpoints: Vec<Destination> = names.iter().map(|n| endpoint(n, "hung", None)).collect();
    let refs: Vec<&Destination> = endpoints.iter().collect();
    f.admit(&refs, &mut Vec::new(), at(0));
    for name in &names {
        f.straggling(name);
    }
    // claims one after the other, each taking what it was allowed
    let mut given: HashMap<String, usize> = HashMap::default();
    for claim in 0..10 {
        let (caps, reserved) = f.caps(&cfg, at(0), 1_000);
        let total: i64 = caps.iter().map(|(_, c)| c).sum();
        let held: usize = names.iter().map(|n| f.held(n)).sum();
        assert!(
            held <= MAX_SLOW_ENDPOINT_REQUESTS,
            "claim {claim}: {held} rows held or reserved by slow endpoints"
        );
        let taken: Vec<&str> = caps
            .iter()
            .flat_map(|(name, cap)| {
                std::iter::repeat_n(name.as_str(), usize::try_from(*cap).unwrap_or(0))
            })
            .collect();
        assert_eq!(taken.len() as i64, total);
        for name in &taken {
            *given.entry((*name).to_string()).or_default() += 1;
        }
        f.claimed(reserved, taken.into_iter());
        // the hanging requests time out before the next claim
        for name in &names {
            while f.held(name) > 0 {
                f.finished(name, false, false);
            }
        }
    }
    assert_eq!(
        given.len(),
        100,
        "every slow endpoint had slots within 10 claims"
    );
    assert!(
        given.values().all(|n| *n >= 10),
        "each had its 10 slots at least once: {given:?}"
    );
}

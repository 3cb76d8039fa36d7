//! Partner configuration: parsing, validation messages naming the partner
//! and field, source selection, and Secrets Manager refresh after the TTL.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use chrono::TimeZone;
use hookbox::clock::ManualClock;
use hookbox::config::{
    ConfigError, ConfigSource, ConfigStore, EventIdSource, FieldSource, HookboxConfig,
    SecretsManager, Target, TransportKind,
};
use hookbox::signature::SchemeKind;

const DEMO_SECRET: &str = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";

fn demo_json(secret: &str) -> String {
    serde_json::json!({"partners": {
        "demo": {
            "signature": {"scheme": "standard-webhooks"},
            "secrets": [secret],
            "event_id": {"header": "Webhook-Id"},
            "event_type": "/type",
            "ordering_key": "/order_id",
            "allowed_cidrs": ["203.0.113.0/24", "2001:db8::/32", "198.51.100.7"]
        },
        "gh": {
            "signature": {"scheme": "github"},
            "secrets": ["It's a Secret to Everybody"],
            "event_id": {"json_pointer": "/delivery"},
            "max_body_bytes": 1000
        },
        "anon": {"signature": {"scheme": "shopify"}, "secrets": ["s"]}
    }})
    .to_string()
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(
        chrono::Utc
            .with_ymd_and_hms(2026, 6, 1, 0, 0, 0)
            .single()
            .expect("valid"),
    ))
}

#[test]
fn json_and_toml_give_the_same_partners() {
    let json = HookboxConfig::parse(&demo_json(DEMO_SECRET), "test.json").expect("json");
    let toml = HookboxConfig::parse(
        r#"
        [partners.demo]
        signature = { scheme = "standard-webhooks" }
        secrets = ["whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA=="]
        event_id = { header = "Webhook-Id" }
        event_type = "/type"
        ordering_key = "/order_id"
        allowed_cidrs = ["203.0.113.0/24", "2001:db8::/32", "198.51.100.7"]
        "#,
        "test.toml",
    )
    .expect("toml");
    for config in [&json, &toml] {
        let demo = config.partner("demo").expect("demo");
        assert_eq!(demo.verifier.scheme(), SchemeKind::StandardWebhooks);
        assert_eq!(demo.event_id, EventIdSource::Header("webhook-id".into()));
        assert_eq!(
            demo.event_type,
            Some(FieldSource::JsonPointer("/type".into()))
        );
        assert_eq!(demo.secrets.len(), 1);
        assert_eq!(demo.max_body_bytes, hookbox::config::DEFAULT_MAX_BODY_BYTES);
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        assert!(demo.allows(ip("203.0.113.9")));
        assert!(demo.allows(ip("198.51.100.7")));
        assert!(demo.allows(ip("::ffff:203.0.113.9")), "IPv4-mapped IPv6");
        assert!(demo.allows(ip("2001:db8::1")));
        assert!(!demo.allows(ip("198.51.100.8")));
        assert!(!demo.allows(ip("10.0.0.1")));
        // secrets never show in Debug
        assert!(!format!("{demo:?}").contains("aG9va2J"), "{demo:?}");
    }
    let gh = json.partner("gh").expect("gh");
    assert_eq!(gh.event_id, EventIdSource::JsonPointer("/delivery".into()));
    assert_eq!(gh.max_body_bytes, 1000);
    assert!(
        gh.dedupe_on_body,
        "GitHub signs neither a timestamp nor an id"
    );
    assert!(
        !json.partner("demo").expect("demo").dedupe_on_body,
        "Standard Webhooks signs both"
    );
    assert!(
        gh.allows("10.0.0.1".parse().expect("ip")),
        "no CIDRs: any address"
    );
    assert_eq!(
        json.partner("anon").expect("anon").event_id,
        EventIdSource::BodyHash
    );
    assert!(json.partner("nobody").is_none());
}

fn error_of(partner: serde_json::Value) -> String {
    let text = serde_json::json!({"partners": {"acme": partner}}).to_string();
    HookboxConfig::parse(&text, "test")
        .expect_err("invalid")
        .to_string()
}

#[test]
fn invalid_partners_are_refused_naming_the_partner_and_field() {
    let cases = [
        (
            serde_json::json!({"signature": {"scheme": "github"}, "secrets": []}),
            "partner \"acme\": secrets: at least one secret is required",
        ),
        (
            serde_json::json!({"signature": {"scheme": "standard-webhooks"}, "secrets": ["plain"]}),
            "partner \"acme\": secrets[0]: a Standard Webhooks secret starts with whsec_",
        ),
        (
            serde_json::json!({"signature": {"scheme": "github"}, "secrets": ["s"], "allowed_cidrs": ["10.0.0.0/33"]}),
            "partner \"acme\": allowed_cidrs[0]: \"10.0.0.0/33\" is not an address or CIDR",
        ),
        (
            serde_json::json!({"signature": {"scheme": "github"}, "secrets": ["s"], "event_id": {"json_pointer": "id"}}),
            "partner \"acme\": event_id.json_pointer: \"id\" is not a JSON pointer",
        ),
        (
            serde_json::json!({"signature": {"scheme": "github"}, "secrets": ["s"], "event_id": {"header": "a", "json_pointer": "/b"}}),
            "partner \"acme\": event_id: give exactly one",
        ),
        (
            serde_json::json!({"signature": {"scheme": "github"}, "secrets": ["s"], "max_body_bytes": 0}),
            "partner \"acme\": max_body_bytes: 0 is outside",
        ),
        (
            serde_json::json!({"signature": {"scheme": "github"}, "secrets": ["s"], "max_body_bytes": 6_000_000}),
            "partner \"acme\": max_body_bytes: 6000000 is outside 1..=4194304 (the largest body Lambda's",
        ),
        (
            serde_json::json!({"signature": {"scheme": "generic-hmac"}, "secrets": ["s"]}),
            "invalid configuration in test",
        ),
        (
            serde_json::json!({"signature": {"scheme": "github"}, "secrets": ["s"], "secret": "typo"}),
            "unknown field `secret`",
        ),
    ];
    for (partner, expected) in cases {
        let message = error_of(partner.clone());
        assert!(message.contains(expected), "{partner} → {message}");
        assert!(
            !message.contains("plain"),
            "no secret value in messages: {message}"
        );
    }
    let bad_name = HookboxConfig::parse(
        r#"{"partners": {"Acme Corp": {"signature": {"scheme": "github"}, "secrets": ["s"]}}}"#,
        "t",
    )
    .expect_err("name");
    assert!(
        bad_name.to_string().contains("partner \"Acme Corp\": name"),
        "{bad_name}"
    );
}

#[test]
fn the_source_is_chosen_in_the_documented_order() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    };
    assert_eq!(
        ConfigSource::from_env(env(&[
            ("HOOKBOX_CONFIG", "/etc/hookbox.toml"),
            ("HOOKBOX_PARTNERS", "{}")
        ])),
        Ok(ConfigSource::File("/etc/hookbox.toml".into()))
    );
    assert_eq!(
        ConfigSource::from_env(env(&[
            ("HOOKBOX_PARTNERS", "{}"),
            ("HOOKBOX_PARTNERS_SECRET_ARN", "arn")
        ])),
        Ok(ConfigSource::Inline("{}".into()))
    );
    assert_eq!(
        ConfigSource::from_env(env(&[
            ("HOOKBOX_PARTNERS_SECRET_ARN", "arn"),
            ("HOOKBOX_CONFIG_TTL_SECS", "60")
        ])),
        Ok(ConfigSource::Secret {
            arn: "arn".into(),
            ttl: Duration::from_secs(60)
        })
    );
    assert_eq!(ConfigSource::from_env(env(&[])), Err(ConfigError::NoSource));
}

#[tokio::test]
async fn a_file_source_is_read_and_a_missing_file_fails_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hookbox.json");
    std::fs::write(&path, demo_json(DEMO_SECRET)).expect("write");
    let store = ConfigStore::load(ConfigSource::File(path.clone()), None, clock())
        .await
        .expect("load");
    assert!(store.current().await.partner("demo").is_some());
    let missing = ConfigStore::load(
        ConfigSource::File(dir.path().join("nope.json")),
        None,
        clock(),
    )
    .await
    .expect_err("missing");
    assert!(missing.to_string().contains("nope.json"), "{missing}");
}

#[tokio::test]
async fn secrets_manager_configuration_is_refreshed_after_the_ttl() {
    let endpoint = hookbox_testkit::moto::endpoint();
    let admin = {
        use aws_sdk_secretsmanager::config::{BehaviorVersion, Credentials, Region};
        aws_sdk_secretsmanager::Client::from_conf(
            aws_sdk_secretsmanager::Config::builder()
                .behavior_version(BehaviorVersion::latest())
                .endpoint_url(&endpoint)
                .region(Region::new("us-east-1"))
                .credentials_provider(Credentials::new("t", "t", None, None, "t"))
                .build(),
        )
    };
    let old_secret = "whsec_b2xkLXNlY3JldC1vbGQtb2xkLW9sZA==";
    let new_secret = "whsec_bmV3LXNlY3JldC1uZXctbmV3LW5ldw==";
    let arn = admin
        .create_secret()
        .name(hookbox_testkit::moto::unique_name("hookbox-partners"))
        .secret_string(demo_json(old_secret))
        .send()
        .await
        .expect("create secret")
        .arn()
        .expect("arn")
        .to_string();
    let clock = clock();
    let store = ConfigStore::load(
        ConfigSource::Secret {
            arn: arn.clone(),
            ttl: Duration::from_secs(300),
        },
        Some(Arc::new(SecretsManager::local(&endpoint))),
        clock.clone(),
    )
    .await
    .expect("load");
    let secret_of = |c: &Arc<HookboxConfig>| {
        c.partner("demo").expect("demo").secrets[0]
            .expose_secret()
            .to_string()
    };
    assert_eq!(secret_of(&store.current().await), old_secret);

    // rotated in Secrets Manager
    admin
        .put_secret_value()
        .secret_id(&arn)
        .secret_string(demo_json(new_secret))
        .send()
        .await
        .expect("rotate");
    clock.advance(chrono::Duration::seconds(299));
    assert_eq!(
        secret_of(&store.current().await),
        old_secret,
        "within the TTL"
    );
    clock.advance(chrono::Duration::seconds(1));
    assert_eq!(
        secret_of(&store.current().await),
        new_secret,
        "after the TTL"
    );

    // a broken value keeps the last good configuration
    admin
        .put_secret_value()
        .secret_id(&arn)
        .secret_string("{not json")
        .send()
        .await
        .expect("break");
    clock.advance(chrono::Duration::seconds(300));
    assert_eq!(store.refresh_failures(), 0);
    assert_eq!(
        secret_of(&store.current().await),
        new_secret,
        "last good kept"
    );
    assert_eq!(
        store.refresh_failures(),
        1,
        "counted (and a metric printed)"
    );
}

/// Syntax errors in a partner configuration name where, never what: the
/// neighbourhood of a mistake is usually a secret.
#[test]
fn syntax_errors_never_echo_secret_material() {
    let a = "whsec_c2VjcmV0LW51bWJlci1vbmUtMTIzNA==";
    let b = "whsec_c2VjcmV0LW51bWJlci10d28tNTY3OA==";
    let cases = [
        // a missing comma between two secrets (JSON)
        format!(
            "{{\"partners\": {{\"demo\": {{\"signature\": {{\"scheme\": \"standard-webhooks\"}},\n  \"secrets\": [\"{a}\" \"{b}\"]}}}}}}"
        ),
        // a string where the list belongs (JSON)
        format!(
            "{{\"partners\": {{\"demo\": {{\"signature\": {{\"scheme\": \"standard-webhooks\"}}, \"secrets\": \"{a}\"}}}}}}"
        ),
        // the same two mistakes in TOML
        format!(
            "[partners.demo]\nsignature = {{ scheme = \"standard-webhooks\" }}\nsecrets = [\"{a}\" \"{b}\"]\n"
        ),
        format!(
            "[partners.demo]\nsignature = {{ scheme = \"standard-webhooks\" }}\nsecrets = \"{a}\"\n"
        ),
        // an unterminated string holding a secret
        format!("[partners.demo]\nsecrets = [\"{a}\n"),
    ];
    for text in cases {
        let Err(error) = HookboxConfig::parse(&text, "HOOKBOX_PARTNERS") else {
            panic!("invalid: {text}");
        };
        let error = error.to_string();
        for secret in [a, b, "c2VjcmV0", "whsec_"] {
            assert!(!error.contains(secret), "secret material in: {error}");
        }
        assert!(
            error.starts_with("invalid configuration in HOOKBOX_PARTNERS: "),
            "{error}"
        );
        assert!(
            error.contains(" line ") && error.contains(" column "),
            "says where: {error}"
        );
    }
    // a string where a list belongs says so
    let Err(error) = HookboxConfig::parse(
        &format!(
            "[partners.demo]\nsignature = {{ scheme = \"standard-webhooks\" }}\nsecrets = \"{a}\"\n"
        ),
        "x",
    ) else {
        panic!("invalid");
    };
    let error = error.to_string();
    assert!(
        error.contains("a string where a sequence belongs"),
        "{error}"
    );
}

fn destination_error(destination: serde_json::Value) -> String {
    let text = serde_json::json!({ "destinations": { "crm": destination } }).to_string();
    HookboxConfig::parse(&text, "test")
        .expect_err("invalid destination")
        .to_string()
}

#[test]
fn destinations_get_documented_defaults_and_toml_works_too() {
    let toml = r#"
        [destinations.crm]
        url = "https://crm.example.com/hooks?token=t0p"
        secrets = ["whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA=="]
        ordered = true
        allowed_networks = ["127.0.0.0/8"]
    "#;
    let config = HookboxConfig::parse(toml, "test.toml").expect("valid");
    let crm = config.destination("crm").expect("crm");
    assert_eq!(crm.timeout, std::time::Duration::from_secs(10));
    assert_eq!(crm.max_attempts, 8, "one more than the 7 backoff steps");
    assert_eq!(crm.max_in_flight, 10);
    assert!(crm.ordered);
    let steps: Vec<u64> = crm.backoff.iter().map(|d| d.as_secs()).collect();
    assert_eq!(steps, [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000]);
    assert_eq!(crm.trip_after, 5);
    assert_eq!(crm.cool_down, std::time::Duration::from_secs(60));
    assert_eq!(
        crm.disable_after,
        Some(std::time::Duration::from_secs(5 * 86_400))
    );
    assert_eq!(crm.subscription, None, "explicit publishes only");
    let shown = format!("{crm:?}");
    assert!(
        !shown.contains("whsec_") && !shown.contains("t0p"),
        "{shown}"
    );
    assert_eq!(config.destinations().count(), 1);
}

#[test]
fn invalid_destinations_are_refused_naming_the_destination_and_field() {
    let secret = "whsec_aG9va2JveC1sb2NhbC1kZW1vLXNlY3JldA==";
    for (destination, expected) in [
        (
            serde_json::json!({ "url": "ftp://x.example/", "secrets": [secret] }),
            "destination \"crm\": url: scheme \"ftp\"",
        ),
        (
            serde_json::json!({ "url": "https://u:p@x.example/", "secrets": [secret] }),
            "destination \"crm\": url: must not carry credentials",
        ),
        (
            serde_json::json!({ "url": "not a url", "secrets": [secret] }),
            "destination \"crm\": url: not a URL",
        ),
        (
            serde_json::json!({ "url": "https://x.example/", "secrets": [] }),
            "destination \"crm\": secrets: at least one",
        ),
        (
            serde_json::json!({ "url": "https://x.example/", "secrets": ["hunter2"] }),
            "destination \"crm\": secrets[0]: a Standard Webhooks signing secret",
        ),
        (
            serde_json::json!({ "url": "https://x.example/", "secrets": ["whsec_!!!"] }),
            "destination \"crm\": secrets[0]: cannot sign",
        ),
        (
            serde_json::json!({ "url": "https://x.example/", "secrets": [secret], "timeout_secs": 90 }),
            "destination \"crm\": timeout_secs: 90 is outside",
        ),
        (
            serde_json::json!({ "url": "https://x.example/", "secrets": [secret], "max_in_flight": 0 }),
            "destination \"crm\": max_in_flight: 0 is outside",
        ),
        (
            serde_json::json!({ "url": "https://x.example/", "secrets": [secret], "backoff_secs": [5, -1] }),
            "destination \"crm\": backoff_secs[1]: -1 is not a positive",
        ),
        (
            serde_json::json!({ "url": "https://x.example/", "secrets": [secret], "trip_after": 0 }),
            "destination \"crm\": trip_after: 0 is outside",
        ),
        (
            serde_json::json!({ "url": "https://x.example/", "secrets": [secret], "cool_down_secs": 0.5 }),
            "destination \"crm\": cool_down_secs: 0.5 is outside",
        ),
        (
            serde_json::json!({ "url": "https://x.example/", "secrets": [secret], "disable_after_hours": -2 }),
            "destination \"crm\": disable_after_hours: -2 is not a positive",
        ),
        (
            serde_json::json!({ "url": "https://x.example/", "secrets": [secret], "subscribe": {"event_types": ["a"], "filters": [{"pointer": "a", "equals": 1}]} }),
            "destination \"crm\": subscribe.filters[0].pointer:",
        ),
        (
            serde_json::json!({ "url": "https://x.example/", "secrets": [secret], "allowed_networks": ["lan"] }),
            "destination \"crm\": allowed_networks[0]: \"lan\" is not an address or CIDR",
        ),
    ] {
        let error = destination_error(destination);
        assert!(
            error.starts_with(expected),
            "{error}\n  expected: {expected}"
        );
        assert!(!error.contains("whsec_!!!"), "no secret in errors: {error}");
    }
    let unknown = destination_error(serde_json::json!({
        "url": "https://x.example/", "secrets": [secret], "retries": 3
    }));
    assert!(unknown.contains("unknown field `retries`"), "{unknown}");
}

/// A secret whose second read (the first refresh) waits until the test
/// releases it, saying when it has started.
#[derive(Debug)]
struct HeldSecret {
    reads: std::sync::atomic::AtomicUsize,
    started: tokio::sync::Notify,
    release: tokio::sync::Notify,
}

#[async_trait::async_trait]
impl hookbox::config::SecretStore for HeldSecret {
    async fn secret_string(&self, _arn: &str) -> Result<String, String> {
        let read = self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if read == 0 {
            return Ok(demo_json("whsec_b2xkLXNlY3JldC1vbGQtb2xkLW9sZA=="));
        }
        self.started.notify_one();
        self.release.notified().await;
        Ok(demo_json("whsec_bmV3LXNlY3JldC1uZXctbmV3LW5ldw=="))
    }
}

/// While one caller refreshes (Secrets Manager may be slow), the others get
/// the configuration in use at once instead of waiting for it: a relay lane
/// with a delivered batch to record must not wait behind another's refresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_never_wait_for_another_callers_refresh() {
    let secrets = Arc::new(HeldSecret {
        reads: Default::default(),
        started: tokio::sync::Notify::new(),
        release: tokio::sync::Notify::new(),
    });
    let clock = clock();
    let store = Arc::new(
        ConfigStore::load(
            ConfigSource::Secret {
                arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:hookbox".into(),
                ttl: Duration::from_secs(60),
            },
            Some(secrets.clone()),
            clock.clone(),
        )
        .await
        .expect("load"),
    );
    let secret_of = |c: &Arc<HookboxConfig>| {
        c.partner("demo").expect("demo").secrets[0]
            .expose_secret()
            .to_string()
    };
    clock.advance(chrono::Duration::seconds(60));
    assert!(store.refresh_due());
    let refreshing = tokio::spawn({
        let store = store.clone();
        async move { store.current().await }
    });
    secrets.started.notified().await;
    // (a guard against a hang, not a timing assumption: the answer is immediate)
    let meanwhile = tokio::time::timeout(Duration::from_secs(30), store.current())
        .await
        .expect("another caller's refresh must not hold this one");
    assert_eq!(
        secret_of(&meanwhile),
        "whsec_b2xkLXNlY3JldC1vbGQtb2xkLW9sZA==",
        "the configuration in use"
    );
    secrets.release.notify_one();
    let refreshed = refreshing.await.expect("refresh task");
    assert_eq!(
        secret_of(&refreshed),
        "whsec_bmV3LXNlY3JldC1uZXctbmV3LW5ldw=="
    );
    assert_eq!(
        secret_of(&store.current().await),
        "whsec_bmV3LXNlY3JldC1uZXctbmV3LW5ldw=="
    );
    assert!(!store.refresh_due());
    assert_eq!(
        secrets.reads.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "one refresh"
    );
}

#[test]
fn eventbridge_and_sqs_destinations_parse_with_their_defaults() {
    let config = HookboxConfig::parse(
        &serde_json::json!({"destinations": {
            "bus": {"type": "eventbridge", "bus": "orders"},
            "bus-arn": {"type": "eventbridge",
                        "bus": "arn:aws:events:eu-west-1:123456789012:event-bus/orders",
                        "source": "shop.orders", "max_entry_bytes": 1_048_576},
            "queue": {"type": "sqs",
                      "queue_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"},
            "fifo": {"type": "sqs", "ordered": true,
                     "queue_url": "http://127.0.0.1:5000/123456789012/orders.fifo"},
            "web": {"type": "http", "url": "https://x.example/", "secrets": [DEMO_SECRET]},
        }})
        .to_string(),
        "test.json",
    )
    .expect("valid");
    let kinds: Vec<(&str, TransportKind)> = config
        .destinations()
        .map(|d| (d.name.as_str(), d.kind()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("bus", TransportKind::EventBridge),
            ("bus-arn", TransportKind::EventBridge),
            ("fifo", TransportKind::Sqs),
            ("queue", TransportKind::Sqs),
            ("web", TransportKind::Http),
        ]
    );
    let Target::EventBridge(bus) = &config.destination("bus").expect("bus").target else {
        panic!("an eventbridge target");
    };
    assert_eq!(
        (bus.bus.as_str(), bus.source.as_str(), bus.max_entry_bytes),
        ("orders", "hookbox", 256 * 1024)
    );
    let Target::EventBridge(arn) = &config.destination("bus-arn").expect("bus-arn").target else {
        panic!("an eventbridge target");
    };
    assert_eq!(
        (arn.source.as_str(), arn.max_entry_bytes),
        ("shop.orders", 1_048_576)
    );
    let Target::Sqs(queue) = &config.destination("queue").expect("queue").target else {
        panic!("an sqs target");
    };
    assert!(!queue.fifo);
    let fifo = config.destination("fifo").expect("fifo");
    assert!(matches!(&fifo.target, Target::Sqs(q) if q.fifo && q.max_entry_bytes == 256 * 1024));
    assert!(fifo.ordered && fifo.http().is_none());
    assert!(config.destination("web").expect("web").http().is_some());
}

#[test]
fn invalid_eventbridge_and_sqs_destinations_name_the_destination_and_field() {
    for (destination, expected) in [
        (
            serde_json::json!({ "type": "kinesis", "url": "https://x.example/" }),
            "destination \"crm\": type: \"kinesis\" is not a destination type (one of http, eventbridge, sqs)",
        ),
        (
            serde_json::json!({ "type": "eventbridge" }),
            "destination \"crm\": bus: an eventbridge destination needs its bus",
        ),
        (
            serde_json::json!({ "type": "eventbridge", "bus": "orders", "url": "https://x.example/" }),
            "destination \"crm\": url: is not a field of eventbridge destinations",
        ),
        (
            serde_json::json!({ "type": "eventbridge", "bus": "orders", "secrets": [DEMO_SECRET] }),
            "destination \"crm\": secrets: is not a field of eventbridge destinations",
        ),
        (
            serde_json::json!({ "type": "eventbridge", "bus": "my bus" }),
            "destination \"crm\": bus: \"my bus\": a bus name is 1 to 256",
        ),
        (
            serde_json::json!({ "type": "eventbridge", "bus": "arn:aws:sqs:eu-west-1:123456789012:q" }),
            "destination \"crm\": bus: \"arn:aws:sqs:eu-west-1:123456789012:q\" is not an event bus ARN",
        ),
        (
            serde_json::json!({ "type": "eventbridge", "bus": "orders", "source": "aws.s3" }),
            "destination \"crm\": source: \"aws.s3\": sources starting with \"aws.\" are reserved",
        ),
        (
            serde_json::json!({ "type": "eventbridge", "bus": "orders", "max_entry_bytes": 2_097_152 }),
            "destination \"crm\": max_entry_bytes: 2097152 is outside 65536..=1048576",
        ),
        (
            serde_json::json!({ "type": "sqs", "queue_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/q", "max_entry_bytes": 1024 }),
            "destination \"crm\": max_entry_bytes: 1024 is outside 65536..=1048576",
        ),
        (
            serde_json::json!({ "type": "sqs" }),
            "destination \"crm\": queue_url: an sqs destination needs its queue URL",
        ),
        (
            serde_json::json!({ "type": "sqs", "queue_url": "orders" }),
            "destination \"crm\": queue_url: \"orders\" is not a URL",
        ),
        (
            serde_json::json!({ "type": "sqs", "queue_url": "https://sqs.eu-west-1.amazonaws.com/orders" }),
            "destination \"crm\": queue_url: \"https://sqs.eu-west-1.amazonaws.com/orders\" is not a queue URL",
        ),
        (
            serde_json::json!({ "type": "sqs", "queue_url": "https://sqs.eu-west-1.amazonaws.com/1/or ders" }),
            "destination \"crm\": queue_url:",
        ),
        (
            serde_json::json!({ "type": "sqs", "queue_url": "https://q.example/1/q", "bus": "b" }),
            "destination \"crm\": bus: is not a field of sqs destinations",
        ),
        (
            serde_json::json!({ "type": "http", "secrets": [DEMO_SECRET] }),
            "destination \"crm\": url: an http destination needs its url",
        ),
        (
            serde_json::json!({ "url": "https://x.example/", "secrets": [DEMO_SECRET], "max_entry_bytes": 1024 }),
            "destination \"crm\": max_entry_bytes: is not a field of http destinations",
        ),
    ] {
        let error = destination_error(destination);
        assert!(
            error.starts_with(expected),
            "{error}\n  expected: {expected}"
        );
        assert!(!error.contains("whsec_"), "no secret in errors: {error}");
    }
}

//! The bad-input corpus (`events/bad-input/corpus.json`, issue #14) through
//! the real authorizer and ingest handlers, once per database adapter
//! (direct PostgreSQL, and the RDS Data API via the local Data API server),
//! with moto SQS and moto S3 and a fixed clock.
//!
//! Each case is one HTTP request as a partner sends it. The test signs it
//! (or not), turns it into the REQUEST-authorizer event and the REST proxy
//! event as API Gateway does (`tools/local/src/gateway.rs`: the last value of
//! a repeated header in `headers`, all of them in `multiValueHeaders`, the
//! caller's address appended to X-Forwarded-For, the body base64 under the
//! binary media type `*/*`), hands each event to the handler as JSON bytes,
//! deserialized as `lambda_runtime` does, and only an allowed request
//! reaches ingest. It checks the answer documented for the case, and for
//! every case: no 5xx, no panic, no row, no outbox row and no blob left by
//! a refusal, exactly one row (with the sent bytes) and one queue message
//! SQS took for a stored case, the same id for a duplicate. Ingest forwards
//! at ingest (issue #47), with the destinations synced as the relay does:
//! an event the corpus says is forwarded is `processed` with that many
//! outbox rows, each holding the body as a JSON value exactly (compared by
//! jsonb), and no queue message; every other stored event is `pending`
//! with none. Every mismatch is collected; the test fails once, with a
//! table. A second test checks that `docs/bad-input.md` has one row per
//! case, with the corpus's answer.
//!
//! Bytes that are not UTF-8 cannot be written in an event's JSON; such a
//! header value is put into the deserialized event's header maps as the
//! bytes themselves (what `HeaderValue::from_bytes` holds), which is how the
//! handlers would see any rendering API Gateway could choose: a value that
//! is not visible ASCII.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerRequestTypeRequest, ApiGatewayProxyRequest, ApiGatewayProxyResponse,
};
use aws_lambda_events::encodings::Body as ApiBody;
use aws_lambda_events::http::{HeaderName, HeaderValue};
use aws_lambda_events::iam::IamPolicyEffect;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::TimeZone;
use hmac::{Hmac, KeyInit, Mac};
use hookbox::blob::s3::S3BlobStore;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::{ConfigSource, ConfigStore};
use hookbox::inbox::InboxMessage;
use hookbox::inbox::InboxStatus;
use hookbox::inbox::ingest::Ingest;
use hookbox::params;
use hookbox::queue::QueueConsumer;
use hookbox::queue::sqs::SqsQueue;
use hookbox::store::data_api::{DataApiDatabase, DataApiTarget};
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, Statement};
use hookbox_authorizer::{Authorizer, Decision};
use hookbox_ingest::IngestFunction;
use hookbox_testkit::TestDb;
use hookbox_testkit::moto::{self, Moto};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sha2::Sha256;

const EVENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../events");
const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/bad-input.md");
/// The fixed clock: the time the sample events are signed at.
const T: i64 = 1_780_000_000;
const HOST: &str = "abc123defg.execute-api.eu-west-1.amazonaws.com";
const SOURCE_IP: &str = "203.0.113.10";
const STAGE: &str = "prod";
const RESOURCE: &str = "/webhooks/{partner}";

// ------------------------------------------------------------------ the corpus

/// Bytes, written in the corpus as text, `{"base64"}`, `{"repeat", "count"}`
/// or `{"concat"}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Spec {
    Text(String),
    Base64 { base64: String },
    Repeat { repeat: Box<Spec>, count: usize },
    Concat { concat: Vec<Spec> },
}

impl Spec {
    /// The bytes, with `{signature}` and `{timestamp}` replaced in text.
    fn render(&self, fill: &dyn Fn(&str) -> String) -> Vec<u8> {
        match self {
            Spec::Text(t) => fill(t).into_bytes(),
            Spec::Base64 { base64 } => STANDARD
                .decode(base64)
                .unwrap_or_else(|e| panic!("corpus: {base64:?} is not base64: {e}")),
            Spec::Repeat { repeat, count } => repeat.render(fill).repeat(*count),
            Spec::Concat { concat } => concat.iter().flat_map(|s| s.render(fill)).collect(),
        }
    }

    fn bytes(&self) -> Vec<u8> {
        self.render(&|t| t.to_string())
    }

    fn text(&self) -> String {
        String::from_utf8(self.bytes()).unwrap_or_else(|_| panic!("corpus: {self:?} is not text"))
    }
}

/// One header value, or several (the header repeated).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum HeaderValues {
    Many(Vec<Spec>),
    One(Spec),
}

impl HeaderValues {
    fn specs(&self) -> Vec<&Spec> {
        match self {
            HeaderValues::Many(v) => v.iter().collect(),
            HeaderValues::One(s) => vec![s],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Sign {
    StandardWebhooks,
    Github,
    None,
    Corrupt,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Delivery {
    /// API Gateway with the binary media type `*/*` (the SAM template).
    #[default]
    Binary,
    /// `isBase64Encoded: false`, the body as text (the events/ fixtures).
    Text,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventBody {
    body: String,
    is_base64_encoded: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
enum Verdict {
    Allow,
    Deny,
}

/// `Some(value)` when the field is present, even as `null`.
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    authorizer: Verdict,
    status: u16,
    #[serde(default)]
    error: Option<String>,
    stored: bool,
    #[serde(default)]
    duplicate_of: Option<String>,
    #[serde(default, deserialize_with = "present")]
    event_id: Option<Option<Spec>>,
    #[serde(default, deserialize_with = "present")]
    event_type: Option<Option<Spec>>,
    #[serde(default, deserialize_with = "present")]
    ordering_key: Option<Option<Spec>>,
    /// Stored headers: a value, or `null` for "not kept".
    #[serde(default)]
    kept_headers: BTreeMap<String, Option<Spec>>,
    #[serde(default)]
    body_in_blob: Option<bool>,
    /// For a partner with routes, forwarded at ingest: the outbox rows the
    /// stored event's one statement wrote (the row `processed`, no queue
    /// message). `0` or absent: the row is `pending`, with no outbox row,
    /// and one queue message (left to the processor).
    #[serde(default)]
    forwarded: Option<u64>,
}

impl Expect {
    fn summary(&self) -> String {
        let mut s = format!("{:?} {}", self.authorizer, self.status);
        if let Some(e) = &self.error {
            s.push_str(&format!(" {e}"));
        }
        s.push_str(match (&self.duplicate_of, self.stored) {
            (Some(_), _) => " duplicate",
            (None, true) => " stored",
            (None, false) => " nothing stored",
        });
        match self.forwarded {
            Some(0) => s.push_str(", left to the processor"),
            Some(n) => s.push_str(&format!(", forwarded ({n})")),
            None => {}
        }
        s
    }

    /// Outbox rows the case writes (all of them at ingest).
    fn deliveries(&self) -> u64 {
        self.forwarded.unwrap_or(0)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    about: String,
    partner: Spec,
    headers: BTreeMap<String, Option<HeaderValues>>,
    #[serde(default)]
    body: Option<Spec>,
    #[serde(default)]
    body_base64: Option<String>,
    sign: Sign,
    #[serde(default)]
    timestamp_offset_secs: i64,
    #[serde(default)]
    delivery: Delivery,
    #[serde(default)]
    event_body: Option<EventBody>,
    #[serde(default)]
    source_ip: Option<String>,
    expect: Expect,
}

impl Case {
    fn body(&self) -> Vec<u8> {
        match (&self.body, &self.body_base64) {
            (Some(spec), None) => spec.bytes(),
            (None, Some(b64)) => STANDARD
                .decode(b64)
                .unwrap_or_else(|e| panic!("{}: body_base64: {e}", self.name)),
            (None, None) => Vec::new(),
            (Some(_), Some(_)) => panic!("{}: both body and body_base64", self.name),
        }
    }
}

fn corpus() -> Vec<Case> {
    let path = format!("{EVENTS}/bad-input/corpus.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let cases: Vec<Case> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut seen = std::collections::HashSet::new();
    for (i, c) in cases.iter().enumerate() {
        assert!(
            !c.name.is_empty()
                && c.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "case {i}: name {:?} is not snake_case",
            c.name
        );
        assert!(seen.insert(c.name.clone()), "case name {} twice", c.name);
        assert!(
            c.expect.forwarded.is_none() || (c.expect.stored && c.expect.duplicate_of.is_none()),
            "{}: forwarded is for a newly stored event",
            c.name
        );
        if let Some(of) = &c.expect.duplicate_of {
            assert!(
                cases[..i].iter().any(|earlier| &earlier.name == of),
                "{}: duplicate_of {of} is not an earlier case",
                c.name
            );
        }
    }
    cases
}

/// What the corpus signs with: each partner's scheme and first secret.
struct Partners(Value);

impl Partners {
    fn load() -> Self {
        let path = format!("{EVENTS}/bad-input/partners.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        Partners(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}")))
    }

    /// Scheme and secret of `partner`; an unknown partner's requests are
    /// signed like demo's (a plausible request sent to the wrong path).
    fn signing(&self, partner: &str) -> (String, String) {
        let p = self.0["partners"]
            .get(partner)
            .unwrap_or(&self.0["partners"]["demo"]);
        // a preset partner (adyen: signed inside the body) by its preset
        let scheme = p["signature"]["scheme"]
            .as_str()
            .or(p["preset"].as_str())
            .expect("scheme or preset");
        let secret = p["secrets"][0].as_str().expect("secret");
        (scheme.to_string(), secret.to_string())
    }
}

// ---------------------------------------------------------------- the request

fn standard_webhooks_signature(secret: &str, id: &[u8], timestamp: &str, body: &[u8]) -> String {
    let key = STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
        .expect("whsec_ secret");
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&key).expect("key");
    mac.update(id);
    mac.update(b".");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

fn github_signature(secret: &str, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// The signature with its first MAC character changed (still well formed).
fn corrupt(signature: &str) -> String {
    let (prefix, mac) = signature
        .split_once([',', '='])
        .expect("a prefixed signature");
    let separator = &signature[prefix.len()..=prefix.len()];
    let mut chars: Vec<char> = mac.chars().collect();
    chars[0] = match chars[0] {
        'A' => 'B',
        '0' => '1',
        c if c.is_ascii_hexdigit() && prefix == "sha256" => '0',
        _ => 'A',
    };
    format!(
        "{prefix}{separator}{}",
        chars.into_iter().collect::<String>()
    )
}

fn trim_ows(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t'))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\t'))
        .map_or(start, |i| i + 1);
    &bytes[start..end]
}

/// One request as the partner sends it: header lines (name, bytes) in
/// order, and the body.
struct Request {
    partner: String,
    headers: Vec<(String, Vec<Vec<u8>>)>,
    body: Vec<u8>,
}

fn request(case: &Case, partners: &Partners) -> Request {
    let partner = case.partner.text();
    let body = case.body();
    let timestamp_default = (T + case.timestamp_offset_secs).to_string();
    let find = |names: &[&str]| -> Option<&Option<HeaderValues>> {
        case.headers
            .iter()
            .find(|(n, _)| names.iter().any(|name| n.eq_ignore_ascii_case(name)))
            .map(|(_, v)| v)
    };
    let first = |names: &[&str], fill: &dyn Fn(&str) -> String| -> Option<Vec<u8>> {
        find(names).and_then(Option::as_ref).and_then(|v| {
            v.specs()
                .first()
                .map(|s| trim_ows(&s.render(fill)).to_vec())
        })
    };
    let (scheme, secret) = partners.signing(&partner);
    let scheme = match case.sign {
        Sign::None => None,
        Sign::StandardWebhooks => Some("standard-webhooks".to_string()),
        Sign::Github => Some("github".to_string()),
        Sign::Corrupt => Some(scheme),
    };
    let timestamp_fill = |t: &str| t.replace("{timestamp}", &timestamp_default);
    let mut extra: Vec<(&str, &str)> = Vec::new();
    let signature = match scheme.as_deref() {
        None => None,
        Some("standard-webhooks") => {
            // The svix-* names only when the request has a svix-signature and
            // no webhook-signature (as the verifier reads them).
            let svix =
                find(&["svix-signature"]).is_some() && find(&["webhook-signature"]).is_none();
            let [id_name, timestamp_name, signature_name] = if svix {
                ["svix-id", "svix-timestamp", "svix-signature"]
            } else {
                ["webhook-id", "webhook-timestamp", "webhook-signature"]
            };
            let id = first(&[id_name], &timestamp_fill).unwrap_or_default();
            let timestamp = first(&[timestamp_name], &timestamp_fill)
                .map(|t| String::from_utf8_lossy(&t).into_owned())
                .unwrap_or_else(|| timestamp_default.clone());
            if find(&[timestamp_name]).is_none() {
                extra.push((timestamp_name, "{timestamp}"));
            }
            if find(&[signature_name]).is_none() {
                extra.push((signature_name, "{signature}"));
            }
            Some(standard_webhooks_signature(&secret, &id, &timestamp, &body))
        }
        Some("github") => {
            if find(&["x-hub-signature-256"]).is_none() {
                extra.push(("x-hub-signature-256", "{signature}"));
            }
            Some(github_signature(&secret, &body))
        }
        Some(other) => panic!("{}: cannot sign for scheme {other}", case.name),
    };
    let signature = match (case.sign, signature) {
        (Sign::Corrupt, Some(s)) => Some(corrupt(&s)),
        (_, s) => s,
    };
    let fill = |t: &str| {
        if t.contains("{signature}") {
            let s = signature
                .as_deref()
                .unwrap_or_else(|| panic!("{}: {{signature}} in an unsigned case", case.name));
            timestamp_fill(&t.replace("{signature}", s))
        } else {
            timestamp_fill(t)
        }
    };
    let mut headers: Vec<(String, Vec<Vec<u8>>)> = case
        .headers
        .iter()
        .filter_map(|(name, values)| {
            values.as_ref().map(|v| {
                let rendered = v.specs().iter().map(|s| s.render(&fill)).collect();
                (name.clone(), rendered)
            })
        })
        .collect();
    for (name, value) in extra {
        headers.push((name.to_string(), vec![fill(value).into_bytes()]));
    }
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        headers.push(("Host".into(), vec![HOST.as_bytes().to_vec()]));
    }
    Request {
        partner,
        headers,
        body,
    }
}

/// The two events API Gateway sends for `request`, as JSON, plus the
/// header values that are not UTF-8 (added to the deserialized events).
struct Events {
    authorizer: Vec<u8>,
    /// The proxy event without `requestContext.authorizer` (added after an
    /// Allow, from the authorizer's answer).
    proxy: Value,
    raw_headers: Vec<(String, Vec<Vec<u8>>)>,
}

fn events(case: &Case, request: &Request) -> Events {
    let source_ip = case.source_ip.as_deref().unwrap_or(SOURCE_IP);
    let mut single = Map::new();
    let mut multi = Map::new();
    let mut raw_headers = Vec::new();
    let mut forwarded: Option<String> = None;
    for (name, values) in &request.headers {
        let texts: Option<Vec<String>> = values
            .iter()
            .map(|v| String::from_utf8(v.clone()).ok())
            .collect();
        match texts {
            Some(texts) if name.eq_ignore_ascii_case("x-forwarded-for") => {
                forwarded = Some(texts.join(", "));
            }
            Some(texts) => {
                single.insert(name.clone(), json!(texts.last()));
                multi.insert(name.clone(), json!(texts));
            }
            None => raw_headers.push((name.clone(), values.clone())),
        }
    }
    // API Gateway appends the caller's address to X-Forwarded-For.
    let forwarded = match forwarded {
        Some(existing) => format!("{existing}, {source_ip}"),
        None => source_ip.to_string(),
    };
    single.insert("X-Forwarded-For".into(), json!(forwarded));
    multi.insert("X-Forwarded-For".into(), json!([forwarded]));
    let path = format!("/webhooks/{}", request.partner);
    let user_agent = single
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("user-agent"))
        .map_or(json!(""), |(_, v)| v.clone());
    let context = json!({
        "accountId": "123456789012",
        "apiId": "abc123defg",
        "resourceId": "r4nd0m",
        "stage": STAGE,
        "resourcePath": RESOURCE,
        "path": format!("/{STAGE}{path}"),
        "httpMethod": "POST",
        "requestId": uuid::Uuid::new_v4().to_string(),
        "requestTimeEpoch": T * 1000,
        "identity": { "sourceIp": source_ip, "userAgent": user_agent },
    });
    let authorizer = json!({
        "type": "REQUEST",
        "methodArn": format!("arn:aws:execute-api:eu-west-1:123456789012:abc123defg/{STAGE}/POST{path}"),
        "resource": RESOURCE,
        "path": path,
        "httpMethod": "POST",
        "headers": single,
        "multiValueHeaders": multi,
        "queryStringParameters": {},
        "multiValueQueryStringParameters": {},
        "pathParameters": { "partner": request.partner },
        "stageVariables": {},
        "requestContext": context,
    });
    let (body, is_base64) = match (&case.event_body, case.delivery) {
        (Some(e), _) => (json!(e.body), e.is_base64_encoded),
        // API Gateway sends no body as null
        (None, _) if request.body.is_empty() => (Value::Null, false),
        (None, Delivery::Binary) => (json!(STANDARD.encode(&request.body)), true),
        (None, Delivery::Text) => (
            json!(
                String::from_utf8(request.body.clone())
                    .unwrap_or_else(|_| panic!("{}: text delivery of bytes", case.name))
            ),
            false,
        ),
    };
    let proxy = json!({
        "resource": RESOURCE,
        "path": path,
        "httpMethod": "POST",
        "headers": single,
        "multiValueHeaders": multi,
        "queryStringParameters": null,
        "multiValueQueryStringParameters": null,
        "pathParameters": { "partner": request.partner },
        "stageVariables": null,
        "requestContext": context,
        "body": body,
        "isBase64Encoded": is_base64,
    });
    Events {
        authorizer: serde_json::to_vec(&authorizer).expect("JSON"),
        proxy,
        raw_headers,
    }
}

// ------------------------------------------------------------------ the rig

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Adapter {
    Postgres,
    DataApi,
}

struct Rig {
    authorizer: Authorizer,
    ingest: IngestFunction,
    db: Arc<dyn Database>,
    queue: SqsQueue,
    blobs: Arc<S3BlobStore>,
    bucket: String,
    moto: Moto,
    _db: TestDb,
}

async fn rig(adapter: Adapter) -> Rig {
    let test_db = TestDb::create().await;
    let db: Arc<dyn Database> = match adapter {
        Adapter::Postgres => {
            Arc::new(PgDatabase::connect(test_db.url(), &PgOptions::default()).expect("pool"))
        }
        Adapter::DataApi => Arc::new(DataApiDatabase::local(
            &hookbox_testkit::data_api_endpoint(),
            DataApiTarget {
                resource_arn: "arn:aws:rds:us-east-1:123456789012:cluster:hookbox-test".into(),
                secret_arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:hookbox-test"
                    .into(),
                database: test_db.name().into(),
            },
        )),
    };
    hookbox::migrate::migrate(db.as_ref())
        .await
        .expect("migrate");
    // A moto server of its own: the shared one's request log goes to a pipe
    // nobody reads, and a full pipe stops it (see docs/bad-input.md).
    let moto = Moto::start();
    let names = moto::create_queue(moto.endpoint(), &moto::unique_name("bad-input"), 30, 4).await;
    let queue = SqsQueue::new(SqsQueue::local_client(moto.endpoint()), names.url);
    let s3 = hookbox_testkit::s3::client(moto.endpoint());
    let bucket = moto::unique_name("bad-input-blobs");
    s3.create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .unwrap_or_else(|e| panic!("moto refused bucket {bucket}: {e:?}"));
    let blobs = Arc::new(S3BlobStore::new(s3, bucket.clone()));
    let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(
        chrono::Utc.timestamp_opt(T, 0).single().expect("valid"),
    ));
    let config = Arc::new(
        ConfigStore::load(
            ConfigSource::File(format!("{EVENTS}/bad-input/partners.json").into()),
            None,
            clock.clone(),
        )
        .await
        .expect("config"),
    );
    // Forwarding at ingest on, and the destinations (with the partners whose
    // routes name them) synced to the database as the relay's run does:
    // without them the database forwards nothing at ingest. Partners
    // without routes are stored pending and enqueued either way.
    hookbox::outbox::destinations::sync(db.as_ref(), &*config.current().await, clock.now())
        .await
        .expect("sync the destinations");
    let ingest = Ingest::new(
        config.clone(),
        db.clone(),
        Arc::new(queue.clone()),
        blobs.clone(),
        clock.clone(),
    )
    .with_forwarding_at_ingest(true);
    Rig {
        authorizer: Authorizer::new(config, clock.clone()),
        ingest: IngestFunction::new(ingest, clock),
        db,
        queue,
        blobs,
        bucket,
        moto,
        _db: test_db,
    }
}

async fn rows(db: &dyn Database) -> i64 {
    hookbox::inbox::counts_by_status(db)
        .await
        .expect("counts")
        .values()
        .sum()
}

const LAST_OUTBOX_SEQ: Statement = Statement::new(
    "test.bad_input.last_outbox_seq",
    "SELECT COALESCE(max(seq), 0) AS seq FROM outbox",
);

/// The outbox's last `seq`: the rows a case writes come after it.
async fn last_outbox_seq(db: &dyn Database) -> i64 {
    db.execute(&LAST_OUTBOX_SEQ, &params! {})
        .await
        .expect("outbox seq")
        .rows[0]
        .i64("seq")
        .expect("seq")
}

const OUTBOX_AFTER: Statement = Statement::new(
    "test.bad_input.outbox_after",
    "SELECT destination, aggregate_type, aggregate_id, event_type, status,
            payload_key IS NULL AS inline
       FROM outbox WHERE seq > :after ORDER BY seq",
);

/// True when PostgreSQL's jsonb (whose numbers are exact: no `f64` in
/// between) holds each outbox row after `:after` as the JSON value `:body`.
const OUTBOX_PAYLOADS_ARE: Statement = Statement::new(
    "test.bad_input.outbox_payloads_are",
    "SELECT COALESCE(bool_and(payload = CAST(:body AS jsonb)), false) AS same
       FROM outbox WHERE seq > :after",
);

/// Objects in the blob store's bucket.
async fn objects(rig: &Rig) -> i32 {
    hookbox_testkit::s3::client(rig.moto.endpoint())
        .list_objects_v2()
        .bucket(&rig.bucket)
        .send()
        .await
        .expect("list objects")
        .key_count()
        .unwrap_or(0)
}

/// Every message on the queue (deleted as read).
async fn drain(queue: &SqsQueue) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let got = queue.receive(10).await.expect("receive");
        if got.is_empty() {
            return out;
        }
        for m in got {
            queue.delete(&m.receipt_handle).await.expect("delete");
            out.push(m.body);
        }
    }
}

// ----------------------------------------------------------------- one case

/// The two event types, for adding raw header values.
trait HeaderMaps {
    fn maps(&mut self) -> [&mut aws_lambda_events::http::HeaderMap; 2];
}

impl HeaderMaps for ApiGatewayCustomAuthorizerRequestTypeRequest {
    fn maps(&mut self) -> [&mut aws_lambda_events::http::HeaderMap; 2] {
        [&mut self.headers, &mut self.multi_value_headers]
    }
}

impl HeaderMaps for ApiGatewayProxyRequest {
    fn maps(&mut self) -> [&mut aws_lambda_events::http::HeaderMap; 2] {
        [&mut self.headers, &mut self.multi_value_headers]
    }
}

/// Deserializes an event from the bytes the Lambda runtime would get, as the
/// functions' `main.rs` do (`event_from_json`: unusable header values
/// dropped), then adds the header values that are not UTF-8.
/// `Err` is what the runtime reports as an invocation error: the handler
/// never runs.
fn deliver<E: serde::de::DeserializeOwned + HeaderMaps>(
    json: &[u8],
    raw: &[(String, Vec<Vec<u8>>)],
) -> Result<E, String> {
    // as main.rs does: the header values no HTTP library takes are dropped
    // before the typed event is built
    let mut value: Value = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    hookbox::signature::drop_unusable_headers(&mut value);
    let mut event: E = serde_json::from_value(value).map_err(|e| e.to_string())?;
    for (name, values) in raw {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| e.to_string())?;
        let values = values
            .iter()
            .map(|v| HeaderValue::from_bytes(v).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        let [single, multi] = event.maps();
        if let Some(last) = values.last() {
            single.insert(name.clone(), last.clone());
        }
        for v in values {
            multi.append(name.clone(), v);
        }
    }
    Ok(event)
}

/// What API Gateway answered for one case.
#[derive(Debug, Default)]
struct Got {
    /// `Allow`, `Deny`, or why the authorizer did not answer.
    authorizer: String,
    status: u16,
    /// The deny reason, or ingest's `error`.
    error: Option<String>,
    /// Ingest's JSON answer.
    body: Value,
}

impl Got {
    fn summary(&self) -> String {
        let mut s = format!("{} {}", self.authorizer, self.status);
        if let Some(e) = &self.error {
            s.push_str(&format!(" {e}"));
        }
        if let Some(status) = self.body.get("status").and_then(Value::as_str) {
            s.push_str(&format!(" {status}"));
        }
        s
    }
}

fn proxy_body(r: &ApiGatewayProxyResponse) -> Value {
    match &r.body {
        Some(ApiBody::Text(t)) => serde_json::from_str(t).unwrap_or_else(|_| json!({ "raw": t })),
        other => json!({ "raw": format!("{other:?}") }),
    }
}

/// The authorizer, then (when it allows) ingest, as API Gateway runs them.
async fn call(authorizer: Authorizer, ingest: IngestFunction, events: Events) -> Got {
    let auth_event: ApiGatewayCustomAuthorizerRequestTypeRequest =
        match deliver(&events.authorizer, &events.raw_headers) {
            Ok(e) => e,
            Err(e) => {
                // The runtime fails the invocation; API Gateway answers 500
                // for an authorizer that fails.
                return Got {
                    authorizer: format!("Error (the authorizer event does not deserialize: {e})"),
                    status: 500,
                    error: Some("authorizer_invocation_failed".into()),
                    body: Value::Null,
                };
            }
        };
    let (decision, _) = authorizer.decide(&auth_event).await;
    let response = authorizer.handle(auth_event).await;
    let allowed = response
        .policy_document
        .statement
        .first()
        .is_some_and(|s| s.effect == IamPolicyEffect::Allow);
    match (decision, allowed) {
        (Decision::Allow, true) => {}
        (Decision::Deny(reason), false) => {
            // What API Gateway answers for a Deny policy.
            return Got {
                authorizer: "Deny".into(),
                status: 403,
                error: Some(reason.into()),
                body: Value::Null,
            };
        }
        (decision, allowed) => {
            return Got {
                authorizer: format!("inconsistent: decide {decision:?}, policy allows: {allowed}"),
                status: 0,
                error: None,
                body: Value::Null,
            };
        }
    }
    let mut proxy = events.proxy;
    proxy["requestContext"]["authorizer"] = json!({
        "partner": response.context.get("partner").cloned().unwrap_or(Value::Null),
        "principalId": response.principal_id,
    });
    let proxy_json = serde_json::to_vec(&proxy).expect("JSON");
    let event: ApiGatewayProxyRequest = match deliver(&proxy_json, &events.raw_headers) {
        Ok(e) => e,
        Err(e) => {
            // A failed proxy integration is API Gateway's 502.
            return Got {
                authorizer: "Allow".into(),
                status: 502,
                error: Some(format!("ingest_invocation_failed: {e}")),
                body: Value::Null,
            };
        }
    };
    let r = ingest.handle(event).await;
    let body = proxy_body(&r);
    Got {
        authorizer: "Allow".into(),
        status: u16::try_from(r.status_code).unwrap_or(0),
        error: body
            .get("error")
            .and_then(Value::as_str)
            .map(str::to_string),
        body,
    }
}

/// What a case added to the database: inbox rows, and outbox rows (those
/// after `outbox_after`, the outbox's last `seq` before the case).
struct Added {
    rows: i64,
    outbox_after: i64,
}

/// Everything wrong with what `case` got, checked against the database,
/// the blob store and the queue.
#[allow(clippy::too_many_arguments)]
async fn check(
    rig: &Rig,
    case: &Case,
    request: &Request,
    got: &Got,
    added: Added,
    messages: &[String],
    ids: &mut HashMap<String, uuid::Uuid>,
    blob_keys: &mut HashSet<String>,
) -> Vec<String> {
    let e = &case.expect;
    let rows_added = added.rows;
    let mut problems = Vec::new();
    let verdict = format!("{:?}", e.authorizer);
    if got.authorizer != verdict {
        problems.push(format!("authorizer not {verdict}"));
    }
    if got.status != e.status {
        problems.push(format!("status {} (expected {})", got.status, e.status));
    }
    if got.error != e.error {
        problems.push(format!("error {:?} (expected {:?})", got.error, e.error));
    }
    if got.status >= 500 {
        let signed = matches!(case.sign, Sign::StandardWebhooks | Sign::Github);
        problems.push(format!(
            "a 5xx{}",
            if signed && got.authorizer == "Allow" {
                " for a correctly signed request"
            } else {
                ""
            }
        ));
    }
    if (400..500).contains(&got.status) && rows_added != 0 {
        problems.push(format!("a {} left {rows_added} row(s)", got.status));
    }
    let answered = got.body.get("status").and_then(Value::as_str);
    let accepted = answered == Some("accepted");
    let id = got
        .body
        .get("id")
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<uuid::Uuid>().ok());
    if let Some(id) = id {
        ids.insert(case.name.clone(), id);
    }
    let expect_new = e.stored && e.duplicate_of.is_none();
    if expect_new && !accepted {
        problems.push(format!("not stored (answer {answered:?})"));
    }
    if expect_new {
        if rows_added != 1 {
            problems.push(format!("{rows_added} rows added (expected 1)"));
        }
    } else if rows_added != 0 {
        problems.push(format!("{rows_added} row(s) added (expected none)"));
    }
    if let Some(of) = &e.duplicate_of {
        if answered != Some("duplicate") {
            problems.push(format!("answer {answered:?} (expected duplicate of {of})"));
        } else if id != ids.get(of).copied() {
            problems.push(format!("duplicate of {id:?}, {of} was {:?}", ids.get(of)));
        }
    }
    // the queue: one message SQS took for a new row left to the processor,
    // nothing for a row forwarded at ingest, nothing otherwise
    if accepted {
        let forwarded = e.deliveries() > 0;
        match (messages, forwarded) {
            ([], true) => {}
            (m, true) => problems.push(format!(
                "{} queue message(s) for an event forwarded at ingest (expected none)",
                m.len()
            )),
            ([m], false) => {
                if !m.is_ascii() {
                    problems.push("queue message is not ASCII".into());
                }
                match InboxMessage::from_body(m) {
                    Ok(InboxMessage::Stored { inbox_id, .. }) if Some(inbox_id) == id => {}
                    other => problems.push(format!("queue message {other:?}")),
                }
            }
            (m, false) => problems.push(format!("{} queue messages (expected 1)", m.len())),
        }
        match id {
            Some(id) => {
                problems
                    .extend(check_row(rig, case, request, id, added.outbox_after, blob_keys).await);
            }
            None => problems.push(format!("accepted without an id: {}", got.body)),
        }
    } else {
        if !messages.is_empty() {
            problems.push(format!(
                "{} queue message(s) without a new row",
                messages.len()
            ));
        }
        problems.extend(check_outbox(rig, case, request, added.outbox_after, None).await);
    }
    problems
}

/// The outbox rows the case wrote: as many as `expect.forwarded` (none
/// unless forwarded at ingest), each inline, pending for the relay, of
/// aggregate `partner:<name>` / the ordering key (else the event id), and
/// whose payload is the body as a JSON value exactly (compared by jsonb,
/// whose numbers are exact: serde_json's `f64` would hide a rounding).
async fn check_outbox(
    rig: &Rig,
    case: &Case,
    request: &Request,
    after: i64,
    row: Option<&hookbox::inbox::InboxRow>,
) -> Vec<String> {
    let mut problems = Vec::new();
    let written = match rig
        .db
        .execute(&OUTBOX_AFTER, &params! { "after" => after })
        .await
    {
        Ok(r) => r.rows,
        Err(err) => return vec![format!("outbox unreadable: {err}")],
    };
    let want = case.expect.deliveries();
    if u64::try_from(written.len()).ok() != Some(want) {
        problems.push(format!(
            "{} outbox row(s) written (expected {want})",
            written.len()
        ));
    }
    let Some(row) = row.filter(|_| !written.is_empty()) else {
        return problems;
    };
    let aggregate_type = format!("partner:{}", request.partner);
    let aggregate_id = row.ordering_key.as_deref().unwrap_or(&row.event_id);
    for w in &written {
        let field = |c: &str| w.opt_text(c).ok().flatten().unwrap_or_default();
        if field("aggregate_type") != aggregate_type || field("aggregate_id") != aggregate_id {
            problems.push(format!(
                "outbox aggregate {}/{} (expected {aggregate_type}/{aggregate_id})",
                field("aggregate_type"),
                field("aggregate_id")
            ));
        }
        if let Some(t) = row
            .event_type
            .as_deref()
            .filter(|t| field("event_type") != *t)
        {
            problems.push(format!(
                "outbox event_type {:?} (expected {t:?})",
                field("event_type")
            ));
        }
        if field("status") != "pending" || w.bool("inline").ok() != Some(true) {
            problems.push(format!(
                "outbox row {}, inline {:?} (expected pending, inline)",
                field("status"),
                w.bool("inline").ok()
            ));
        }
    }
    let Ok(body) = std::str::from_utf8(&request.body) else {
        problems.push("forwarded a body that is not UTF-8".into());
        return problems;
    };
    match rig
        .db
        .execute(
            &OUTBOX_PAYLOADS_ARE,
            &params! { "after" => after, "body" => body },
        )
        .await
        .map(|r| r.rows.first().map(|r| r.bool("same")))
    {
        Ok(Some(Ok(true))) => {}
        Ok(Some(Ok(false))) => {
            problems.push("an outbox payload is not the body's JSON value exactly".into());
        }
        other => problems.push(format!("outbox payloads not comparable: {other:?}")),
    }
    problems
}

/// The stored row against the case.
async fn check_row(
    rig: &Rig,
    case: &Case,
    request: &Request,
    id: uuid::Uuid,
    outbox_after: i64,
    blob_keys: &mut HashSet<String>,
) -> Vec<String> {
    let e = &case.expect;
    let mut problems = Vec::new();
    let row = match hookbox::inbox::get(rig.db.as_ref(), id).await {
        Ok(Some(row)) => row,
        other => return vec![format!("row {id}: {other:?}")],
    };
    // no processor runs: a row is finished only when forwarded at ingest
    let status = if e.deliveries() > 0 {
        InboxStatus::Processed
    } else {
        InboxStatus::Pending
    };
    if row.status != status {
        problems.push(format!("row {} (expected {status})", row.status));
    }
    problems.extend(check_outbox(rig, case, request, outbox_after, Some(&row)).await);
    if row.partner != request.partner || !row.signature_verified {
        problems.push(format!(
            "row partner {:?}, verified {}",
            row.partner, row.signature_verified
        ));
    }
    match hookbox::inbox::body::read(rig.db.as_ref(), rig.blobs.as_ref(), id, &row.body).await {
        Ok(bytes) if bytes == request.body => {}
        Ok(bytes) => problems.push(format!(
            "stored body of {} bytes differs from the {} sent",
            bytes.len(),
            request.body.len()
        )),
        Err(err) => problems.push(format!("body unreadable: {err}")),
    }
    if let Some(blob) = row.body.blob() {
        blob_keys.insert(blob.key.to_string());
    }
    if let Some(in_blob) = e.body_in_blob {
        if row.body.blob().is_some() != in_blob {
            problems.push(format!(
                "body in the blob store: {}",
                row.body.blob().is_some()
            ));
        }
    }
    let text = |v: &Option<Spec>| v.as_ref().map(Spec::text);
    if let Some(want) = &e.event_id {
        if Some(row.event_id.clone()) != text(want) {
            problems.push(format!(
                "event_id {:?} (expected {:?})",
                row.event_id,
                text(want)
            ));
        }
    }
    if let Some(want) = &e.event_type {
        if row.event_type != text(want) {
            problems.push(format!(
                "event_type {:?} (expected {:?})",
                row.event_type,
                text(want)
            ));
        }
    }
    if let Some(want) = &e.ordering_key {
        if row.ordering_key != text(want) {
            problems.push(format!(
                "ordering_key {:?} (expected {:?})",
                row.ordering_key,
                text(want)
            ));
        }
    }
    for (name, want) in &e.kept_headers {
        let kept = row
            .headers
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_string);
        if kept != text(want) {
            problems.push(format!(
                "kept header {name} {kept:?} (expected {:?})",
                text(want)
            ));
        }
    }
    problems
}

/// The panic's message, when the task panicked.
fn panic_text(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(payload) => payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into()),
        Err(e) => e.to_string(),
    }
}

async fn run_corpus(adapter: Adapter) {
    let started = Instant::now();
    let rig = rig(adapter).await;
    let partners = Partners::load();
    let cases = corpus();
    let mut ids = HashMap::new();
    let mut blob_keys = HashSet::new();
    let mut mismatches: Vec<[String; 3]> = Vec::new();
    for case in &cases {
        let request = request(case, &partners);
        let events = events(case, &request);
        let rows_before = rows(rig.db.as_ref()).await;
        let outbox_before = last_outbox_seq(rig.db.as_ref()).await;
        // Each case in a task of its own: a panic is caught and reported
        // with the case's name, and the run goes on.
        let task = tokio::spawn(call(rig.authorizer.clone(), rig.ingest.clone(), events));
        let got = match task.await {
            Ok(got) => got,
            Err(e) => {
                mismatches.push([
                    case.name.clone(),
                    case.expect.summary(),
                    format!("PANIC: {}", panic_text(e)),
                ]);
                drain(&rig.queue).await;
                continue;
            }
        };
        let rows_added = rows(rig.db.as_ref()).await - rows_before;
        let messages = drain(&rig.queue).await;
        let problems = check(
            &rig,
            case,
            &request,
            &got,
            Added {
                rows: rows_added,
                outbox_after: outbox_before,
            },
            &messages,
            &mut ids,
            &mut blob_keys,
        )
        .await;
        if !problems.is_empty() {
            mismatches.push([
                case.name.clone(),
                case.expect.summary(),
                format!("{}: {}", got.summary(), problems.join("; ")),
            ]);
        }
    }
    // Nothing a refusal did is left in the blob store either: the bucket
    // holds exactly the bodies stored rows refer to.
    let objects = objects(&rig).await;
    if usize::try_from(objects).ok() != Some(blob_keys.len()) {
        mismatches.push([
            "(the blob store, after all cases)".into(),
            format!(
                "{} objects, the bodies stored rows refer to",
                blob_keys.len()
            ),
            format!("{objects} objects"),
        ]);
    }
    eprintln!(
        "bad-input corpus, {adapter:?}: {} cases in {:.1?}",
        cases.len(),
        started.elapsed()
    );
    if !mismatches.is_empty() {
        let mut table = format!(
            "{} of {} corpus cases did not get their documented answer ({adapter:?}):\n\n\
             | case | expected | got |\n| --- | --- | --- |\n",
            mismatches.len(),
            cases.len()
        );
        for [name, expected, got] in &mismatches {
            let got: String = got.chars().take(600).collect();
            table.push_str(&format!("| {name} | {expected} | {got} |\n"));
        }
        panic!("{table}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_case_gets_its_documented_answer_through_direct_postgres() {
    run_corpus(Adapter::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_case_gets_its_documented_answer_through_the_data_api() {
    run_corpus(Adapter::DataApi).await;
}

// ---------------------------------------------------------------- the doc

/// Text safe in a Markdown table cell.
fn md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '|' | '*' | '<' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The case's row in `docs/bad-input.md`.
fn doc_row(case: &Case) -> String {
    let e = &case.expect;
    let stored = match (&e.duplicate_of, e.stored, e.forwarded) {
        (Some(of), _, _) => format!("duplicate of `{of}`"),
        (None, true, None) => "yes".into(),
        (None, true, Some(0)) => "yes, pending: left to the processor".into(),
        (None, true, Some(1)) => "yes, forwarded at ingest: 1 outbox row".into(),
        (None, true, Some(n)) => format!("yes, forwarded at ingest: {n} outbox rows"),
        (None, false, _) => "no".into(),
    };
    format!(
        "| `{}` | {} | {:?} | {} | {} | {} |",
        case.name,
        md(&case.about),
        e.authorizer,
        e.status,
        e.error.as_deref().map_or("–".into(), |c| format!("`{c}`")),
        stored
    )
}

const DOC_HEADER: &str = "| case | what it is | authorizer | status | error | stored |\n| --- | --- | --- | --- | --- | --- |";

#[test]
fn the_doc_table_has_every_corpus_case_with_its_answer() {
    let cases = corpus();
    assert!(cases.len() >= 60, "the corpus has {} cases", cases.len());
    let expected: Vec<String> = cases.iter().map(doc_row).collect();
    let doc = std::fs::read_to_string(DOC).unwrap_or_else(|e| panic!("{DOC}: {e}"));
    // the rows of every table with the answers' header
    let header = DOC_HEADER.lines().next().unwrap_or_default();
    let mut rows: Vec<&str> = Vec::new();
    let mut in_table = false;
    for line in doc.lines() {
        if line == header {
            in_table = true;
        } else if !line.starts_with('|') {
            in_table = false;
        } else if in_table && line.starts_with("| `") {
            rows.push(line);
        }
    }
    if rows != expected {
        let missing: Vec<&String> = expected
            .iter()
            .filter(|r| !rows.contains(&r.as_str()))
            .collect();
        let extra: Vec<&&str> = rows
            .iter()
            .filter(|r| !expected.contains(&r.to_string()))
            .collect();
        panic!(
            "docs/bad-input.md's table disagrees with events/bad-input/corpus.json\n\
             rows missing or different in the doc:\n{}\n\nrows in the doc the corpus does not have:\n{}\n\n\
             the table, generated from the corpus:\n\n{DOC_HEADER}\n{}\n",
            missing
                .iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            extra.iter().map(|r| **r).collect::<Vec<_>>().join("\n"),
            expected.join("\n")
        );
    }
}

//! Log lines as Lambda's JSON log format and Powertools read them: one flat
//! JSON object per line, with `timestamp` (RFC 3339, milliseconds, UTC),
//! `level` (`INFO`, `WARN`, …), `service`, `cold_start`, the Lambda
//! request id (`function_request_id`) and the X-Ray trace id
//! (`xray_trace_id`) of the invocation under way, then `message` and every
//! field of the event and of its spans (outermost first, the event's own
//! last), each as a top-level key.
//!
//! The request and trace ids come from the invocation, not from a span:
//! `main` calls [`begin_invocation`] with each event's context, so a line
//! written by a task the handler spawned (one per SQS message, one per
//! delivery) carries them too, where a span would not reach. A Lambda
//! process runs one invocation at a time.
//!
//! Why `level` on every line: with `LogFormat: JSON`, Lambda filters an
//! application's lines by their `level` key against the function's
//! `ApplicationLogLevel`; a line without one is kept or dropped as Lambda
//! decides, not as the line meant. The EMF lines the alarms read carry
//! `INFO` ([`crate::metrics::Metrics::to_emf`]), so an `ApplicationLogLevel`
//! above `INFO` would drop them and leave every metric alarm quiet:
//! `infra/check.py` refuses one.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, RwLock};

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::{JsonFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// The `service` of every line and EMF document.
pub const SERVICE: &str = "hookbox";

/// The keys every line has, which no field of an event may replace.
pub const RESERVED_KEYS: [&str; 6] = [
    "timestamp",
    "level",
    "service",
    "cold_start",
    "function_request_id",
    "xray_trace_id",
];

/// The invocation under way in this process, and how many have begun.
#[derive(Debug, Default)]
pub struct Invocations {
    current: RwLock<Option<Invocation>>,
    begun: AtomicU64,
}

/// One invocation's ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// Lambda's request id (`Lambda-Runtime-Aws-Request-Id`).
    pub request_id: String,
    /// The X-Ray trace header's id (its `Root`), when tracing is active.
    pub trace_id: Option<String>,
    /// The whole X-Ray trace header (`Root=…;Parent=…;Sampled=…`), what a
    /// message sent now carries on (`AWSTraceHeader`).
    pub trace_header: Option<String>,
}

impl Invocations {
    /// An invocation begins: its ids are on every line until the next.
    pub fn begin(&self, request_id: &str, trace_id: Option<&str>) {
        self.begun.fetch_add(1, Ordering::Relaxed);
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        *current = Some(Invocation {
            request_id: request_id.to_owned(),
            trace_id: trace_id.map(trace_root),
            trace_header: trace_id.map(str::to_owned),
        });
    }

    /// The invocation under way (none during init).
    pub fn current(&self) -> Option<Invocation> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// True during init and the process's first invocation (Powertools'
    /// `cold_start`).
    pub fn cold_start(&self) -> bool {
        self.begun.load(Ordering::Relaxed) <= 1
    }
}

/// The X-Ray trace header of the invocation under way, when it is one X-Ray
/// writes (`Root=1-<8 hex>-<24 hex>`, then `;key=value` parts, visible
/// ASCII, at most 256 bytes): what the queue adapter sends on as a
/// message's `AWSTraceHeader`. SQS refuses a malformed one, and a refused
/// send must never be the price of a trace.
pub fn trace_header() -> Option<String> {
    INVOCATIONS
        .current()
        .and_then(|i| i.trace_header)
        .filter(|h| is_trace_header(h))
}

fn is_trace_header(header: &str) -> bool {
    let Some(root) = header.strip_prefix("Root=1-") else {
        return false;
    };
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    let id = root.split(';').next().unwrap_or_default();
    let mut parts = id.splitn(2, '-');
    header.len() <= 256
        && header.bytes().all(|b| (0x21..0x7f).contains(&b))
        && hex(parts.next().unwrap_or_default(), 8)
        && hex(parts.next().unwrap_or_default(), 24)
}

/// The trace id of an `X-Amzn-Trace-Id` value (`Root=1-…;Parent=…;
/// Sampled=1`): its `Root`, or the value when it has none.
pub fn trace_root(header: &str) -> String {
    header
        .split(';')
        .find_map(|part| part.trim().strip_prefix("Root="))
        .unwrap_or(header)
        .to_owned()
}

/// This process's invocations (what `main` reports through
/// [`begin_invocation`]).
pub static INVOCATIONS: LazyLock<Arc<Invocations>> = LazyLock::new(Arc::default);

/// An invocation begins: `main` calls this with each event's context
/// (`event.context.request_id`, `event.context.xray_trace_id`).
pub fn begin_invocation(request_id: &str, trace_id: Option<&str>) {
    INVOCATIONS.begin(request_id, trace_id);
}

/// The keys every line and every EMF document of this process starts
/// with, at `at`, of a line at `level`.
pub fn line_keys(
    invocations: &Invocations,
    service: &str,
    level: Level,
    at: DateTime<Utc>,
) -> Map<String, Value> {
    let mut keys = Map::new();
    keys.insert(
        "timestamp".into(),
        at.to_rfc3339_opts(SecondsFormat::Millis, true).into(),
    );
    keys.insert("level".into(), level_name(level).into());
    keys.insert("service".into(), service.into());
    keys.insert("cold_start".into(), invocations.cold_start().into());
    if let Some(invocation) = invocations.current() {
        keys.insert("function_request_id".into(), invocation.request_id.into());
        if let Some(trace) = invocation.trace_id {
            keys.insert("xray_trace_id".into(), trace.into());
        }
    }
    keys
}

/// Lambda's level names.
fn level_name(level: Level) -> &'static str {
    match level {
        Level::TRACE => "TRACE",
        Level::DEBUG => "DEBUG",
        Level::INFO => "INFO",
        Level::WARN => "WARN",
        Level::ERROR => "ERROR",
    }
}

/// The formatter of a JSON log line (install it with [`JsonFields`] as the
/// field formatter, so that spans' fields are JSON too).
#[derive(Debug)]
pub struct LambdaJson {
    service: String,
    invocations: Arc<Invocations>,
    now: fn() -> DateTime<Utc>,
}

impl LambdaJson {
    /// Lines of `service`, with the ids of `invocations`, stamped by `now`.
    pub fn new(service: &str, invocations: Arc<Invocations>, now: fn() -> DateTime<Utc>) -> Self {
        Self {
            service: service.to_owned(),
            invocations,
            now,
        }
    }
}

impl<S, N> FormatEvent<S, N> for LambdaJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = Map::new();
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                let extensions = span.extensions();
                let Some(formatted) = extensions.get::<FormattedFields<N>>() else {
                    continue;
                };
                if let Ok(Value::Object(span_fields)) = serde_json::from_str(formatted.as_str()) {
                    fields.extend(span_fields);
                }
            }
        }
        // a span of one message that came with its own trace (the
        // processor's, from the message's AWSTraceHeader) names that trace
        let message_trace = fields.remove("xray_trace_id");
        event.record(&mut Fields(&mut fields));
        let meta = event.metadata();
        let mut line = line_keys(
            &self.invocations,
            &self.service,
            *meta.level(),
            (self.now)(),
        );
        if let Some(trace) = message_trace.filter(Value::is_string) {
            line.insert("xray_trace_id".into(), trace);
        }
        for (key, value) in fields {
            if !RESERVED_KEYS.contains(&key.as_str()) {
                line.entry(key).or_insert(value);
            }
        }
        line.entry("target").or_insert_with(|| meta.target().into());
        writeln!(writer, "{}", Value::Object(line))
    }
}

/// An event's fields into a JSON map.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0.insert(field.name().into(), value.to_string().into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }
}

/// This process's formatter: service `hookbox`, the invocations `main`
/// reports, the system clock (what the functions install; tests capture
/// lines in it).
pub fn formatter() -> LambdaJson {
    LambdaJson::new(SERVICE, INVOCATIONS.clone(), Utc::now)
}

/// The field formatter to install beside [`LambdaJson`].
pub fn fields() -> JsonFields {
    JsonFields::new()
}

/// A layer writing this process's lines ([`formatter`], [`fields`]) to
/// `writer`: what a test or the bench puts under its own level filter.
pub fn layer<S, W>(writer: W) -> tracing_subscriber::fmt::Layer<S, JsonFields, LambdaJson, W>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + 'static,
{
    tracing_subscriber::fmt::layer()
        .fmt_fields(fields())
        .event_format(formatter())
        .with_writer(writer)
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use hookbox_testkit::logs::CapturedLogs as Captured;

    use super::*;

    fn at() -> DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000, 123_000_000)
            .single()
            .expect("valid")
    }

    fn subscriber(
        invocations: Arc<Invocations>,
        out: Captured,
    ) -> impl Subscriber + Send + Sync + 'static {
        tracing_subscriber::fmt()
            .with_max_level(Level::DEBUG)
            .fmt_fields(fields())
            .event_format(LambdaJson::new("hookbox", invocations, at))
            .with_writer(move || out.clone())
            .finish()
    }

    #[test]
    fn every_line_is_flat_json_with_level_timestamp_and_the_invocation() {
        let invocations = Arc::new(Invocations::default());
        let out = Captured::default();
        tracing::subscriber::with_default(subscriber(invocations.clone(), out.clone()), || {
            tracing::info!(partner = "stripe", "during init");
            invocations.begin(
                "req-1",
                Some("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"),
            );
            let span = tracing::info_span!("message", inbox_id = "a1", attempt = 2_u64);
            let _entered = span.enter();
            tracing::warn!(
                event_id = "evt_1",
                level = "forged",
                function_request_id = "forged",
                "handled"
            );
            drop(_entered);
            invocations.begin("req-2", None);
            tracing::error!(error = %"boom", "second");
        });
        let lines = out.json_lines();
        assert_eq!(lines.len(), 3, "{lines:?}");
        let init = &lines[0];
        assert_eq!(init["timestamp"], "2023-11-14T22:13:20.123Z");
        assert_eq!(init["level"], "INFO");
        assert_eq!(init["service"], "hookbox");
        assert_eq!(init["cold_start"], true);
        assert_eq!(init["message"], "during init");
        assert_eq!(init["partner"], "stripe");
        assert!(init.get("function_request_id").is_none(), "{init}");

        let handled = &lines[1];
        assert_eq!(handled["level"], "WARN", "a field cannot replace the level");
        assert_eq!(handled["function_request_id"], "req-1");
        assert_eq!(
            handled["xray_trace_id"],
            "1-5759e988-bd862e3fe1be46a994272793"
        );
        assert_eq!(handled["cold_start"], true);
        // the span's fields and the event's, flat
        assert_eq!(handled["inbox_id"], "a1");
        assert_eq!(handled["attempt"], 2);
        assert_eq!(handled["event_id"], "evt_1");
        assert!(handled.get("span").is_none() && handled.get("fields").is_none());

        let second = &lines[2];
        assert_eq!(second["function_request_id"], "req-2");
        assert!(second.get("xray_trace_id").is_none());
        assert_eq!(second["cold_start"], false);
        assert_eq!(second["error"], "boom");
        assert_eq!(second["level"], "ERROR");
    }

    #[test]
    fn a_task_spawned_by_the_handler_logs_the_invocation_without_its_span() {
        let invocations = Arc::new(Invocations::default());
        let out = Captured::default();
        tracing::subscriber::with_default(subscriber(invocations.clone(), out.clone()), || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("runtime");
            invocations.begin("req-9", None);
            runtime.block_on(async {
                let span = tracing::info_span!("invocation", partner = "github");
                let _entered = span.enter();
                // a spawned task does not inherit the span
                let task = tokio::spawn(async { tracing::info!(outbox_id = 7_u64, "delivered") });
                drop(_entered);
                task.await.expect("task");
            });
        });
        let lines = out.json_lines();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0]["function_request_id"], "req-9");
        assert_eq!(lines[0]["outbox_id"], 7);
        assert!(lines[0].get("partner").is_none(), "{}", lines[0]);
    }

    #[test]
    fn a_message_that_came_with_its_own_trace_logs_that_trace() {
        let invocations = Arc::new(Invocations::default());
        let out = Captured::default();
        tracing::subscriber::with_default(subscriber(invocations.clone(), out.clone()), || {
            invocations.begin(
                "req-3",
                Some("Root=1-aaaaaaaa-bbbbbbbbbbbbbbbbbbbbbbbb;Sampled=1"),
            );
            let span = tracing::info_span!(
                "message",
                xray_trace_id = "1-cccccccc-dddddddddddddddddddddddd"
            );
            span.in_scope(|| tracing::info!("processed"));
            tracing::info!("batch done");
        });
        let lines = out.json_lines();
        assert_eq!(
            lines[0]["xray_trace_id"],
            "1-cccccccc-dddddddddddddddddddddddd"
        );
        assert_eq!(lines[0]["function_request_id"], "req-3");
        assert_eq!(
            lines[1]["xray_trace_id"],
            "1-aaaaaaaa-bbbbbbbbbbbbbbbbbbbbbbbb"
        );
    }

    #[test]
    fn only_a_well_formed_trace_header_is_sent_on() {
        for good in [
            "Root=1-5759e988-bd862e3fe1be46a994272793",
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0;Lineage=a87bd80c:1",
        ] {
            assert!(is_trace_header(good), "{good}");
        }
        for bad in [
            "",
            "1-5759e988-bd862e3fe1be46a994272793",
            "Root=1-5759e988-bd862e3fe1be46a99427279",
            "Root=1-5759e98-bd862e3fe1be46a994272793",
            "Root=1-5759e988-bd862e3fe1be46a99427279z",
            "Root=1-5759e988-bd862e3fe1be46a994272793; Sampled=1",
        ] {
            assert!(!is_trace_header(bad), "{bad}");
        }
        let long = format!(
            "Root=1-5759e988-bd862e3fe1be46a994272793;{}",
            "x".repeat(300)
        );
        assert!(!is_trace_header(&long));
    }

    #[test]
    fn the_trace_id_is_the_headers_root() {
        assert_eq!(
            trace_root("Root=1-ab-cd;Parent=53995c3f42cd8ad8;Sampled=1"),
            "1-ab-cd"
        );
        assert_eq!(trace_root("1-ab-cd"), "1-ab-cd");
    }
}

//! CloudWatch Embedded Metric Format (EMF): metrics as one JSON log line.
//!
//! A Lambda function prints the line to stdout; CloudWatch Logs extracts the
//! metrics from it (no API call, no extra latency). Everything goes to the
//! `hookbox` namespace. Counters are summed into one value per flush; other
//! values recorded several times travel as an array, at most 100 (EMF's
//! limit; later ones are dropped, so flush at least once per invocation).
//!
//! ```
//! use hookbox::metrics::{Metrics, Unit};
//! let mut m = Metrics::new();
//! m.dimension("Function", "processor");
//! m.count("Processed", 3);
//! m.record("HandlerLatency", Unit::Milliseconds, 12.5);
//! let line = m.to_emf_line(1_750_000_000_000);
//! assert!(line.contains("\"Namespace\":\"hookbox\"") && line.contains("\"Processed\":3.0"));
//! ```

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

/// The CloudWatch namespace of every hookbox metric.
pub const NAMESPACE: &str = "hookbox";

static TO_STDOUT: AtomicBool = AtomicBool::new(true);

/// The dimension naming the stack on every metric, so that two stacks in
/// one account and region (staging and production) never read each
/// other's data; every alarm of the template filters on it.
pub const STACK_DIMENSION: &str = "Stack";

static STACK: OnceLock<String> = OnceLock::new();

/// The stack this process's metrics belong to (`HOOKBOX_STACK`, which the
/// template sets to the stack's name; read at startup). The first call
/// wins; without one, metrics carry no `Stack` dimension (the local stack,
/// tests).
pub fn set_stack(name: &str) {
    let _ = STACK.set(name.to_owned());
}

/// The stack set by [`set_stack`], if any.
pub fn stack() -> Option<&'static str> {
    STACK.get().map(String::as_str)
}

/// Whether [`Metrics::flush`] prints (the default) or logs the line at
/// debug level instead: the local stack keeps its terminal for people.
pub fn print_to_stdout(enabled: bool) {
    TO_STDOUT.store(enabled, Ordering::Relaxed);
}

/// Most values one metric may carry in one EMF line.
pub const MAX_VALUES: usize = 100;

/// Units hookbox uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A count.
    Count,
    /// A duration in milliseconds.
    Milliseconds,
    /// Seconds (ages, lags).
    Seconds,
}

impl Unit {
    fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Milliseconds => "Milliseconds",
            Unit::Seconds => "Seconds",
        }
    }
}

/// Metrics collected until the next flush.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    dimensions: Vec<(String, String)>,
    values: BTreeMap<String, (Unit, Vec<f64>)>,
}

impl Metrics {
    /// No metrics, no dimensions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a dimension (e.g. `Function=processor`) to every metric of the line.
    pub fn dimension(&mut self, name: &str, value: &str) -> &mut Self {
        self.dimensions.push((name.to_string(), value.to_string()));
        self
    }

    /// Adds `n` to a counter (a counter recorded once per flush, even when 0,
    /// so dashboards see zeros rather than gaps).
    pub fn count(&mut self, name: &str, n: u64) -> &mut Self {
        let entry = self
            .values
            .entry(name.to_string())
            .or_insert((Unit::Count, Vec::new()));
        match entry.1.first_mut() {
            Some(total) => *total += n as f64,
            None => entry.1.push(n as f64),
        }
        self
    }

    /// Records one value (e.g. a latency); several values become an array.
    pub fn record(&mut self, name: &str, unit: Unit, value: f64) -> &mut Self {
        let entry = self
            .values
            .entry(name.to_string())
            .or_insert((unit, Vec::new()));
        if entry.1.len() < MAX_VALUES {
            entry.1.push(value);
        }
        self
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The values recorded for `name`, if any.
    pub fn values(&self, name: &str) -> Option<&[f64]> {
        self.values.get(name).map(|(_, v)| v.as_slice())
    }

    /// The EMF document for `timestamp_ms` (milliseconds since the epoch),
    /// with the keys of every log line (`level` `INFO`, `timestamp`,
    /// `service`, the invocation's ids: [`crate::log_format`]), so
    /// Lambda's log-level filtering treats it as the INFO line it is.
    pub fn to_emf(&self, timestamp_ms: i64) -> Value {
        self.to_emf_of(STACK.get().map(String::as_str), timestamp_ms)
    }

    /// [`Metrics::to_emf`] of the stack `stack`: its name the first
    /// dimension of every metric.
    pub fn to_emf_of(&self, stack: Option<&str>, timestamp_ms: i64) -> Value {
        use crate::log_format::{INVOCATIONS, SERVICE, line_keys};
        let at = chrono::DateTime::from_timestamp_millis(timestamp_ms).unwrap_or_default();
        let mut doc = line_keys(&INVOCATIONS, SERVICE, tracing::Level::INFO, at);
        let definitions: Vec<Value> = self
            .values
            .iter()
            .map(|(name, (unit, _))| json!({ "Name": name, "Unit": unit.as_str() }))
            .collect();
        let stack = stack.filter(|_| !self.dimensions.iter().any(|(n, _)| n == STACK_DIMENSION));
        let dimension_names: Vec<&str> = stack
            .map(|_| STACK_DIMENSION)
            .into_iter()
            .chain(self.dimensions.iter().map(|(n, _)| n.as_str()))
            .collect();
        if let Some(stack) = stack {
            doc.insert(STACK_DIMENSION.into(), stack.into());
        }
        doc.insert(
            "_aws".into(),
            json!({
                "Timestamp": timestamp_ms,
                "CloudWatchMetrics": [{
                    "Namespace": NAMESPACE,
                    "Dimensions": [dimension_names],
                    "Metrics": definitions,
                }],
            }),
        );
        for (name, value) in &self.dimensions {
            doc.insert(name.clone(), Value::from(value.as_str()));
        }
        for (name, (_, values)) in &self.values {
            let value = match values.as_slice() {
                [one] => json!(one),
                many => json!(many),
            };
            doc.insert(name.clone(), value);
        }
        Value::Object(doc)
    }

    /// The EMF document as one line of JSON (what a function prints).
    pub fn to_emf_line(&self, timestamp_ms: i64) -> String {
        self.to_emf(timestamp_ms).to_string()
    }

    /// Prints the line to stdout (where Lambda's log capture finds it) and
    /// clears the values; dimensions are kept. Nothing is printed when
    /// nothing was recorded.
    pub fn flush(&mut self, timestamp_ms: i64) {
        if self.is_empty() {
            return;
        }
        let line = self.to_emf_line(timestamp_ms);
        if TO_STDOUT.load(Ordering::Relaxed) {
            println!("{line}");
        } else {
            tracing::debug!(emf = %line, "metrics");
        }
        self.values.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_of_emf_with_counts_arrays_and_dimensions() {
        let mut m = Metrics::new();
        m.dimension("Function", "processor");
        m.count("Processed", 2)
            .count("Processed", 1)
            .count("Dead", 0);
        m.record("HandlerLatency", Unit::Milliseconds, 1.5).record(
            "HandlerLatency",
            Unit::Milliseconds,
            3.0,
        );
        let line = m.to_emf_line(1_700_000_000_000);
        assert!(!line.contains('\n'));
        let doc: Value = serde_json::from_str(&line).expect("json");
        assert_eq!(doc["_aws"]["Timestamp"], 1_700_000_000_000_i64);
        // no stack named: no Stack dimension
        assert_eq!(
            doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["Function"]])
        );
        // a log line's keys: Lambda keeps it at ApplicationLogLevel INFO
        assert_eq!(doc["level"], "INFO");
        assert_eq!(doc["timestamp"], "2023-11-14T22:13:20.000Z");
        assert_eq!(doc["service"], "hookbox");
        let cw = &doc["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(cw["Namespace"], "hookbox");
        assert_eq!(cw["Dimensions"], json!([["Function"]]));
        assert_eq!(
            cw["Metrics"],
            json!([
                {"Name": "Dead", "Unit": "Count"},
                {"Name": "HandlerLatency", "Unit": "Milliseconds"},
                {"Name": "Processed", "Unit": "Count"},
            ])
        );
        assert_eq!(doc["Function"], "processor");
        assert_eq!(doc["Processed"], json!(3.0));
        assert_eq!(doc["Dead"], json!(0.0));
        assert_eq!(doc["HandlerLatency"], json!([1.5, 3.0]));
    }

    #[test]
    fn values_are_capped_at_the_emf_limit() {
        let mut m = Metrics::new();
        for i in 0..150 {
            m.record("Latency", Unit::Milliseconds, f64::from(i));
        }
        assert_eq!(m.values("Latency").map(<[f64]>::len), Some(MAX_VALUES));
    }

    #[test]
    fn flush_clears_values_and_keeps_dimensions() {
        let mut m = Metrics::new();
        m.dimension("Function", "processor").count("Processed", 1);
        m.flush(0);
        assert!(m.is_empty());
        m.count("Processed", 1);
        assert!(m.to_emf_line(0).contains("\"Function\":\"processor\""));
    }

    #[test]
    fn every_metric_of_a_stack_carries_its_name_as_the_first_dimension() {
        let mut m = Metrics::new();
        m.dimension("Function", "ingest")
            .dimension("Partner", "stripe")
            .count("accepted", 1);
        let doc = m.to_emf_of(Some("hookbox-staging"), 1_700_000_000_000);
        assert_eq!(
            doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["Stack", "Function", "Partner"]])
        );
        assert_eq!(doc["Stack"], "hookbox-staging");
        assert_eq!(doc["Function"], "ingest");
    }
}

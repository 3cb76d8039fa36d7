//! CloudWatch Embedded Metric Format: one JSON log line carries the metrics
//! of one invocation; CloudWatch extracts them, no API call needed.
//! Namespace `hookbox`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

/// The namespace of every hookbox metric.
pub const NAMESPACE: &str = "hookbox";

/// Units we use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A count.
    Count,
    /// Milliseconds.
    Milliseconds,
    /// Seconds.
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

/// Metrics of one invocation, sharing one set of dimensions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricSet {
    dimensions: BTreeMap<String, String>,
    values: BTreeMap<String, (f64, Unit)>,
}

impl MetricSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a dimension (e.g. `Function`, `Partner`).
    pub fn dimension(mut self, name: &str, value: &str) -> Self {
        self.dimensions.insert(name.to_string(), value.to_string());
        self
    }

    /// Adds `value` to the metric `name` (created at 0).
    pub fn add(&mut self, name: &str, value: f64, unit: Unit) {
        let entry = self.values.entry(name.to_string()).or_insert((0.0, unit));
        entry.0 += value;
    }

    /// Counts one occurrence of `name`.
    pub fn count(&mut self, name: &str) {
        self.add(name, 1.0, Unit::Count);
    }

    /// Adds every value of `other` into this set (dimensions stay ours).
    pub fn merge(&mut self, other: &MetricSet) {
        for (name, (value, unit)) in &other.values {
            self.add(name, *value, *unit);
        }
    }

    /// The value of `name`, if recorded.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.values.get(name).map(|(v, _)| *v)
    }

    /// The EMF document (a JSON object), or `None` when nothing was recorded.
    pub fn to_json(&self, at: DateTime<Utc>) -> Option<serde_json::Value> {
        if self.values.is_empty() {
            return None;
        }
        let metrics: Vec<serde_json::Value> = self
            .values
            .iter()
            .map(|(name, (_, unit))| serde_json::json!({"Name": name, "Unit": unit.as_str()}))
            .collect();
        let dimension_names: Vec<&String> = self.dimensions.keys().collect();
        let mut doc = serde_json::json!({
            "_aws": {
                "Timestamp": at.timestamp_millis(),
                "CloudWatchMetrics": [{
                    "Namespace": NAMESPACE,
                    "Dimensions": [dimension_names],
                    "Metrics": metrics,
                }],
            },
        });
        if let Some(object) = doc.as_object_mut() {
            for (name, value) in &self.dimensions {
                object.insert(name.clone(), value.clone().into());
            }
            for (name, (value, _)) in &self.values {
                object.insert(name.clone(), (*value).into());
            }
        }
        Some(doc)
    }

    /// Writes the EMF line to stdout (where Lambda sends it to CloudWatch).
    pub fn emit(&self, at: DateTime<Utc>) {
        if let Some(doc) = self.to_json(at) {
            println!("{doc}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn one_document_carries_dimensions_and_values() {
        let mut m = MetricSet::new()
            .dimension("Function", "ingest")
            .dimension("Partner", "acme");
        m.count("accepted");
        m.count("accepted");
        m.add("latency_ms", 12.5, Unit::Milliseconds);
        let at = Utc
            .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
            .single()
            .expect("valid");
        let doc = m.to_json(at).expect("document");
        assert_eq!(doc["accepted"], 2.0);
        assert_eq!(doc["latency_ms"], 12.5);
        assert_eq!(doc["Partner"], "acme");
        let spec = &doc["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(spec["Namespace"], "hookbox");
        assert_eq!(
            spec["Dimensions"],
            serde_json::json!([["Function", "Partner"]])
        );
        assert_eq!(
            spec["Metrics"],
            serde_json::json!([
                {"Name": "accepted", "Unit": "Count"},
                {"Name": "latency_ms", "Unit": "Milliseconds"}
            ])
        );
        assert_eq!(doc["_aws"]["Timestamp"], at.timestamp_millis());
        assert!(MetricSet::new().to_json(at).is_none());
    }
}

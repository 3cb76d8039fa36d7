//! The JSON bodies of the Data API (rest-json, camelCase members), as in
//! botocore's `rds-data/2018-08-01/service-2.json`. Requests accept unknown
//! members (newer SDKs may send some); responses only send what is set.

use base64::Engine as _;
use serde::{Deserialize, Serialize, Serializer};

/// `ExecuteStatementRequest`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExecuteStatementRequest {
    pub resource_arn: Option<String>,
    pub secret_arn: Option<String>,
    pub sql: Option<String>,
    pub database: Option<String>,
    /// Not supported by the service for PostgreSQL; ignored.
    #[allow(dead_code)]
    pub schema: Option<String>,
    pub parameters: Option<Vec<SqlParameter>>,
    pub transaction_id: Option<String>,
    pub include_result_metadata: Option<bool>,
    /// Ignored: the statement always stops at the statement timeout.
    #[allow(dead_code)]
    pub continue_after_timeout: Option<bool>,
    pub result_set_options: Option<ResultSetOptions>,
    pub format_records_as: Option<String>,
}

/// `BatchExecuteStatementRequest`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BatchExecuteStatementRequest {
    pub resource_arn: Option<String>,
    pub secret_arn: Option<String>,
    pub sql: Option<String>,
    pub database: Option<String>,
    #[allow(dead_code)]
    pub schema: Option<String>,
    pub parameter_sets: Option<Vec<Vec<SqlParameter>>>,
    pub transaction_id: Option<String>,
}

/// `BeginTransactionRequest`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BeginTransactionRequest {
    pub resource_arn: Option<String>,
    pub secret_arn: Option<String>,
    pub database: Option<String>,
    #[allow(dead_code)]
    pub schema: Option<String>,
}

/// `CommitTransactionRequest` and `RollbackTransactionRequest`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EndTransactionRequest {
    pub resource_arn: Option<String>,
    pub secret_arn: Option<String>,
    pub transaction_id: Option<String>,
}

/// `SqlParameter`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SqlParameter {
    pub name: Option<String>,
    pub value: Option<FieldIn>,
    pub type_hint: Option<String>,
}

/// `Field` as sent by a client (a union: exactly one member is set).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FieldIn {
    pub is_null: Option<bool>,
    pub boolean_value: Option<bool>,
    pub long_value: Option<i64>,
    /// A number, or "NaN" / "Infinity" / "-Infinity" (how Smithy sends
    /// non-finite doubles).
    pub double_value: Option<serde_json::Value>,
    pub string_value: Option<String>,
    /// Base64.
    pub blob_value: Option<String>,
    pub array_value: Option<serde_json::Value>,
}

/// `ResultSetOptions`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResultSetOptions {
    pub decimal_return_type: Option<String>,
    pub long_return_type: Option<String>,
}

/// A double as Smithy's JSON protocols send it: a number when finite, else
/// the strings "NaN", "Infinity", "-Infinity".
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct JsonDouble(pub f64);

impl Serialize for JsonDouble {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        if v.is_nan() {
            s.serialize_str("NaN")
        } else if v.is_infinite() && v > 0.0 {
            s.serialize_str("Infinity")
        } else if v.is_infinite() {
            s.serialize_str("-Infinity")
        } else {
            s.serialize_f64(v)
        }
    }
}

/// Bytes sent as a base64 string.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Base64Blob(pub Vec<u8>);

impl Serialize for Base64Blob {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

/// `Field` as sent by the service (one member).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum FieldOut {
    IsNull(bool),
    BooleanValue(bool),
    LongValue(i64),
    DoubleValue(JsonDouble),
    StringValue(String),
    BlobValue(Base64Blob),
}

/// `ColumnMetadata`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ColumnMetadata {
    pub name: String,
    #[serde(rename = "type")]
    pub jdbc_type: i32,
    pub type_name: String,
    pub label: String,
    pub schema_name: String,
    pub table_name: String,
    pub is_auto_increment: bool,
    pub is_signed: bool,
    pub is_currency: bool,
    pub is_case_sensitive: bool,
    pub nullable: i32,
    pub precision: i32,
    pub scale: i32,
    pub array_base_column_type: i32,
}

/// `ExecuteStatementResponse`.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExecuteStatementResponse {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records: Option<Vec<Vec<FieldOut>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column_metadata: Option<Vec<ColumnMetadata>>,
    pub number_of_records_updated: i64,
    pub generated_fields: Vec<FieldOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub formatted_records: Option<String>,
}

/// `UpdateResult`.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UpdateResult {
    pub generated_fields: Vec<FieldOut>,
}

/// `BatchExecuteStatementResponse`.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BatchExecuteStatementResponse {
    pub update_results: Vec<UpdateResult>,
}

/// `BeginTransactionResponse`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BeginTransactionResponse {
    pub transaction_id: String,
}

/// `CommitTransactionResponse` and `RollbackTransactionResponse`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EndTransactionResponse {
    pub transaction_status: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_serialise_as_one_member_unions() {
        let row = vec![
            FieldOut::IsNull(true),
            FieldOut::LongValue(7),
            FieldOut::DoubleValue(JsonDouble(f64::NAN)),
            FieldOut::DoubleValue(JsonDouble(f64::NEG_INFINITY)),
            FieldOut::DoubleValue(JsonDouble(1.5)),
            FieldOut::BlobValue(Base64Blob(vec![0, 255])),
        ];
        assert_eq!(
            serde_json::to_string(&row).expect("json"),
            r#"[{"isNull":true},{"longValue":7},{"doubleValue":"NaN"},{"doubleValue":"-Infinity"},{"doubleValue":1.5},{"blobValue":"AP8="}]"#
        );
    }
}

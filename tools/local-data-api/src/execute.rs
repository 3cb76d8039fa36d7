//! Running one statement on one connection: prepare with the declared
//! parameter types, stream the rows, enforce the service's size limits,
//! decode the values and (on request) describe the columns.

use std::collections::HashMap;

use base64::Engine as _;
use futures::TryStreamExt;
use tokio_postgres::Client;
use tokio_postgres::types::ToSql;

use crate::error::ServiceError;
use crate::params::Bound;
use crate::values::{self, RawValue, Value};
use crate::wire::{Base64Blob, ColumnMetadata, ExecuteStatementResponse, FieldOut, JsonDouble};

/// The service refuses a result row larger than this (bytes of the values
/// as the database sent them).
pub const MAX_ROW_BYTES: usize = 64 * 1024;

/// The service refuses a result larger than this (bytes of all values).
pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// The service refuses a request body larger than this.
pub const MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;

/// How the result of an ExecuteStatement call is returned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ResultOptions {
    /// `includeResultMetadata`.
    pub include_metadata: bool,
    /// `formatRecordsAs: JSON`.
    pub json: bool,
    /// `longReturnType: STRING`.
    pub long_as_string: bool,
    /// `decimalReturnType: DOUBLE_OR_LONG`.
    pub decimal_as_number: bool,
}

/// Runs `sql` (already `$n`) with `bound` on `client` and builds the
/// ExecuteStatement answer.
pub(crate) async fn execute(
    client: &Client,
    sql: &str,
    bound: &Bound,
    options: ResultOptions,
) -> Result<ExecuteStatementResponse, ServiceError> {
    let statement = client
        .prepare_typed(sql, &bound.types)
        .await
        .map_err(|e| ServiceError::from_pg(&e))?;
    let params = bound.values.iter().map(|v| v as &dyn ToSql);
    let stream = client
        .query_raw(&statement, params)
        .await
        .map_err(|e| ServiceError::from_pg(&e))?;
    futures::pin_mut!(stream);
    let columns = statement.columns();
    let mut rows: Vec<Vec<Value>> = Vec::new();
    let mut total_bytes = 0usize;
    while let Some(row) = stream
        .try_next()
        .await
        .map_err(|e| ServiceError::from_pg(&e))?
    {
        let mut raws = Vec::with_capacity(columns.len());
        let mut row_bytes = 0usize;
        for i in 0..columns.len() {
            let raw: RawValue<'_> = row.try_get(i).map_err(|e| {
                ServiceError::InternalServerError(format!("cannot read column {i}: {e}"))
            })?;
            row_bytes += raw.len();
            raws.push(raw);
        }
        if row_bytes > MAX_ROW_BYTES {
            return Err(ServiceError::BadRequest(format!(
                "Packet for query is too large: a result row is {row_bytes} bytes, \
                 the Data API limit is {MAX_ROW_BYTES} bytes per row"
            )));
        }
        total_bytes += row_bytes;
        if total_bytes > MAX_RESPONSE_BYTES {
            return Err(ServiceError::BadRequest(format!(
                "Database response exceeded size limit: the result is over \
                 {MAX_RESPONSE_BYTES} bytes after {} rows",
                rows.len() + 1
            )));
        }
        let mut decoded = Vec::with_capacity(columns.len());
        for (column, raw) in columns.iter().zip(raws) {
            decoded.push(values::decode(column.type_(), raw)?);
        }
        rows.push(decoded);
    }
    let has_result_set = !columns.is_empty();
    let mut response = ExecuteStatementResponse {
        number_of_records_updated: if has_result_set {
            0
        } else {
            i64::try_from(stream.rows_affected().unwrap_or(0)).unwrap_or(i64::MAX)
        },
        ..ExecuteStatementResponse::default()
    };
    if has_result_set {
        if options.json {
            response.formatted_records = Some(json_records(columns, rows, options)?);
        } else {
            response.records = Some(
                rows.into_iter()
                    .map(|row| row.into_iter().map(|v| field(v, options)).collect())
                    .collect(),
            );
        }
    }
    if options.include_metadata {
        response.column_metadata = Some(column_metadata(client, columns).await?);
    }
    Ok(response)
}

/// Runs `sql` with each parameter set in turn (BatchExecuteStatement),
/// preparing once per distinct list of parameter types; rows are dropped.
pub(crate) async fn execute_batch(
    client: &Client,
    sql: &str,
    sets: &[Bound],
) -> Result<usize, ServiceError> {
    let mut prepared: HashMap<Vec<u32>, tokio_postgres::Statement> = HashMap::new();
    for bound in sets {
        let key: Vec<u32> = bound.types.iter().map(|t| t.oid()).collect();
        let statement = match prepared.get(&key) {
            Some(s) => s.clone(),
            None => {
                let s = client
                    .prepare_typed(sql, &bound.types)
                    .await
                    .map_err(|e| ServiceError::from_pg(&e))?;
                prepared.insert(key, s.clone());
                s
            }
        };
        let params = bound.values.iter().map(|v| v as &dyn ToSql);
        let stream = client
            .query_raw(&statement, params)
            .await
            .map_err(|e| ServiceError::from_pg(&e))?;
        futures::pin_mut!(stream);
        while stream
            .try_next()
            .await
            .map_err(|e| ServiceError::from_pg(&e))?
            .is_some()
        {}
    }
    Ok(sets.len())
}

/// The Field member for a value, following the result set options.
fn field(value: Value, options: ResultOptions) -> FieldOut {
    match value {
        Value::Null => FieldOut::IsNull(true),
        Value::Bool(b) => FieldOut::BooleanValue(b),
        Value::Long(n) if options.long_as_string => FieldOut::StringValue(n.to_string()),
        Value::Long(n) => FieldOut::LongValue(n),
        Value::Double(d) => FieldOut::DoubleValue(JsonDouble(d)),
        Value::Decimal(text) if options.decimal_as_number => decimal_as_number(&text),
        Value::Decimal(text) | Value::Text(text) => FieldOut::StringValue(text),
        Value::Bytes(b) => FieldOut::BlobValue(Base64Blob(b)),
    }
}

/// `DOUBLE_OR_LONG`: a long when the decimal has no fraction (and fits),
/// else a double.
fn decimal_as_number(text: &str) -> FieldOut {
    if !text.contains('.') {
        if let Ok(n) = text.parse::<i64>() {
            return FieldOut::LongValue(n);
        }
    }
    match text.parse::<f64>() {
        Ok(d) => FieldOut::DoubleValue(JsonDouble(d)),
        Err(_) => FieldOut::StringValue(text.to_string()),
    }
}

/// `formattedRecords`: a JSON array of objects, column name → value.
fn json_records(
    columns: &[tokio_postgres::Column],
    rows: Vec<Vec<Value>>,
    options: ResultOptions,
) -> Result<String, ServiceError> {
    let records: Vec<serde_json::Value> = rows
        .into_iter()
        .map(|row| {
            let object: serde_json::Map<String, serde_json::Value> = columns
                .iter()
                .zip(row)
                .map(|(column, value)| (column.name().to_string(), json_value(value, options)))
                .collect();
            serde_json::Value::Object(object)
        })
        .collect();
    serde_json::to_string(&records).map_err(|e| {
        ServiceError::InternalServerError(format!("cannot format the records as JSON: {e}"))
    })
}

fn json_value(value: Value, options: ResultOptions) -> serde_json::Value {
    use serde_json::Value as J;
    match field(value, options) {
        FieldOut::IsNull(_) => J::Null,
        FieldOut::BooleanValue(b) => J::Bool(b),
        FieldOut::LongValue(n) => J::from(n),
        FieldOut::DoubleValue(JsonDouble(d)) => {
            serde_json::Number::from_f64(d).map_or_else(|| J::String(d.to_string()), J::Number)
        }
        FieldOut::StringValue(s) => J::String(s),
        FieldOut::BlobValue(Base64Blob(b)) => {
            J::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
    }
}

/// What pg_attribute says about a table column.
struct AttributeFacts {
    not_null: bool,
    auto_increment: bool,
    typmod: i32,
}

/// `columnMetadata`, with nullability and auto-increment read from the
/// catalog for columns that come from a table (as the JDBC driver does).
async fn column_metadata(
    client: &Client,
    columns: &[tokio_postgres::Column],
) -> Result<Vec<ColumnMetadata>, ServiceError> {
    let mut relids: Vec<u32> = Vec::new();
    let mut attnums: Vec<i16> = Vec::new();
    for column in columns {
        if let (Some(relid), Some(attnum)) = (column.table_oid(), column.column_id()) {
            if relid != 0 && attnum > 0 {
                relids.push(relid);
                attnums.push(attnum);
            }
        }
    }
    let mut facts: HashMap<(u32, i16), AttributeFacts> = HashMap::new();
    if !relids.is_empty() {
        let rows = client
            .query(
                "SELECT a.attrelid, a.attnum, \
                        a.attnotnull OR (t.typtype = 'd' AND t.typnotnull), \
                        a.attidentity <> '' \
                          OR coalesce(pg_get_expr(d.adbin, d.adrelid) LIKE '%nextval(%', false), \
                        a.atttypmod \
                   FROM unnest($1::oid[], $2::int2[]) AS c(relid, num) \
                   JOIN pg_catalog.pg_attribute a ON a.attrelid = c.relid AND a.attnum = c.num \
                   JOIN pg_catalog.pg_type t ON t.oid = a.atttypid \
                   LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum",
                &[&relids, &attnums],
            )
            .await
            .map_err(|e| ServiceError::from_pg(&e))?;
        for row in rows {
            let relid: u32 = row.try_get(0).map_err(metadata_error)?;
            let attnum: i16 = row.try_get(1).map_err(metadata_error)?;
            facts.insert(
                (relid, attnum),
                AttributeFacts {
                    not_null: row.try_get(2).map_err(metadata_error)?,
                    auto_increment: row.try_get(3).map_err(metadata_error)?,
                    typmod: row.try_get(4).map_err(metadata_error)?,
                },
            );
        }
    }
    Ok(columns
        .iter()
        .map(|column| {
            let ty = column.type_();
            let type_facts = values::type_facts(ty);
            let attribute = column
                .table_oid()
                .zip(column.column_id())
                .and_then(|key| facts.get(&key));
            let (precision, scale) = precision_and_scale(
                values::base_type(ty),
                attribute.map_or(-1, |a| a.typmod),
                type_facts.precision,
            );
            ColumnMetadata {
                name: column.name().to_string(),
                jdbc_type: type_facts.jdbc_type,
                type_name: ty.name().to_string(),
                label: column.name().to_string(),
                schema_name: String::new(),
                table_name: String::new(),
                is_auto_increment: attribute.is_some_and(|a| a.auto_increment),
                is_signed: type_facts.signed,
                is_currency: false,
                is_case_sensitive: type_facts.case_sensitive,
                // java.sql.ResultSetMetaData: 0 no nulls, 1 nullable.
                nullable: if attribute.is_some_and(|a| a.not_null) {
                    0
                } else {
                    1
                },
                precision,
                scale,
                array_base_column_type: 0,
            }
        })
        .collect())
}

fn metadata_error(e: tokio_postgres::Error) -> ServiceError {
    ServiceError::InternalServerError(format!("cannot read the column metadata: {e}"))
}

/// Precision and scale from the type modifier where it carries them
/// (numeric(p, s), varchar(n), char(n)).
fn precision_and_scale(ty: &tokio_postgres::types::Type, typmod: i32, default: i32) -> (i32, i32) {
    use tokio_postgres::types::Type;
    match *ty {
        Type::NUMERIC if typmod >= 4 => {
            let m = typmod - 4;
            ((m >> 16) & 0xffff, m & 0xffff)
        }
        Type::VARCHAR | Type::BPCHAR if typmod >= 4 => (typmod - 4, 0),
        _ => (default, 0),
    }
}

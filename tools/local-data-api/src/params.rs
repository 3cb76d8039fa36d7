//! Parameters: a Data API `SqlParameter` becomes a value with an explicit
//! PostgreSQL type, chosen from the Field member and the `typeHint` only (as
//! the service does with JDBC types), never inferred by the server. So a
//! string compared with a uuid column fails here as it does on Aurora.
//!
//! | Field (+ typeHint)          | PostgreSQL type | sent as |
//! |-----------------------------|-----------------|---------|
//! | stringValue                 | varchar         | text    |
//! | stringValue + UUID          | uuid            | text    |
//! | stringValue + JSON          | json            | text    |
//! | stringValue + TIMESTAMP     | timestamp       | text, `YYYY-MM-DD HH:MM:SS[.FFFFFF]` checked first |
//! | stringValue + DATE          | date            | text, `YYYY-MM-DD` checked first |
//! | stringValue + TIME          | time            | text, `HH:MM:SS[.FFFFFF]` checked first |
//! | stringValue + DECIMAL       | numeric         | text    |
//! | longValue                   | int8            | binary  |
//! | booleanValue                | bool            | binary  |
//! | doubleValue                 | float8          | binary  |
//! | blobValue                   | bytea           | binary  |
//! | isNull                      | unspecified (oid 0): PostgreSQL infers it | NULL |
//! | arrayValue                  | refused (BadRequestException) | |
//!
//! Values sent as text are parsed by PostgreSQL's own input functions, so a
//! malformed uuid / json / number is PostgreSQL's error (DatabaseErrorException
//! with its SQLSTATE). A type hint on a non-string value is ignored.

use std::error::Error as StdError;

use base64::Engine as _;
use bytes::{BufMut, BytesMut};
use hookbox::store::NamedSql;
use tokio_postgres::types::{Format, IsNull, Kind, ToSql, Type};

use crate::error::ServiceError;
use crate::wire::{FieldIn, SqlParameter};

/// A parameter value ready to bind.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Param {
    /// SQL NULL.
    Null,
    /// Text for PostgreSQL's input function of the declared type.
    Text(String),
    /// int8.
    Int8(i64),
    /// bool.
    Bool(bool),
    /// float8.
    Float8(f64),
    /// bytea.
    Bytea(Vec<u8>),
}

impl ToSql for Param {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        match self {
            Param::Null => return Ok(IsNull::Yes),
            Param::Text(s) => out.extend_from_slice(s.as_bytes()),
            Param::Int8(v) => out.put_i64(*v),
            Param::Bool(v) => out.put_u8(u8::from(*v)),
            Param::Float8(v) => out.put_f64(*v),
            Param::Bytea(v) => out.extend_from_slice(v),
        }
        Ok(IsNull::No)
    }

    /// The statement is prepared with the types chosen here, so every type
    /// the server reports back is the one this value was made for (or, for
    /// NULL, whatever PostgreSQL inferred).
    fn accepts(_ty: &Type) -> bool {
        true
    }

    fn to_sql_checked(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        self.to_sql(ty, out)
    }

    fn encode_format(&self, _ty: &Type) -> Format {
        match self {
            Param::Text(_) => Format::Text,
            _ => Format::Binary,
        }
    }
}

/// The "unspecified" parameter type (oid 0): PostgreSQL infers it.
pub(crate) fn unspecified_type() -> Type {
    Type::new(
        "unspecified".to_string(),
        0,
        Kind::Pseudo,
        "pg_catalog".to_string(),
    )
}

/// Statement parameters in `$n` order with their declared types.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bound {
    pub types: Vec<Type>,
    pub values: Vec<Param>,
}

/// Orders the request's parameters as the statement's `$1..$n`. Every
/// parameter is converted (so a bad one is reported even when unused); a
/// name the SQL uses without a parameter is a BadRequestException; a
/// parameter the SQL does not use is fine.
pub(crate) fn bind(named: &NamedSql, params: &[SqlParameter]) -> Result<Bound, ServiceError> {
    let mut converted: Vec<(&str, Type, Param)> = Vec::with_capacity(params.len());
    for (index, p) in params.iter().enumerate() {
        let name = p.name.as_deref().filter(|n| !n.is_empty()).ok_or_else(|| {
            ServiceError::BadRequest(format!("parameter #{} has no name", index + 1))
        })?;
        let value = p
            .value
            .as_ref()
            .ok_or_else(|| ServiceError::BadRequest(format!("parameter {name:?} has no value")))?;
        let (ty, param) = convert(name, value, p.type_hint.as_deref())?;
        converted.push((name, ty, param));
    }
    let mut bound = Bound {
        types: Vec::with_capacity(named.names.len()),
        values: Vec::with_capacity(named.names.len()),
    };
    for name in &named.names {
        let (_, ty, value) = converted
            .iter()
            .find(|(n, _, _)| n == name)
            .ok_or_else(|| {
                ServiceError::BadRequest(format!(
                    "No value specified for parameter :{name} (the SQL uses it but the request has no parameter named {name:?})"
                ))
            })?;
        bound.types.push(ty.clone());
        bound.values.push(value.clone());
    }
    Ok(bound)
}

/// One Field (+ typeHint) to a type and value.
fn convert(name: &str, field: &FieldIn, hint: Option<&str>) -> Result<(Type, Param), ServiceError> {
    let set = [
        field.is_null.is_some(),
        field.boolean_value.is_some(),
        field.long_value.is_some(),
        field.double_value.is_some(),
        field.string_value.is_some(),
        field.blob_value.is_some(),
        field.array_value.is_some(),
    ]
    .iter()
    .filter(|s| **s)
    .count();
    if set != 1 {
        return Err(ServiceError::BadRequest(format!(
            "parameter {name:?}: a Field must have exactly one member set, this one has {set}"
        )));
    }
    if field.array_value.is_some() {
        return Err(ServiceError::BadRequest(format!(
            "parameter {name:?}: array parameters are not supported"
        )));
    }
    if let Some(is_null) = field.is_null {
        if !is_null {
            return Err(ServiceError::BadRequest(format!(
                "parameter {name:?}: isNull must be true when it is the only member"
            )));
        }
        return Ok((unspecified_type(), Param::Null));
    }
    if let Some(v) = field.boolean_value {
        return Ok((Type::BOOL, Param::Bool(v)));
    }
    if let Some(v) = field.long_value {
        return Ok((Type::INT8, Param::Int8(v)));
    }
    if let Some(v) = &field.double_value {
        return Ok((Type::FLOAT8, Param::Float8(json_double(name, v)?)));
    }
    if let Some(b64) = &field.blob_value {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| {
                ServiceError::BadRequest(format!(
                    "parameter {name:?}: blobValue is not valid base64: {e}"
                ))
            })?;
        return Ok((Type::BYTEA, Param::Bytea(bytes)));
    }
    let Some(s) = &field.string_value else {
        // Unreachable: exactly one member is set and all others returned.
        return Err(ServiceError::BadRequest(format!(
            "parameter {name:?}: no value"
        )));
    };
    let ty = match hint {
        None => Type::VARCHAR,
        Some("UUID") => Type::UUID,
        Some("JSON") => Type::JSON,
        Some("DECIMAL") => Type::NUMERIC,
        Some("TIMESTAMP") => {
            check_timestamp(s).map_err(|why| {
                ServiceError::BadRequest(format!(
                    "Parse Error for TimeStamp: parameter {name:?} value {s:?} is not \
                     YYYY-MM-DD HH:MM:SS[.FFFFFF] ({why})"
                ))
            })?;
            Type::TIMESTAMP
        }
        Some("DATE") => {
            check_date(s).map_err(|why| {
                ServiceError::BadRequest(format!(
                    "Parse Error for Date: parameter {name:?} value {s:?} is not YYYY-MM-DD ({why})"
                ))
            })?;
            Type::DATE
        }
        Some("TIME") => {
            check_time(s).map_err(|why| {
                ServiceError::BadRequest(format!(
                    "Parse Error for Time: parameter {name:?} value {s:?} is not HH:MM:SS[.FFFFFF] ({why})"
                ))
            })?;
            Type::TIME
        }
        Some(other) => {
            return Err(ServiceError::BadRequest(format!(
                "parameter {name:?}: unknown typeHint {other:?} (expected one of JSON, UUID, \
                 TIMESTAMP, DATE, TIME, DECIMAL)"
            )));
        }
    };
    Ok((ty, Param::Text(s.to_string())))
}

fn json_double(name: &str, v: &serde_json::Value) -> Result<f64, ServiceError> {
    match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
    .ok_or_else(|| {
        ServiceError::BadRequest(format!(
            "parameter {name:?}: doubleValue {v} is not a number"
        ))
    })
}

/// Reads exactly `n` ASCII digits at the start of `s`.
fn digits(s: &[u8], n: usize) -> Option<u32> {
    if s.len() < n || !s[..n].iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        s[..n]
            .iter()
            .fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0')),
    )
}

/// `YYYY-MM-DD`, month 1-12, day 1-31 (the calendar itself is PostgreSQL's
/// to check).
fn check_date(s: &str) -> Result<(), &'static str> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return Err("wrong shape");
    }
    digits(b, 4).ok_or("year is not 4 digits")?;
    let month = digits(&b[5..], 2).ok_or("month is not 2 digits")?;
    let day = digits(&b[8..], 2).ok_or("day is not 2 digits")?;
    if !(1..=12).contains(&month) {
        return Err("month out of range");
    }
    if !(1..=31).contains(&day) {
        return Err("day out of range");
    }
    Ok(())
}

/// `HH:MM:SS[.F{1,6}]`.
fn check_time(s: &str) -> Result<(), &'static str> {
    let b = s.as_bytes();
    if b.len() < 8 || b[2] != b':' || b[5] != b':' {
        return Err("wrong shape");
    }
    let h = digits(b, 2).ok_or("hour is not 2 digits")?;
    let m = digits(&b[3..], 2).ok_or("minute is not 2 digits")?;
    let sec = digits(&b[6..], 2).ok_or("second is not 2 digits")?;
    if h > 23 || m > 59 || sec > 59 {
        return Err("field out of range");
    }
    let rest = &b[8..];
    if rest.is_empty() {
        return Ok(());
    }
    if rest[0] != b'.' {
        return Err("unexpected characters after the seconds (no time zone allowed)");
    }
    let frac = &rest[1..];
    if frac.is_empty() || frac.len() > 6 || !frac.iter().all(u8::is_ascii_digit) {
        return Err("fraction must be 1 to 6 digits");
    }
    Ok(())
}

/// `YYYY-MM-DD HH:MM:SS[.F{1,6}]`: a space, not `T`; no zone.
fn check_timestamp(s: &str) -> Result<(), &'static str> {
    if s.len() < 19 || !s.is_char_boundary(10) || !s.is_char_boundary(11) {
        return Err("too short");
    }
    let (date, rest) = s.split_at(10);
    check_date(date)?;
    let Some(time) = rest.strip_prefix(' ') else {
        return Err("date and time must be separated by one space");
    };
    check_time(time)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(s: &str) -> FieldIn {
        FieldIn {
            string_value: Some(s.into()),
            ..FieldIn::default()
        }
    }

    fn param(name: &str, value: FieldIn, hint: Option<&str>) -> SqlParameter {
        SqlParameter {
            name: Some(name.into()),
            value: Some(value),
            type_hint: hint.map(str::to_string),
        }
    }

    #[test]
    fn timestamps_must_have_the_documented_shape() {
        for ok in [
            "2024-01-02 03:04:05",
            "2024-01-02 03:04:05.1",
            "2024-01-02 03:04:05.123456",
            "2024-02-30 23:59:59",
        ] {
            assert_eq!(check_timestamp(ok), Ok(()), "{ok}");
        }
        for bad in [
            "2024-01-02T03:04:05Z",
            "2024-01-02T03:04:05",
            "2024-01-02 03:04:05Z",
            "2024-01-02 03:04:05+00",
            "2024-01-02 03:04:05.1234567",
            "2024-01-02 03:04:05.",
            "2024-1-2 03:04:05",
            "2024-13-02 03:04:05",
            "2024-01-02 24:00:00",
            "2024-01-02",
            "",
            "2024-01-02 03:04:0é",
        ] {
            assert!(check_timestamp(bad).is_err(), "{bad}");
        }
        assert!(check_date("2024-01-02").is_ok());
        assert!(check_date("2024-01-02 00:00:00").is_err());
        assert!(check_time("23:59:59.5").is_ok());
        assert!(check_time("23:59").is_err());
    }

    #[test]
    fn binds_in_statement_order_with_types_from_field_and_hint() {
        let named = NamedSql::parse("SELECT :b, :a, :b, :n, :t").expect("parse");
        let params = vec![
            param("a", string("x"), None),
            param(
                "b",
                string("6f1c2a70-8d38-4d1e-9f55-0a4b0c8c2f11"),
                Some("UUID"),
            ),
            param(
                "n",
                FieldIn {
                    is_null: Some(true),
                    ..FieldIn::default()
                },
                None,
            ),
            param("t", string("2024-01-02 03:04:05"), Some("TIMESTAMP")),
            param(
                "unused",
                FieldIn {
                    long_value: Some(1),
                    ..FieldIn::default()
                },
                None,
            ),
        ];
        let bound = bind(&named, &params).expect("bind");
        let oids: Vec<u32> = bound.types.iter().map(Type::oid).collect();
        assert_eq!(
            oids,
            vec![
                Type::UUID.oid(),
                Type::VARCHAR.oid(),
                0,
                Type::TIMESTAMP.oid()
            ]
        );
        assert_eq!(bound.values[1], Param::Text("x".into()));
        assert_eq!(bound.values[2], Param::Null);
    }

    #[test]
    fn refuses_missing_names_arrays_bad_hints_and_ambiguous_fields() {
        let named = NamedSql::parse("SELECT :a").expect("parse");
        let missing = bind(&named, &[]).expect_err("missing");
        assert!(
            matches!(&missing, ServiceError::BadRequest(m) if m.contains(":a")),
            "{missing:?}"
        );

        let array = FieldIn {
            array_value: Some(serde_json::json!({"longValues": [1]})),
            ..FieldIn::default()
        };
        let err = bind(&named, &[param("a", array, None)]).expect_err("array");
        assert!(matches!(&err, ServiceError::BadRequest(m) if m.contains("array")));

        let err = bind(&named, &[param("a", string("x"), Some("MONEY"))]).expect_err("hint");
        assert!(matches!(&err, ServiceError::BadRequest(m) if m.contains("MONEY")));

        let err = bind(
            &named,
            &[param(
                "a",
                string("2024-01-02T03:04:05Z"),
                Some("TIMESTAMP"),
            )],
        )
        .expect_err("iso timestamp");
        assert!(matches!(&err, ServiceError::BadRequest(m) if m.contains("TimeStamp")));

        let two = FieldIn {
            long_value: Some(1),
            string_value: Some("1".into()),
            ..FieldIn::default()
        };
        assert!(bind(&named, &[param("a", two, None)]).is_err());
        assert!(bind(&named, &[param("a", FieldIn::default(), None)]).is_err());
    }
}

//! Result values: PostgreSQL's binary format decoded into Data API Fields,
//! by column type, plus the JDBC type codes and names of `columnMetadata`.
//!
//! | PostgreSQL type                       | Field |
//! |---------------------------------------|-------|
//! | bool                                  | booleanValue |
//! | int2, int4, int8, oid                 | longValue |
//! | float4, float8                        | doubleValue |
//! | numeric                               | stringValue, exact decimal text |
//! | text, varchar, bpchar, name, "char", enums | stringValue |
//! | uuid                                  | stringValue (lower-case, hyphenated) |
//! | json, jsonb                           | stringValue |
//! | timestamptz (UTC), timestamp          | stringValue `YYYY-MM-DD HH:MM:SS[.ffffff]` |
//! | date                                  | stringValue `YYYY-MM-DD` |
//! | time                                  | stringValue `HH:MM:SS[.ffffff]` |
//! | bytea                                 | blobValue |
//! | void, any NULL                        | isNull |
//! | anything else                         | UnsupportedResultException |
//!
//! Fractions of seconds keep every microsecond but drop trailing zeros (and
//! the dot when they are all zero), as PostgreSQL prints them and as the
//! service returns them. Domains are decoded as their base type.

use std::error::Error as StdError;

use tokio_postgres::types::{FromSql, Kind, Type};

use crate::error::ServiceError;

/// A column value exactly as PostgreSQL sent it (binary format).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawValue<'a>(pub Option<&'a [u8]>);

impl<'a> FromSql<'a> for RawValue<'a> {
    fn from_sql(_ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(RawValue(Some(raw)))
    }

    fn from_sql_null(_ty: &Type) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(RawValue(None))
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

impl RawValue<'_> {
    /// Bytes on the wire (what the service's size limits count).
    pub(crate) fn len(&self) -> usize {
        self.0.map_or(0, <[u8]>::len)
    }
}

/// A decoded value, before the result set options choose its Field member.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Long(i64),
    Double(f64),
    /// numeric, as exact decimal text (or NaN / Infinity / -Infinity).
    Decimal(String),
    Text(String),
    Bytes(Vec<u8>),
}

/// The type a domain stands for (domains of domains included).
pub(crate) fn base_type(ty: &Type) -> &Type {
    match ty.kind() {
        Kind::Domain(inner) => base_type(inner),
        _ => ty,
    }
}

/// Decodes one column value of type `ty`.
pub(crate) fn decode(ty: &Type, raw: RawValue<'_>) -> Result<Value, ServiceError> {
    let base = base_type(ty);
    let Some(raw) = raw.0 else {
        return Ok(Value::Null);
    };
    let malformed = || {
        ServiceError::InternalServerError(format!(
            "PostgreSQL sent a malformed {} value ({} bytes)",
            base.name(),
            raw.len()
        ))
    };
    if let Kind::Enum(_) = base.kind() {
        return Ok(Value::Text(String::from_utf8_lossy(raw).into_owned()));
    }
    let value = match *base {
        Type::BOOL => Value::Bool(*raw.first().ok_or_else(malformed)? != 0),
        Type::INT2 => Value::Long(i64::from(i16::from_be_bytes(
            raw.try_into().map_err(|_| malformed())?,
        ))),
        Type::INT4 => Value::Long(i64::from(i32::from_be_bytes(
            raw.try_into().map_err(|_| malformed())?,
        ))),
        Type::INT8 => Value::Long(i64::from_be_bytes(raw.try_into().map_err(|_| malformed())?)),
        Type::OID => Value::Long(i64::from(u32::from_be_bytes(
            raw.try_into().map_err(|_| malformed())?,
        ))),
        Type::FLOAT4 => Value::Double(f64::from(f32::from_be_bytes(
            raw.try_into().map_err(|_| malformed())?,
        ))),
        Type::FLOAT8 => Value::Double(f64::from_be_bytes(raw.try_into().map_err(|_| malformed())?)),
        Type::NUMERIC => Value::Decimal(numeric_to_string(raw).ok_or_else(malformed)?),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::CHAR | Type::JSON => {
            Value::Text(String::from_utf8_lossy(raw).into_owned())
        }
        Type::JSONB => match raw.split_first() {
            Some((1, text)) => Value::Text(String::from_utf8_lossy(text).into_owned()),
            _ => return Err(malformed()),
        },
        Type::UUID => {
            let bytes: [u8; 16] = raw.try_into().map_err(|_| malformed())?;
            Value::Text(uuid::Uuid::from_bytes(bytes).hyphenated().to_string())
        }
        Type::TIMESTAMP | Type::TIMESTAMPTZ => Value::Text(format_timestamp(i64::from_be_bytes(
            raw.try_into().map_err(|_| malformed())?,
        ))),
        Type::DATE => Value::Text(format_date(i32::from_be_bytes(
            raw.try_into().map_err(|_| malformed())?,
        ))),
        Type::TIME => Value::Text(format_time(i64::from_be_bytes(
            raw.try_into().map_err(|_| malformed())?,
        ))),
        Type::BYTEA => Value::Bytes(raw.to_vec()),
        Type::VOID => Value::Null,
        _ => return Err(unsupported(ty)),
    };
    Ok(value)
}

fn unsupported(ty: &Type) -> ServiceError {
    ServiceError::UnsupportedResult(format!(
        "The result contains the unsupported data type {}.",
        display_type_name(ty)
    ))
}

/// `int4[]` rather than PostgreSQL's internal `_int4`.
fn display_type_name(ty: &Type) -> String {
    match ty.kind() {
        Kind::Array(element) => format!("{}[]", element.name()),
        _ => ty.name().to_string(),
    }
}

/// PostgreSQL's binary numeric to its text form: `ndigits`, `weight`,
/// `sign`, `dscale` (all 16-bit), then `ndigits` base-10000 digits; the
/// value is `sum(digit[i] * 10000^(weight - i))`, printed with exactly
/// `dscale` decimals. `None` when the bytes are malformed.
pub(crate) fn numeric_to_string(raw: &[u8]) -> Option<String> {
    let word = |i: usize| -> Option<u16> {
        let b = raw.get(2 * i..2 * i + 2)?;
        Some(u16::from_be_bytes([b[0], b[1]]))
    };
    let ndigits = usize::from(word(0)?);
    let weight = i32::from(word(1)? as i16);
    let sign = word(2)?;
    let dscale = usize::from(word(3)?);
    match sign {
        0x0000 | 0x4000 => {}
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        _ => return None,
    }
    if raw.len() != 8 + 2 * ndigits {
        return None;
    }
    let mut digit_groups = Vec::with_capacity(ndigits);
    for i in 0..ndigits {
        let d = word(4 + i)?;
        if d > 9999 {
            return None;
        }
        digit_groups.push(d);
    }
    // Group at position `w` (weight) multiplies 10000^w; missing groups are 0.
    let group = |w: i32| -> u16 {
        let index = weight - w;
        if index < 0 {
            return 0;
        }
        usize::try_from(index)
            .ok()
            .and_then(|i| digit_groups.get(i).copied())
            .unwrap_or(0)
    };
    let mut out = String::new();
    if sign == 0x4000 {
        out.push('-');
    }
    if weight < 0 {
        out.push('0');
    } else {
        out.push_str(&group(weight).to_string());
        for w in (0..weight).rev() {
            out.push_str(&format!("{:04}", group(w)));
        }
    }
    if dscale > 0 {
        out.push('.');
        let mut fraction = String::with_capacity(dscale + 4);
        let mut w = -1;
        while fraction.len() < dscale {
            fraction.push_str(&format!("{:04}", group(w)));
            w -= 1;
        }
        fraction.truncate(dscale);
        out.push_str(&fraction);
    }
    Some(out)
}

const USECS_PER_SEC: i64 = 1_000_000;
const USECS_PER_DAY: i64 = 86_400 * USECS_PER_SEC;
/// Days from 0000-03-01 (proleptic Gregorian) to 2000-01-01, the PostgreSQL epoch.
const POSTGRES_EPOCH_DAYS: i64 = 730_425;

/// Civil date from days since the PostgreSQL epoch (proleptic Gregorian;
/// year 0 is 1 BC). Howard Hinnant's algorithm.
fn civil_from_days(days_since_2000: i64) -> (i64, u32, u32) {
    let z = days_since_2000 + POSTGRES_EPOCH_DAYS;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month as u32, day as u32)
}

/// `YYYY-MM-DD`, with PostgreSQL's ` BC` suffix before year 1.
fn date_text(days_since_2000: i64) -> (String, &'static str) {
    let (year, month, day) = civil_from_days(days_since_2000);
    if year <= 0 {
        (format!("{:04}-{month:02}-{day:02}", 1 - year), " BC")
    } else {
        (format!("{year:04}-{month:02}-{day:02}"), "")
    }
}

/// `HH:MM:SS[.ffffff]` from microseconds since midnight, trailing zeros of
/// the fraction dropped.
fn time_text(usecs: i64) -> String {
    let secs = usecs / USECS_PER_SEC;
    let frac = usecs % USECS_PER_SEC;
    let mut out = format!(
        "{:02}:{:02}:{:02}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    );
    if frac != 0 {
        let digits = format!(".{frac:06}");
        out.push_str(digits.trim_end_matches('0'));
    }
    out
}

/// A timestamp (microseconds since 2000-01-01 00:00:00; UTC for
/// timestamptz) as `YYYY-MM-DD HH:MM:SS[.ffffff]`.
pub(crate) fn format_timestamp(usecs: i64) -> String {
    match usecs {
        i64::MAX => return "infinity".into(),
        i64::MIN => return "-infinity".into(),
        _ => {}
    }
    let days = usecs.div_euclid(USECS_PER_DAY);
    let time = usecs.rem_euclid(USECS_PER_DAY);
    let (date, era) = date_text(days);
    format!("{date} {}{era}", time_text(time))
}

/// A date (days since 2000-01-01) as `YYYY-MM-DD`.
pub(crate) fn format_date(days: i32) -> String {
    match days {
        i32::MAX => return "infinity".into(),
        i32::MIN => return "-infinity".into(),
        _ => {}
    }
    let (date, era) = date_text(i64::from(days));
    format!("{date}{era}")
}

/// A time of day (microseconds since midnight) as `HH:MM:SS[.ffffff]`.
pub(crate) fn format_time(usecs: i64) -> String {
    time_text(usecs)
}

/// JDBC `java.sql.Types` codes, as the PostgreSQL JDBC driver reports them.
pub(crate) mod jdbc {
    pub const BIT: i32 = -7;
    pub const SMALLINT: i32 = 5;
    pub const INTEGER: i32 = 4;
    pub const BIGINT: i32 = -5;
    pub const REAL: i32 = 7;
    pub const DOUBLE: i32 = 8;
    pub const NUMERIC: i32 = 2;
    pub const CHAR: i32 = 1;
    pub const VARCHAR: i32 = 12;
    pub const DATE: i32 = 91;
    pub const TIME: i32 = 92;
    pub const TIMESTAMP: i32 = 93;
    pub const BINARY: i32 = -2;
    pub const ARRAY: i32 = 2003;
    pub const OTHER: i32 = 1111;
}

/// What `columnMetadata` says about a type: JDBC code, signedness, case
/// sensitivity and a precision for types whose precision does not depend
/// on the column's modifier.
pub(crate) struct TypeFacts {
    pub jdbc_type: i32,
    pub signed: bool,
    pub case_sensitive: bool,
    pub precision: i32,
}

/// Facts about a column type (domains as their base type).
pub(crate) fn type_facts(ty: &Type) -> TypeFacts {
    let base = base_type(ty);
    let (jdbc_type, signed, case_sensitive, precision) = match *base {
        Type::BOOL => (jdbc::BIT, false, false, 1),
        Type::INT2 => (jdbc::SMALLINT, true, false, 5),
        Type::INT4 => (jdbc::INTEGER, true, false, 10),
        Type::INT8 => (jdbc::BIGINT, true, false, 19),
        Type::OID => (jdbc::BIGINT, false, false, 10),
        Type::FLOAT4 => (jdbc::REAL, true, false, 8),
        Type::FLOAT8 => (jdbc::DOUBLE, true, false, 17),
        Type::NUMERIC => (jdbc::NUMERIC, true, false, 0),
        Type::TEXT | Type::VARCHAR => (jdbc::VARCHAR, false, true, i32::MAX),
        Type::NAME => (jdbc::VARCHAR, false, true, 63),
        Type::BPCHAR | Type::CHAR => (jdbc::CHAR, false, true, i32::MAX),
        Type::DATE => (jdbc::DATE, false, false, 13),
        Type::TIME => (jdbc::TIME, false, false, 15),
        Type::TIMESTAMP => (jdbc::TIMESTAMP, false, false, 29),
        Type::TIMESTAMPTZ => (jdbc::TIMESTAMP, false, false, 35),
        Type::BYTEA => (jdbc::BINARY, false, false, i32::MAX),
        Type::UUID | Type::JSON | Type::JSONB => (jdbc::OTHER, false, true, i32::MAX),
        _ => match base.kind() {
            Kind::Array(_) => (jdbc::ARRAY, false, false, i32::MAX),
            Kind::Enum(_) => (jdbc::VARCHAR, false, true, i32::MAX),
            _ => (jdbc::OTHER, false, false, i32::MAX),
        },
    };
    TypeFacts {
        jdbc_type,
        signed,
        case_sensitive,
        precision,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds the binary numeric for `groups` (base 10000) the way
    /// PostgreSQL does.
    fn numeric(weight: i16, sign: u16, dscale: u16, groups: &[u16]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&(groups.len() as u16).to_be_bytes());
        out.extend_from_slice(&weight.to_be_bytes());
        out.extend_from_slice(&sign.to_be_bytes());
        out.extend_from_slice(&dscale.to_be_bytes());
        for g in groups {
            out.extend_from_slice(&g.to_be_bytes());
        }
        out
    }

    #[test]
    fn numeric_text_is_exact() {
        let cases: &[(Vec<u8>, &str)] = &[
            (numeric(0, 0, 0, &[]), "0"),
            (numeric(0, 0, 2, &[]), "0.00"),
            (numeric(0, 0, 0, &[1]), "1"),
            (numeric(0, 0x4000, 1, &[1, 5000]), "-1.5"),
            (numeric(1, 0, 0, &[1]), "10000"),
            (numeric(-1, 0, 4, &[1]), "0.0001"),
            (numeric(-2, 0, 5, &[1000]), "0.00001"),
            (numeric(2, 0, 3, &[12, 3456, 7890, 1230]), "1234567890.123"),
            (numeric(0, 0, 0, &[]), "0"),
            (numeric(0, 0xC000, 0, &[]), "NaN"),
            (numeric(0, 0xD000, 0, &[]), "Infinity"),
            (numeric(0, 0xF000, 0, &[]), "-Infinity"),
        ];
        for (raw, text) in cases {
            assert_eq!(numeric_to_string(raw).as_deref(), Some(*text));
        }
        assert_eq!(numeric_to_string(&[0, 1]), None);
        assert_eq!(numeric_to_string(&numeric(0, 0x1234, 0, &[])), None);
        assert_eq!(numeric_to_string(&numeric(0, 0, 0, &[10000])), None);
    }

    #[test]
    fn times_keep_microseconds_and_drop_trailing_zeros() {
        assert_eq!(format_timestamp(0), "2000-01-01 00:00:00");
        assert_eq!(format_timestamp(1), "2000-01-01 00:00:00.000001");
        assert_eq!(format_timestamp(-1), "1999-12-31 23:59:59.999999");
        assert_eq!(format_timestamp(123_456_780), "2000-01-01 00:02:03.45678");
        assert_eq!(format_timestamp(i64::MAX), "infinity");
        assert_eq!(format_date(0), "2000-01-01");
        assert_eq!(format_date(-730_119), "0001-01-01");
        assert_eq!(format_date(-730_120), "0001-12-31 BC");
        assert_eq!(format_date(9_132), "2025-01-01");
        assert_eq!(format_time(0), "00:00:00");
        assert_eq!(format_time(USECS_PER_DAY - 500_000), "23:59:59.5");
    }
}

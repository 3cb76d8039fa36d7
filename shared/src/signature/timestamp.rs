//! Signed timestamps: parsing and the tolerance window.

use chrono::{DateTime, Utc};

use super::error::SignatureError;

/// Latest second `DateTime<Utc>` can represent.
const MAX_SECS: i64 = DateTime::<Utc>::MAX_UTC.timestamp();

/// Parses a Unix timestamp in seconds: ASCII digits only (no sign, no
/// spaces, no fraction), within the range of `DateTime<Utc>`.
pub fn parse_unix_seconds(text: &str) -> Result<i64, &'static str> {
    if text.is_empty() {
        return Err("timestamp is empty");
    }
    if text.len() > 18 {
        // More digits than chrono's range can need (up to 15) or than an
        // i64 holds without overflow checks: only leading zeros can make
        // such a value valid, and nobody sends those.
        return Err(if text.bytes().all(|b| b.is_ascii_digit()) {
            "timestamp is out of range"
        } else {
            "timestamp is not a decimal number of seconds"
        });
    }
    let mut secs: i64 = 0;
    for byte in text.bytes() {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            return Err("timestamp is not a decimal number of seconds");
        }
        // At most 18 digits: cannot overflow.
        secs = secs * 10 + i64::from(digit);
    }
    if secs > MAX_SECS {
        return Err("timestamp is out of range");
    }
    Ok(secs)
}

/// Accepts `timestamp` when it is at most `tolerance_secs` before or after
/// `now` (whole seconds; the bounds themselves are accepted).
pub(crate) fn check_tolerance(
    timestamp: i64,
    now: DateTime<Utc>,
    tolerance_secs: u64,
) -> Result<(), SignatureError> {
    let diff = i128::from(now.timestamp()) - i128::from(timestamp);
    let tolerance = i128::from(tolerance_secs);
    if diff > tolerance {
        Err(SignatureError::TimestampTooOld {
            age_secs: saturate(diff),
            tolerance_secs,
        })
    } else if -diff > tolerance {
        Err(SignatureError::TimestampInFuture {
            ahead_secs: saturate(-diff),
            tolerance_secs,
        })
    } else {
        Ok(())
    }
}

pub(crate) fn to_datetime(secs: i64) -> Option<DateTime<Utc>> {
    DateTime::<Utc>::from_timestamp(secs, 0)
}

fn saturate(value: i128) -> u64 {
    u64::try_from(value).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        to_datetime(secs).expect("in range")
    }

    #[test]
    fn parses_digits_only() {
        assert_eq!(parse_unix_seconds("1614265330"), Ok(1_614_265_330));
        assert_eq!(parse_unix_seconds("0"), Ok(0));
        for bad in [
            "",
            "+1",
            "-1",
            " 1",
            "1.5",
            "1e3",
            "abc",
            "99999999999999999999",
        ] {
            assert!(parse_unix_seconds(bad).is_err(), "{bad:?}");
        }
        // Parses as i64 but is beyond what chrono represents.
        assert!(parse_unix_seconds("9223372036854775807").is_err());
        assert_eq!(parse_unix_seconds(&MAX_SECS.to_string()), Ok(MAX_SECS));
        assert!(to_datetime(MAX_SECS).is_some());
        assert!(parse_unix_seconds(&(MAX_SECS + 1).to_string()).is_err());
        assert_eq!(parse_unix_seconds("0001"), Ok(1));
    }

    #[test]
    fn tolerance_bounds_are_inclusive_and_errors_are_distinct() {
        let now = at(1_700_000_000);
        assert_eq!(check_tolerance(1_700_000_000 - 300, now, 300), Ok(()));
        assert_eq!(check_tolerance(1_700_000_000 + 300, now, 300), Ok(()));
        assert_eq!(
            check_tolerance(1_700_000_000 - 301, now, 300),
            Err(SignatureError::TimestampTooOld {
                age_secs: 301,
                tolerance_secs: 300
            })
        );
        assert_eq!(
            check_tolerance(1_700_000_000 + 301, now, 300),
            Err(SignatureError::TimestampInFuture {
                ahead_secs: 301,
                tolerance_secs: 300
            })
        );
    }

    #[test]
    fn sub_second_now_is_truncated_to_whole_seconds() {
        let now = at(1_700_000_000) + chrono::Duration::milliseconds(999);
        assert_eq!(check_tolerance(1_700_000_000 - 300, now, 300), Ok(()));
        assert!(check_tolerance(1_700_000_000 + 301, now, 300).is_err());
    }
}

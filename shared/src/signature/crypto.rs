//! HMAC over several parts without concatenating them, constant-time
//! comparison, and decoding of signatures into fixed-size buffers.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;
use sha2::{Sha256, Sha512};
use subtle::ConstantTimeEq;

use super::config::{Algorithm, Encoding};

/// Standard base64 (`+/`); padding accepted with or without `=`. Non-zero
/// trailing bits are still rejected.
pub(crate) const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Standard base64 with padding, for what we produce.
pub(crate) const BASE64_OUT: GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Longest MAC or signature we handle: Ed25519 and HMAC-SHA512, 64 bytes.
pub(crate) const MAX_TAG: usize = 64;

/// A MAC or decoded signature, on the stack.
#[derive(Clone, Copy)]
pub(crate) struct Tag {
    buf: [u8; MAX_TAG],
    len: usize,
}

impl Tag {
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn from_slice(bytes: &[u8]) -> Self {
        let mut buf = [0u8; MAX_TAG];
        let len = bytes.len().min(MAX_TAG);
        buf[..len].copy_from_slice(&bytes[..len]);
        Self { buf, len }
    }
}

/// An HMAC being computed, for one of the supported hash functions.
#[derive(Clone)]
pub(crate) enum MacState {
    Sha1(Hmac<Sha1>),
    Sha256(Hmac<Sha256>),
    Sha512(Hmac<Sha512>),
}

/// The key was refused by the HMAC implementation (HMAC accepts any key
/// length, so this is not expected; it is still handled, not unwrapped).
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyRejected;

impl MacState {
    pub(crate) fn new(algorithm: Algorithm, key: &[u8]) -> Result<Self, KeyRejected> {
        Ok(match algorithm {
            Algorithm::Sha1 => {
                Self::Sha1(<Hmac<Sha1> as KeyInit>::new_from_slice(key).map_err(|_| KeyRejected)?)
            }
            Algorithm::Sha256 => Self::Sha256(
                <Hmac<Sha256> as KeyInit>::new_from_slice(key).map_err(|_| KeyRejected)?,
            ),
            Algorithm::Sha512 => Self::Sha512(
                <Hmac<Sha512> as KeyInit>::new_from_slice(key).map_err(|_| KeyRejected)?,
            ),
        })
    }

    pub(crate) fn update(&mut self, data: &[u8]) {
        match self {
            Self::Sha1(mac) => mac.update(data),
            Self::Sha256(mac) => mac.update(data),
            Self::Sha512(mac) => mac.update(data),
        }
    }

    pub(crate) fn finalize(self) -> Tag {
        match self {
            Self::Sha1(mac) => Tag::from_slice(&mac.finalize().into_bytes()),
            Self::Sha256(mac) => Tag::from_slice(&mac.finalize().into_bytes()),
            Self::Sha512(mac) => Tag::from_slice(&mac.finalize().into_bytes()),
        }
    }
}

/// HMAC of the concatenation of `parts`, fed piece by piece.
pub(crate) fn hmac_parts(
    algorithm: Algorithm,
    key: &[u8],
    parts: &[&[u8]],
) -> Result<Tag, KeyRejected> {
    let mut mac = MacState::new(algorithm, key)?;
    for part in parts {
        mac.update(part);
    }
    Ok(mac.finalize())
}

/// Constant-time equality. Lengths are public (they follow from the
/// algorithm), so a length mismatch returns early.
pub(crate) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

/// Decodes a signature written with `encoding`, which must decode to exactly
/// `expected_len` bytes.
pub(crate) fn decode_tag(
    encoding: Encoding,
    text: &str,
    expected_len: usize,
) -> Result<Tag, &'static str> {
    match encoding {
        Encoding::Hex => decode_hex(text, expected_len),
        Encoding::Base64 => decode_base64(text, expected_len),
    }
}

pub(crate) fn decode_hex(text: &str, expected_len: usize) -> Result<Tag, &'static str> {
    if expected_len > MAX_TAG || text.len() != expected_len * 2 {
        return Err("signature has the wrong length");
    }
    let mut buf = [0u8; MAX_TAG];
    hex::decode_to_slice(text, &mut buf[..expected_len])
        .map_err(|_| "signature is not hexadecimal")?;
    Ok(Tag {
        buf,
        len: expected_len,
    })
}

pub(crate) fn decode_base64(text: &str, expected_len: usize) -> Result<Tag, &'static str> {
    // 4 characters per 3 bytes, rounded up; anything longer cannot decode to
    // `expected_len` bytes, and bounding it keeps the buffer on the stack.
    let max_chars = expected_len.div_ceil(3) * 4;
    if expected_len > MAX_TAG || text.is_empty() || text.len() > max_chars {
        return Err("signature has the wrong length");
    }
    let mut buf = [0u8; MAX_TAG + 3];
    let len = BASE64
        .decode_slice(text, &mut buf)
        .map_err(|_| "signature is not valid base64")?;
    if len != expected_len {
        return Err("signature has the wrong length");
    }
    let mut out = [0u8; MAX_TAG];
    out[..len].copy_from_slice(&buf[..len]);
    Ok(Tag { buf: out, len })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_parts_equals_hmac_of_the_concatenation() {
        let key = b"key";
        for algorithm in [Algorithm::Sha1, Algorithm::Sha256, Algorithm::Sha512] {
            let split = hmac_parts(algorithm, key, &[b"ab", b"", b"cd"]).expect("any key");
            let whole = hmac_parts(algorithm, key, &[b"abcd"]).expect("any key");
            assert_eq!(split.as_bytes(), whole.as_bytes());
            assert_eq!(split.as_bytes().len(), algorithm.output_len());
        }
    }

    #[test]
    fn ct_eq_compares_content_and_length() {
        assert!(ct_eq(b"abc", b"abc"));
        assert!(!ct_eq(b"abc", b"abd"));
        assert!(!ct_eq(b"abc", b"ab"));
    }

    #[test]
    fn decoders_require_the_exact_length() {
        assert_eq!(decode_hex("00ff", 2).expect("valid").as_bytes(), [0, 255]);
        assert_eq!(decode_hex("00FF", 2).expect("valid").as_bytes(), [0, 255]);
        assert!(decode_hex("00ff00", 2).is_err());
        assert!(decode_hex("0g", 1).is_err());
        assert_eq!(
            decode_base64("AP8=", 2).expect("valid").as_bytes(),
            [0, 255]
        );
        assert_eq!(decode_base64("AP8", 2).expect("valid").as_bytes(), [0, 255]);
        assert!(decode_base64("AP8A", 2).is_err());
        assert!(decode_base64("", 2).is_err());
        assert!(decode_base64("A$8=", 2).is_err());
    }
}

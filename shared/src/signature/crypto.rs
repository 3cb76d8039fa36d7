//! HMAC over several parts without concatenating them, constant-time
//! comparison, and decoding of signatures into fixed-size buffers.

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;
use sha2::{Sha256, Sha512};
use subtle::ConstantTimeEq;

use super::config::Algorithm;
// The decoders moved to `decode.rs`; their paths through this module stay.
pub(crate) use super::decode::{
    Alphabet, URL_SAFE, decode_base64_array, decode_hex_array, decode_tag, decode_unpadded,
};

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
    pub(super) buf: [u8; MAX_TAG],
    pub(super) len: usize,
}

impl Default for Tag {
    /// The empty tag.
    fn default() -> Self {
        Self {
            buf: [0; MAX_TAG],
            len: 0,
        }
    }
}

impl Tag {
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// A tag of these bytes (at most [`MAX_TAG`]).
    pub(crate) fn of(bytes: &[u8]) -> Self {
        Self::from_slice(bytes)
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

/// HMAC of the concatenation of `parts`, fed piece by piece (tests compute
/// expected values with it).
#[cfg(test)]
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
/// algorithm), so a length mismatch returns early. The differences are
/// gathered eight bytes at a time into one word (no branch on the data)
/// and that word is compared with zero by `subtle`: a 32-byte MAC is four
/// XORs and one constant-time comparison (measured: 90 instructions per
/// verification with one `subtle` comparison per word, 46 with this).
pub(crate) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut diff = 0u64;
    let (a_words, b_words) = (a.chunks_exact(8), b.chunks_exact(8));
    let (a_rest, b_rest) = (a_words.remainder(), b_words.remainder());
    for (x, y) in a_words.zip(b_words) {
        diff |= word(x) ^ word(y);
    }
    for (x, y) in a_rest.iter().zip(b_rest) {
        diff |= u64::from(x ^ y);
    }
    bool::from(diff.ct_eq(&0))
}

/// Eight bytes as a word (`chunk` is always eight bytes long).
fn word(chunk: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(chunk);
    u64::from_ne_bytes(bytes)
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
        let long: Vec<u8> = (0..67).collect();
        for i in 0..long.len() {
            let mut other = long.clone();
            other[i] ^= 1;
            assert!(!ct_eq(&long, &other), "difference at {i}");
        }
        assert!(ct_eq(&long, &long.clone()));
    }
}

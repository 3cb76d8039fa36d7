//! Decoding the signatures partners send: hex and base64 of the usual
//! MAC lengths by loops of constant length and tables, as strictly as the
//! `base64` and `hex` crates (what they refuse, these refuse, with the
//! same texts). Signatures are not secret, so decoding need not be constant
//! time; comparing MACs is ([`super::crypto::ct_eq`]).

use super::config::Encoding;
use super::crypto::{MAX_TAG, Tag};

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
    in_tag(expected_len, |out| decode_hex_into(text, out))
}

/// A [`Tag`] of `expected_len` bytes filled by `decode`. The lengths of
/// the MACs and signatures (SHA-1, SHA-256, SHA-512, Ed25519) get slices
/// of constant length, so the inlined decoders run loops of constant
/// length: measured 166 instructions for 64 hex digits instead of 427
/// with the length a variable.
#[inline(always)]
fn in_tag(
    expected_len: usize,
    decode: impl Fn(&mut [u8]) -> Result<(), &'static str>,
) -> Result<Tag, &'static str> {
    let mut buf = [0u8; MAX_TAG];
    match expected_len {
        20 => decode(&mut buf[..20])?,
        32 => decode(&mut buf[..32])?,
        64 => decode(&mut buf[..64])?,
        _ => decode(
            buf.get_mut(..expected_len)
                .ok_or("signature has the wrong length")?,
        )?,
    }
    Ok(Tag {
        buf,
        len: expected_len,
    })
}

/// [`decode_hex`] into an array.
pub(crate) fn decode_hex_array<const N: usize>(text: &str) -> Result<[u8; N], &'static str> {
    let mut out = [0u8; N];
    decode_hex_into(text, &mut out)?;
    Ok(out)
}

/// Decodes hex (either case) that must fill `out` exactly. Eight digits
/// at a time (a 32-byte MAC is eight words, not sixty-four table
/// lookups); the digits that do not fill a word, one pair at a time.
/// Inlined so that the array callers get loops of constant length.
#[inline(always)]
fn decode_hex_into(text: &str, out: &mut [u8]) -> Result<(), &'static str> {
    let digits = text.as_bytes();
    if digits.len() != out.len() * 2 {
        return Err("signature has the wrong length");
    }
    let mut invalid = 0u64;
    let mut words = digits.chunks_exact(8);
    let mut fours = out.chunks_exact_mut(4);
    for (word, four) in (&mut words).zip(&mut fours) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        let (decoded, bad) = hex_word(u64::from_le_bytes(bytes));
        invalid |= bad;
        four.copy_from_slice(&decoded.to_le_bytes());
    }
    for (pair, byte) in words
        .remainder()
        .chunks_exact(2)
        .zip(fours.into_remainder())
    {
        let (high, low) = (HEX[usize::from(pair[0])], HEX[usize::from(pair[1])]);
        invalid |= u64::from((high | low) & 0x80);
        *byte = (high << 4) | (low & 0x0f);
    }
    if invalid != 0 {
        return Err("signature is not hexadecimal");
    }
    Ok(())
}

/// Each byte's lowest bit.
const ONES: u64 = 0x0101_0101_0101_0101;
/// Each byte's highest bit.
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `x` (all below 0x80) that is within
/// `lo..=hi` (SWAR: no carry crosses a byte for these ranges).
fn bytes_within(x: u64, lo: u8, hi: u8) -> u64 {
    let at_least = x.wrapping_add(ONES * u64::from(0x80 - lo));
    let above = x.wrapping_add(ONES * u64::from(0x7f - hi));
    at_least & !above & HIGHS
}

/// Eight hex digits (a little-endian word) as four bytes, and non-zero
/// when one of them is not a hex digit.
fn hex_word(x: u64) -> (u32, u64) {
    let ascii = !x & HIGHS;
    let digit = bytes_within(x, b'0', b'9');
    // ASCII case folding sets bit 5, so only `A`-`F` and `a`-`f` land here.
    let letter = bytes_within(x | (ONES * 0x20), b'a', b'f');
    let bad = !(ascii & (digit | letter)) & HIGHS;
    // '0'-'9' are their low four bits, letters nine more (bit 6 is set).
    let nibbles = (x & (ONES * 0x0f)) + ((x >> 6) & ONES) * 9;
    let pairs = ((nibbles << 4) | (nibbles >> 8)) & 0x00ff_00ff_00ff_00ff;
    let pairs = (pairs | (pairs >> 8)) & 0x0000_ffff_0000_ffff;
    let four = (pairs | (pairs >> 16)) & 0xffff_ffff;
    (u32::try_from(four).unwrap_or_default(), bad)
}

/// Hex digit values (either case); 0x80 marks a non-digit.
const HEX: [u8; 256] = {
    let mut table = [0x80u8; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        table[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

/// Decodes standard base64 (`+/`) that must be exactly `expected_len` bytes:
/// either unpadded, or padded with exactly the `=` the length calls for.
/// Unused low bits of the last character must be zero (canonical encoding),
/// as the `base64` crate requires; a property test checks both agree.
pub(crate) fn decode_base64(text: &str, expected_len: usize) -> Result<Tag, &'static str> {
    in_tag(expected_len, |out| decode_base64_into(text, out))
}

/// [`decode_base64`] into an array.
pub(crate) fn decode_base64_array<const N: usize>(text: &str) -> Result<[u8; N], &'static str> {
    let mut out = [0u8; N];
    decode_base64_into(text, &mut out)?;
    Ok(out)
}

/// Decodes base64 that must fill `out` exactly (an empty `out` is the
/// wrong length). Inlined so
/// that the array callers get loops of constant length.
#[inline(always)]
fn decode_base64_into(text: &str, out: &mut [u8]) -> Result<(), &'static str> {
    let expected_len = out.len();
    if expected_len == 0 {
        return Err("signature has the wrong length");
    }
    let unpadded_len = (expected_len * 4).div_ceil(3);
    let padded_len = expected_len.div_ceil(3) * 4;
    let bytes = text.as_bytes();
    let data = if bytes.len() == unpadded_len {
        bytes
    } else if bytes.len() == padded_len && bytes[unpadded_len..].iter().all(|&b| b == b'=') {
        &bytes[..unpadded_len]
    } else {
        let [.., values] = &STANDARD.0;
        return Err(
            if bytes
                .iter()
                .all(|&b| values[usize::from(b)] != BAD || b == b'=')
            {
                "signature has the wrong length"
            } else {
                "signature is not valid base64"
            },
        );
    };
    match decode_unpadded(&STANDARD, data, out) {
        Ok(()) => Ok(()),
        Err(Refused::NotCanonical) => Err("signature is not canonical base64"),
        Err(Refused::Invalid) => Err("signature is not valid base64"),
    }
}

/// Why [`decode_unpadded`] refused its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// A character outside the alphabet (`=` included), or a length
    /// that does not fill the output exactly.
    Invalid,
    /// Non-zero unused bits in the last character.
    NotCanonical,
}

/// Decodes unpadded base64 `data` (with `alphabet`'s characters) that
/// must fill `out` exactly (`out.len()` is `data.len() * 3 / 4`), with
/// the unused low bits of a last partial group zero (canonical, as the
/// `base64` crate requires). Each character is read through a table of
/// its value already shifted into place ([`BAD`] outside the alphabet),
/// so that a group of four is four loads and three ORs; the characters
/// are checked once, at the end (a signature is not secret: refusing it
/// early or late tells nothing). Inlined for loops of constant length.
#[inline(always)]
pub(crate) fn decode_unpadded(
    alphabet: &Alphabet,
    data: &[u8],
    out: &mut [u8],
) -> Result<(), Refused> {
    let [t18, t12, t6, t0] = &alphabet.0;
    let at = |table: &[u32; 256], c: u8| table[usize::from(c)];
    let quads = data.chunks_exact(4);
    let tail = quads.remainder();
    let whole = data.len() / 4 * 3;
    if whole > out.len() {
        return Err(Refused::Invalid);
    }
    let (full, rest) = out.split_at_mut(whole);
    let mut bad = 0u32;
    for (triple, quad) in full.chunks_exact_mut(3).zip(quads) {
        let &[c0, c1, c2, c3] = quad else {
            return Err(Refused::Invalid);
        };
        let n = at(t18, c0) | at(t12, c1) | at(t6, c2) | at(t0, c3);
        bad |= n;
        triple.copy_from_slice(&n.to_be_bytes()[1..]);
    }
    // A last partial group: its unused low bits must be zero.
    let unused = match (tail, rest) {
        ([], []) => 0,
        (&[c0, c1], [a]) => {
            let n = at(t18, c0) | at(t12, c1);
            bad |= n;
            *a = (n >> 16) as u8;
            n & 0xffff
        }
        (&[c0, c1, c2], [a, b]) => {
            let n = at(t18, c0) | at(t12, c1) | at(t6, c2);
            bad |= n;
            *a = (n >> 16) as u8;
            *b = (n >> 8) as u8;
            n & 0xff
        }
        _ => return Err(Refused::Invalid),
    };
    // Non-canonical first (whatever the other characters), as before.
    if unused != 0 {
        Err(Refused::NotCanonical)
    } else if bad & BAD != 0 {
        Err(Refused::Invalid)
    } else {
        Ok(())
    }
}

/// Marks a byte that is not in the alphabet, in [`Alphabet`]'s tables.
const BAD: u32 = 1 << 31;

/// A base64 alphabet as four tables: each character's value shifted
/// left by 18, 12, 6 and 0 bits (its place in a group of four), [`BAD`]
/// for any other byte.
pub(crate) struct Alphabet([[u32; 256]; 4]);

impl Alphabet {
    const fn new(characters: &[u8; 64]) -> Self {
        let shifts = [18, 12, 6, 0];
        let mut tables = [[BAD; 256]; 4];
        let mut t = 0;
        while t < 4 {
            let mut i = 0;
            while i < 64 {
                tables[t][characters[i] as usize] = (i as u32) << shifts[t];
                i += 1;
            }
            t += 1;
        }
        Self(tables)
    }

    /// The length decoded from `len` unpadded characters, `None` for a
    /// length no encoding has (one more than a multiple of four).
    pub(crate) fn decoded_len(len: usize) -> Option<usize> {
        match len % 4 {
            1 => None,
            rest => Some(len / 4 * 3 + rest.saturating_sub(1)),
        }
    }
}

/// Standard base64 (`+/`).
pub(crate) static STANDARD: Alphabet =
    Alphabet::new(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
/// Base64url (`-_`).
pub(crate) static URL_SAFE: Alphabet =
    Alphabet::new(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::crypto::{BASE64, BASE64_OUT};

    #[test]
    fn hex_words_accept_exactly_the_hex_digits() {
        // Every byte value in every position of a word, against the table.
        for position in 0..8 {
            for byte in 0..=255u8 {
                let mut text = *b"0123abcD";
                text[position] = byte;
                let (decoded, bad) = hex_word(u64::from_le_bytes(text));
                let valid = text.iter().all(u8::is_ascii_hexdigit);
                assert_eq!(bad == 0, valid, "{text:?}");
                if valid {
                    let expected = hex::decode(text).expect("hex");
                    assert_eq!(decoded.to_le_bytes().to_vec(), expected, "{text:?}");
                }
            }
        }
    }

    #[test]
    fn decoders_require_the_exact_length() {
        assert_eq!(decode_hex("00ff", 2).expect("valid").as_bytes(), [0, 255]);
        assert_eq!(decode_hex("00FF", 2).expect("valid").as_bytes(), [0, 255]);
        assert!(decode_hex("00ff00", 2).is_err());
        assert!(decode_hex("0g", 1).is_err());
        assert!(decode_hex("g0", 1).is_err());
        assert!(decode_hex("é0", 1).is_err());
        let all: String = (0..=255u8).map(|b| format!("{b:02x}")).collect();
        let decoded = decode_hex(&all[..128], 64).expect("valid");
        assert_eq!(decoded.as_bytes(), (0..64u8).collect::<Vec<_>>());
        let decoded = decode_hex(&all[384..].to_uppercase(), 64).expect("valid");
        assert_eq!(decoded.as_bytes(), (192..=255u8).collect::<Vec<_>>());
        assert_eq!(
            decode_base64("AP8=", 2).expect("valid").as_bytes(),
            [0, 255]
        );
        assert_eq!(decode_base64("AP8", 2).expect("valid").as_bytes(), [0, 255]);
        assert!(decode_base64("AP8A", 2).is_err());
        assert!(decode_base64("", 2).is_err());
        assert!(decode_base64("A$8=", 2).is_err());
        // Non-zero unused bits: not canonical.
        assert!(decode_base64("AP9=", 2).is_err());
        assert!(decode_base64("AP8==", 2).is_err());
        assert!(decode_base64("AP==", 2).is_err());
    }

    #[test]
    fn base64_refuses_a_bad_character_at_every_position() {
        use base64::Engine as _;
        for len in [1, 2, 3, 20, 32, 64] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let padded = BASE64_OUT.encode(&bytes);
            let unpadded = padded.trim_end_matches('=');
            assert_eq!(
                decode_base64(&padded, len).expect("valid").as_bytes(),
                bytes
            );
            assert_eq!(
                decode_base64(unpadded, len).expect("valid").as_bytes(),
                bytes
            );
            for i in 0..unpadded.len() {
                for bad in ["$", "=", "-", "_", "\u{e9}", "\0"] {
                    let text = format!("{}{bad}{}", &padded[..i], &padded[i + 1..]);
                    assert!(decode_base64(&text, len).is_err(), "{text:?}");
                }
            }
            // Any other length: refused as such.
            for n in 0..padded.len() + 3 {
                if n != padded.len() && n != unpadded.len() {
                    let text = "A".repeat(n);
                    assert_eq!(
                        decode_base64(&text, len).err(),
                        Some("signature has the wrong length"),
                        "{text:?}"
                    );
                }
            }
        }
        // The unused bits of the last character, each in turn.
        let mut text = BASE64_OUT.encode([0u8; 32]);
        for (c, ok) in [
            ("A", true),
            ("B", false),
            ("C", false),
            ("D", false),
            ("E", true),
        ] {
            text.replace_range(42..43, c);
            let result = decode_base64(&text, 32);
            assert_eq!(result.is_ok(), ok, "{text}");
            if !ok {
                assert_eq!(result.err(), Some("signature is not canonical base64"));
            }
        }
        for (text, ok) in [
            ("AA==", true),
            ("AB==", false),
            ("AI==", false),
            ("AQ==", true),
        ] {
            assert_eq!(decode_base64(text, 1).is_ok(), ok, "{text}");
        }
        // Base64url: the other two characters.
        let mut out = [0u8; 3];
        assert_eq!(decode_unpadded(&URL_SAFE, b"-_-_", &mut out), Ok(()));
        assert_eq!(out, [0xfb, 0xff, 0xbf]);
        assert_eq!(
            decode_unpadded(&URL_SAFE, b"+/+/", &mut out),
            Err(Refused::Invalid)
        );
        assert_eq!(
            decode_unpadded(&STANDARD, b"-_-_", &mut out),
            Err(Refused::Invalid)
        );
        assert_eq!(Alphabet::decoded_len(5), None);
        assert_eq!(Alphabet::decoded_len(43), Some(32));
        assert_eq!(Alphabet::decoded_len(0), Some(0));
    }

    proptest::proptest! {
        /// The hand-written decoders agree with the `hex` and `base64`
        /// crates: same bytes on valid input, both refuse invalid input.
        #[test]
        fn decoders_agree_with_the_reference_crates(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..=MAX_TAG),
            noise in "[A-Za-z0-9+/=$ .-]{0,90}",
            position in proptest::prelude::any::<proptest::sample::Index>(),
            replacement in "[A-Za-z0-9+/=$ .-]",
        ) {
            use base64::Engine as _;
            let len = bytes.len();
            let padded = BASE64_OUT.encode(&bytes);
            let unpadded = padded.trim_end_matches('=').to_owned();
            for text in [&padded, &unpadded] {
                let decoded = decode_base64(text, len).expect("valid base64");
                proptest::prop_assert_eq!(decoded.as_bytes(), &bytes[..]);
            }
            let hex_text = hex::encode(&bytes);
            for text in [hex_text.clone(), hex_text.to_uppercase()] {
                let decoded = decode_hex(&text, len).expect("valid hex");
                proptest::prop_assert_eq!(decoded.as_bytes(), &bytes[..]);
            }

            // One character replaced, and arbitrary text: same verdict as base64.
            let i = position.index(padded.len());
            let mutated = format!("{}{}{}", &padded[..i], replacement, &padded[i + 1..]);
            for text in [mutated.as_str(), noise.as_str()] {
                for expected in [len, (text.len() * 3 / 4).clamp(1, MAX_TAG)] {
                    let reference = BASE64.decode(text).ok().filter(|d| d.len() == expected);
                    let ours = decode_base64(text, expected).ok().map(|t| t.as_bytes().to_vec());
                    // The reference accepts `=` padding of any correct shape;
                    // we also refuse over-long or misplaced padding. Where the
                    // reference refuses, so must we; where we accept, it must too
                    // and give the same bytes.
                    if reference.is_none() {
                        proptest::prop_assert!(ours.is_none(), "{:?} accepted", text);
                    }
                    if let Some(ours) = ours {
                        proptest::prop_assert_eq!(Some(ours), reference);
                    }
                }
                let hex_expected = text.len() / 2;
                if (1..=MAX_TAG).contains(&hex_expected) {
                    let reference = hex::decode(text).ok();
                    let ours = decode_hex(text, hex_expected).ok().map(|t| t.as_bytes().to_vec());
                    proptest::prop_assert_eq!(ours, reference);
                }
            }
        }
    }
}

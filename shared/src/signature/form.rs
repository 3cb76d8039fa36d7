//! Form parameters (`application/x-www-form-urlencoded`) decoded as
//! `form_urlencoded::parse` decodes them, sorted and deduplicated as
//! Twilio's recipe signs them, without an allocation per parameter.
//!
//! The result is the one `form_urlencoded::parse(body)` collected into
//! `(Cow<str>, Cow<str>)` pairs, then `sort()` and `dedup()`, gives for
//! every input (a property test checks it): sequences split at `&` (empty
//! ones skipped), the name before the first `=`, `+` a space, `%` and two
//! hex digits the byte they write (any other `%` itself), then each name
//! and value as UTF-8 with invalid sequences replaced (U+FFFD), as
//! `String::from_utf8_lossy` does.
//!
//! What is saved is the per-byte percent-decoding iterator and an
//! allocation for every parameter with a `+` or an escape: the names and
//! values are decoded, back to back, into one buffer the size of the
//! body, sixteen bytes at a time (a branch-free loop the compiler
//! vectorises, its `+`s turned into spaces, the position of the first
//! `%`, `&` or `=` taken from the block's flags), byte by byte only at an
//! escape; UTF-8 is checked only for a name or value with a byte that is
//! not ASCII. The parameters are sorted as small records (the first eight
//! bytes of the name and three offsets), and each one's name and value
//! are fed to the MAC as one slice.

use std::cmp::Ordering;

/// Each byte's lowest bit.
const ONES: u64 = 0x0101_0101_0101_0101;
/// Each byte's highest bit.
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` equal to `byte` (exact: no false
/// positives, whatever the other bytes).
pub(crate) fn equal_bytes(word: u64, byte: u8) -> u64 {
    let x = word ^ (ONES * u64::from(byte));
    !(((x & !HIGHS) + !HIGHS) | x) & HIGHS
}

/// The index of the first `byte` in `bytes`, eight bytes at a time.
pub(crate) fn find_byte(bytes: &[u8], byte: u8) -> Option<usize> {
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let found = equal_bytes(u64::from_le_bytes(word), byte);
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&b| b == byte)
        .map(|i| at + i)
}

/// A hex digit's value (either case).
fn hex_digit(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

/// Bytes decoded per step of [`block`].
const BLOCK: usize = 16;

/// Copies `chunk` into `slot` with each `+` turned into a space. Returns
/// the index of its first special byte (`%`, `&`, or `=` in a name; the
/// bytes before it are decoded text as copied), if any, and whether any
/// byte has its high bit set (not ASCII). The copy and the test are a
/// loop of constant length with no early exit and no branch in its body,
/// which the compiler turns into a few vector instructions for the
/// sixteen bytes (compare, blend, store, one test of the combined flags):
/// an SMS text, whose words are joined by `+`, is copied at that rate.
/// Only a block with a special byte then looks for it, in two words
/// ([`first_special`]). (Marking the bytes in an array, or a mask built
/// bit by bit, is not vectorised: measured 14-16 instructions a byte.)
#[inline(always)]
fn block(chunk: &[u8; BLOCK], slot: &mut [u8; BLOCK], name: bool) -> (Option<usize>, bool) {
    let equals = if name { b'=' } else { b'&' };
    let mut special = 0u8;
    let mut high = 0u8;
    for (out, &byte) in slot.iter_mut().zip(chunk) {
        *out = if byte == b'+' { b' ' } else { byte };
        special |= u8::from(byte == b'%') | u8::from(byte == b'&') | u8::from(byte == equals);
        high |= byte;
    }
    let first = if special == 0 {
        None
    } else {
        Some(first_special(chunk, equals))
    };
    (first, high >= 0x80)
}

/// The index of the first `%`, `&` or `equals` in `chunk` (which has
/// one), eight bytes at a time.
#[inline(never)]
fn first_special(chunk: &[u8; BLOCK], equals: u8) -> usize {
    let mut at = 0;
    for word in chunk.chunks_exact(8) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        let word = u64::from_le_bytes(bytes);
        let found = equal_bytes(word, b'%') | equal_bytes(word, b'&') | equal_bytes(word, equals);
        if found != 0 {
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    // Not reached (the block has a special byte): its end.
    BLOCK
}

/// The body's last bytes from `start` (fewer than [`BLOCK`]) followed by
/// `&`s: the end of the body reads as the end of a parameter.
fn padded(body: &[u8], start: usize) -> [u8; BLOCK] {
    let mut chunk = [b'&'; BLOCK];
    for (slot, &byte) in chunk.iter_mut().zip(body.get(start..).unwrap_or_default()) {
        *slot = byte;
    }
    chunk
}

/// Decodes `body[start..]` up to its first `&` (or `=` when `name`) into
/// `out[at..]`: `+` a space, `%` and two hex digits their byte, anything
/// else itself. Returns where it stopped in `body`, where the decoded
/// text ends in `out`, and whether it may not be ASCII. Sixteen bytes at
/// a time: each block is stored whole at `at` and `at` moves past the
/// bytes before its first special byte (all sixteen when it has none);
/// at an escape, its byte is written and the blocks resume after it.
/// `out` must have [`BLOCK`] bytes to spare past the decoded text, which
/// is never longer than what it decodes. (A vector grown by `extend`
/// instead measured slower at 64 KiB: its length went through memory on
/// every block.)
fn decode(
    body: &[u8],
    start: usize,
    out: &mut [u8],
    at: usize,
    name: bool,
) -> (usize, usize, bool) {
    let mut i = start;
    let mut at = at;
    let mut high = false;
    loop {
        let tail;
        let chunk: &[u8; BLOCK] = match body.get(i..i + BLOCK).and_then(|b| b.try_into().ok()) {
            Some(chunk) => chunk,
            None => {
                tail = padded(body, i);
                &tail
            }
        };
        let Some(slot) = out
            .get_mut(at..at + BLOCK)
            .and_then(|slot| <&mut [u8; BLOCK]>::try_from(slot).ok())
        else {
            // Not reached: `out` has room (see above). Stop rather than
            // write elsewhere; the MAC then simply does not match.
            return (body.len(), at, high);
        };
        let (special, non_ascii) = block(chunk, slot, name);
        high |= non_ascii;
        let Some(before) = special else {
            i += BLOCK;
            at += BLOCK;
            continue;
        };
        i += before;
        at += before;
        // The special byte: `&` (or the padding past the body's end),
        // `=` in a name, or `%`.
        let Some(&byte) = body.get(i) else {
            return (body.len(), at, high);
        };
        if byte != b'%' {
            return (i, at, high);
        }
        let (decoded, used) = match (
            body.get(i + 1).copied().and_then(hex_digit),
            body.get(i + 2).copied().and_then(hex_digit),
        ) {
            (Some(digit_high), Some(low)) => ((digit_high << 4) | low, 3),
            _ => (b'%', 1),
        };
        high |= decoded >= 0x80;
        match out.get_mut(at) {
            Some(slot) => *slot = decoded,
            None => return (body.len(), at, high),
        }
        at += 1;
        i += used;
    }
}

/// A parameter: its name at `text[start..mid]` and its value at
/// `text[mid..end]` (decoded, back to back), and the first eight bytes
/// of its name (big-endian, zero-padded: `a < b` implies
/// `prefix(a) <= prefix(b)`, so names are compared by one integer first).
#[derive(Debug, Clone, Copy)]
struct Param {
    prefix: u64,
    start: usize,
    mid: usize,
    end: usize,
}

/// The parameters of a form body, decoded.
#[derive(Debug, Default)]
pub(crate) struct Form {
    /// The decoded names and values, back to back (a name or value that
    /// is not UTF-8 as `String::from_utf8_lossy` replaces it).
    text: Vec<u8>,
    /// How much of `text` is decoded text (the rest is room for the
    /// block stores).
    len: usize,
    params: Vec<Param>,
}

impl Form {
    /// Decodes `body`'s parameters, in their order.
    pub(crate) fn parse(body: &[u8]) -> Self {
        let mut form = Form {
            text: vec![0; body.len() + BLOCK],
            len: 0,
            // Twilio's SMS webhook has about twenty.
            params: Vec::with_capacity(32),
        };
        let mut i = 0usize;
        while i < body.len() {
            if body.get(i) == Some(&b'&') {
                // An empty sequence.
                i += 1;
                continue;
            }
            let start = form.len;
            let stop = form.piece(body, i, true);
            let mid = form.len;
            let stop = if body.get(stop) == Some(&b'=') {
                form.piece(body, stop + 1, false)
            } else {
                stop
            };
            let end = form.len;
            let prefix = prefix(form.text.get(start..mid).unwrap_or_default());
            form.params.push(Param {
                prefix,
                start,
                mid,
                end,
            });
            // `stop` is at the `&` that ends the sequence, or the end.
            i = stop + 1;
        }
        form.text.truncate(form.len);
        form
    }

    /// Decodes the name (`name`: up to `=` or `&`) or value (up to `&`)
    /// that starts at `body[start..]` into `text` at `len`. Returns the
    /// index where it stopped (the `=`, the `&`, or the body's length).
    fn piece(&mut self, body: &[u8], start: usize, name: bool) -> usize {
        let begin = self.len;
        let (stop, end, high) = decode(body, start, &mut self.text, begin, name);
        self.len = end;
        if high {
            let decoded = self.text.get(begin..end).unwrap_or_default();
            if std::str::from_utf8(decoded).is_err() {
                // The replacement can be longer than the bytes: room is
                // made for the rest of the body again.
                let replaced = String::from_utf8_lossy(decoded).into_owned();
                self.text.truncate(begin);
                self.text.extend_from_slice(replaced.as_bytes());
                self.len = self.text.len();
                let room = self.len + body.len().saturating_sub(stop) + BLOCK;
                self.text.resize(room.max(self.text.len()), 0);
            }
        }
        stop
    }

    fn name(&self, param: &Param) -> &[u8] {
        self.text.get(param.start..param.mid).unwrap_or_default()
    }

    fn value(&self, param: &Param) -> &[u8] {
        self.text.get(param.mid..param.end).unwrap_or_default()
    }

    /// Sorts the parameters by name, then value (bytes), and drops the
    /// repeated ones: `Vec::sort` then `Vec::dedup` of the pairs.
    pub(crate) fn sort_and_dedup(&mut self) {
        let mut params = std::mem::take(&mut self.params);
        params.sort_unstable_by(|a, b| a.prefix.cmp(&b.prefix).then_with(|| self.compare(a, b)));
        // Names with different first eight bytes differ: no need to
        // compare them in full.
        params.dedup_by(|b, a| a.prefix == b.prefix && self.compare(a, b) == Ordering::Equal);
        self.params = params;
    }

    fn compare(&self, a: &Param, b: &Param) -> Ordering {
        self.name(a)
            .cmp(self.name(b))
            .then_with(|| self.value(a).cmp(self.value(b)))
    }

    /// Each parameter's name and value, in order.
    #[cfg(test)]
    fn pairs(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.params
            .iter()
            .map(|param| (self.name(param), self.value(param)))
    }

    /// Each parameter's name followed by its value, in order: what
    /// Twilio signs (one slice a parameter, the two being back to back).
    pub(crate) fn signed(&self) -> impl Iterator<Item = &[u8]> {
        self.params
            .iter()
            .map(|param| self.text.get(param.start..param.end).unwrap_or_default())
    }
}

/// The first eight bytes of `bytes`, big-endian, zero-padded: if `a < b`
/// then `prefix(a) <= prefix(b)`.
fn prefix(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    for (slot, &byte) in word.iter_mut().zip(bytes) {
        *slot = byte;
    }
    u64::from_be_bytes(word)
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    /// What `form_urlencoded` gives, sorted and deduplicated: the
    /// reference (the signer's).
    fn reference(body: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut params: Vec<(Cow<'_, str>, Cow<'_, str>)> = form_urlencoded::parse(body).collect();
        params.sort();
        params.dedup();
        params
            .into_iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    }

    fn ours(body: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut form = Form::parse(body);
        form.sort_and_dedup();
        form.pairs()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect()
    }

    #[test]
    fn agrees_with_form_urlencoded_on_examples() {
        let bodies: &[&[u8]] = &[
            b"",
            b"&",
            b"&&a=1&&",
            b"a",
            b"a=",
            b"=",
            b"=b",
            b"a=b=c",
            b"b=2&a=1&a=1&a=0",
            b"To=%2B14155550100&Body=Hello+world%2C+how+are+you%3F",
            b"k%3Dey=v%26alue&k%3dey=x",
            b"%=%%&%4=%4g&%zz=%+4&%%41=%41%",
            b"a+b%20c=d++e&aaaaaaaaaaaaaaaa=bbbbbbbbbbbbbbbbbbbbbbbbb%2",
            b"x=%FF%FE&y=%C3%A9&%80=1&\xff=\xfe",
            b"long=abcdefghabcdefgh+abcdefgh%2Cabcdefgh&longer=abcdefgh=abcdefgh&abcdefghi=1&abcdefgh=2&abcdefgh=1",
            b"ToCountry=US&SmsSid=SM01&SmsStatus=received&SmsMessageSid=SM01&From=%2B1&FromCity=SF&FromCountry=US",
        ];
        for body in bodies {
            assert_eq!(
                ours(body),
                reference(body),
                "{:?}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn agrees_with_form_urlencoded_around_sixteen_byte_blocks() {
        // Long runs (copied sixteen bytes at a time) with one special
        // byte or escape at every offset, in names and values.
        let run = "abc+defgh+ijklmnop+qrstuvwx+yz+0123456789+ABCDEF";
        for special in [
            "%2C", "%", "%4", "%zz", "&", "=", "+", "&&", "%C3%A9", "\u{e9}",
        ] {
            for at in 0..=run.len() {
                let text = format!("{}{special}{}", &run[..at], &run[at..]);
                for body in [
                    format!("Body={text}&To=%2B1"),
                    format!("{text}=x&a=1"),
                    format!("a=1&{text}"),
                ] {
                    assert_eq!(
                        ours(body.as_bytes()),
                        reference(body.as_bytes()),
                        "{body:?}"
                    );
                }
            }
        }
        // And the block alone: `+` becomes a space, each special byte
        // is in the mask, non-ASCII bytes are seen.
        let mut slot = [0u8; BLOCK];
        assert_eq!(block(b"ab+cd+efgh+ijklm", &mut slot, true), (None, false));
        assert_eq!(&slot, b"ab cd efgh ijklm");
        for special in [b'%', b'&', b'='] {
            let mut chunk = *b"abcdefghijklmnop";
            for i in 0..BLOCK {
                chunk[i] = special;
                assert_eq!(block(&chunk, &mut slot, true), (Some(i), false), "{i}");
                // `=` ends only a name.
                let first = (special != b'=').then_some(i);
                assert_eq!(block(&chunk, &mut slot, false), (first, false), "{i}");
                // Two special bytes: the first one counts.
                let other = (i + 5) % BLOCK;
                chunk[other] = b'%';
                assert_eq!(block(&chunk, &mut slot, true).0, Some(i.min(other)), "{i}");
                chunk[other] = 0xc3;
                assert_eq!(block(&chunk, &mut slot, true), (Some(i), true), "{i}");
                chunk[other] = b'a';
                chunk[i] = b'a';
            }
        }
    }

    #[test]
    fn replaced_names_and_values_sort_as_their_replacement() {
        // `from_utf8_lossy` makes `\xff` U+FFFD (EF BF BD), which sorts
        // after `\xc3\xa9` and before `\xf0...`; and a replaced name
        // next to a valid value.
        for body in [
            &b"\xff=1&\xc3\xa9=2&\xf0\x9f\x98\x80=3&%FF=4&%ef%bf%bd=4&z=%ff%c3"[..],
            b"a=%ff&a=%EF%BF%BD&a=\xef\xbf\xbd&b=%e9t%C3%A9",
        ] {
            assert_eq!(
                ours(body),
                reference(body),
                "{:?}",
                String::from_utf8_lossy(body)
            );
        }
    }

    proptest::proptest! {
        /// Random bodies from an alphabet that hits every special case
        /// (`&`, `=`, `+`, `%` with and without hex digits, bytes that
        /// are not UTF-8): the same parameters as `form_urlencoded`.
        #[test]
        fn agrees_with_form_urlencoded(
            body in proptest::collection::vec(
                proptest::sample::select(
                    b"&=+%%0aAfFgz \xc3\xa9\xff\x80".to_vec()
                ),
                0..80,
            ),
            // And the same in runs long enough for whole blocks.
            long in proptest::collection::vec(
                proptest::sample::select(
                    b"&=+%%0aAfFgzzzzzzzzzzzz \xc3\xa9\xff".to_vec()
                ),
                0..300,
            ),
        ) {
            proptest::prop_assert_eq!(ours(&body), reference(&body));
            proptest::prop_assert_eq!(ours(&long), reference(&long));
        }
    }
}

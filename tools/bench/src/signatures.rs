//! Signature verification of every recipe of the preset registry against
//! its bare primitive over the same bytes, in the same run (the method of
//! shared/benches/signature.rs, where docs/signatures.md explains it):
//! short batches of the same iteration count, one round times a preset and
//! its baseline once each in an order that alternates, and the best batch
//! of each is compared (the least disturbed by the neighbour on the
//! machine).
//!
//! The cases come from the registry: one preset per recipe shape (the
//! first in registry order; see [`shape`]), signed with the registry's own
//! signer (`Preset::sign`). Each is timed against the bare primitive of its
//! recipe (HMAC-SHA1, -SHA256, -SHA512 keyed on every call, Ed25519 or
//! ECDSA P-256 verification with the public key decoded once) over exactly
//! the bytes that primitive covers for this request
//! (`Preset::signed_message`: Stripe's `t.body`, Square's URL and body,
//! Twilio's URL and sorted form parameters…). Two recipes need more than
//! one primitive over one message, and their baseline is all of it: the
//! JWS recipe (Netlify) hashes the body (SHA-256, which the token's
//! `sha256` claim binds) and MACs the token's `header.claims`; a recipe
//! whose timestamp is in the JSON body (Linear) cannot check it without
//! reading the body, so its baseline is the HMAC and the least read of
//! the timestamp (serde into a one-field struct, the rest skipped). Both
//! rates are counted in body bytes, so the ratio is the baseline's time
//! over the verification's. The body is JSON, except for Twilio's recipe, which
//! signs form parameters: a Twilio SMS webhook's parameters, its `Body`
//! text grown to the size. Presets without a primitive (a token, basic
//! credentials) and the signature carried inside the body (Mailgun: the
//! signer does not write it; its MAC covers two short fields, not the
//! body) are left out.
//!
//! Not like for like in one respect, said plainly: the verifier keeps each
//! secret's keyed HMAC state (the two compressions of the padded key, done
//! once per long-lived `Secret`, wiped on drop, never shown by `Debug`) and
//! clones it for each verification, as production does with the secrets
//! loaded with the partner configuration, while the baseline keys on every
//! call. At 1 KiB that is two of the bare HMAC-SHA256's twenty
//! compressions (about a tenth of its time), which the ratio includes; at
//! 64 KiB it is negligible. The public-key baselines decode their key once,
//! as the verifier does.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use hookbox::signature::presets::{self, Outgoing, Preset, SigningKey};
use hookbox::signature::{
    Algorithm, Headers, KeyFormat, Part, Primitive, Recipe, SchemeKind, Secret, SignatureAt,
    SignedRequest, TimestampSource,
};
use sha1::Sha1;
use sha2::{Sha256, Sha512};

use crate::report::{Figure, Goal};

pub const SECTION: &str = "Signatures";
const NOW: i64 = 1_700_000_000;
const SAMPLE: Duration = Duration::from_millis(2);
const URL: &str = "https://hooks.example.com/webhooks/partner";
const RAW_KEY: &[u8] = b"benchmark-secret-24bytes";
const ED25519_SEED: [u8; 32] = [7; 32];
const P256_SCALAR: [u8; 32] = [9; 32];

/// A case to time: its name and a closure run once per iteration.
type Case<'a> = (String, Box<dyn Fn() -> bool + 'a>);

/// The primitive a preset's verification costs, its baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bare {
    Hmac(Algorithm),
    /// The JWS recipe's crypto (Netlify): SHA-256 of the body, which the
    /// token's `sha256` claim binds, and HMAC-SHA256 over the token's
    /// `header.claims`.
    Jws,
    /// The HMAC over the body and the read a recipe with its timestamp
    /// in the JSON body cannot do without (Linear): `webhookTimestamp`
    /// found by serde in one pass, everything else skipped
    /// (`IgnoredAny`).
    HmacJsonTimestamp(Algorithm),
    Ed25519,
    EcdsaP256,
}

impl Bare {
    fn of(preset: &Preset) -> Option<Self> {
        match preset.recipe {
            Recipe::Scheme(SchemeKind::Twilio) => Some(Self::Hmac(Algorithm::Sha1)),
            Recipe::Scheme(_) => Some(Self::Hmac(Algorithm::Sha256)),
            Recipe::Jws { .. } => Some(Self::Jws),
            Recipe::Twilio(algorithm) => Some(Self::Hmac(algorithm)),
            Recipe::Signed(signed) => match signed.primitive {
                Primitive::Hmac(algorithm, _)
                    if signed
                        .timestamp
                        .is_some_and(|t| t.source == TimestampSource::Json(LINEAR_TIMESTAMP)) =>
                {
                    Some(Self::HmacJsonTimestamp(algorithm))
                }
                Primitive::Hmac(algorithm, _) => Some(Self::Hmac(algorithm)),
                Primitive::Ed25519 => Some(Self::Ed25519),
                Primitive::EcdsaP256 => Some(Self::EcdsaP256),
            },
            Recipe::Token { .. } | Recipe::BasicAuth => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Hmac(Algorithm::Sha1) => "bare HMAC-SHA1",
            Self::Hmac(Algorithm::Sha256) => "bare HMAC-SHA256",
            Self::Hmac(Algorithm::Sha512) => "bare HMAC-SHA512",
            Self::Jws => "bare SHA-256 + HMAC-SHA256 of the token",
            Self::HmacJsonTimestamp(_) => "bare HMAC + serde read of the timestamp",
            Self::Ed25519 => "bare Ed25519 verify",
            Self::EcdsaP256 => "bare ECDSA P-256 verify",
        }
    }
}

/// The shape of a preset's recipe: what its verification does, without
/// the names (header names, prefixes, literal separators do not change the
/// work). `None` for the presets left out (see the module docs).
pub fn shape(preset: &Preset) -> Option<String> {
    match preset.recipe {
        Recipe::Scheme(kind) => Some(format!("scheme {kind}")),
        Recipe::Jws { .. } => Some("jws HS256, body hash claim".to_owned()),
        Recipe::Twilio(algorithm) => Some(format!("twilio {algorithm:?}")),
        Recipe::Signed(signed) => {
            if matches!(signed.signature, SignatureAt::Json(_)) {
                return None;
            }
            let parts: Vec<&str> = signed
                .message
                .iter()
                .map(|part| match part {
                    Part::Body => "body",
                    Part::Text(_) => "text",
                    Part::Timestamp => "timestamp",
                    Part::Header(_) => "header",
                    Part::Method => "method",
                    Part::Url => "url",
                    Part::Json(_) => "json",
                    Part::Form => "form",
                })
                .collect();
            let SignatureAt::Headers {
                names,
                prefixes,
                separator,
            } = signed.signature
            else {
                return None;
            };
            let timestamp = signed.timestamp.map(|at| {
                let source = match at.source {
                    TimestampSource::Header(_) => "header",
                    TimestampSource::SignatureItem(_) => "item",
                    TimestampSource::FirstSignatureItem => "first item",
                    TimestampSource::Json(_) => "body",
                };
                format!("{source} {:?}", at.format)
            });
            Some(format!(
                "{:?} {:?} of {} in {} header(s){}{}{}",
                signed.primitive,
                signed.encoding,
                parts.join("+"),
                names.len(),
                if prefixes.iter().any(|p| !p.is_empty()) {
                    ", prefixed"
                } else {
                    ""
                },
                if separator.is_some() { ", list" } else { "" },
                timestamp.map_or_else(String::new, |t| format!("; timestamp {t}")),
            ))
        }
        Recipe::Token { .. } | Recipe::BasicAuth => None,
    }
}

/// One preset per recipe shape, in registry order, with how many presets
/// share its shape.
pub fn representatives() -> Vec<(&'static Preset, usize)> {
    let mut first: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (index, preset) in presets::all().iter().enumerate() {
        if let Some(shape) = shape(preset) {
            first.entry(shape).or_insert((index, 0)).1 += 1;
        }
    }
    let mut chosen: Vec<(usize, usize)> = first.into_values().collect();
    chosen.sort_unstable();
    chosen
        .into_iter()
        .filter_map(|(index, count)| presets::all().get(index).map(|p| (p, count)))
        .collect()
}

/// A JSON body of exactly `size` bytes (presets read fields of it: Linear
/// its timestamp).
fn json_body(size: usize) -> Vec<u8> {
    let head = format!(
        r#"{{"id":"evt_bench","type":"bench.event","webhookTimestamp":{}000,"data":""#,
        NOW
    );
    let mut body = head.into_bytes();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    while body.len() + 2 < size {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        body.push(alphabet[(state % alphabet.len() as u64) as usize]);
    }
    body.extend_from_slice(b"\"}");
    body
}

/// Twilio's incoming-SMS parameters (in the order Twilio sends them),
/// before and after `Body`.
const TWILIO_BEFORE: &[(&str, &str)] = &[
    ("ToCountry", "US"),
    ("ToState", "CA"),
    ("SmsMessageSid", "SM0123456789abcdef0123456789abcdef"),
    ("NumMedia", "0"),
    ("ToCity", "SAN+FRANCISCO"),
    ("FromZip", "94105"),
    ("SmsSid", "SM0123456789abcdef0123456789abcdef"),
    ("FromState", "CA"),
    ("SmsStatus", "received"),
    ("FromCity", "SAN+FRANCISCO"),
];
const TWILIO_AFTER: &[(&str, &str)] = &[
    ("FromCountry", "US"),
    ("To", "%2B14155550100"),
    ("ToZip", "94105"),
    ("NumSegments", "1"),
    ("MessageSid", "SM0123456789abcdef0123456789abcdef"),
    ("AccountSid", "AC0123456789abcdef0123456789abcdef"),
    ("From", "%2B14155550123"),
    ("ApiVersion", "2010-04-01"),
];

/// A form body of exactly `size` bytes: Twilio's SMS parameters, the
/// message text (`Body`) grown to the size as Twilio encodes it (words
/// joined by `+`, punctuation percent-encoded).
fn form_body(size: usize) -> Vec<u8> {
    let pairs = |list: &[(&str, &str)]| -> String {
        list.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&")
    };
    let before = format!("{}&Body=", pairs(TWILIO_BEFORE));
    let after = format!("&{}", pairs(TWILIO_AFTER));
    let room = size.saturating_sub(before.len() + after.len());
    let mut text = Vec::with_capacity(room);
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let letters = b"abcdefghijklmnopqrstuvwxyz";
    let mut word = 0usize;
    while text.len() < room {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let left = room - text.len();
        if word >= 3 + (state % 6) as usize && left > 4 {
            // End of a word: a space, now and then after a comma.
            if state.is_multiple_of(7) {
                text.extend_from_slice(b"%2C");
            }
            text.push(b'+');
            word = 0;
        } else {
            text.push(letters[(state % letters.len() as u64) as usize]);
            word += 1;
        }
    }
    text.truncate(room);
    let mut body = before.into_bytes();
    body.extend_from_slice(&text);
    body.extend_from_slice(after.as_bytes());
    body
}

/// True for the presets whose recipe signs form parameters (Twilio's,
/// Mandrill's).
fn signs_form(preset: &Preset) -> bool {
    matches!(
        preset.recipe,
        Recipe::Scheme(SchemeKind::Twilio) | Recipe::Twilio(_)
    ) || matches!(preset.recipe, Recipe::Signed(s) if s.message.contains(&Part::Form))
}

/// The body of a preset's case: form parameters for Twilio's recipe, JSON
/// for the others.
fn body(preset: &Preset, size: usize) -> Vec<u8> {
    if signs_form(preset) {
        form_body(size)
    } else {
        json_body(size)
    }
}

/// The secret a preset's verifier takes for [`RAW_KEY`] (or the private
/// keys above).
fn signing_secret(preset: &Preset) -> Option<Secret> {
    let text = match preset.recipe {
        Recipe::Scheme(SchemeKind::StandardWebhooks) => {
            format!("whsec_{}", STANDARD.encode(RAW_KEY))
        }
        Recipe::Signed(signed) => match signed.primitive {
            Primitive::Hmac(_, KeyFormat::Hex) => hex::encode(RAW_KEY),
            Primitive::Hmac(_, KeyFormat::Base64) => STANDARD.encode(RAW_KEY),
            Primitive::Ed25519 | Primitive::EcdsaP256 => return None,
            Primitive::Hmac(_, KeyFormat::Utf8) => String::from_utf8_lossy(RAW_KEY).into_owned(),
        },
        _ => String::from_utf8_lossy(RAW_KEY).into_owned(),
    };
    Some(Secret::new(text))
}

/// A signed request: its headers, the secret its verifier takes, and the
/// bytes its primitive covers.
type Signed = (Vec<(String, String)>, Secret, Vec<u8>);

/// A signed request of `preset` over `body`.
fn signed_request(
    preset: &Preset,
    body: &[u8],
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<Signed> {
    let secret = signing_secret(preset);
    let key = match (&secret, preset.recipe) {
        (Some(secret), _) => SigningKey::Secret(secret),
        (None, Recipe::Signed(s)) if s.primitive == Primitive::Ed25519 => {
            SigningKey::Ed25519Seed(&ED25519_SEED)
        }
        (None, _) => SigningKey::EcdsaP256(&P256_SCALAR),
    };
    let verifying = key
        .verifying_secret()
        .ok_or_else(|| anyhow::anyhow!("{}: no verifying key", preset.name))?;
    let mut headers: Vec<(&str, &str)> = vec![
        ("content-type", "application/x-www-form-urlencoded"),
        ("user-agent", "partner/1.0"),
        ("x-forwarded-for", "203.0.113.7"),
    ];
    headers.extend(preset.sample.headers.iter().copied());
    let outgoing = Outgoing {
        body,
        headers: &headers,
        url: Some(URL),
        method: "POST",
        timestamp: now,
    };
    let signed = preset
        .sign(&outgoing, key)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let message = preset
        .signed_message(&outgoing)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut all: Vec<(String, String)> = headers
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
    all.extend(signed.into_iter().map(|(n, v)| (n.to_owned(), v)));
    Ok((all, verifying, message))
}

fn time(run: &dyn Fn() -> bool, iterations: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..iterations {
        black_box(run());
    }
    start.elapsed()
}

/// The best rate (body bytes/s) of each case over `rounds`; case 0 is the
/// bare primitive (it sets the batch length).
fn best_rates(cases: &[Case<'_>], size: usize, rounds: usize) -> Vec<f64> {
    let mut iterations = 1u64;
    while time(&*cases[0].1, iterations) < SAMPLE / 4 {
        iterations *= 2;
    }
    let per_iter = time(&*cases[0].1, iterations).as_secs_f64() / iterations as f64;
    let iterations = ((SAMPLE.as_secs_f64() / per_iter.max(1e-12)) as u64).max(1);
    for (_, run) in cases {
        time(&**run, iterations);
    }
    let mut best = vec![0.0_f64; cases.len()];
    for round in 0..rounds {
        for k in 0..cases.len() {
            let i = (round + k) % cases.len();
            let elapsed = time(&*cases[i].1, iterations).as_secs_f64();
            best[i] = best[i].max(size as f64 * iterations as f64 / elapsed);
        }
    }
    best
}

/// The JSON pointer of Linear's timestamp, the one the
/// [`Bare::HmacJsonTimestamp`] baseline reads.
const LINEAR_TIMESTAMP: &str = "/webhookTimestamp";

/// What a hand-written Linear verifier deserializes: the timestamp, the
/// other fields skipped.
#[derive(serde::Deserialize)]
struct LinearTimestamp {
    #[serde(rename = "webhookTimestamp")]
    timestamp: u64,
}

/// The bare primitive over `message` (the bytes the recipe's primitive
/// covers; for the JWS recipe, the body and the token's signing input
/// `jws_input`), ready to time.
fn bare_case<'a>(
    bare: Bare,
    message: &'a [u8],
    jws_input: &'a [u8],
) -> anyhow::Result<Box<dyn Fn() -> bool + 'a>> {
    Ok(match bare {
        Bare::Hmac(Algorithm::Sha1) => Box::new(move || {
            <Hmac<Sha1> as KeyInit>::new_from_slice(black_box(RAW_KEY)).is_ok_and(|mut mac| {
                mac.update(black_box(message));
                black_box(mac.finalize().into_bytes())[0] != 0
            })
        }),
        Bare::Hmac(Algorithm::Sha256) => Box::new(move || {
            <Hmac<Sha256> as KeyInit>::new_from_slice(black_box(RAW_KEY)).is_ok_and(|mut mac| {
                mac.update(black_box(message));
                black_box(mac.finalize().into_bytes())[0] != 0
            })
        }),
        Bare::Hmac(Algorithm::Sha512) => Box::new(move || {
            <Hmac<Sha512> as KeyInit>::new_from_slice(black_box(RAW_KEY)).is_ok_and(|mut mac| {
                mac.update(black_box(message));
                black_box(mac.finalize().into_bytes())[0] != 0
            })
        }),
        Bare::HmacJsonTimestamp(algorithm) => {
            let mac = bare_case(Bare::Hmac(algorithm), message, jws_input)?;
            Box::new(move || {
                serde_json::from_slice::<LinearTimestamp>(black_box(message))
                    .is_ok_and(|read| black_box(read.timestamp) != 0)
                    && mac()
            })
        }
        Bare::Jws => Box::new(move || {
            use sha2::Digest as _;
            let digest = Sha256::digest(black_box(message));
            <Hmac<Sha256> as KeyInit>::new_from_slice(black_box(RAW_KEY)).is_ok_and(|mut mac| {
                mac.update(black_box(jws_input));
                (black_box(mac.finalize().into_bytes())[0] ^ digest[0]) != 0
            })
        }),
        Bare::Ed25519 => {
            use ed25519_dalek::Signer as _;
            let key = ed25519_dalek::SigningKey::from_bytes(&ED25519_SEED);
            let signature = key.sign(message);
            let verifying = key.verifying_key();
            Box::new(move || {
                verifying
                    .verify_strict(black_box(message), black_box(&signature))
                    .is_ok()
            })
        }
        Bare::EcdsaP256 => {
            use p256::ecdsa::signature::{Signer as _, Verifier as _};
            let key = p256::ecdsa::SigningKey::from_slice(&P256_SCALAR)
                .map_err(|_| anyhow::anyhow!("not a P-256 scalar"))?;
            let signature: p256::ecdsa::Signature = key.sign(message);
            let verifying = *key.verifying_key();
            Box::new(move || {
                verifying
                    .verify(black_box(message), black_box(&signature))
                    .is_ok()
            })
        }
    })
}

fn size_figures(size: usize, rounds: usize) -> anyhow::Result<Vec<Figure>> {
    let now = chrono::DateTime::from_timestamp(NOW, 0)
        .ok_or_else(|| anyhow::anyhow!("a valid instant"))?;
    let mib = 1024.0 * 1024.0;
    let mut out = Vec::new();
    // `HOOKBOX_BENCH_ONLY=<name>` keeps the presets whose name contains it
    // (for a profiler run).
    let only = std::env::var("HOOKBOX_BENCH_ONLY").unwrap_or_default();
    for (preset, sharing) in representatives() {
        let Some(bare) = Bare::of(preset) else {
            continue;
        };
        if !preset.name.contains(only.as_str()) {
            continue;
        }
        let body = body(preset, size);
        let (headers, secret, message) = signed_request(preset, &body, now)?;
        let name = if sharing > 1 {
            format!("{} (and {} like it)", preset.name, sharing - 1)
        } else {
            preset.name.to_owned()
        };
        let verifier = preset.verifier()?;
        let request = SignedRequest::new(
            &body,
            Headers::from_pairs(headers.iter().map(|(n, v)| (n.as_str(), v.as_str()))),
        )
        .with_url(URL);
        let secrets = vec![secret];
        // The JWS recipe's MAC input: the token up to its signature.
        let jws_input = match preset.recipe {
            Recipe::Jws { header, .. } => headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(header))
                .and_then(|(_, token)| token.rsplit_once('.'))
                .map(|(input, _)| input.as_bytes().to_vec())
                .ok_or_else(|| anyhow::anyhow!("{name}: no token"))?,
            _ => Vec::new(),
        };
        verifier
            .verify_at(&request, &secrets, now)
            .map_err(|e| anyhow::anyhow!("{name} does not verify: {e}"))?;
        let cases: Vec<Case<'_>> = vec![
            (
                bare.name().to_owned(),
                bare_case(bare, &message, &jws_input)?,
            ),
            (
                name.clone(),
                Box::new(|| {
                    verifier
                        .verify_at(black_box(&request), black_box(&secrets), now)
                        .is_ok()
                }),
            ),
        ];
        let best = best_rates(&cases, size, rounds);
        out.push(
            Figure::ratio(
                SECTION,
                format!("{name}, {} KiB body", size / 1024),
                "MiB/s",
                best[1] / mib,
                (bare.name(), best[0] / mib),
                Goal::RatioAtLeast(0.9),
            )
            .when_missed(when_missed(preset, bare)),
        );
    }
    Ok(out)
}

/// Why a preset can fall short of its bare primitive (said when it does).
fn when_missed(preset: &Preset, bare: Bare) -> &'static str {
    match (preset.recipe, bare) {
        (Recipe::Scheme(SchemeKind::Twilio) | Recipe::Twilio(_), _) => {
            "Twilio's recipe splits, percent-decodes and sorts the form parameters before \
             its MAC; see docs/signatures.md."
        }
        (Recipe::Jws { .. }, _) => {
            "Around its crypto (SHA-256 of the body, HMAC of the token) the JWS recipe \
             decodes and reads the token's header and claims; see docs/signatures.md."
        }
        (Recipe::Signed(signed), _)
            if signed
                .timestamp
                .is_some_and(|t| matches!(t.source, TimestampSource::Json(_))) =>
        {
            "Beside its baseline's lenient read of the timestamp, the recipe checks the \
             whole body as `serde_json::Value` does (every string's UTF-8 and escapes, \
             every number); see docs/signatures.md."
        }
        (_, Bare::Hmac(_) | Bare::Jws | Bare::HmacJsonTimestamp(_)) => {
            "At small bodies the header parsing and decoding around the MAC are a visible \
             share; see docs/signatures.md."
        }
        (_, Bare::Ed25519 | Bare::EcdsaP256) => {
            "Around the public-key verification: header parsing, decoding and the message \
             assembled in one piece; see docs/signatures.md."
        }
    }
}

/// Every signature figure: 1 KiB and 64 KiB bodies. `HOOKBOX_BENCH_KIB=1`
/// (or `64`) keeps one size (for a profiler run, with
/// `HOOKBOX_BENCH_ONLY`).
pub fn run(rounds: usize) -> anyhow::Result<Vec<Figure>> {
    let only = std::env::var("HOOKBOX_BENCH_KIB").unwrap_or_default();
    let mut out = Vec::new();
    for kib in [1, 64] {
        if only.is_empty() || only == kib.to_string() {
            out.extend(size_figures(kib * 1024, rounds)?);
        }
    }
    Ok(out)
}

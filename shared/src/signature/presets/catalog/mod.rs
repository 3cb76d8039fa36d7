//! The registry's entries, one per provider, grouped by family (one file
//! each); [`PRESETS`] lists them in alphabetical order.
//!
//! Adding a provider: one entry here, its vector in
//! `shared/tests/presets/`, and (only for a new kind of recipe) a building
//! block in `recipe.rs`. Names are lowercase, `-` between words.

mod business;
mod developer;
mod messaging;
mod payments;
mod standard;

use super::super::config::{Algorithm, Encoding, SchemeKind};
use super::super::recipe::{
    KeyFormat, Part, Primitive, Recipe, SignatureAt, Signed, TimeFormat, TimestampAt,
    TimestampSource,
};
pub(crate) use super::{EventField, Handshake, Preset, Sample};

pub(crate) use EventField::{Absent, Composite, Header, Json};

const SHA1: Primitive = Primitive::Hmac(Algorithm::Sha1, KeyFormat::Utf8);
const SHA256: Primitive = Primitive::Hmac(Algorithm::Sha256, KeyFormat::Utf8);
const SHA512: Primitive = Primitive::Hmac(Algorithm::Sha512, KeyFormat::Utf8);
const BODY: &[Part] = &[Part::Body];

/// An HMAC over the raw body in one header, after one of `prefixes`.
const fn body_hmac(
    primitive: Primitive,
    header: &'static [&'static str],
    prefixes: &'static [&'static str],
    encoding: Encoding,
) -> Recipe {
    Recipe::Signed(Signed {
        primitive,
        signature: SignatureAt::Headers {
            names: header,
            prefixes,
            separator: None,
        },
        encoding,
        message: BODY,
        timestamp: None,
    })
}

/// Stripe's layout, which several providers copy: one header of
/// `,`-separated `key=value` items, the signed timestamp in item `t`, and
/// hex HMAC-SHA256 of `{t}.{body}` after one of `prefixes` (several during
/// rotation).
const fn t_dot_body(
    header: &'static [&'static str],
    prefixes: &'static [&'static str],
    format: TimeFormat,
) -> Recipe {
    Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: header,
            prefixes,
            separator: Some(','),
        },
        encoding: Encoding::Hex,
        message: &[Part::Timestamp, Part::Text("."), Part::Body],
        timestamp: Some(TimestampAt {
            source: TimestampSource::SignatureItem("t"),
            format,
        }),
    })
}

const fn in_header(name: &'static str, format: TimeFormat) -> Option<TimestampAt> {
    Some(TimestampAt {
        source: TimestampSource::Header(name),
        format,
    })
}

const NO_HEADERS: &[(&str, &str)] = &[];

/// Every preset, in alphabetical order.
pub static PRESETS: &[Preset] = &[
    business::ACUITY_SCHEDULING,
    payments::ADYEN,
    business::AIRTABLE,
    business::ASANA,
    developer::BITBUCKET,
    business::BOX,
    business::CALENDLY,
    payments::CASHFREE,
    payments::CHARGEBEE,
    standard::CLERK,
    payments::COINBASE_COMMERCE,
    messaging::DISCORD,
    business::DOCUSIGN,
    standard::DODO_PAYMENTS,
    business::DROPBOX,
    business::EASYPOST,
    messaging::ELEVENLABS,
    business::FINCH,
    developer::GITHUB,
    developer::GITLAB,
    developer::GITLAB_SIGNED,
    payments::GOCARDLESS,
    business::HUBSPOT,
    business::IMAGEKIT,
    messaging::INTERCOM,
    developer::JIRA,
    payments::LEMON_SQUEEZY,
    messaging::LINE,
    developer::LINEAR,
    standard::LITHIC,
    standard::LIVEBLOCKS,
    messaging::MAILGUN,
    messaging::META,
    payments::MODERN_TREASURY,
    payments::MOLLIE,
    messaging::MUX,
    developer::NETLIFY,
    business::ONFIDO,
    standard::OPENAI,
    payments::ORB,
    payments::PADDLE,
    developer::PAGERDUTY,
    payments::PAYSTACK,
    messaging::POSTMARK,
    messaging::PUSHER,
    payments::RAZORPAY,
    payments::RECURLY,
    standard::REPLICATE,
    standard::RESEND,
    messaging::RETELL,
    business::SEGMENT,
    messaging::SENDGRID,
    developer::SENTRY,
    business::SHOPIFY,
    messaging::SLACK,
    payments::SQUARE,
    standard::STANDARD_WEBHOOKS,
    messaging::STREAM_CHAT,
    payments::STRIPE,
    standard::SVIX,
    messaging::TWILIO,
    messaging::TWILIO_SHA256,
    messaging::TWITCH_EVENTSUB,
    business::TYPEFORM,
    developer::VERCEL,
    business::WEBFLOW,
    business::WOOCOMMERCE,
    developer::WORKOS,
    messaging::ZOOM,
];

//! The registry's entries, one per provider, grouped by family (one file
//! each); [`PRESETS`] lists them in alphabetical order.
//!
//! Adding a provider: one entry here, its vector in
//! `shared/tests/presets/`, and (only for a new kind of recipe) a building
//! block in `recipe.rs`. Names are lowercase, `-` between words.

mod business;
mod crm;
mod developer;
mod identity;
mod messaging;
mod payments;
mod standard;
mod telephony;

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
    payments::ADYEN_STANDARD,
    business::AIRTABLE,
    payments::AIRWALLEX,
    developer::ALCHEMY,
    business::ASANA,
    crm::ATTIO,
    developer::BITBUCKET,
    payments::BOLT,
    business::BOX,
    developer::BUILDKITE,
    business::CAL_COM,
    business::CALENDLY,
    payments::CASHFREE,
    payments::CHARGEBEE,
    payments::CHECKOUT_COM,
    developer::CIRCLECI,
    standard::CLERK,
    business::CLICKUP,
    crm::CLOSE,
    payments::COINBASE_COMMERCE,
    crm::CUSTOMER_IO,
    messaging::DISCORD,
    business::DOCUSIGN,
    standard::DODO_PAYMENTS,
    business::DROPBOX,
    business::EASYPOST,
    messaging::ELEVENLABS,
    business::FINCH,
    payments::FLUTTERWAVE,
    developer::FRAME_IO,
    developer::GITEA,
    developer::GITHUB,
    developer::GITLAB,
    developer::GITLAB_SIGNED,
    payments::GOCARDLESS,
    crm::HELP_SCOUT,
    developer::HEROKU,
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
    crm::MAILJET,
    messaging::MANDRILL,
    payments::MAXIO,
    messaging::META,
    telephony::MICROSOFT_TEAMS,
    payments::MODERN_TREASURY,
    payments::MOLLIE,
    messaging::MUX,
    developer::NETLIFY,
    identity::OKTA,
    business::ONFIDO,
    standard::OPENAI,
    payments::ORB,
    payments::PADDLE,
    developer::PAGERDUTY,
    payments::PAYSTACK,
    identity::PERSONA,
    telephony::PLIVO,
    messaging::POSTMARK,
    messaging::PUSHER,
    payments::RAZORPAY,
    payments::RECURLY,
    standard::REPLICATE,
    standard::RESEND,
    messaging::RETELL,
    business::SEGMENT,
    telephony::SENDBIRD,
    messaging::SENDGRID,
    developer::SENTRY,
    business::SHOPIFY,
    telephony::SINCH,
    messaging::SLACK,
    messaging::SPARKPOST,
    payments::SQUARE,
    payments::SQUARESPACE,
    standard::STANDARD_WEBHOOKS,
    messaging::STREAM_CHAT,
    payments::STRIPE,
    identity::SUMSUB,
    standard::SVIX,
    business::TALLY,
    telephony::TELEGRAM,
    telephony::TELNYX,
    messaging::TWILIO,
    messaging::TWILIO_SHA256,
    messaging::TWITCH_EVENTSUB,
    business::TYPEFORM,
    telephony::VAPI,
    developer::VERCEL,
    identity::VERIFF,
    telephony::VIBER,
    business::WEBFLOW,
    business::WOOCOMMERCE,
    developer::WORKOS,
    developer::X_ACTIVITY,
    payments::XENDIT,
    crm::ZENDESK,
    messaging::ZOOM,
];

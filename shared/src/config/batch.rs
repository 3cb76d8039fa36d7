//! A partner whose provider sends many events in one POST (HubSpot,
//! SendGrid, Adyen's standard notifications, Meta, Mandrill, SparkPost):
//! where the events are in the verified body and, relative to each event,
//! its id, type and ordering key. Ingest verifies the POST once as the
//! provider signs it, then stores each event as its own inbox row
//! (`inbox::batch`, docs/batches.md).
//!
//! ```json
//! "batch": {"events": "/notificationItems", "item": "/NotificationRequestItem",
//!           "event_id": {"composite": [{"json_pointer": "/pspReference"},
//!                                      {"json_pointer": "/eventCode"}]},
//!           "event_type": "/eventCode", "max_events": 1000}
//! ```
//!
//! `events`: a JSON pointer to the array (`""`: the body is the array), or
//! `form_field`: the form field (`application/x-www-form-urlencoded`) whose
//! value is the JSON array (Mandrill's `mandrill_events`). `item`: where
//! the event is inside each element, a JSON pointer in which the token `*`
//! stands for an object's only member whatever its name (SparkPost's
//! `{"msys":{"message_event":{…}}}` is `/msys/*`). `event_id`,
//! `event_type` (JSON pointers, or composites of them, relative to the
//! event), `ordering_key` (a pointer): as for a partner, but per event;
//! without `event_id` an event's id is the sha256 of its bytes.
//! `max_events` (default [`DEFAULT_MAX_BATCH_EVENTS`], at most
//! [`MAX_MAX_BATCH_EVENTS`]). `allow_empty`: an empty batch is answered 200
//! with nothing stored (a provider's test POST) instead of refused.
//! `"batch": false` turns a preset's splitting off (one row per POST).

use serde::Deserialize;

use super::ConfigError;
use super::field::{FieldSource, RawEventType, check_pointer, partner_error};

/// Most events a batch holds unless the partner says otherwise.
pub const DEFAULT_MAX_BATCH_EVENTS: usize = 1_000;

/// Largest `max_events` accepted: every event of a POST is stored in one
/// statement (and each new one is a queue message).
pub const MAX_MAX_BATCH_EVENTS: usize = 10_000;

/// Where a batch's events are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventsAt {
    /// The JSON array at this pointer of the body (`""`: the body).
    Json(String),
    /// The JSON array that is the value of this form field.
    FormField(String),
}

/// A partner's batch declaration, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// Where the events are.
    pub events: EventsAt,
    /// Where the event is inside each element (`*`: an object's only
    /// member), if not the element itself.
    pub item: Option<String>,
    /// Where an event's id is, relative to the event (`None`: the sha256 of
    /// the event's bytes).
    pub event_id: Option<FieldSource>,
    /// Where an event's type is, relative to the event.
    pub event_type: Option<FieldSource>,
    /// JSON pointer to an event's ordering key, relative to the event.
    pub ordering_key: Option<String>,
    /// Most events one POST may hold (more: 413, nothing stored).
    pub max_events: usize,
    /// An empty batch is answered 200, nothing stored (else 400).
    pub allow_empty: bool,
}

/// `"batch"`: a declaration, or `false` (a preset's splitting off).
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawBatchChoice {
    Off(bool),
    On(Box<RawBatch>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBatch {
    #[serde(default)]
    events: Option<String>,
    #[serde(default)]
    form_field: Option<String>,
    #[serde(default)]
    item: Option<String>,
    #[serde(default)]
    event_id: Option<RawEventType>,
    #[serde(default)]
    event_type: Option<RawEventType>,
    #[serde(default)]
    ordering_key: Option<String>,
    #[serde(default)]
    max_events: Option<usize>,
    #[serde(default)]
    allow_empty: bool,
}

/// A field relative to an event: JSON pointers only (a header is one per
/// POST: every event would share it).
fn event_field(partner: &str, at: &str, raw: RawEventType) -> Result<FieldSource, ConfigError> {
    let field = raw.field(partner, at)?;
    fn pointers_only(field: &FieldSource) -> bool {
        match field {
            FieldSource::Header(_) => false,
            FieldSource::JsonPointer(_) => true,
            FieldSource::Composite(parts) => parts.iter().all(pointers_only),
        }
    }
    if pointers_only(&field) {
        Ok(field)
    } else {
        Err(partner_error(
            partner,
            at,
            "a batch's fields are JSON pointers relative to each event: a header is one per \
             POST, every event would share it",
        ))
    }
}

impl RawBatch {
    pub(super) fn validate(self, partner: &str) -> Result<Batch, ConfigError> {
        let events = match (self.events, self.form_field) {
            (Some(pointer), None) => {
                if !pointer.is_empty() {
                    check_pointer(partner, "batch.events", &pointer)?;
                }
                EventsAt::Json(pointer)
            }
            (None, Some(field)) if !field.trim().is_empty() => EventsAt::FormField(field),
            _ => {
                return Err(partner_error(
                    partner,
                    "batch",
                    "give exactly one of \"events\" (a JSON pointer to the array, \"\" for the \
                     body itself) or \"form_field\" (the form field holding the JSON array)",
                ));
            }
        };
        if let Some(item) = &self.item {
            check_pointer(partner, "batch.item", item)?;
        }
        let event_id = self
            .event_id
            .map(|raw| event_field(partner, "batch.event_id", raw))
            .transpose()?;
        let event_type = self
            .event_type
            .map(|raw| event_field(partner, "batch.event_type", raw))
            .transpose()?;
        if let Some(pointer) = &self.ordering_key {
            check_pointer(partner, "batch.ordering_key", pointer)?;
        }
        let max_events = self.max_events.unwrap_or(DEFAULT_MAX_BATCH_EVENTS);
        if !(1..=MAX_MAX_BATCH_EVENTS).contains(&max_events) {
            return Err(partner_error(
                partner,
                "batch.max_events",
                format!(
                    "{max_events} is outside 1..={MAX_MAX_BATCH_EVENTS} (a POST's events are \
                     stored in one statement)"
                ),
            ));
        }
        Ok(Batch {
            events,
            item: self.item,
            event_id,
            event_type,
            ordering_key: self.ordering_key,
            max_events,
            allow_empty: self.allow_empty,
        })
    }
}

impl RawBatchChoice {
    /// The declaration (`None`: `false`, no splitting); `true` is refused.
    pub(super) fn validate(self, partner: &str) -> Result<Option<Batch>, ConfigError> {
        match self {
            Self::Off(false) => Ok(None),
            Self::Off(true) => Err(partner_error(
                partner,
                "batch",
                "is a declaration ({\"events\": …}) or false (no splitting), not true",
            )),
            Self::On(raw) => raw.validate(partner).map(Some),
        }
    }
}

/// The batch declaration of the providers that send many events in one
/// POST, by preset name: each from the provider's documentation of its
/// payload (cited).
pub fn of_preset(preset: &str) -> Option<Batch> {
    let pointer = |p: &str| Some(FieldSource::JsonPointer(p.to_owned()));
    let batch = |events: EventsAt| Batch {
        events,
        item: None,
        event_id: None,
        event_type: None,
        ordering_key: None,
        max_events: DEFAULT_MAX_BATCH_EVENTS,
        allow_empty: false,
    };
    Some(match preset {
        // https://developers.hubspot.com/docs/api/webhooks: "up to 100
        // events per request", each with eventId and subscriptionType
        "hubspot" => Batch {
            event_id: pointer("/eventId"),
            event_type: pointer("/subscriptionType"),
            ordering_key: Some("/objectId".into()),
            ..batch(EventsAt::Json(String::new()))
        },
        // https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/event:
        // an array of events, each with sg_event_id (unique) and event
        "sendgrid" => Batch {
            event_id: pointer("/sg_event_id"),
            event_type: pointer("/event"),
            ordering_key: Some("/sg_message_id".into()),
            ..batch(EventsAt::Json(String::new()))
        },
        // https://developers.facebook.com/docs/graph-api/webhooks/getting-started:
        // {"object": …, "entry": [{"id", "time", "changes": [{"field", "value"}]}]};
        // an entry has no id of its own: its bytes' sha256
        "meta" => Batch {
            event_type: pointer("/changes/0/field"),
            ordering_key: Some("/id".into()),
            ..batch(EventsAt::Json("/entry".into()))
        },
        // https://docs.adyen.com/development-resources/webhooks/webhook-types/:
        // notificationItems[].NotificationRequestItem; Adyen identifies a
        // notification by its pspReference, eventCode and success
        "adyen-standard" => Batch {
            item: Some("/NotificationRequestItem".into()),
            event_id: Some(FieldSource::Composite(vec![
                FieldSource::JsonPointer("/pspReference".into()),
                FieldSource::JsonPointer("/eventCode".into()),
                FieldSource::JsonPointer("/success".into()),
            ])),
            event_type: pointer("/eventCode"),
            ..batch(EventsAt::Json("/notificationItems".into()))
        },
        // https://mailchimp.com/developer/transactional/guides/track-respond-activity-webhooks/:
        // the form field mandrill_events holds a JSON array; an event's
        // _id is its message's, shared by that message's events: each
        // event is keyed by its bytes' sha256. Adding a webhook sends an
        // empty batch, answered 200.
        "mandrill" => Batch {
            event_type: pointer("/event"),
            allow_empty: true,
            ..batch(EventsAt::FormField("mandrill_events".into()))
        },
        // https://developers.sparkpost.com/api/webhooks/: an array of
        // {"msys": {"<kind>_event": {"event_id", "type", …}}}
        "sparkpost" => Batch {
            item: Some("/msys/*".into()),
            event_id: pointer("/event_id"),
            event_type: pointer("/type"),
            ..batch(EventsAt::Json(String::new()))
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Option<Batch>, ConfigError> {
        let raw: RawBatchChoice = serde_json::from_str(json).expect("json");
        raw.validate("p")
    }

    #[test]
    fn a_declaration_names_where_the_events_are() {
        let batch = parse(r#"{"events": "", "event_id": "/eventId", "event_type": "/t"}"#)
            .expect("valid")
            .expect("on");
        assert_eq!(batch.events, EventsAt::Json(String::new()));
        assert_eq!(
            batch.event_id,
            Some(FieldSource::JsonPointer("/eventId".into()))
        );
        assert_eq!(batch.max_events, DEFAULT_MAX_BATCH_EVENTS);
        assert_eq!(parse("false").expect("off"), None);
    }

    #[test]
    fn what_a_declaration_cannot_say_is_refused_by_field() {
        for (json, field) in [
            (r#"{}"#, "batch"),
            (r#"{"events": "", "form_field": "f"}"#, "batch"),
            (r#"{"events": "entry"}"#, "batch.events"),
            (r#"{"events": "", "item": "x"}"#, "batch.item"),
            (
                r#"{"events": "", "event_id": {"header": "x-id"}}"#,
                "batch.event_id",
            ),
            (r#"{"events": "", "max_events": 0}"#, "batch.max_events"),
            (r#"{"events": "", "max_events": 10001}"#, "batch.max_events"),
            ("true", "batch"),
        ] {
            match parse(json) {
                Err(ConfigError::Partner { field: f, .. }) => assert_eq!(f, field, "{json}"),
                other => panic!("{json}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_batching_presets_declare_their_events() {
        for name in [
            "hubspot",
            "sendgrid",
            "meta",
            "adyen-standard",
            "mandrill",
            "sparkpost",
        ] {
            assert!(of_preset(name).is_some(), "{name}");
        }
        assert_eq!(of_preset("stripe"), None);
        // each names a preset of the registry, and no other preset batches
        let batching: Vec<&str> = crate::signature::presets::names()
            .filter(|name| of_preset(name).is_some())
            .collect();
        let mut want = vec![
            "adyen-standard",
            "hubspot",
            "mandrill",
            "meta",
            "sendgrid",
            "sparkpost",
        ];
        let mut got = batching.clone();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want);
    }
}

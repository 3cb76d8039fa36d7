//! Svix's application and endpoint documents (`ApplicationIn`/`Out`/
//! `Patch`, `EndpointIn`/`Update`/`Out`/`Patch`) to and from the tenant
//! functions' documents, each refusal naming the field by its Svix name;
//! the generic reading of bodies and lists is [`super::wire`].

use serde_json::{Map, Value, json};

use super::error::ApiError;
use super::wire::{Body, is_name};
use crate::tenants::{Endpoint, Tenant};

// ------------------------------------------------------------ applications

/// The tenant functions' fields by their Svix names.
pub(crate) fn app_field(snake: &str) -> Option<&'static str> {
    Some(match snake {
        "uid" => "uid",
        "name" => "name",
        "metadata" => "metadata",
        "rate_limit" => "throttleRate",
        _ => return None,
    })
}

/// `ApplicationOut`.
pub(crate) fn app_out(t: &Tenant) -> Value {
    let mut out = json!({
        "id": t.id,
        "uid": t.uid,
        "name": t.name,
        "metadata": t.metadata,
        "throttleRate": t.rate_limit,
        "createdAt": t.created_at,
        "updatedAt": t.updated_at,
    });
    // Svix's server still sends the deprecated name (hidden from its spec)
    if let Some(r) = t.rate_limit {
        out["rateLimit"] = json!(r);
    }
    out
}

const APP_FIELDS: &[&str] = &["name", "uid", "metadata", "throttleRate", "rateLimit"];

/// The throttle rate of an application or endpoint: `throttleRate`, else
/// its deprecated name `rateLimit` (as Svix's server reads them).
fn throttle(body: &Body) -> Result<Option<u64>, ApiError> {
    let new = body.uint("throttleRate", 1, 65_535)?;
    let old = body.uint("rateLimit", 1, 65_535)?;
    Ok(new.or(old))
}

/// `ApplicationIn` as a whole tenant document (create, and PUT, which
/// replaces every field).
pub(crate) fn app_in(body: &Body) -> Result<Value, ApiError> {
    body.only(APP_FIELDS, &[])?;
    Ok(json!({
        "name": body.required_string("name")?,
        "uid": body.uid("uid")?,
        "metadata": body.string_map("metadata")?.unwrap_or_default(),
        "rate_limit": throttle(body)?,
    }))
}

/// `ApplicationPatch` as the changes it names.
pub(crate) fn app_patch(body: &Body) -> Result<Value, ApiError> {
    body.only(APP_FIELDS, &[])?;
    let mut changes = Map::new();
    if body.has("name") {
        changes.insert("name".into(), json!(body.required_string("name")?));
    }
    if body.has("uid") {
        changes.insert("uid".into(), json!(body.uid("uid")?));
    }
    if body.has("metadata") {
        changes.insert("metadata".into(), json!(body.string_map("metadata")?));
    }
    if body.has("throttleRate") || body.has("rateLimit") {
        changes.insert("rate_limit".into(), json!(throttle(body)?));
    }
    Ok(Value::Object(changes))
}

// ---------------------------------------------------------------- endpoints

/// The endpoint functions' fields by their Svix names.
pub(crate) fn endpoint_field(snake: &str) -> Option<&'static str> {
    Some(match snake {
        "uid" => "uid",
        "url" => "url",
        "description" => "description",
        "version" => "version",
        "disabled" => "disabled",
        "filter_types" => "eventTypes",
        "channels" => "channels",
        "header" | "headers" => "headers",
        "metadata" => "metadata",
        "rate_limit" => "throttleRate",
        _ => return None,
    })
}

/// `EndpointOut` (with the deprecated names Svix's server still sends:
/// `filterTypes`, `rateLimit`, `version`).
pub(crate) fn endpoint_out(e: &Endpoint) -> Value {
    json!({
        "id": e.id,
        "uid": e.uid,
        "url": e.url,
        "description": e.description,
        "throttleRate": e.rate_limit,
        "rateLimit": e.rate_limit,
        "version": e.version,
        "disabled": e.disabled,
        "eventTypes": e.filter_types,
        "filterTypes": e.filter_types,
        "channels": e.channels,
        "metadata": e.metadata,
        "createdAt": e.created_at,
        "updatedAt": e.updated_at,
    })
}

const ENDPOINT_FIELDS: &[&str] = &[
    "url",
    "description",
    "uid",
    "disabled",
    "eventTypes",
    "channels",
    "metadata",
    "throttleRate",
    // deprecated names Svix's server still reads
    "rateLimit",
    "filterTypes",
    "version",
];

/// Svix's event type names and channels: `^[a-zA-Z0-9\-_.]+$` up to
/// `max_len`, at most `max_items` (hookbox's own `*` patterns and longer
/// lists are set through SQL or the CLI).
fn names(
    field: &str,
    list: Option<Vec<String>>,
    max_items: usize,
    max_len: usize,
) -> Result<Option<Vec<String>>, ApiError> {
    if let Some(items) = &list {
        if items.len() > max_items {
            return Err(ApiError::validation(
                field,
                format!("holds {} items, at most {max_items}", items.len()),
            ));
        }
        if let Some(bad) = items.iter().find(|i| !is_name(i) || i.len() > max_len) {
            return Err(ApiError::validation(
                field,
                format!(
                    "{bad:?} is not 1 to {max_len} letters, digits, '-', '_' or '.' \
                     (^[a-zA-Z0-9\\-_.]+$; hookbox's `*` patterns are set through SQL or the CLI)"
                ),
            ));
        }
    }
    Ok(list)
}

fn event_types(body: &Body) -> Result<Option<Vec<String>>, ApiError> {
    let field = if body.has("eventTypes") {
        "eventTypes"
    } else {
        "filterTypes"
    };
    names(field, body.string_list(field)?, usize::MAX, 256)
}

fn channels(body: &Body) -> Result<Option<Vec<String>>, ApiError> {
    names("channels", body.string_list("channels")?, 10, 128)
}

/// What `EndpointIn` (create) or `EndpointUpdate` (PUT) carry: the whole
/// endpoint document (every field not given takes its default, as a PUT
/// replaces the endpoint), and for a create the `secret` to seal.
#[derive(Debug)]
pub(crate) struct EndpointInput {
    pub spec: Value,
    pub secret: Option<String>,
}

/// Reads `EndpointIn` (`create`: with `secret` and `headers`) or
/// `EndpointUpdate`.
pub(crate) fn endpoint_in(body: &Body, create: bool) -> Result<EndpointInput, ApiError> {
    let mut known = ENDPOINT_FIELDS.to_vec();
    if create {
        known.extend(["secret", "headers"]);
    }
    body.only(&known, &[])?;
    let url = body.required_string("url")?;
    let mut spec = json!({
        "url": url,
        "description": body.string_not_null("description")?.unwrap_or_default(),
        "uid": body.uid("uid")?,
        "disabled": body.bool("disabled")?.unwrap_or(false),
        "filter_types": event_types(body)?,
        "channels": channels(body)?,
        "metadata": body.string_map("metadata")?.unwrap_or_default(),
        "rate_limit": throttle(body)?,
        "version": body.uint("version", 1, 2_147_483_647)?.unwrap_or(1),
    });
    if create {
        if let Some(headers) = body.string_map("headers")? {
            spec["headers"] = Value::Object(headers);
        }
    }
    let secret = if create { body.string("secret")? } else { None };
    Ok(EndpointInput { spec, secret })
}

/// `EndpointPatch` as the changes it names.
pub(crate) fn endpoint_patch(body: &Body) -> Result<Value, ApiError> {
    body.only(ENDPOINT_FIELDS, &[])?;
    let mut changes = Map::new();
    if body.has("url") {
        changes.insert("url".into(), json!(body.required_string("url")?));
    }
    if body.has("description") {
        changes.insert(
            "description".into(),
            json!(body.string_not_null("description")?),
        );
    }
    if body.has("uid") {
        changes.insert("uid".into(), json!(body.uid("uid")?));
    }
    if body.has("disabled") {
        changes.insert("disabled".into(), json!(body.bool("disabled")?));
    }
    if body.has("eventTypes") || body.has("filterTypes") {
        changes.insert("filter_types".into(), json!(event_types(body)?));
    }
    if body.has("channels") {
        changes.insert("channels".into(), json!(channels(body)?));
    }
    if body.has("metadata") {
        changes.insert("metadata".into(), json!(body.string_map("metadata")?));
    }
    if body.has("throttleRate") || body.has("rateLimit") {
        changes.insert("rate_limit".into(), json!(throttle(body)?));
    }
    if body.has("version") {
        body.not_null("version")?;
        changes.insert(
            "version".into(),
            json!(body.uint("version", 1, 2_147_483_647)?),
        );
    }
    Ok(Value::Object(changes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(v: Value) -> Body {
        Body::parse(v.to_string().as_bytes(), false).expect("object")
    }

    fn loc(e: ApiError) -> String {
        match e {
            ApiError::Validation { loc, .. } => loc,
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn an_application_is_read_with_svix_names_and_every_refusal_names_its_field() {
        let spec = app_in(&body(
            json!({"name": "Acme", "uid": "acme", "throttleRate": 5}),
        ))
        .expect("valid");
        assert_eq!(
            spec,
            json!({"name": "Acme", "uid": "acme", "metadata": {}, "rate_limit": 5})
        );
        // the deprecated name still reads
        let spec = app_in(&body(json!({"name": "A", "rateLimit": 7}))).expect("valid");
        assert_eq!(spec["rate_limit"], 7);
        for (doc, field) in [
            (json!({"uid": "x"}), "body.name"),
            (json!({"name": ""}), "body.name"),
            (json!({"name": "n", "uid": "a b"}), "body.uid"),
            (json!({"name": "n", "throttleRate": 0}), "body.throttleRate"),
            (json!({"name": "n", "metadata": {"a": 1}}), "body.metadata"),
            (json!({"name": "n", "colour": "red"}), "body.colour"),
        ] {
            assert_eq!(
                loc(app_in(&body(doc.clone())).expect_err("refused")),
                field,
                "{doc}"
            );
        }
        // a patch names only what it changes; null clears what may be cleared
        assert_eq!(
            app_patch(&body(json!({"uid": null, "throttleRate": null}))).expect("valid"),
            json!({"uid": null, "rate_limit": null})
        );
        assert_eq!(
            loc(app_patch(&body(json!({"name": null}))).expect_err("refused")),
            "body.name"
        );
    }

    #[test]
    fn an_endpoint_put_replaces_every_field_and_a_patch_only_those_named() {
        let input =
            endpoint_in(&body(json!({"url": "https://x.example/h"})), false).expect("valid");
        assert_eq!(
            input.spec,
            json!({
                "url": "https://x.example/h", "description": "", "uid": null, "disabled": false,
                "filter_types": null, "channels": null, "metadata": {}, "rate_limit": null,
                "version": 1,
            })
        );
        assert_eq!(
            loc(endpoint_in(
                &body(json!({"url": "https://x", "secret": "whsec_x"})),
                false
            )
            .expect_err("no secret on PUT")),
            "body.secret"
        );
        let input = endpoint_in(
            &body(json!({"url": "https://x", "secret": "whsec_x", "filterTypes": ["a.b"]})),
            true,
        )
        .expect("valid");
        assert_eq!(input.secret.as_deref(), Some("whsec_x"));
        assert_eq!(input.spec["filter_types"], json!(["a.b"]));
        assert_eq!(
            endpoint_patch(&body(json!({"disabled": true, "eventTypes": null}))).expect("valid"),
            json!({"disabled": true, "filter_types": null})
        );
        for (doc, field) in [
            (json!({"eventTypes": []}), "body.eventTypes"),
            (json!({"channels": ["a", "a"]}), "body.channels"),
            (json!({"disabled": "yes"}), "body.disabled"),
            (json!({"url": null}), "body.url"),
        ] {
            assert_eq!(
                loc(endpoint_patch(&body(doc.clone())).expect_err("refused")),
                field,
                "{doc}"
            );
        }
    }
}

//! Event types (`/api/v1/event-type`): the catalogue of migration 23
//! (`hookbox_event_types`). Deliveries do not depend on it: an endpoint may
//! filter on any type or `*` pattern. Deleting archives (`expunge=true`
//! deletes); creating an archived type again unarchives it, as Svix does.
//! One field is hookbox's own (docs/portal.md, "The event catalog"):
//! `enforceSchema`, publishing then checks payloads against the latest
//! schema (checked enforceable as the SQL face checks it).

use serde_json::{Map, Value, json};

use super::error::ApiError;
use super::wire::{self, Body};
use super::{ApiResponse, Ctx};
use crate::params;
use crate::store::{Statement, Value as Param, fetch_optional};

macro_rules! doc_statement {
    ($name:literal, $head:literal, $tail:literal) => {
        Statement::new(
            $name,
            concat!(
                $head,
                " pg_catalog.jsonb_build_object(
        'name', name, 'description', description, 'archived', archived,
        'deprecated', deprecated, 'featureFlag', feature_flag, 'schemas', schemas,
        'enforceSchema', enforce_schema,
        'createdAt', created_at, 'updatedAt', updated_at) AS doc ",
                $tail
            ),
        )
    };
}

const GET: Statement = doc_statement!(
    "event_types.get",
    "SELECT",
    "FROM hookbox_event_types WHERE name = :name"
);

const LOCK: Statement = doc_statement!(
    "event_types.lock",
    "SELECT",
    "FROM hookbox_event_types WHERE name = :name FOR UPDATE"
);

const INSERT: Statement = doc_statement!(
    "event_types.insert",
    "INSERT INTO hookbox_event_types (name, description, archived, deprecated, feature_flag,
                                      schemas, enforce_schema, created_at, updated_at)
     VALUES (:name, :description, CAST(:archived AS boolean), CAST(:deprecated AS boolean),
             :feature_flag, CAST(:schemas AS jsonb), CAST(:enforce_schema AS boolean), now(),
             now())
     ON CONFLICT (name) DO NOTHING
     RETURNING",
    ""
);

const REPLACE: Statement = doc_statement!(
    "event_types.replace",
    "UPDATE hookbox_event_types
        SET description = :description, archived = CAST(:archived AS boolean),
            deprecated = CAST(:deprecated AS boolean), feature_flag = :feature_flag,
            schemas = CAST(:schemas AS jsonb), enforce_schema = CAST(:enforce_schema AS boolean),
            updated_at = now()
      WHERE name = :name
     RETURNING",
    ""
);

const LIST: Statement = Statement::new(
    "event_types.list",
    "SELECT coalesce(pg_catalog.jsonb_agg(t.doc ORDER BY t.name), '[]') AS docs,
            count(*) > CAST(:limit AS integer) AS more
       FROM (SELECT name, pg_catalog.jsonb_build_object(
                    'name', name, 'description', description, 'archived', archived,
                    'deprecated', deprecated, 'featureFlag', feature_flag, 'schemas', schemas,
                    'enforceSchema', enforce_schema,
                    'createdAt', created_at, 'updatedAt', updated_at) AS doc
               FROM hookbox_event_types
              WHERE (CAST(:after AS text) IS NULL OR name > CAST(:after AS text))
                AND (CAST(:include_archived AS boolean) OR NOT archived)
              ORDER BY name
              LIMIT CAST(:limit AS integer) + 1) AS t",
);

const ARCHIVE: Statement = Statement::new(
    "event_types.archive",
    "UPDATE hookbox_event_types SET archived = true, updated_at = now() WHERE name = :name",
);

const EXPUNGE: Statement = Statement::new(
    "event_types.expunge",
    "DELETE FROM hookbox_event_types WHERE name = :name",
);

fn not_found(name: &str) -> ApiError {
    ApiError::NotFound(format!("no event type {name:?}"))
}

/// An event type's fields as read from a body (`EventTypeIn`,
/// `EventTypeUpdate`, or a patch merged over the stored one).
struct Fields {
    description: String,
    archived: bool,
    deprecated: bool,
    feature_flag: Option<String>,
    schemas: Option<Map<String, Value>>,
    enforce_schema: bool,
}

impl Fields {
    fn params(&self, name: &str) -> crate::store::Params {
        params! {
            "name" => name,
            "description" => self.description.as_str(),
            "archived" => self.archived,
            "deprecated" => self.deprecated,
            "feature_flag" => self.feature_flag.clone().map_or(Param::Null, Param::Text),
            "schemas" => self.schemas.clone().map_or(Param::Null, |s| Param::Json(Value::Object(s))),
            "enforce_schema" => self.enforce_schema,
        }
    }
}

const FIELDS: &[&str] = &[
    "description",
    "archived",
    "deprecated",
    "featureFlag",
    "schemas",
    "enforceSchema",
];

/// Refuses a schema enforcement cannot apply (a keyword the validator
/// does not know, an example it refuses), naming `schemas`.
const ENFORCEABLE: Statement = Statement::new(
    "event_types.enforceable",
    "SELECT hookbox_event_type_enforceable('hookbox_event_type', CAST(:schemas AS jsonb), NULL) IS NULL
            AS ok",
);

async fn check_enforceable(cx: &Ctx<'_>, fields: &Fields) -> Result<(), ApiError> {
    if !fields.enforce_schema {
        return Ok(());
    }
    let schemas = fields
        .schemas
        .clone()
        .map_or(Param::Null, |s| Param::Json(Value::Object(s)));
    match fetch_optional(cx.db, &ENFORCEABLE, &params! { "schemas" => schemas }).await {
        Ok(_) => Ok(()),
        Err(e) => match crate::tenants::ManageError::from(e) {
            crate::tenants::ManageError::Invalid(msg) => Err(ApiError::validation("schemas", msg)),
            crate::tenants::ManageError::Db(e) => Err(e.into()),
            other => Err(ApiError::Internal(other.to_string())),
        },
    }
}

fn feature_flag(body: &Body) -> Result<Option<String>, ApiError> {
    let flag = body.string("featureFlag")?;
    if flag.as_deref().is_some_and(|f| !wire::is_name(f)) {
        return Err(ApiError::validation(
            "featureFlag",
            "must be 1 to 256 letters, digits, '-', '_' or '.'",
        ));
    }
    Ok(flag)
}

fn schemas(body: &Body) -> Result<Option<Map<String, Value>>, ApiError> {
    let schemas = body.object("schemas")?;
    if let Some((version, _)) = schemas
        .as_ref()
        .and_then(|s| s.iter().find(|(_, v)| !v.is_object()))
    {
        return Err(ApiError::validation(
            "schemas",
            format!("schemas.{version} must be a JSON schema (an object)"),
        ));
    }
    Ok(schemas)
}

fn description(body: &Body) -> Result<String, ApiError> {
    match body.string_not_null("description")? {
        Some(d) if d.len() <= 4096 => Ok(d),
        Some(d) => Err(ApiError::validation(
            "description",
            format!("is {} bytes, over 4096", d.len()),
        )),
        None => Err(ApiError::validation("description", "field required")),
    }
}

/// `EventTypeIn` / `EventTypeUpdate`: every field (defaults for the absent).
fn whole(body: &Body) -> Result<Fields, ApiError> {
    Ok(Fields {
        description: description(body)?,
        archived: body.bool("archived")?.unwrap_or(false),
        deprecated: body.bool("deprecated")?.unwrap_or(false),
        feature_flag: feature_flag(body)?,
        schemas: schemas(body)?,
        enforce_schema: body.bool("enforceSchema")?.unwrap_or(false),
    })
}

fn check_name(name: &str, loc: &str) -> Result<(), ApiError> {
    if wire::is_name(name) {
        return Ok(());
    }
    Err(ApiError::Validation {
        loc: loc.into(),
        msg: format!("{name:?} must be 1 to 256 letters, digits, '-', '_' or '.'"),
    })
}

async fn doc(
    cx: &Ctx<'_>,
    statement: &Statement,
    params: &crate::store::Params,
) -> Result<Option<Value>, ApiError> {
    match fetch_optional(cx.db, statement, params).await? {
        Some(row) => Ok(Some(row.json("doc")?)),
        None => Ok(None),
    }
}

fn without_schemas(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.insert("schemas".into(), Value::Null);
    }
    v
}

/// `GET /api/v1/event-type` (`include_archived`, `with_content`).
pub(crate) async fn list(cx: &Ctx<'_>) -> Result<ApiResponse, ApiError> {
    let q = wire::list_query(&cx.req.query, &["include_archived", "with_content"])?;
    let include_archived = wire::query_bool(&cx.req.query, "include_archived")?;
    let with_content = wire::query_bool(&cx.req.query, "with_content")?;
    let row = crate::store::fetch_one(
        cx.db,
        &LIST,
        &params! {
            "after" => q.iterator.clone().map_or(Param::Null, Param::Text),
            "include_archived" => include_archived,
            "limit" => i64::from(q.limit),
        },
    )
    .await?;
    let mut data: Vec<Value> = serde_json::from_value(row.json("docs")?)
        .map_err(|e| ApiError::Internal(format!("event_types.list: {e}")))?;
    let done = !row.bool("more")?;
    data.truncate(q.limit as usize);
    if !with_content {
        data = data.into_iter().map(without_schemas).collect();
    }
    let iterator = data
        .last()
        .and_then(|d| d["name"].as_str())
        .map(String::from);
    Ok(ApiResponse::json(
        200,
        &wire::list_response(data, iterator, done),
    ))
}

/// `POST /api/v1/event-type` (201; 409 when it exists, unless archived:
/// then it is unarchived with the fields given).
pub(crate) async fn create(cx: &Ctx<'_>) -> Result<ApiResponse, ApiError> {
    let body = Body::parse(&cx.req.body, false)?;
    let mut known = FIELDS.to_vec();
    known.push("name");
    body.only(&known, &[])?;
    let name = body.required_string("name")?;
    check_name(&name, "body.name")?;
    let fields = whole(&body)?;
    check_enforceable(cx, &fields).await?;
    if let Some(created) = doc(cx, &INSERT, &fields.params(&name)).await? {
        return Ok(ApiResponse::json(201, &created));
    }
    let existing = doc(cx, &LOCK, &params! { "name" => name.as_str() })
        .await?
        .ok_or_else(|| not_found(&name))?;
    if existing["archived"] != json!(true) {
        return Err(ApiError::Conflict {
            code: "event_type_exists",
            detail: format!("an event type named {name:?} exists"),
        });
    }
    let unarchived = Fields {
        archived: false,
        ..fields
    };
    let updated = doc(cx, &REPLACE, &unarchived.params(&name))
        .await?
        .ok_or_else(|| not_found(&name))?;
    Ok(ApiResponse::json(201, &updated))
}

/// `GET /api/v1/event-type/{name}`.
pub(crate) async fn get(cx: &Ctx<'_>, name: &str) -> Result<ApiResponse, ApiError> {
    let found = doc(cx, &GET, &params! { "name" => name })
        .await?
        .ok_or_else(|| not_found(name))?;
    Ok(ApiResponse::json(200, &found))
}

/// `PUT /api/v1/event-type/{name}`: replaces it (200) or creates it (201).
pub(crate) async fn put(cx: &Ctx<'_>, name: &str) -> Result<ApiResponse, ApiError> {
    check_name(name, "path.event_type_name")?;
    let body = Body::parse(&cx.req.body, false)?;
    body.only(FIELDS, &[])?;
    let fields = whole(&body)?;
    check_enforceable(cx, &fields).await?;
    if let Some(updated) = doc(cx, &REPLACE, &fields.params(name)).await? {
        return Ok(ApiResponse::json(200, &updated));
    }
    match doc(cx, &INSERT, &fields.params(name)).await? {
        Some(created) => Ok(ApiResponse::json(201, &created)),
        // created meanwhile by another request: replace it
        None => {
            let updated = doc(cx, &REPLACE, &fields.params(name))
                .await?
                .ok_or_else(|| not_found(name))?;
            Ok(ApiResponse::json(200, &updated))
        }
    }
}

/// `PATCH /api/v1/event-type/{name}`: the fields given.
pub(crate) async fn patch(cx: &Ctx<'_>, name: &str) -> Result<ApiResponse, ApiError> {
    let body = Body::parse(&cx.req.body, false)?;
    body.only(FIELDS, &[])?;
    let current = doc(cx, &LOCK, &params! { "name" => name })
        .await?
        .ok_or_else(|| not_found(name))?;
    let fields = Fields {
        description: if body.has("description") {
            description(&body)?
        } else {
            current["description"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        },
        archived: match body.bool("archived")? {
            Some(b) => b,
            None => current["archived"] == json!(true),
        },
        deprecated: match body.bool("deprecated")? {
            Some(b) => b,
            None => current["deprecated"] == json!(true),
        },
        feature_flag: if body.has("featureFlag") {
            feature_flag(&body)?
        } else {
            current["featureFlag"].as_str().map(String::from)
        },
        schemas: if body.has("schemas") {
            schemas(&body)?
        } else {
            current["schemas"].as_object().cloned()
        },
        enforce_schema: match body.bool("enforceSchema")? {
            Some(b) => b,
            None => current["enforceSchema"] == json!(true),
        },
    };
    check_enforceable(cx, &fields).await?;
    let updated = doc(cx, &REPLACE, &fields.params(name))
        .await?
        .ok_or_else(|| not_found(name))?;
    Ok(ApiResponse::json(200, &updated))
}

/// `DELETE /api/v1/event-type/{name}[?expunge=true]` (204): archives it, or
/// deletes it with `expunge`.
pub(crate) async fn delete(cx: &Ctx<'_>, name: &str) -> Result<ApiResponse, ApiError> {
    for key in cx.req.query.keys() {
        if key != "expunge" {
            return Err(ApiError::query(
                key,
                format!("hookbox does not support the query parameter {key}"),
            ));
        }
    }
    let expunge = wire::query_bool(&cx.req.query, "expunge")?;
    let statement = if expunge { &EXPUNGE } else { &ARCHIVE };
    let done = cx
        .db
        .execute(statement, &params! { "name" => name })
        .await?;
    if done.affected == 0 {
        return Err(not_found(name));
    }
    Ok(ApiResponse::empty(204))
}

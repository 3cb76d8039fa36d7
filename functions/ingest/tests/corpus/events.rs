//! A corpus request as the events API Gateway sends its functions, for
//! either ingress. REST (`tools/local/src/gateway.rs`): the last value of a
//! repeated header in `headers`, all of them in `multiValueHeaders`, the
//! body base64 under the binary media type `*/*`. HTTP API, payload 2.0
//! (`tools/local/src/http_api.rs`), as AWS documents it: names lower-case,
//! a repeated header one value with its lines joined with `,`, the body a
//! string for a text Content-Type (bytes that are not UTF-8 replaced with
//! U+FFFD, the undocumented worst case) and base64 for any other. Both
//! append the caller's address to X-Forwarded-For.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use super::model::{Case, Delivery, EventBody, Request};

/// The fixed clock: the time the sample events are signed at.
pub const T: i64 = 1_780_000_000;
pub const SOURCE_IP: &str = "203.0.113.10";
const STAGE: &str = "prod";
const RESOURCE: &str = "/webhooks/{partner}";

/// Which API Gateway sends the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Rest,
    Http,
}

/// The two events API Gateway sends for `request`, as JSON, plus the
/// header values that are not UTF-8 (added to the deserialized events:
/// REST's one per line, HTTP API's joined).
pub struct Events {
    pub shape: Shape,
    pub authorizer: Vec<u8>,
    /// The proxy event without `requestContext.authorizer` (added after an
    /// Allow, from the authorizer's answer).
    pub proxy: Value,
    pub raw_headers: Vec<(String, Vec<Vec<u8>>)>,
}

/// How a request is sent, beyond its headers and body.
#[derive(Debug, Clone, Copy)]
pub struct Send<'a> {
    pub method: &'a str,
    /// Decoded query parameters, in order.
    pub query: &'a [(&'a str, &'a str)],
    /// The caller's address as API Gateway sees it.
    pub source_ip: &'a str,
    /// The proxy event's body and `isBase64Encoded` verbatim, instead of
    /// what API Gateway makes of the request's body.
    pub event_body: Option<&'a EventBody>,
    /// How REST passes the body.
    pub delivery: Delivery,
}

impl<'a> Send<'a> {
    /// A POST from [`SOURCE_IP`], the body as API Gateway passes it.
    pub fn post() -> Send<'static> {
        Send {
            method: "POST",
            query: &[],
            source_ip: SOURCE_IP,
            event_body: None,
            delivery: Delivery::Binary,
        }
    }

    /// How a corpus case is sent.
    pub fn of(case: &'a Case) -> Self {
        Send {
            source_ip: case.source_ip.as_deref().unwrap_or(SOURCE_IP),
            event_body: case.event_body.as_ref(),
            delivery: case.delivery,
            ..Send::post()
        }
    }
}

/// The events of a corpus case.
pub fn events(shape: Shape, case: &Case, request: &Request) -> Events {
    build(shape, request, &Send::of(case))
}

/// The events API Gateway sends for `request`, sent as `send` says.
pub fn build(shape: Shape, request: &Request, send: &Send<'_>) -> Events {
    match shape {
        Shape::Rest => rest(request, send),
        Shape::Http => http(request, send),
    }
}

/// The header lines that are text, the others, and X-Forwarded-For with
/// the caller's address appended.
type Split = (
    Vec<(String, Vec<String>)>,
    Vec<(String, Vec<Vec<u8>>)>,
    String,
);

fn split_headers(request: &Request, source_ip: &str) -> Split {
    let mut text = Vec::new();
    let mut raw = Vec::new();
    let mut forwarded: Option<String> = None;
    for (name, values) in &request.headers {
        let texts: Option<Vec<String>> = values
            .iter()
            .map(|v| String::from_utf8(v.clone()).ok())
            .collect();
        match texts {
            Some(texts) if name.eq_ignore_ascii_case("x-forwarded-for") => {
                forwarded = Some(texts.join(", "));
            }
            Some(texts) => text.push((name.clone(), texts)),
            None => raw.push((name.clone(), values.clone())),
        }
    }
    // API Gateway appends the caller's address to X-Forwarded-For.
    let forwarded = match forwarded {
        Some(existing) => format!("{existing}, {source_ip}"),
        None => source_ip.to_string(),
    };
    (text, raw, forwarded)
}

fn rest(request: &Request, send: &Send<'_>) -> Events {
    let (source_ip, method) = (send.source_ip, send.method);
    let (text, raw_headers, forwarded) = split_headers(request, source_ip);
    let mut single = Map::new();
    let mut multi = Map::new();
    for (name, texts) in text {
        single.insert(name.clone(), json!(texts.last()));
        multi.insert(name, json!(texts));
    }
    single.insert("X-Forwarded-For".into(), json!(forwarded));
    multi.insert("X-Forwarded-For".into(), json!([forwarded]));
    let path = format!("/webhooks/{}", request.partner);
    let user_agent = single
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("user-agent"))
        .map_or(json!(""), |(_, v)| v.clone());
    let context = json!({
        "accountId": "123456789012",
        "apiId": "abc123defg",
        "resourceId": "r4nd0m",
        "stage": STAGE,
        "resourcePath": RESOURCE,
        "path": format!("/{STAGE}{path}"),
        "httpMethod": method,
        "requestId": uuid::Uuid::new_v4().to_string(),
        "requestTimeEpoch": T * 1000,
        "identity": { "sourceIp": source_ip, "userAgent": user_agent },
    });
    let mut query = Map::new();
    let mut multi_query: Map<String, Value> = Map::new();
    for (k, v) in send.query {
        query.insert(k.to_string(), json!(v));
        if let Some(values) = multi_query
            .entry(k.to_string())
            .or_insert_with(|| json!([]))
            .as_array_mut()
        {
            values.push(json!(v));
        }
    }
    let authorizer = json!({
        "type": "REQUEST",
        "methodArn": format!("arn:aws:execute-api:eu-west-1:123456789012:abc123defg/{STAGE}/{method}{path}"),
        "resource": RESOURCE,
        "path": path,
        "httpMethod": method,
        "headers": single,
        "multiValueHeaders": multi,
        "queryStringParameters": query,
        "multiValueQueryStringParameters": multi_query,
        "pathParameters": { "partner": request.partner },
        "stageVariables": {},
        "requestContext": context,
    });
    let (body, is_base64) = match (send.event_body, send.delivery) {
        (Some(e), _) => (json!(e.body), e.is_base64_encoded),
        // API Gateway sends no body as null
        (None, _) if request.body.is_empty() => (Value::Null, false),
        (None, Delivery::Binary) => (json!(STANDARD.encode(&request.body)), true),
        (None, Delivery::Text) => (
            json!(
                String::from_utf8(request.body.clone())
                    .unwrap_or_else(|_| panic!("{}: text delivery of bytes", request.partner))
            ),
            false,
        ),
    };
    let nothing = |m: Map<String, Value>| {
        if m.is_empty() {
            Value::Null
        } else {
            Value::Object(m)
        }
    };
    let proxy = json!({
        "resource": RESOURCE,
        "path": path,
        "httpMethod": method,
        "headers": single,
        "multiValueHeaders": multi,
        "queryStringParameters": nothing(query),
        "multiValueQueryStringParameters": nothing(multi_query),
        "pathParameters": { "partner": request.partner },
        "stageVariables": null,
        "requestContext": context,
        "body": body,
        "isBase64Encoded": is_base64,
    });
    Events {
        shape: Shape::Rest,
        authorizer: serde_json::to_vec(&authorizer).expect("JSON"),
        proxy,
        raw_headers,
    }
}

fn http(request: &Request, send: &Send<'_>) -> Events {
    let (source_ip, method) = (send.source_ip, send.method);
    let (text, raw, forwarded) = split_headers(request, source_ip);
    // lower-case names, one value per name: the lines joined with `,`
    let mut joined: BTreeMap<String, String> = BTreeMap::new();
    for (name, texts) in text {
        let name = name.to_ascii_lowercase();
        for line in texts {
            joined
                .entry(name.clone())
                .and_modify(|v| {
                    v.push(',');
                    v.push_str(&line);
                })
                .or_insert(line);
        }
    }
    joined.insert("x-forwarded-for".into(), forwarded);
    let mut raw_joined: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for (name, values) in raw {
        let value = raw_joined.entry(name.to_ascii_lowercase()).or_default();
        for line in values {
            if !value.is_empty() {
                value.push(b',');
            }
            value.extend_from_slice(&line);
        }
    }
    let raw_headers = raw_joined
        .into_iter()
        .map(|(name, value)| (name, vec![value]))
        .collect();
    let path = format!("/webhooks/{}", request.partner);
    let context = json!({
        "accountId": "123456789012",
        "apiId": "abc123defg",
        "domainName": super::model::HOST,
        "domainPrefix": "abc123defg",
        "http": {
            "method": method,
            "path": path,
            "protocol": "HTTP/1.1",
            "sourceIp": source_ip,
            "userAgent": joined.get("user-agent").cloned().unwrap_or_default(),
        },
        "requestId": uuid::Uuid::new_v4().to_string(),
        "routeKey": format!("{method} {RESOURCE}"),
        "stage": "$default",
        "time": "28/May/2026:20:26:40 +0000",
        "timeEpoch": T * 1000,
    });
    // `rawQueryString` as sent; `queryStringParameters` decoded, a repeated
    // parameter's values joined with `,`
    let raw_query = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(send.query)
        .finish();
    let mut query: BTreeMap<&str, String> = BTreeMap::new();
    for (k, v) in send.query {
        query
            .entry(k)
            .and_modify(|joined| {
                joined.push(',');
                joined.push_str(v);
            })
            .or_insert_with(|| v.to_string());
    }
    let mut authorizer = json!({
        "version": "2.0",
        "type": "REQUEST",
        "routeArn": format!("arn:aws:execute-api:eu-west-1:123456789012:abc123defg/$default/{method}{path}"),
        "identitySource": [],
        "routeKey": format!("{method} {RESOURCE}"),
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": joined,
        "pathParameters": { "partner": request.partner },
        "stageVariables": {},
        "requestContext": context,
    });
    let mut proxy = json!({
        "version": "2.0",
        "routeKey": format!("{method} {RESOURCE}"),
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": joined,
        "pathParameters": { "partner": request.partner },
        "requestContext": context,
    });
    if !query.is_empty() {
        authorizer["queryStringParameters"] = json!(query);
        proxy["queryStringParameters"] = json!(query);
    }
    let (body, is_base64) = match send.event_body {
        Some(e) => (json!(e.body), e.is_base64_encoded),
        // HTTP API sends no body field for an empty body
        None if request.body.is_empty() => (Value::Null, false),
        None if hookbox_ingest::http_api_passes_as_text(
            request.header_text("content-type").as_deref(),
        ) =>
        {
            (json!(String::from_utf8_lossy(&request.body)), false)
        }
        None => (json!(STANDARD.encode(&request.body)), true),
    };
    if !body.is_null() {
        proxy["body"] = body;
    }
    proxy["isBase64Encoded"] = json!(is_base64);
    Events {
        shape: Shape::Http,
        authorizer: serde_json::to_vec(&authorizer).expect("JSON"),
        proxy,
        raw_headers,
    }
}

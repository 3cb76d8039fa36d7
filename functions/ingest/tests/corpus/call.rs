//! One request through API Gateway, as either ingress runs it: the
//! authorizer's event to the authorizer, then (when it allows) the proxy
//! event, with the authorizer's context, to ingest. Each event goes to its
//! handler as JSON bytes, deserialized as the functions' `main.rs` do.

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerRequestTypeRequest, ApiGatewayProxyRequest,
    ApiGatewayV2CustomAuthorizerV2Request, ApiGatewayV2httpRequest,
};
use aws_lambda_events::encodings::Body as ApiBody;
use aws_lambda_events::http::{HeaderName, HeaderValue};
use aws_lambda_events::iam::IamPolicyEffect;
use hookbox_authorizer::{AuthRequest, Authorizer, Decision};
use hookbox_ingest::IngestFunction;
use serde_json::{Value, json};

use super::check::Got;
use super::events::{Events, Shape};

/// An event type, for adding header values that are not UTF-8: REST's one
/// per line (the last in `headers`, all in `multiValueHeaders`), HTTP
/// API's one joined value in `headers`.
trait RawHeaders {
    fn add_raw(&mut self, name: HeaderName, values: Vec<HeaderValue>);
}

impl RawHeaders for ApiGatewayCustomAuthorizerRequestTypeRequest {
    fn add_raw(&mut self, name: HeaderName, values: Vec<HeaderValue>) {
        if let Some(last) = values.last() {
            self.headers.insert(name.clone(), last.clone());
        }
        for v in values {
            self.multi_value_headers.append(name.clone(), v);
        }
    }
}

impl RawHeaders for ApiGatewayProxyRequest {
    fn add_raw(&mut self, name: HeaderName, values: Vec<HeaderValue>) {
        if let Some(last) = values.last() {
            self.headers.insert(name.clone(), last.clone());
        }
        for v in values {
            self.multi_value_headers.append(name.clone(), v);
        }
    }
}

impl RawHeaders for ApiGatewayV2CustomAuthorizerV2Request {
    fn add_raw(&mut self, name: HeaderName, values: Vec<HeaderValue>) {
        for v in values {
            self.headers.append(name.clone(), v);
        }
    }
}

impl RawHeaders for ApiGatewayV2httpRequest {
    fn add_raw(&mut self, name: HeaderName, values: Vec<HeaderValue>) {
        for v in values {
            self.headers.append(name.clone(), v);
        }
    }
}

/// Deserializes an event from the bytes the Lambda runtime would get, as the
/// functions' `main.rs` do (`from_json`: the header values no HTTP library
/// takes dropped), then adds the header values that are not UTF-8. `Err` is
/// what the runtime reports as an invocation error: the handler never runs.
fn deliver<E: RawHeaders>(
    json: &[u8],
    raw: &[(String, Vec<Vec<u8>>)],
    from_json: fn(Value) -> Result<E, serde_json::Error>,
) -> Result<E, String> {
    let value: Value = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    let mut event = from_json(value).map_err(|e| e.to_string())?;
    for (name, values) in raw {
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| e.to_string())?;
        let values = values
            .iter()
            .map(|v| HeaderValue::from_bytes(v).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        event.add_raw(name, values);
    }
    Ok(event)
}

fn json_body(body: Option<&ApiBody>) -> Value {
    match body {
        Some(ApiBody::Text(t)) => serde_json::from_str(t).unwrap_or_else(|_| json!({ "raw": t })),
        other => json!({ "raw": format!("{other:?}") }),
    }
}

/// The authorizer's answer: its decision, whether its answer allows, and
/// the context API Gateway passes on to ingest.
async fn authorize(
    authorizer: &Authorizer,
    events: &Events,
) -> Result<(Decision, bool, Value), String> {
    match events.shape {
        Shape::Rest => {
            let event: ApiGatewayCustomAuthorizerRequestTypeRequest = deliver(
                &events.authorizer,
                &events.raw_headers,
                hookbox_authorizer::event_from_json,
            )?;
            let (decision, _) = authorizer.decide(&event).await;
            let response = authorizer.handle(event).await;
            let allowed = response
                .policy_document
                .statement
                .first()
                .is_some_and(|s| s.effect == IamPolicyEffect::Allow);
            let context = if allowed {
                json!({
                    "partner": response.context.get("partner").cloned().unwrap_or(Value::Null),
                    "principalId": response.principal_id,
                })
            } else {
                // a Deny: the body the gateway response fills from it
                serde_json::from_str(&hookbox_authorizer::rest_deny_body(&response.context))
                    .map_err(|e| format!("the Deny's gateway response is not JSON: {e}"))?
            };
            Ok((decision, allowed, context))
        }
        Shape::Http => {
            let event: ApiGatewayV2CustomAuthorizerV2Request = deliver(
                &events.authorizer,
                &events.raw_headers,
                hookbox_authorizer::http_event_from_json,
            )?;
            let (decision, _) = authorizer
                .decide_request(&AuthRequest::from_http(&event))
                .await;
            let response = authorizer.handle_http(event).await;
            Ok((
                decision,
                response.is_authorized,
                json!({ "lambda": response.context }),
            ))
        }
    }
}

/// Ingest's answer: status and JSON body.
async fn ingest(
    ingest: &IngestFunction,
    events: &Events,
    proxy: &[u8],
) -> Result<(u16, Value), String> {
    match events.shape {
        Shape::Rest => {
            let event: ApiGatewayProxyRequest =
                deliver(proxy, &events.raw_headers, hookbox_ingest::event_from_json)?;
            let r = ingest.handle(event).await;
            Ok((
                u16::try_from(r.status_code).unwrap_or(0),
                json_body(r.body.as_ref()),
            ))
        }
        Shape::Http => {
            let event: ApiGatewayV2httpRequest = deliver(
                proxy,
                &events.raw_headers,
                hookbox_ingest::http_event_from_json,
            )?;
            let r = ingest.handle_http(event).await;
            Ok((
                u16::try_from(r.status_code).unwrap_or(0),
                json_body(r.body.as_ref()),
            ))
        }
    }
}

/// The authorizer, then (when it allows) ingest, as API Gateway runs them.
pub async fn call(authorizer: Authorizer, function: IngestFunction, events: Events) -> Got {
    let (decision, allowed, context) = match authorize(&authorizer, &events).await {
        Ok(answer) => answer,
        Err(e) => {
            // The runtime fails the invocation; API Gateway answers 500
            // for an authorizer that fails.
            return Got {
                authorizer: format!("Error (the authorizer event does not deserialize: {e})"),
                status: 500,
                error: Some("authorizer_invocation_failed".into()),
                body: Value::Null,
            };
        }
    };
    match (decision, allowed) {
        (Decision::Allow, true) => {}
        (Decision::Deny(reason), false) => {
            // What API Gateway answers for a Deny: through REST, a body
            // naming the reason (the ACCESS_DENIED gateway response);
            // through HTTP API its generic one
            let body = match events.shape {
                Shape::Rest => context,
                Shape::Http => json!({"message": "Forbidden"}),
            };
            if events.shape == Shape::Rest
                && (body["error"] != reason || body["detail"].as_str().is_none_or(str::is_empty))
            {
                return Got {
                    authorizer: format!("Deny whose body does not name {reason}: {body}"),
                    status: 403,
                    error: Some(reason.into()),
                    body,
                };
            }
            return Got {
                authorizer: "Deny".into(),
                status: 403,
                error: Some(reason.into()),
                body,
            };
        }
        (decision, allowed) => {
            return Got {
                authorizer: format!("inconsistent: decide {decision:?}, answer allows: {allowed}"),
                status: 0,
                error: None,
                body: Value::Null,
            };
        }
    }
    let mut proxy = events.proxy.clone();
    proxy["requestContext"]["authorizer"] = context;
    let proxy_json = serde_json::to_vec(&proxy).expect("JSON");
    let (status, body) = match ingest(&function, &events, &proxy_json).await {
        Ok(answer) => answer,
        Err(e) => {
            // A failed proxy integration is API Gateway's 502.
            return Got {
                authorizer: "Allow".into(),
                status: 502,
                error: Some(format!("ingest_invocation_failed: {e}")),
                body: Value::Null,
            };
        }
    };
    Got {
        authorizer: "Allow".into(),
        status,
        error: body
            .get("error")
            .and_then(Value::as_str)
            .map(str::to_string),
        body,
    }
}

//! The ingest Lambda (API Gateway REST proxy integration): turns the event
//! into an [`IngestRequest`], runs the use case, turns the answer into the
//! proxy response. A GET is a provider's handshake (Meta, Dropbox), answered
//! by [`Ingest::handle_get`]. Never fails the invocation: every outcome is an HTTP
//! answer (a Lambda error would be a 502 with no body for the partner).

use std::sync::Arc;

use aws_lambda_events::apigw::{ApiGatewayProxyRequest, ApiGatewayProxyResponse};
use aws_lambda_events::encodings::Body;
use aws_lambda_events::http::{HeaderMap, HeaderName, HeaderValue, Method};
use base64::Engine as _;
use hookbox::clock::Clock;
use hookbox::inbox::ingest::{Ingest, IngestRequest, IngestResponse, Outcome};
use hookbox::metrics::Metrics;
use hookbox::signature::Headers;
use hookbox::signature::presets::HandshakeAnswer;

/// The proxy event from the JSON the Lambda runtime received, without the
/// header values the `http` crate refuses (a control character such as
/// U+0000): otherwise the whole event fails to deserialize and API Gateway
/// answers 502 to a correctly signed webhook. The names dropped are logged.
pub fn event_from_json(
    mut json: serde_json::Value,
) -> Result<ApiGatewayProxyRequest, serde_json::Error> {
    let dropped = hookbox::signature::drop_unusable_headers(&mut json);
    if !dropped.is_empty() {
        tracing::warn!(headers = ?dropped, "header values no HTTP library takes were dropped");
    }
    serde_json::from_value(json)
}

/// The handler, built once per sandbox.
#[derive(Debug, Clone)]
pub struct IngestFunction {
    ingest: Ingest,
    clock: Arc<dyn Clock>,
}

fn json_response(
    status: u16,
    body: &serde_json::Value,
    retry_after: Option<u64>,
) -> ApiGatewayProxyResponse {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    if let Some(secs) = retry_after {
        headers.insert("retry-after", HeaderValue::from(secs));
    }
    let mut response = ApiGatewayProxyResponse::default();
    response.status_code = i64::from(status);
    response.headers = headers;
    response.body = Some(Body::Text(body.to_string()));
    response
}

/// A provider's handshake answered byte for byte: its status, content
/// type, headers and body (visible ASCII or JSON: text).
fn handshake_response(answer: HandshakeAnswer) -> ApiGatewayProxyResponse {
    let mut headers = HeaderMap::new();
    if let Some(content_type) = answer.content_type {
        headers.insert("content-type", HeaderValue::from_static(content_type));
    }
    for (name, value) in answer.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            headers.insert(name, value);
        }
    }
    let mut response = ApiGatewayProxyResponse::default();
    response.status_code = i64::from(answer.status);
    response.headers = headers;
    response.body = (!answer.body.is_empty())
        .then(|| Body::Text(String::from_utf8_lossy(&answer.body).into_owned()));
    response
}

/// Header pairs of the event: single-value headers, plus every value of
/// multi-value headers not already present. Values that are not visible
/// ASCII/UTF-8 are dropped (no signature scheme uses them).
fn header_pairs(event: &ApiGatewayProxyRequest) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (name, value) in event.headers.iter() {
        if let Ok(v) = value.to_str() {
            pairs.push((name.as_str().to_string(), v.to_string()));
        }
    }
    for (name, value) in event.multi_value_headers.iter() {
        if let Ok(v) = value.to_str() {
            let pair = (name.as_str().to_string(), v.to_string());
            if !pairs.contains(&pair) {
                pairs.push(pair);
            }
        }
    }
    pairs
}

/// The query parameters of the request, every value of each (API Gateway
/// puts only the last in `queryStringParameters`).
fn query_pairs(event: &ApiGatewayProxyRequest) -> Vec<(String, String)> {
    let multi = &event.multi_value_query_string_parameters;
    let source = if multi.is_empty() {
        &event.query_string_parameters
    } else {
        multi
    };
    source
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The URL the partner called, as far as API Gateway tells: https, the
/// Host header, the request path (with stage) and the query string (sorted,
/// since API Gateway hands it over as a map). Partners whose scheme signs
/// the URL behind a custom domain set `public_url` instead.
fn request_url(event: &ApiGatewayProxyRequest, headers: &[(String, String)]) -> Option<String> {
    let host = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map(|(_, v)| v.clone())?;
    let path = event
        .request_context
        .path
        .clone()
        .or_else(|| event.path.clone())
        .unwrap_or_else(|| "/".into());
    let mut query: Vec<(String, String)> = event
        .multi_value_query_string_parameters
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    query.sort();
    let mut url = format!("https://{host}{path}");
    if !query.is_empty() {
        let q: Vec<String> = query.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
        url.push('?');
        url.push_str(&q.join("&"));
    }
    Some(url)
}

impl IngestFunction {
    /// Wires the use case.
    pub fn new(ingest: Ingest, clock: Arc<dyn Clock>) -> Self {
        Self { ingest, clock }
    }

    /// Handles one API Gateway proxy event.
    pub async fn handle(&self, event: ApiGatewayProxyRequest) -> ApiGatewayProxyResponse {
        let partner = event
            .path_parameters
            .get("partner")
            .cloned()
            .unwrap_or_default();
        let (response, mut metrics) = self.respond(&partner, &event).await;
        let dimension = match response.outcome {
            Outcome::Rejected("unknown_partner") => "unknown",
            _ => partner.as_str(),
        };
        metrics
            .dimension("Function", "ingest")
            .dimension("Partner", dimension)
            .flush(self.clock.now().timestamp_millis());
        match response.handshake {
            Some(answer) => handshake_response(*answer),
            None => json_response(response.status, &response.body, response.retry_after),
        }
    }

    async fn respond(
        &self,
        partner: &str,
        event: &ApiGatewayProxyRequest,
    ) -> (IngestResponse, Metrics) {
        let mut metrics = Metrics::new();
        if event.http_method == Method::GET {
            // only a provider's GET handshake (Meta, Dropbox, Okta, X); no
            // body
            let query = query_pairs(event);
            let pairs: Vec<(&str, &str)> = query
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let header_pairs = header_pairs(event);
            let headers =
                Headers::from_pairs(header_pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())));
            let response = self
                .ingest
                .handle_get(partner, &pairs, &headers, &mut metrics)
                .await;
            return (response, metrics);
        }
        let raw = event.body.clone().unwrap_or_default();
        let body = if event.is_base64_encoded {
            match base64::engine::general_purpose::STANDARD.decode(raw.as_bytes()) {
                Ok(bytes) => bytes,
                Err(e) => {
                    metrics.count("rejected", 1);
                    metrics.count("rejected_body_not_base64", 1);
                    let response = IngestResponse {
                        status: 400,
                        body: serde_json::json!({"error": "body_not_base64", "detail": e.to_string()}),
                        retry_after: None,
                        outcome: Outcome::Rejected("body_not_base64"),
                        handshake: None,
                        sealed_secret: None,
                    };
                    return (response, metrics);
                }
            }
        } else {
            raw.into_bytes()
        };
        let pairs = header_pairs(event);
        let url = request_url(event, &pairs);
        let request = IngestRequest {
            partner,
            headers: Headers::from_pairs(pairs.iter().map(|(n, v)| (n.as_str(), v.as_str()))),
            body: &body,
            url: url.as_deref(),
        };
        let response = self.ingest.handle(&request, &mut metrics).await;
        (response, metrics)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handshake_answer_is_sent_as_it_is() {
        let answer = HandshakeAnswer {
            status: 200,
            content_type: Some("text/plain"),
            headers: vec![("X-Content-Type-Options", "nosniff".to_owned())],
            body: b"3eZbrw1aBm2rZgRNFdxV".to_vec(),
        };
        let r = handshake_response(answer);
        assert_eq!(r.status_code, 200);
        assert_eq!(
            r.headers.get("content-type").and_then(|v| v.to_str().ok()),
            Some("text/plain")
        );
        assert_eq!(
            r.headers
                .get("x-content-type-options")
                .and_then(|v| v.to_str().ok()),
            Some("nosniff")
        );
        assert!(matches!(r.body, Some(Body::Text(ref t)) if t == "3eZbrw1aBm2rZgRNFdxV"));
        // Asana's: a header, no body
        let echo = handshake_response(HandshakeAnswer {
            status: 200,
            content_type: None,
            headers: vec![("X-Hook-Secret", "b537207f20cbfa02".to_owned())],
            body: Vec::new(),
        });
        assert_eq!(
            echo.headers
                .get("x-hook-secret")
                .and_then(|v| v.to_str().ok()),
            Some("b537207f20cbfa02")
        );
        assert!(echo.body.is_none());
        assert!(echo.headers.get("content-type").is_none());
    }
}

//! Ingest's answer, then written as the event's ingress expects it: REST's
//! proxy response or HTTP API's (payload 2.0).

use aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayV2httpResponse};
use aws_lambda_events::encodings::Body;
use aws_lambda_events::http::{HeaderMap, HeaderName, HeaderValue};
use hookbox::inbox::ingest::IngestResponse;
use hookbox::signature::presets::HandshakeAnswer;
use serde::Serialize;

/// One answer, before it is written for an ingress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    /// Text (JSON, or a handshake's visible ASCII); `None`: no body.
    pub(crate) body: Option<String>,
}

impl Answer {
    /// The use case's answer: its handshake answer as it is, else its
    /// JSON body.
    pub(crate) fn of(response: IngestResponse) -> Self {
        match response.handshake {
            Some(answer) => handshake(*answer),
            None => json(response.status, &response.body, response.retry_after),
        }
    }

    /// As a REST proxy response.
    pub(crate) fn into_rest(self) -> ApiGatewayProxyResponse {
        let mut response = ApiGatewayProxyResponse::default();
        response.status_code = i64::from(self.status);
        response.headers = self.headers;
        response.body = self.body.map(Body::Text);
        response
    }

    /// As an HTTP API (payload 2.0) response.
    pub(crate) fn into_http(self) -> ApiGatewayV2httpResponse {
        let mut response = ApiGatewayV2httpResponse::default();
        response.status_code = i64::from(self.status);
        response.headers = self.headers;
        response.body = self.body.map(Body::Text);
        response.is_base64_encoded = false;
        response
    }
}

/// The answer for either ingress, as the Lambda runtime sends it back.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum IngestAnswer {
    /// REST's proxy response.
    Rest(ApiGatewayProxyResponse),
    /// HTTP API's (payload 2.0).
    Http(ApiGatewayV2httpResponse),
}

fn json(status: u16, body: &serde_json::Value, retry_after: Option<u64>) -> Answer {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    if let Some(secs) = retry_after {
        headers.insert("retry-after", HeaderValue::from(secs));
    }
    Answer {
        status,
        headers,
        body: Some(body.to_string()),
    }
}

/// A provider's handshake answered byte for byte: its status, content
/// type, headers and body (visible ASCII or JSON: text).
fn handshake(answer: HandshakeAnswer) -> Answer {
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
    Answer {
        status: answer.status,
        headers,
        body: (!answer.body.is_empty()).then(|| String::from_utf8_lossy(&answer.body).into_owned()),
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
        let r = handshake(answer).into_rest();
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
        let echo = handshake(HandshakeAnswer {
            status: 200,
            content_type: None,
            headers: vec![("X-Hook-Secret", "b537207f20cbfa02".to_owned())],
            body: Vec::new(),
        });
        let http = echo.clone().into_http();
        let echo = echo.into_rest();
        assert_eq!(
            echo.headers
                .get("x-hook-secret")
                .and_then(|v| v.to_str().ok()),
            Some("b537207f20cbfa02")
        );
        assert!(echo.body.is_none());
        assert!(echo.headers.get("content-type").is_none());
        // the same answer through HTTP API
        assert_eq!(http.status_code, 200);
        assert_eq!(http.headers, echo.headers);
        assert!(http.body.is_none() && !http.is_base64_encoded);
    }

    #[test]
    fn both_ingresses_answer_the_same_json() {
        let answer = json(503, &serde_json::json!({"error": "x"}), Some(5));
        let rest = answer.clone().into_rest();
        let http = answer.into_http();
        assert_eq!(rest.status_code, http.status_code);
        assert_eq!(rest.headers, http.headers);
        assert_eq!(rest.body, http.body);
        let wire = serde_json::to_value(IngestAnswer::Http(http)).expect("json");
        assert_eq!(wire["statusCode"], 503);
        assert_eq!(wire["headers"]["retry-after"], "5");
        assert_eq!(wire["body"], r#"{"error":"x"}"#);
    }
}

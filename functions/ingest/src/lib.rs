//! The ingest Lambda (API Gateway proxy integration, REST or HTTP API):
//! reads either event into one [`IngressRequest`], turns it into an
//! [`IngestRequest`], runs the use case, writes the answer as the event's
//! ingress expects it. A GET is a provider's handshake (Meta, Dropbox),
//! answered by [`Ingest::handle_get`]. Never fails the invocation: every
//! outcome is an HTTP answer (a Lambda error would be a 502 with no body
//! for the partner).
//!
//! HTTP API passes a text Content-Type's body as a string, and AWS may
//! replace bytes that are not UTF-8 with U+FFFD there (undocumented): when
//! such a body's signature does not match, the 401 and its metric say so
//! ([`BODY_ALTERED`]), so the team can move that partner to the REST
//! ingress, which passes every body base64, byte for byte.

mod request;
mod response;

use std::sync::Arc;

use aws_lambda_events::apigw::{
    ApiGatewayProxyRequest, ApiGatewayProxyResponse, ApiGatewayV2httpRequest,
    ApiGatewayV2httpResponse,
};
use aws_lambda_events::http::Method;
use hookbox::clock::Clock;
use hookbox::inbox::ingest::{Ingest, IngestRequest, IngestResponse, Outcome};
use hookbox::metrics::Metrics;
use serde_json::json;

pub use request::{
    Ingress, IngressRequest, event_from_json, http_api_passes_as_text, http_event_from_json,
};
use response::Answer;
pub use response::IngestAnswer;

/// The refusal of a body HTTP API passed as text, holding U+FFFD, whose
/// signature does not match: the error code sent to the partner and the
/// metric's reason (`rejected_invalid_signature_body_altered`).
pub const BODY_ALTERED: &str = "invalid_signature_body_altered";

/// What [`BODY_ALTERED`]'s 401 says.
pub const BODY_ALTERED_DETAIL: &str = "signature does not match; the body holds U+FFFD: API \
     Gateway HTTP API may have replaced bytes that were not UTF-8 — use the rest ingress for \
     this partner";

/// The handler, built once per sandbox.
#[derive(Debug, Clone)]
pub struct IngestFunction {
    ingest: Ingest,
    clock: Arc<dyn Clock>,
}

impl IngestFunction {
    /// Wires the use case.
    pub fn new(ingest: Ingest, clock: Arc<dyn Clock>) -> Self {
        Self { ingest, clock }
    }

    /// Handles one REST proxy event.
    pub async fn handle(&self, event: ApiGatewayProxyRequest) -> ApiGatewayProxyResponse {
        self.answer(&IngressRequest::from_rest(&event))
            .await
            .into_rest()
    }

    /// Handles one HTTP API (payload 2.0) proxy event.
    pub async fn handle_http(&self, event: ApiGatewayV2httpRequest) -> ApiGatewayV2httpResponse {
        self.answer(&IngressRequest::from_http(&event))
            .await
            .into_http()
    }

    /// Handles the JSON the Lambda runtime received, from either ingress
    /// ([`Ingress::of`]). `Err` only for an event that does not deserialize
    /// (the runtime reports it; API Gateway answers 502).
    pub async fn handle_json(
        &self,
        event: serde_json::Value,
    ) -> Result<IngestAnswer, serde_json::Error> {
        Ok(match Ingress::of(&event) {
            Ingress::Rest => IngestAnswer::Rest(self.handle(event_from_json(event)?).await),
            Ingress::Http => {
                IngestAnswer::Http(self.handle_http(http_event_from_json(event)?).await)
            }
        })
    }

    /// Handles one request, from either ingress.
    pub async fn handle_request(&self, request: &IngressRequest) -> IngestResponse {
        let (response, mut metrics) = self.respond(request).await;
        let dimension = match response.outcome {
            Outcome::Rejected("unknown_partner") => "unknown",
            _ => request.partner.as_str(),
        };
        metrics
            .dimension("Function", "ingest")
            .dimension("Partner", dimension)
            .flush(self.clock.now().timestamp_millis());
        response
    }

    async fn answer(&self, request: &IngressRequest) -> Answer {
        Answer::of(self.handle_request(request).await)
    }

    async fn respond(&self, request: &IngressRequest) -> (IngestResponse, Metrics) {
        let mut metrics = Metrics::new();
        let headers = request.headers();
        if request.method == Method::GET {
            // only a provider's GET handshake (Meta, Dropbox, Okta, X); no
            // body
            let query = request.query_pairs();
            let response = self
                .ingest
                .handle_get(&request.partner, &query, &headers, &mut metrics)
                .await;
            return (response, metrics);
        }
        let body = match request.body_bytes() {
            Ok(bytes) => bytes,
            Err(e) => {
                metrics.count("rejected", 1);
                metrics.count("rejected_body_not_base64", 1);
                let response = IngestResponse {
                    status: 400,
                    body: json!({"error": "body_not_base64", "detail": e.to_string()}),
                    retry_after: None,
                    outcome: Outcome::Rejected("body_not_base64"),
                    handshake: None,
                    sealed_secret: None,
                };
                return (response, metrics);
            }
        };
        let url = request.url();
        let ingest_request = IngestRequest {
            partner: &request.partner,
            headers,
            body: &body,
            url: url.as_deref(),
        };
        let altered = request.text_body_may_be_altered();
        let response = self
            .ingest
            .handle_then(&ingest_request, &mut metrics, |response| {
                name_altered_body(response, altered, &request.partner)
            })
            .await;
        (response, metrics)
    }
}

/// A signature that does not match a text body HTTP API may have altered
/// (`altered`): refused as [`BODY_ALTERED`], saying why.
fn name_altered_body(response: IngestResponse, altered: bool, partner: &str) -> IngestResponse {
    let signature_failed = matches!(
        response.outcome,
        Outcome::Rejected("invalid_signature" | "body_hash_mismatch")
    );
    if !(altered && signature_failed) {
        return response;
    }
    tracing::warn!(
        partner,
        reason = BODY_ALTERED,
        "signature does not match a text body holding U+FFFD (HTTP API may have replaced bytes)"
    );
    IngestResponse {
        status: 401,
        body: json!({"error": BODY_ALTERED, "detail": BODY_ALTERED_DETAIL}),
        outcome: Outcome::Rejected(BODY_ALTERED),
        ..response
    }
}

//! The API Gateway REQUEST authorizer, for either ingress: REST (payload
//! 1.0, answered with an IAM policy) or HTTP API (payload 2.0, answered
//! with a simple response, `{"isAuthorized", "context"}`). Both events are
//! read into one [`AuthRequest`] and decided by the same code, so no check
//! differs by ingress (docs/ingress.md).
//!
//! API Gateway never passes the body to an authorizer, so it does the cheap
//! checks only: the partner exists, the source IP (from API Gateway's own
//! view of the connection, never from a header such as X-Forwarded-For) is
//! inside the partner's CIDRs, the signature headers are present and well
//! formed, and the timestamp (for schemes that have one) is inside the
//! tolerance. The HMAC over the body is checked by ingest. Every failure is
//! a Deny: never an error, never a panic (either would be a 500 for the
//! partner).
//!
//! A GET carries no signature: it is let through only for a partner whose
//! provider sends its handshake by GET (Meta, Dropbox), and only when the
//! handshake would be answered ([`hookbox::config::Partner::answer_get`]:
//! Meta's verify token matches, the challenge is bounded). Any other method
//! than POST and GET is denied. A POST that carries no signature passes only
//! as the handshake of a provider that hands its secret over (Asana's
//! `X-Hook-Secret`), and only while the partner has an `enroll_key`
//! ([`hookbox::config::Partner::enrollment`]).
//!
//! Configure the authorizer with result TTL 0 (HTTP API: caching off, no
//! identity sources): the decision depends on the timestamp header, which
//! changes on every request, and on the source address.

mod request;

use std::net::IpAddr;
use std::sync::Arc;

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerPolicy, ApiGatewayCustomAuthorizerRequestTypeRequest,
    ApiGatewayCustomAuthorizerResponse, ApiGatewayV2CustomAuthorizerSimpleResponse,
    ApiGatewayV2CustomAuthorizerV2Request,
};
use aws_lambda_events::http::Method;
use aws_lambda_events::iam::{IamPolicyEffect, IamPolicyStatement};
use hookbox::clock::Clock;
use hookbox::config::ConfigStore;
use hookbox::inbox::ingest::signature_reason;
use hookbox::metrics::Metrics;
use hookbox::signature::presets::GetRequest;
use hookbox::startup::{Startup, StartupError};
use serde::Serialize;

pub use request::{AuthRequest, Ingress, event_from_json, http_event_from_json};

/// The body of the REST API's `ACCESS_DENIED` gateway response
/// (infra/template.yaml), which API Gateway fills from a Deny's context as
/// text, unescaped: so the context's `detail` is already the content of a
/// JSON string ([`json_string_content`]). The same shape as ingest's
/// refusals (`error`, `detail`), beside API Gateway's own `message`. An IAM
/// denial of the management API's `/iam` routes has no such context: its
/// `error` and `detail` are empty.
pub const REST_DENY_TEMPLATE: &str = r#"{"message":$context.error.messageString,"error":"$context.authorizer.reason","detail":"$context.authorizer.detail"}"#;

/// API Gateway's message for a request a Deny policy refuses
/// (`$context.error.message`).
pub const REST_DENY_MESSAGE: &str =
    "User is not authorized to access this resource with an explicit deny";

/// Longest `detail` put in a Deny's context, in characters.
pub const MAX_DENY_DETAIL_CHARS: usize = 500;

/// [`REST_DENY_TEMPLATE`] filled from a Deny's `context` as API Gateway
/// fills it (the local stack answers with it; tests parse it).
pub fn rest_deny_body(context: &serde_json::Value) -> String {
    let text = |key: &str| {
        context
            .get(key)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    // the message first and the detail last: a value is never read again
    REST_DENY_TEMPLATE
        .replace(
            "$context.error.messageString",
            &format!("\"{REST_DENY_MESSAGE}\""),
        )
        .replace("$context.authorizer.reason", &text("reason"))
        .replace("$context.authorizer.detail", &text("detail"))
}

/// `text`, at most [`MAX_DENY_DETAIL_CHARS`] characters of it, escaped as
/// the inside of a JSON string (no quotes around it).
fn json_string_content(text: &str) -> String {
    let mut cut: String = text.chars().take(MAX_DENY_DETAIL_CHARS).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    let quoted = serde_json::Value::String(cut).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

/// Why a request was denied (the metric and log reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Allowed, for this partner.
    Allow,
    /// Denied, with a reason code.
    Deny(&'static str),
}

/// The query parameters of a REST event, every value of each (API Gateway
/// puts only the last in `queryStringParameters`), in the order sent.
pub fn query_pairs(event: &ApiGatewayCustomAuthorizerRequestTypeRequest) -> Vec<(String, String)> {
    AuthRequest::from_rest(event).query
}

/// The answer for either ingress, as the Lambda runtime sends it back.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum AuthorizerResponse {
    /// REST: an IAM policy.
    Rest(ApiGatewayCustomAuthorizerResponse),
    /// HTTP API: a simple response.
    Http(ApiGatewayV2CustomAuthorizerSimpleResponse),
}

/// The authorizer, built once per sandbox.
#[derive(Debug, Clone)]
pub struct Authorizer {
    config: Arc<ConfigStore>,
    clock: Arc<dyn Clock>,
}

fn policy(effect: IamPolicyEffect, method_arn: &str) -> ApiGatewayCustomAuthorizerPolicy {
    let mut statement = IamPolicyStatement::default();
    statement.action = vec!["execute-api:Invoke".into()];
    statement.effect = effect;
    statement.resource = vec![method_arn.to_string()];
    let mut policy = ApiGatewayCustomAuthorizerPolicy::default();
    policy.version = Some("2012-10-17".into());
    policy.statement = vec![statement];
    policy
}

impl Authorizer {
    /// The authorizer of a Lambda sandbox: the partners configuration and
    /// the system clock (see `hookbox::startup`).
    pub async fn from_startup(start: &Startup) -> Result<Self, StartupError> {
        Ok(Self::new(start.partners().await?, start.clock()))
    }

    /// Wires the configuration and the clock.
    pub fn new(config: Arc<ConfigStore>, clock: Arc<dyn Clock>) -> Self {
        Self { config, clock }
    }

    /// The decision for one REST event.
    pub async fn decide(
        &self,
        event: &ApiGatewayCustomAuthorizerRequestTypeRequest,
    ) -> (Decision, String) {
        self.decide_request(&AuthRequest::from_rest(event)).await
    }

    /// The decision for one request, from either ingress.
    pub async fn decide_request(&self, request: &AuthRequest) -> (Decision, String) {
        let (decision, _) = self.decision(request).await;
        (decision, request.partner.clone())
    }

    /// The decision, and for a Deny what the caller is told (as ingest's
    /// refusals: which check failed, never a secret).
    async fn decision(&self, request: &AuthRequest) -> (Decision, String) {
        let deny = |code, detail: String| (Decision::Deny(code), detail);
        let config = self.config.current().await;
        let Some(partner) = config.partner(&request.partner) else {
            return deny(
                "unknown_partner",
                "no partner of this stack is named by this path".into(),
            );
        };
        if !partner.allowed_cidrs.is_empty() {
            let source: Option<IpAddr> =
                request.source_ip.as_deref().and_then(|ip| ip.parse().ok());
            match source {
                Some(ip) if partner.allows(ip) => {}
                _ => {
                    return deny(
                        "source_ip_not_allowed",
                        format!(
                            "partner {}: the caller's address is not in its allowed_cidrs",
                            partner.name
                        ),
                    );
                }
            }
        }
        let headers = request.headers();
        match request.method.as_ref() {
            // on AWS a REQUEST authorizer's event always names the method;
            // none (a hand-built event) is taken as POST, the strict case
            None => {}
            Some(m) if *m == Method::POST => {}
            Some(m) if *m == Method::GET => {
                let query = request.query_pairs();
                return match partner.answer_get(&GetRequest {
                    query: &query,
                    headers: &headers,
                }) {
                    Ok(_) => (Decision::Allow, String::new()),
                    Err(e) => deny(e.status_and_code().1, e.to_string()),
                };
            }
            Some(m) => {
                return deny(
                    "method_not_allowed",
                    format!(
                        "{m} is not accepted: a webhook path takes POST (and GET for the \
                         handshake of a provider that sends one)"
                    ),
                );
            }
        }
        // Asana's unsigned first request, which hands the signing secret
        // over: through only while the partner enrols (ingest seals it)
        if let Some(enrollment) = partner.enrollment(&headers) {
            return match enrollment {
                Ok(_) => (Decision::Allow, String::new()),
                Err(e) => deny(e.status_and_code().1, e.to_string()),
            };
        }
        if let Err(e) = partner.verifier.precheck(&headers, self.clock.now()) {
            let detail = if e.is_configuration_error() {
                // (the operator's problem: its log line says what)
                format!(
                    "partner {}: its signature configuration is unusable",
                    partner.name
                )
            } else {
                e.to_string()
            };
            return deny(signature_reason(&e), detail);
        }
        (Decision::Allow, String::new())
    }

    /// Decides, and counts and logs the decision; for a Deny, what the
    /// caller is told.
    async fn decide_and_count(&self, request: &AuthRequest) -> (Decision, String, String) {
        let (decision, detail) = self.decision(request).await;
        let partner = request.partner.clone();
        let mut metrics = Metrics::new();
        metrics.dimension("Function", "authorizer");
        match decision {
            Decision::Allow => {
                metrics.count("allowed", 1);
            }
            Decision::Deny(reason) => {
                metrics.count("denied", 1);
                metrics.count(&format!("denied_{reason}"), 1);
                tracing::info!(reason, detail, "request denied");
            }
        }
        metrics.flush(self.clock.now().timestamp_millis());
        (decision, partner, detail)
    }

    /// The REST answer for one request: Allow with context `{partner}`, or
    /// Deny with context `{reason, detail}` (the `ACCESS_DENIED` gateway
    /// response's body names them: [`REST_DENY_TEMPLATE`]).
    pub async fn handle(
        &self,
        event: ApiGatewayCustomAuthorizerRequestTypeRequest,
    ) -> ApiGatewayCustomAuthorizerResponse {
        let request = AuthRequest::from_rest(&event);
        let (decision, partner, detail) = self.decide_and_count(&request).await;
        let method_arn = request.arn.unwrap_or_else(|| "*".into());
        let mut response = ApiGatewayCustomAuthorizerResponse::default();
        match decision {
            Decision::Allow => {
                response.principal_id = Some(partner.clone());
                response.policy_document = policy(IamPolicyEffect::Allow, &method_arn);
                response.context = serde_json::json!({ "partner": partner });
            }
            Decision::Deny(reason) => {
                response.principal_id = Some("anonymous".into());
                response.policy_document = policy(IamPolicyEffect::Deny, &method_arn);
                response.context = serde_json::json!({
                    "reason": reason,
                    "detail": json_string_content(&detail),
                });
            }
        }
        response
    }

    /// The HTTP API answer for one request: `isAuthorized` with context
    /// `{partner}` (ingest reads it at `requestContext.authorizer.lambda`),
    /// or not, with an empty context.
    pub async fn handle_http(
        &self,
        event: ApiGatewayV2CustomAuthorizerV2Request,
    ) -> ApiGatewayV2CustomAuthorizerSimpleResponse {
        // (HTTP API's simple response carries no body: a deny is its
        // generic 403, the reason in the metric and the log line)
        let (decision, partner, _) = self.decide_and_count(&AuthRequest::from_http(&event)).await;
        let mut response = ApiGatewayV2CustomAuthorizerSimpleResponse::default();
        response.is_authorized = decision == Decision::Allow;
        response.context = if response.is_authorized {
            serde_json::json!({ "partner": partner })
        } else {
            serde_json::json!({})
        };
        response
    }

    /// The answer to the JSON the Lambda runtime received, from either
    /// ingress ([`Ingress::of`]). `Err` only for an event that does not
    /// deserialize (the runtime reports it; API Gateway answers 500).
    pub async fn handle_json(
        &self,
        event: serde_json::Value,
    ) -> Result<AuthorizerResponse, serde_json::Error> {
        Ok(match Ingress::of(&event) {
            Ingress::Rest => AuthorizerResponse::Rest(self.handle(event_from_json(event)?).await),
            Ingress::Http => {
                AuthorizerResponse::Http(self.handle_http(http_event_from_json(event)?).await)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_detail_is_escaped_for_a_json_string_and_cut() {
        let text = "a \"quoted\" \\ back\u{7}slash";
        let body = rest_deny_body(&serde_json::json!({
            "reason": "x",
            "detail": json_string_content(text),
        }));
        let body: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(body["detail"], text);
        let long = "y".repeat(MAX_DENY_DETAIL_CHARS + 10);
        let cut = json_string_content(&long);
        assert_eq!(cut.chars().count(), MAX_DENY_DETAIL_CHARS + 1);
        assert!(cut.ends_with('…'));
        // a context without them (an IAM denial): empty, still JSON
        let body: serde_json::Value =
            serde_json::from_str(&rest_deny_body(&serde_json::json!({}))).expect("JSON");
        assert_eq!(
            (body["error"].as_str(), body["detail"].as_str()),
            (Some(""), Some(""))
        );
    }
}

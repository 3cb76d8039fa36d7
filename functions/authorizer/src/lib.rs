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
        let partner_name = request.partner.clone();
        let decision = self.decision(request).await;
        (decision, partner_name)
    }

    async fn decision(&self, request: &AuthRequest) -> Decision {
        let config = self.config.current().await;
        let Some(partner) = config.partner(&request.partner) else {
            return Decision::Deny("unknown_partner");
        };
        if !partner.allowed_cidrs.is_empty() {
            let source: Option<IpAddr> =
                request.source_ip.as_deref().and_then(|ip| ip.parse().ok());
            match source {
                Some(ip) if partner.allows(ip) => {}
                _ => return Decision::Deny("source_ip_not_allowed"),
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
                    Ok(_) => Decision::Allow,
                    Err(e) => Decision::Deny(e.status_and_code().1),
                };
            }
            Some(_) => return Decision::Deny("method_not_allowed"),
        }
        // Asana's unsigned first request, which hands the signing secret
        // over: through only while the partner enrols (ingest seals it)
        if let Some(enrollment) = partner.enrollment(&headers) {
            return match enrollment {
                Ok(_) => Decision::Allow,
                Err(e) => Decision::Deny(e.status_and_code().1),
            };
        }
        if let Err(e) = partner.verifier.precheck(&headers, self.clock.now()) {
            return Decision::Deny(signature_reason(&e));
        }
        Decision::Allow
    }

    /// Decides, and counts and logs the decision.
    async fn decide_and_count(&self, request: &AuthRequest) -> (Decision, String) {
        let (decision, partner) = self.decide_request(request).await;
        let mut metrics = Metrics::new();
        metrics.dimension("Function", "authorizer");
        match decision {
            Decision::Allow => {
                metrics.count("allowed", 1);
            }
            Decision::Deny(reason) => {
                metrics.count("denied", 1);
                metrics.count(&format!("denied_{reason}"), 1);
                tracing::info!(reason, "request denied");
            }
        }
        metrics.flush(self.clock.now().timestamp_millis());
        (decision, partner)
    }

    /// The REST answer for one request: Allow with context `{partner}`, or
    /// Deny.
    pub async fn handle(
        &self,
        event: ApiGatewayCustomAuthorizerRequestTypeRequest,
    ) -> ApiGatewayCustomAuthorizerResponse {
        let request = AuthRequest::from_rest(&event);
        let (decision, partner) = self.decide_and_count(&request).await;
        let method_arn = request.arn.unwrap_or_else(|| "*".into());
        let mut response = ApiGatewayCustomAuthorizerResponse::default();
        match decision {
            Decision::Allow => {
                response.principal_id = Some(partner.clone());
                response.policy_document = policy(IamPolicyEffect::Allow, &method_arn);
                response.context = serde_json::json!({ "partner": partner });
            }
            Decision::Deny(_) => {
                response.principal_id = Some("anonymous".into());
                response.policy_document = policy(IamPolicyEffect::Deny, &method_arn);
                response.context = serde_json::json!({});
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
        let (decision, partner) = self.decide_and_count(&AuthRequest::from_http(&event)).await;
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

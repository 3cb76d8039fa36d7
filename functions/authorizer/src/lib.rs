//! The API Gateway REQUEST authorizer. API Gateway never passes the body to
//! an authorizer, so it does the cheap checks only: the partner exists, the
//! source IP (from API Gateway's own view of the connection, never from a
//! header such as X-Forwarded-For) is inside the partner's CIDRs, the
//! signature headers are present and well formed, and the timestamp (for
//! schemes that have one) is inside the tolerance. The HMAC over the body
//! is checked by ingest. Every failure is a Deny policy: never an error,
//! never a panic (either would be a 500 for the partner).
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
//! Configure the authorizer with result TTL 0: the decision depends on the
//! timestamp header, which changes on every request.

use std::net::IpAddr;
use std::sync::Arc;

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerPolicy, ApiGatewayCustomAuthorizerRequestTypeRequest,
    ApiGatewayCustomAuthorizerResponse,
};
use aws_lambda_events::http::Method;
use aws_lambda_events::iam::{IamPolicyEffect, IamPolicyStatement};
use hookbox::clock::Clock;
use hookbox::config::ConfigStore;
use hookbox::inbox::ingest::signature_reason;
use hookbox::metrics::Metrics;
use hookbox::signature::Headers;
use hookbox::signature::presets::GetRequest;
use hookbox::startup::{Startup, StartupError};

/// Why a request was denied (the metric and log reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Allowed, for this partner.
    Allow,
    /// Denied, with a reason code.
    Deny(&'static str),
}

/// The authorizer event from the JSON the Lambda runtime received, without
/// the header values the `http` crate refuses (a control character such as
/// U+0000): otherwise the whole event fails to deserialize and API Gateway
/// answers 500 to a correctly signed webhook. The names dropped are logged.
pub fn event_from_json(
    mut json: serde_json::Value,
) -> Result<ApiGatewayCustomAuthorizerRequestTypeRequest, serde_json::Error> {
    let dropped = hookbox::signature::drop_unusable_headers(&mut json);
    if !dropped.is_empty() {
        tracing::warn!(headers = ?dropped, "header values no HTTP library takes were dropped");
    }
    serde_json::from_value(json)
}

/// Every value of every header, as ingest reads them: API Gateway puts
/// only the LAST value of a repeated header in `headers`, the others are in
/// `multiValueHeaders`. Reading `headers` alone let a signature header
/// repeated with different values (ambiguous: malformed, see
/// docs/signatures.md) through to ingest's 401 instead of a Deny here
/// (corpus case `sw_repeated_signature_different_values`).
fn all_headers(event: &ApiGatewayCustomAuthorizerRequestTypeRequest) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (n, v) in event.headers.iter().chain(event.multi_value_headers.iter()) {
        let Ok(v) = v.to_str() else { continue };
        let pair = (n.as_str().to_string(), v.to_string());
        if !pairs.contains(&pair) {
            pairs.push(pair);
        }
    }
    pairs
}

/// The query parameters of the request, every value of each (API Gateway
/// puts only the last in `queryStringParameters`), in the order sent.
pub fn query_pairs(event: &ApiGatewayCustomAuthorizerRequestTypeRequest) -> Vec<(String, String)> {
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

    /// The decision for one request.
    pub async fn decide(
        &self,
        event: &ApiGatewayCustomAuthorizerRequestTypeRequest,
    ) -> (Decision, String) {
        let partner_name = event
            .path_parameters
            .get("partner")
            .cloned()
            .unwrap_or_default();
        let config = self.config.current().await;
        let Some(partner) = config.partner(&partner_name) else {
            return (Decision::Deny("unknown_partner"), partner_name);
        };
        if !partner.allowed_cidrs.is_empty() {
            let source: Option<IpAddr> = event
                .request_context
                .identity
                .as_ref()
                .and_then(|i| i.source_ip.as_deref())
                .and_then(|ip| ip.parse().ok());
            match source {
                Some(ip) if partner.allows(ip) => {}
                _ => return (Decision::Deny("source_ip_not_allowed"), partner_name),
            }
        }
        match event.http_method.as_ref() {
            // on AWS a REQUEST authorizer's event always names the method;
            // none (a hand-built event) is taken as POST, the strict case
            None => {}
            Some(m) if *m == Method::POST => {}
            Some(m) if *m == Method::GET => {
                let query = query_pairs(event);
                let pairs: Vec<(&str, &str)> = query
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                let header_pairs = all_headers(event);
                let headers =
                    Headers::from_pairs(header_pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())));
                return match partner.answer_get(&GetRequest {
                    query: &pairs,
                    headers: &headers,
                }) {
                    Ok(_) => (Decision::Allow, partner_name),
                    Err(e) => (Decision::Deny(e.status_and_code().1), partner_name),
                };
            }
            Some(_) => return (Decision::Deny("method_not_allowed"), partner_name),
        }
        let pairs = all_headers(event);
        let headers = Headers::from_pairs(pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        // Asana's unsigned first request, which hands the signing secret
        // over: through only while the partner enrols (ingest seals it)
        if let Some(enrollment) = partner.enrollment(&headers) {
            return match enrollment {
                Ok(_) => (Decision::Allow, partner_name),
                Err(e) => (Decision::Deny(e.status_and_code().1), partner_name),
            };
        }
        if let Err(e) = partner.verifier.precheck(&headers, self.clock.now()) {
            return (Decision::Deny(signature_reason(&e)), partner_name);
        }
        (Decision::Allow, partner_name)
    }

    /// The authorizer response for one request: Allow with context
    /// `{partner}`, or Deny.
    pub async fn handle(
        &self,
        event: ApiGatewayCustomAuthorizerRequestTypeRequest,
    ) -> ApiGatewayCustomAuthorizerResponse {
        let (decision, partner) = self.decide(&event).await;
        let method_arn = event.method_arn.clone().unwrap_or_else(|| "*".into());
        let mut metrics = Metrics::new();
        metrics.dimension("Function", "authorizer");
        let mut response = ApiGatewayCustomAuthorizerResponse::default();
        match decision {
            Decision::Allow => {
                metrics.count("allowed", 1);
                response.principal_id = Some(partner.clone());
                response.policy_document = policy(IamPolicyEffect::Allow, &method_arn);
                response.context = serde_json::json!({ "partner": partner });
            }
            Decision::Deny(reason) => {
                metrics.count("denied", 1);
                metrics.count(&format!("denied_{reason}"), 1);
                tracing::info!(reason, "request denied");
                response.principal_id = Some("anonymous".into());
                response.policy_document = policy(IamPolicyEffect::Deny, &method_arn);
                response.context = serde_json::json!({});
            }
        }
        metrics.flush(self.clock.now().timestamp_millis());
        response
    }
}

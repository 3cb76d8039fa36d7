//! The management Lambda (API Gateway REST proxy integration): the HTTP
//! management API of tenants and endpoints ([`hookbox::management`], Svix's
//! API under `/api/v1/`). This crate only translates: the proxy event into
//! an [`ApiRequest`] ([`event`]: the customer portal under `/portal/` too; base64 bodies, query strings, headers in
//! lower case, the route deciding whether an identity is trusted), the
//! [`hookbox::management::ApiResponse`] back into the proxy response. It
//! never fails an invocation: every outcome is an HTTP answer.
//!
//! Wiring ([`ManagementFunction::from_startup`]): the database (the Data API
//! in AWS), the secret keeper over the key vault (KMS: `HOOKBOX_KMS_KEY_ID`;
//! required, since creating an endpoint seals its secret), and the bearer
//! tokens' hashes ([`tokens`]).

pub mod event;
pub mod tokens;

use std::sync::Arc;

use aws_lambda_events::apigw::{ApiGatewayProxyRequest, ApiGatewayProxyResponse};
use hookbox::clock::Clock;
use hookbox::management::operator::OperatorPorts;
use hookbox::management::{ApiRequest, ManagementApi};
use hookbox::queue::Queue;
use hookbox::startup::{Startup, StartupError};
use hookbox::store::Database;
use hookbox::tenants::SecretKeeper;

pub use event::Route;
pub use tokens::{TOKENS_SECRET_ENV, TokenSource};

/// The proxy event from the JSON the Lambda runtime received, without the
/// header values the `http` crate refuses (a control character): otherwise
/// the whole event fails to deserialize and API Gateway answers 502. The
/// names dropped are logged.
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
pub struct ManagementFunction {
    db: Arc<dyn Database>,
    keeper: SecretKeeper,
    clock: Arc<dyn Clock>,
    tokens: TokenSource,
    /// The inbox queue the operator page replays into (`HOOKBOX_QUEUE_URL`).
    queue: Option<Arc<dyn Queue>>,
}

impl ManagementFunction {
    /// The function of a Lambda sandbox (see `hookbox::startup`): the
    /// database, the key vault (required) and the tokens.
    pub async fn from_startup(start: &Startup) -> Result<Self, StartupError> {
        let vault = start.vault()?.ok_or(StartupError::Missing {
            name: "HOOKBOX_KMS_KEY_ID",
            what: "the KMS key that wraps the data keys of endpoints' secrets (or \
                   HOOKBOX_LOCAL_VAULT_KEY locally)",
        })?;
        let tokens = TokenSource::from_startup(start).await?;
        let function = Self::new(
            start.database().await?,
            SecretKeeper::new(vault),
            start.clock(),
            tokens,
        );
        // the operator page's replays; without the queue they are refused
        Ok(match start.queue_url() {
            Ok(_) => function.with_queue(start.queue().await?),
            Err(_) => function,
        })
    }

    /// The operator page replays into `queue`.
    pub fn with_queue(mut self, queue: Arc<dyn Queue>) -> Self {
        self.queue = Some(queue);
        self
    }

    /// The function over its ports.
    pub fn new(
        db: Arc<dyn Database>,
        keeper: SecretKeeper,
        clock: Arc<dyn Clock>,
        tokens: TokenSource,
    ) -> Self {
        Self {
            db,
            keeper,
            clock,
            tokens,
            queue: None,
        }
    }

    /// The API with the tokens in force now (cheap: the ports are shared,
    /// the keeper's unwrapped data keys with them).
    async fn api(&self) -> ManagementApi {
        ManagementApi::new(
            self.db.clone(),
            self.keeper.clone(),
            self.clock.clone(),
            self.tokens.current().await,
        )
        // where portal links point and who may frame the portal
        .with_portal_from_env()
        .with_operator(OperatorPorts {
            queue: self.queue.clone(),
            ..OperatorPorts::default()
        })
    }

    /// Answers one request of the management API.
    pub async fn serve(&self, request: ApiRequest) -> hookbox::management::ApiResponse {
        self.api().await.handle(request).await
    }

    /// Handles one API Gateway proxy event.
    pub async fn handle(&self, event: ApiGatewayProxyRequest) -> ApiGatewayProxyResponse {
        let answer = match event::request(&event) {
            Ok((route, request)) => {
                let (method, path) = (request.method.clone(), request.path.clone());
                let answer = self.serve(request).await;
                tracing::info!(
                    route = route.as_str(),
                    method = %method,
                    path = %path,
                    status = answer.status,
                    "management request"
                );
                answer
            }
            Err(refusal) => {
                tracing::warn!(
                    route = Route::of(&event).as_str(),
                    refusal = %refusal,
                    "management request refused"
                );
                refusal.response()
            }
        };
        event::response(answer)
    }
}

//! Where the API's bearer tokens come from: their SHA-256 hashes
//! ([`hookbox::management::ApiTokens`]), inline in `HOOKBOX_API_TOKENS`
//! (local runs, tests) or in a Secrets Manager secret named by
//! `HOOKBOX_API_TOKENS_SECRET_ARN` (the template's). The secret is read at
//! init (a bad one fails the init, naming the variable) and again at most
//! every [`REFRESH`] on the next request, so adding a token, or removing a
//! revoked one, needs no deploy. A refresh that fails keeps the tokens
//! last read for another [`REFRESH`], and says so in the log (never the
//! secret's text).

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use hookbox::clock::Clock;
use hookbox::config::SecretStore;
use hookbox::management::{ApiTokens, TOKENS_ENV};
use hookbox::startup::{Startup, StartupError};
use tokio::sync::Mutex;

/// The variable naming the secret that holds the tokens' hashes.
pub const TOKENS_SECRET_ENV: &str = "HOOKBOX_API_TOKENS_SECRET_ARN";

/// How long tokens read from the secret are used before it is read again.
pub const REFRESH: Duration = Duration::from_secs(300);

/// The tokens' hashes, inline or from a secret.
#[derive(Debug, Clone)]
pub enum TokenSource {
    /// Fixed (`HOOKBOX_API_TOKENS`).
    Inline(ApiTokens),
    /// Read from Secrets Manager, refreshed.
    Secret(Arc<SecretTokens>),
}

/// Tokens read from a secret, and when.
#[derive(Debug)]
pub struct SecretTokens {
    arn: String,
    store: Arc<dyn SecretStore>,
    clock: Arc<dyn Clock>,
    current: Mutex<(ApiTokens, DateTime<Utc>)>,
}

/// Why the tokens could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TokenSourceError {
    /// Secrets Manager refused or did not answer.
    #[error("the API tokens' secret ({TOKENS_SECRET_ENV}) could not be read: {0}")]
    Unreadable(String),
    /// The secret is not the expected JSON (the message names the token,
    /// never a value).
    #[error("the API tokens' secret ({TOKENS_SECRET_ENV}): {0}")]
    Invalid(String),
}

async fn read(store: &dyn SecretStore, arn: &str) -> Result<ApiTokens, TokenSourceError> {
    let text = store
        .secret_string(arn)
        .await
        .map_err(TokenSourceError::Unreadable)?;
    ApiTokens::from_json(&text).map_err(|e| TokenSourceError::Invalid(e.to_string()))
}

impl TokenSource {
    /// `HOOKBOX_API_TOKENS` when set (ahead of the secret, as inline
    /// partners are), else the secret of `HOOKBOX_API_TOKENS_SECRET_ARN`,
    /// read now. Neither set is an init error: `[]` says "IAM callers
    /// only" explicitly.
    pub async fn from_startup(start: &Startup) -> Result<Self, StartupError> {
        if let Some(text) = start.var(TOKENS_ENV) {
            return ApiTokens::from_json(&text)
                .map(TokenSource::Inline)
                .map_err(|e| StartupError::settings("API tokens", e));
        }
        let Some(arn) = start.var(TOKENS_SECRET_ENV) else {
            return Err(StartupError::Missing {
                name: TOKENS_SECRET_ENV,
                what: "the secret holding the API tokens' SHA-256 hashes (or HOOKBOX_API_TOKENS \
                       inline; `[]` accepts IAM callers only)",
            });
        };
        Self::from_secret(arn.trim().to_string(), start.secrets(), start.clock())
            .await
            .map_err(|e| StartupError::settings("API tokens", e))
    }

    /// The tokens of the secret `arn`, read now.
    pub async fn from_secret(
        arn: String,
        store: Arc<dyn SecretStore>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, TokenSourceError> {
        let tokens = read(store.as_ref(), &arn).await?;
        let now = clock.now();
        Ok(TokenSource::Secret(Arc::new(SecretTokens {
            arn,
            store,
            clock,
            current: Mutex::new((tokens, now)),
        })))
    }

    /// The tokens to check a request against (the secret read again when
    /// its copy is older than [`REFRESH`]).
    pub async fn current(&self) -> ApiTokens {
        match self {
            TokenSource::Inline(tokens) => tokens.clone(),
            TokenSource::Secret(secret) => secret.current().await,
        }
    }
}

impl SecretTokens {
    async fn current(&self) -> ApiTokens {
        let mut current = self.current.lock().await;
        let now = self.clock.now();
        let age = (now - current.1).to_std().unwrap_or(Duration::ZERO);
        if age >= REFRESH {
            match read(self.store.as_ref(), &self.arn).await {
                Ok(tokens) => *current = (tokens, now),
                Err(e) => {
                    // keep serving with the tokens last read; try again
                    // after another REFRESH, not on every request
                    tracing::error!(error = %e, "API tokens not refreshed");
                    current.1 = now;
                }
            }
        }
        current.0.clone()
    }
}

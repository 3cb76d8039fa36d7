//! Bearer tokens of the management API, as Svix's SDKs send them
//! (`Authorization: Bearer <token>`). Tokens are configured hashed:
//! `HOOKBOX_API_TOKENS` holds `[{"name": "ci", "sha256": "<hex>"}]`, the
//! SHA-256 of each token; several at once let one be rotated without a
//! gap. A token's name is the audit trail's principal. A request's token
//! is hashed and compared with every configured hash in constant time; no
//! token, nor its hash, is ever logged or named in an error.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The environment variable holding the tokens' hashes.
pub const TOKENS_ENV: &str = "HOOKBOX_API_TOKENS";

/// Why the tokens' configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum TokenConfigError {
    /// Not the expected JSON.
    #[error(
        "{TOKENS_ENV} must be a JSON list of {{\"name\": …, \"sha256\": \"<64 hex digits>\"}}: {0}"
    )]
    Shape(String),
    /// A hash is not 64 hex digits.
    #[error("{TOKENS_ENV}: the sha256 of token {name:?} is not 64 hex digits")]
    Hash {
        /// The token's name.
        name: String,
    },
    /// A name is empty or used twice.
    #[error("{TOKENS_ENV}: token name {name:?} is empty or used twice")]
    Name {
        /// The name.
        name: String,
    },
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    sha256: String,
}

/// The tokens the API accepts, by name.
#[derive(Clone, Default)]
pub struct ApiTokens {
    hashes: Vec<(String, [u8; 32])>,
}

impl std::fmt::Debug for ApiTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.hashes.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("ApiTokens").field("names", &names).finish()
    }
}

/// The SHA-256 of `token`, in hex (what `HOOKBOX_API_TOKENS` holds).
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

impl ApiTokens {
    /// From `HOOKBOX_API_TOKENS`'s JSON.
    pub fn from_json(text: &str) -> Result<Self, TokenConfigError> {
        let entries: Vec<Entry> =
            serde_json::from_str(text).map_err(|e| TokenConfigError::Shape(e.to_string()))?;
        let mut tokens = Self::default();
        for e in entries {
            let mut hash = [0u8; 32];
            hex::decode_to_slice(e.sha256.trim(), &mut hash).map_err(|_| {
                TokenConfigError::Hash {
                    name: e.name.clone(),
                }
            })?;
            tokens.add(e.name, hash)?;
        }
        Ok(tokens)
    }

    /// From the environment (`HOOKBOX_API_TOKENS`); none when unset.
    pub fn from_env() -> Result<Self, TokenConfigError> {
        match std::env::var(TOKENS_ENV) {
            Ok(text) => Self::from_json(&text),
            Err(_) => Ok(Self::default()),
        }
    }

    /// Accepts `token` under `name` (tests, the local stack).
    pub fn with_token(mut self, name: &str, token: &str) -> Result<Self, TokenConfigError> {
        let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        self.add(name.to_string(), hash)?;
        Ok(self)
    }

    fn add(&mut self, name: String, hash: [u8; 32]) -> Result<(), TokenConfigError> {
        if name.is_empty() || self.hashes.iter().any(|(n, _)| *n == name) {
            return Err(TokenConfigError::Name { name });
        }
        self.hashes.push((name, hash));
        Ok(())
    }

    /// No token is accepted.
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// The name of the token `authorization` (`Bearer <token>`) carries,
    /// when it is one of these.
    pub fn principal(&self, authorization: Option<&str>) -> Option<String> {
        let value = authorization?.trim();
        let (scheme, token) = value.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let token = token.trim();
        if token.is_empty() {
            return None;
        }
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        // every hash is compared, whichever matches
        let mut found = None;
        for (name, hash) in &self.hashes {
            if bool::from(hash.ct_eq(&presented)) {
                found = Some(name.clone());
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_accepted_by_their_hash_and_named() {
        let config = format!(
            r#"[{{"name": "ci", "sha256": "{}"}}, {{"name": "next", "sha256": "{}"}}]"#,
            token_hash("s3cret"),
            token_hash("n3xt")
        );
        let tokens = ApiTokens::from_json(&config).expect("valid");
        assert_eq!(
            tokens.principal(Some("Bearer s3cret")).as_deref(),
            Some("ci")
        );
        assert_eq!(
            tokens.principal(Some("bearer n3xt")).as_deref(),
            Some("next")
        );
        assert_eq!(tokens.principal(Some("Bearer wrong")), None);
        assert_eq!(tokens.principal(Some("s3cret")), None);
        assert_eq!(tokens.principal(Some("Basic s3cret")), None);
        assert_eq!(tokens.principal(Some("Bearer ")), None);
        assert_eq!(tokens.principal(None), None);
        assert!(!format!("{tokens:?}").contains(&token_hash("s3cret")));
    }

    #[test]
    fn a_bad_configuration_is_refused_naming_the_token_never_a_value() {
        let err = ApiTokens::from_json(r#"[{"name": "ci", "sha256": "xyz"}]"#).expect_err("hex");
        assert!(err.to_string().contains("\"ci\""), "{err}");
        let twice = format!(
            r#"[{{"name": "ci", "sha256": "{0}"}}, {{"name": "ci", "sha256": "{0}"}}]"#,
            token_hash("a")
        );
        assert!(ApiTokens::from_json(&twice).is_err());
        assert!(ApiTokens::from_json(r#"{"ci": "x"}"#).is_err());
        assert!(ApiTokens::from_json("[]").expect("empty").is_empty());
    }
}

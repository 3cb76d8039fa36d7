//! Portal links (migration 30, docs/portal.md): minted for one tenant,
//! expiring, optionally read-only, revocable. The database keeps only each
//! key's SHA-256; [`session`] opens the session a key names, at every
//! request, so a revoked link stops at once.

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::manage::{Actor, ManageError, call};
use crate::params;
use crate::store::{DbError, Executor, Statement, Value, fetch_one};

/// A link lives this long unless asked otherwise (Svix's default).
pub const DEFAULT_EXPIRY_SECS: u32 = 7 * 24 * 3600;
/// The longest a link lives.
pub const MAX_EXPIRY_SECS: u32 = 7 * 24 * 3600;
/// The shortest a link lives.
pub const MIN_EXPIRY_SECS: u32 = 3600;

/// What a link opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    /// A customer's: its tenant's portal.
    Tenant,
    /// An operator's: the operator page (`/admin`).
    Operator,
}

/// A portal or operator link (never its key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortalLink {
    /// Its id (`pl_…`), to revoke it by.
    pub id: String,
    /// What it opens.
    pub kind: LinkKind,
    /// The tenant it opens (a customer's link).
    pub tenant_id: Option<String>,
    /// Who minted it (an operator's link).
    pub principal: Option<String>,
    /// It may look, not change.
    pub read_only: bool,
    /// The caller's label for the links of one of its sessions.
    pub session_id: Option<String>,
    /// When it was minted.
    pub created_at: DateTime<Utc>,
    /// It opens nothing from then on.
    pub expires_at: DateTime<Utc>,
    /// When it was revoked.
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A link's key: `hbp_` and 64 hex digits. Shown once, when minted; its
/// `Debug` never prints it.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct PortalKey(String);

impl PortalKey {
    /// `text` when it has a key's shape (says nothing of whether it opens
    /// anything).
    pub fn parse(text: &str) -> Option<Self> {
        let hex = text.strip_prefix("hbp_")?;
        (hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
        .then(|| Self(text.to_string()))
    }

    /// The key itself, for the one place that shows or sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// What the database keeps of it: its SHA-256 in lower-case hex.
    pub fn sha256_hex(&self) -> String {
        hex::encode(Sha256::digest(self.0.as_bytes()))
    }

    /// The page's anti-forgery token for this key: HMAC-SHA256 keyed with
    /// the key, so only a holder of the key (the page it opened) knows it,
    /// and it needs no storage.
    pub fn csrf_token(&self) -> String {
        use base64::Engine as _;
        let mut mac = <Hmac<Sha256> as hmac::KeyInit>::new_from_slice(self.0.as_bytes())
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        mac.update(b"hookbox portal anti-forgery token");
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }

    /// Whether `token` is this key's anti-forgery token (constant time).
    pub fn csrf_matches(&self, token: &str) -> bool {
        use subtle::ConstantTimeEq as _;
        let expected = self.csrf_token();
        expected.len() == token.len() && bool::from(expected.as_bytes().ct_eq(token.as_bytes()))
    }
}

impl std::fmt::Debug for PortalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PortalKey(hbp_…)")
    }
}

/// What minting answers: the link and its key.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MintedLink {
    /// The link.
    #[serde(flatten)]
    pub link: PortalLink,
    /// Its key (only now).
    pub key: PortalKey,
}

/// How to mint a link.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkSpec {
    /// Seconds it lives (`None`: [`DEFAULT_EXPIRY_SECS`]).
    pub expiry_secs: Option<u32>,
    /// It may look, not change.
    pub read_only: bool,
    /// The caller's label, to revoke a session's links together.
    pub session_id: Option<String>,
}

/// The tenant a session opens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionTenant {
    /// Its id.
    pub id: String,
    /// The SaaS's id for it.
    pub uid: Option<String>,
    /// Its name.
    pub name: String,
}

/// What a key opens now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortalSession {
    /// The link.
    #[serde(flatten)]
    pub link: PortalLink,
    /// Its tenant (a customer's link).
    pub tenant: Option<SessionTenant>,
}

/// What revoking did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revoked {
    /// The tenant.
    pub tenant_id: String,
    /// Links revoked now.
    pub revoked: i64,
}

/// `hookbox_portal_link_create`.
pub const LINK_CREATE: Statement = Statement::new(
    "portal.link_create",
    "SELECT hookbox_portal_link_create(CAST(:tenant AS text), CAST(:spec AS jsonb),
                                       CAST(:actor AS jsonb)) AS doc",
);
/// `hookbox_portal_link_revoke`.
pub const LINK_REVOKE: Statement = Statement::new(
    "portal.link_revoke",
    "SELECT hookbox_portal_link_revoke(CAST(:tenant AS text), CAST(:link AS text),
                                       CAST(:session_id AS text), CAST(:actor AS jsonb)) AS doc",
);
/// `hookbox_operator_link_create`.
pub const OPERATOR_LINK_CREATE: Statement = Statement::new(
    "portal.operator_link_create",
    "SELECT hookbox_operator_link_create(CAST(:expiry AS integer), CAST(:principal AS text))
            AS doc",
);
/// `hookbox_operator_links_revoke`.
pub const OPERATOR_LINKS_REVOKE: Statement = Statement::new(
    "portal.operator_links_revoke",
    "SELECT hookbox_operator_links_revoke() AS revoked",
);
/// An operator's link lives this long unless asked otherwise.
pub const DEFAULT_OPERATOR_EXPIRY_SECS: u32 = 3600;

/// `hookbox_portal_session`.
pub const SESSION: Statement = Statement::new(
    "portal.session",
    "SELECT hookbox_portal_session(CAST(:key_sha256 AS text), CAST(:now AS timestamptz)) AS doc",
);
/// `hookbox_portal_logout`.
pub const LOGOUT: Statement = Statement::new(
    "portal.logout",
    "SELECT hookbox_portal_logout(CAST(:key_sha256 AS text), CAST(:now AS timestamptz)) AS id",
);

/// Mints a link for `tenant` (id or uid). Recorded in the audit trail.
pub async fn mint_link(
    db: &dyn Executor,
    tenant: &str,
    spec: &LinkSpec,
    actor: Option<&Actor>,
) -> Result<MintedLink, ManageError> {
    let mut doc = serde_json::json!({"read_only": spec.read_only});
    if let Some(secs) = spec.expiry_secs {
        doc["expiry"] = secs.into();
    }
    if let Some(session) = &spec.session_id {
        doc["session_id"] = session.clone().into();
    }
    call(
        db,
        &LINK_CREATE,
        params! { "tenant" => tenant, "spec" => doc, "actor" => Actor::json(actor) },
    )
    .await
}

/// Mints an operator's link (the operator page, `/admin`) living
/// `expiry_secs` (300 to 86,400), recorded as minted by `principal`. Only a
/// session of `hookbox_management` may.
pub async fn mint_operator_link(
    db: &dyn Executor,
    expiry_secs: u32,
    principal: &str,
) -> Result<MintedLink, ManageError> {
    call(
        db,
        &OPERATOR_LINK_CREATE,
        params! { "expiry" => i64::from(expiry_secs), "principal" => principal },
    )
    .await
}

/// Revokes every operator's link; how many.
pub async fn revoke_operator_links(db: &dyn Executor) -> Result<i64, DbError> {
    fetch_one(db, &OPERATOR_LINKS_REVOKE, &params! {})
        .await?
        .i64("revoked")
}

/// Revokes `tenant`'s link `link`, or its links of `session_id`, or (both
/// `None`) all of them.
pub async fn revoke_links(
    db: &dyn Executor,
    tenant: &str,
    link: Option<&str>,
    session_id: Option<&str>,
    actor: Option<&Actor>,
) -> Result<Revoked, ManageError> {
    let text = |v: Option<&str>| v.map_or(Value::Null, Value::from);
    call(
        db,
        &LINK_REVOKE,
        params! {
            "tenant" => tenant,
            "link" => text(link),
            "session_id" => text(session_id),
            "actor" => Actor::json(actor),
        },
    )
    .await
}

/// What `key` opens at `now`: `None` when it is unknown, revoked or
/// expired, or its tenant is gone.
pub async fn session(
    db: &dyn Executor,
    key: &PortalKey,
    now: DateTime<Utc>,
) -> Result<Option<PortalSession>, DbError> {
    let row = fetch_one(
        db,
        &SESSION,
        &params! { "key_sha256" => key.sha256_hex(), "now" => now },
    )
    .await?;
    let Some(doc) = row.opt_json("doc")? else {
        return Ok(None);
    };
    serde_json::from_value(doc)
        .map(Some)
        .map_err(|e| DbError::Decode {
            statement: SESSION.name,
            column: "doc".into(),
            detail: e.to_string(),
        })
}

/// Revokes the link `key` opens (logging out); its id, or `None` when it
/// opened nothing.
pub async fn logout(
    db: &dyn Executor,
    key: &PortalKey,
    now: DateTime<Utc>,
) -> Result<Option<String>, DbError> {
    fetch_one(
        db,
        &LOGOUT,
        &params! { "key_sha256" => key.sha256_hex(), "now" => now },
    )
    .await?
    .opt_text("id")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_one_shape_and_never_print() {
        let text = format!("hbp_{}", "ab12".repeat(16));
        let key = PortalKey::parse(&text).expect("a key");
        assert_eq!(key.expose(), text);
        assert!(!format!("{key:?}").contains("ab12"));
        assert_eq!(key.sha256_hex().len(), 64);
        for bad in [
            "hbp_",
            "hbp_ABCD",
            &format!("hbp_{}", "AB12".repeat(16)),
            &format!("hbx_{}", "ab12".repeat(16)),
            &format!("hbp_{}0", "ab12".repeat(16)),
        ] {
            assert!(PortalKey::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_anti_forgery_token_is_the_keys_own() {
        let a = PortalKey::parse(&format!("hbp_{}", "a".repeat(64))).expect("a");
        let b = PortalKey::parse(&format!("hbp_{}", "b".repeat(64))).expect("b");
        assert_ne!(a.csrf_token(), b.csrf_token());
        assert!(a.csrf_matches(&a.csrf_token()));
        assert!(!a.csrf_matches(&b.csrf_token()));
        assert!(!a.csrf_matches(""));
        assert!(!a.csrf_token().contains(&"a".repeat(8)));
    }
}

//! Which adapter, from the environment: `DATABASE_URL` (direct
//! PostgreSQL) or `HOOKBOX_DB=data-api` with the cluster, secret and
//! database (the RDS Data API).

use super::*;

/// The database configuration is missing or contradictory.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// Neither adapter is configured.
    #[error(
        "no database configured: set DATABASE_URL (direct PostgreSQL) or HOOKBOX_DB=data-api \
         with DB_CLUSTER_ARN, DB_SECRET_ARN and DB_NAME (RDS Data API)"
    )]
    NotConfigured,
    /// `HOOKBOX_DB=data-api` without one of its variables.
    #[error("HOOKBOX_DB=data-api needs {0} to be set")]
    MissingVariable(&'static str),
    /// `HOOKBOX_DB` has a value we do not know.
    #[error("HOOKBOX_DB={0:?} is not an adapter (expected \"data-api\" or \"postgres\")")]
    UnknownAdapter(String),
    /// The PostgreSQL URL or pool is invalid.
    #[error(transparent)]
    Db(#[from] DbError),
}

/// Chooses and builds the database adapter from configuration (`env` is
/// `std::env::var` in binaries, a map in tests):
/// - `HOOKBOX_DB=data-api` with `DB_CLUSTER_ARN`, `DB_SECRET_ARN`, `DB_NAME`
///   → the RDS Data API (the SDK finds `AWS_ENDPOINT_URL_RDS_DATA` itself);
/// - else `DATABASE_URL` (or `HOOKBOX_DB=postgres`) → direct PostgreSQL, pool
///   size from `HOOKBOX_DB_MAX_CONNECTIONS` (default 8; keep it small in
///   Lambda: one sandbox serves one request at a time).
pub async fn connect_from_env(
    env: impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Database>, ConnectError> {
    connect_with_aws(env, || {
        aws_config::defaults(aws_config::BehaviorVersion::latest()).load()
    })
    .await
}

/// Like [`connect_from_env`], with the AWS configuration from `aws` (called
/// only for the Data API, after its variables are checked).
pub async fn connect_with_aws<F, Fut>(
    env: impl Fn(&str) -> Option<String>,
    aws: F,
) -> Result<Arc<dyn Database>, ConnectError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = aws_config::SdkConfig>,
{
    if let Some(target) = data_api_target(&env)? {
        return Ok(Arc::new(data_api::DataApiDatabase::from_sdk_config(
            &aws().await,
            target,
        )));
    }
    let var = |name: &'static str| env(name).filter(|v| !v.trim().is_empty());
    match var("HOOKBOX_DB").as_deref() {
        None | Some("postgres") => {
            let url = var("DATABASE_URL").ok_or(ConnectError::NotConfigured)?;
            let mut options = postgres::PgOptions::default();
            if let Some(n) = var("HOOKBOX_DB_MAX_CONNECTIONS").and_then(|n| n.parse().ok()) {
                options.max_connections = n;
            }
            options.acquire_timeout = Duration::from_secs(5);
            Ok(Arc::new(postgres::PgDatabase::connect(&url, &options)?))
        }
        Some(other) => Err(ConnectError::UnknownAdapter(other.to_string())),
    }
}

/// The Data API target when `HOOKBOX_DB=data-api` (all three variables
/// set), `None` for the other adapters.
pub fn data_api_target(
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<data_api::DataApiTarget>, ConnectError> {
    let var = |name: &'static str| env(name).filter(|v| !v.trim().is_empty());
    if var("HOOKBOX_DB").as_deref() != Some("data-api") {
        return Ok(None);
    }
    Ok(Some(data_api::DataApiTarget {
        resource_arn: var("DB_CLUSTER_ARN")
            .ok_or(ConnectError::MissingVariable("DB_CLUSTER_ARN"))?,
        secret_arn: var("DB_SECRET_ARN").ok_or(ConnectError::MissingVariable("DB_SECRET_ARN"))?,
        database: var("DB_NAME").ok_or(ConnectError::MissingVariable("DB_NAME"))?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_env::env;

    #[tokio::test]
    async fn configuration_errors_say_what_to_set() {
        let none = connect_from_env(env(&[])).await.expect_err("nothing set");
        assert!(matches!(none, ConnectError::NotConfigured));
        assert!(none.to_string().contains("DATABASE_URL"), "{none}");
        let partial = connect_from_env(env(&[
            ("HOOKBOX_DB", "data-api"),
            ("DB_CLUSTER_ARN", "arn:aws:rds:eu-west-1:1:cluster:c"),
            ("DB_NAME", "hookbox"),
        ]))
        .await
        .expect_err("secret missing");
        assert_eq!(
            partial.to_string(),
            "HOOKBOX_DB=data-api needs DB_SECRET_ARN to be set"
        );
        let unknown = connect_from_env(env(&[("HOOKBOX_DB", "mysql")]))
            .await
            .expect_err("unknown");
        assert!(unknown.to_string().contains("\"mysql\""), "{unknown}");
        let bad_url = connect_from_env(env(&[("DATABASE_URL", "postgres://h:notaport/db")]))
            .await
            .expect_err("bad url");
        assert!(
            matches!(bad_url, ConnectError::Db(DbError::Statement { .. })),
            "{bad_url:?}"
        );
    }

    #[tokio::test]
    async fn database_url_selects_direct_postgres_without_connecting() {
        let db = connect_from_env(env(&[
            ("DATABASE_URL", "postgres://u:secret@127.0.0.1:1/hookbox"),
            ("HOOKBOX_DB_MAX_CONNECTIONS", "2"),
        ]))
        .await
        .expect("lazy pool");
        let shown = format!("{db:?}");
        assert!(
            shown.contains("PgDatabase") && shown.contains("127.0.0.1:1/hookbox"),
            "{shown}"
        );
        assert!(!shown.contains("secret"), "{shown}");
    }
}

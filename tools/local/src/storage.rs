//! Where the local stack keeps its state: PostgreSQL (a throwaway cluster,
//! removed on stop, or `--database-url`), migrated at start and reached
//! directly or through the local RDS Data API (`--data-api`), and the
//! directory of large bodies (the blob store).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use hookbox::blob::BlobStore;
use hookbox::blob::fs::FsBlobStore;
use hookbox::store::Database;
use hookbox::store::data_api::{DataApiDatabase, DataApiTarget};
use hookbox::store::postgres::{PgDatabase, PgOptions};

use crate::{Options, demo};

/// The stack's database and blob directory, and what is held for its drop.
/// Fields drop in this order: the database's clients before the local Data
/// API, the cluster last.
pub(crate) struct Storage {
    pub db: Arc<dyn Database>,
    pub database_url: String,
    pub blobs: Arc<dyn BlobStore>,
    pub blob_dir: PathBuf,
    /// The blob directory when it is a throwaway one.
    pub _blob_tmp: Option<tempfile::TempDir>,
    /// The local Data API (with `--data-api`).
    pub _data_api: Option<local_data_api::BackgroundServer>,
    /// The throwaway cluster (none with `--database-url`).
    pub _cluster: Option<hookbox_testkit::PrivateCluster>,
}

/// Starts (or connects to) PostgreSQL, migrates it, and opens the blob
/// directory.
pub(crate) async fn open(options: &Options) -> anyhow::Result<Storage> {
    let (cluster, database_url) = match &options.database_url {
        Some(url) => (None, url.clone()),
        None => {
            let cluster = tokio::task::spawn_blocking(|| {
                std::panic::catch_unwind(hookbox_testkit::PrivateCluster::start)
            })
            .await
            .context("starting PostgreSQL")?
            .map_err(|p| {
                let why = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                anyhow::anyhow!(
                    "cannot start a throwaway PostgreSQL (install the server binaries, \
                     e.g. `apt-get install postgresql`, or pass --database-url): {why}"
                )
            })?;
            let url = cluster.url().to_string();
            (Some(cluster), url)
        }
    };
    let (blob_dir, blob_tmp) = match (&options.blob_dir, &cluster) {
        (Some(dir), _) => (dir.clone(), None),
        (None, Some(_)) => {
            let tmp = tempfile::Builder::new()
                .prefix("hookbox-local-blobs-")
                .tempdir()
                .context("creating a directory for large bodies")?;
            (tmp.path().to_path_buf(), Some(tmp))
        }
        (None, None) => (std::env::temp_dir().join("hookbox-local-blobs"), None),
    };
    let blobs: Arc<dyn BlobStore> = Arc::new(FsBlobStore::new(blob_dir.clone()));
    let (db, data_api): (Arc<dyn Database>, _) = if options.data_api {
        let server =
            local_data_api::spawn_background(local_data_api::Config::new(database_url.clone()))
                .map_err(|e| anyhow::anyhow!("cannot start the local Data API: {e}"))?;
        let database = database_name(&database_url);
        let db = DataApiDatabase::local(
            &server.endpoint_url(),
            DataApiTarget {
                resource_arn: "arn:aws:rds:local:000000000000:cluster:hookbox-local".into(),
                secret_arn: "arn:aws:secretsmanager:local:000000000000:secret:hookbox-local".into(),
                database,
            },
        );
        (Arc::new(db), Some(server))
    } else {
        let db = PgDatabase::connect(&database_url, &PgOptions::default())
            .map_err(|e| anyhow::anyhow!("cannot use {}: {e}", redact(&database_url)))?;
        (Arc::new(db), None)
    };
    hookbox::migrate::migrate(db.as_ref())
        .await
        .with_context(|| format!("migrating {}", redact(&database_url)))?;
    db.execute(&demo::CREATE_RECEIVED, &hookbox::params! {})
        .await
        .context("creating local_downstream_received")?;
    Ok(Storage {
        db,
        database_url,
        blobs,
        blob_dir,
        _blob_tmp: blob_tmp,
        _data_api: data_api,
        _cluster: cluster,
    })
}

/// The database name in a PostgreSQL URL (`postgres` when none).
fn database_name(url: &str) -> String {
    url.rsplit('/')
        .next()
        .map(|tail| tail.split('?').next().unwrap_or(tail))
        .filter(|name| !name.is_empty() && !name.contains('@') && !name.contains(':'))
        .unwrap_or("postgres")
        .to_string()
}

/// The URL with its password replaced by `***`.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names_and_redaction() {
        assert_eq!(
            database_name("postgres://u:p@127.0.0.1:5432/shop?sslmode=disable"),
            "shop"
        );
        assert_eq!(database_name("postgres://u:p@127.0.0.1:5432"), "postgres");
        assert_eq!(
            redact("postgres://u:secret@127.0.0.1:5/db"),
            "postgres://u:***@127.0.0.1:5/db"
        );
        assert_eq!(
            redact("postgres://127.0.0.1:5/db"),
            "postgres://127.0.0.1:5/db"
        );
    }
}

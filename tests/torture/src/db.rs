//! The run's database: its own PostgreSQL cluster, through either adapter.

use std::sync::Arc;
use std::time::Duration;

use hookbox::store::Database;
use hookbox::store::data_api::{DataApiDatabase, DataApiTarget};
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox_testkit::PrivateCluster;

use crate::Adapter;

/// The run's own PostgreSQL (durable commits: the run kills it as a crash
/// would, and an acknowledged commit must survive), through `adapter`.
pub(crate) struct Db {
    pub(crate) cluster: PrivateCluster,
    pub(crate) db: Arc<dyn Database>,
    /// The local Data API server in front of it (Data API adapter).
    pub(crate) data_api: Option<local_data_api::BackgroundServer>,
}

pub(crate) fn database(adapter: Adapter) -> Db {
    let cluster = PrivateCluster::start_durable();
    let (db, data_api): (Arc<dyn Database>, Option<local_data_api::BackgroundServer>) =
        match adapter {
            Adapter::Postgres => (
                Arc::new(
                    PgDatabase::connect(
                        cluster.url(),
                        &PgOptions {
                            acquire_timeout: Duration::from_secs(2),
                            ..PgOptions::default()
                        },
                    )
                    .unwrap_or_else(|e| panic!("pool: {e}")),
                ),
                None,
            ),
            Adapter::DataApi => {
                let server = hookbox_testkit::start_data_api(cluster.url());
                let db = DataApiDatabase::local(
                    &server.endpoint_url(),
                    DataApiTarget {
                        resource_arn: "arn:aws:rds:us-east-1:123456789012:cluster:torture".into(),
                        secret_arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:torture"
                            .into(),
                        database: "postgres".into(),
                    },
                );
                (Arc::new(db), Some(server))
            }
        };
    Db {
        cluster,
        db,
        data_api,
    }
}

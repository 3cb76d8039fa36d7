//! The migration runner. It works through the database port only, so the
//! same code applies the schema over direct PostgreSQL and over the RDS Data
//! API (from the `migrate` custom resource).
//!
//! - Ordered by version; each migration runs in its own transaction together
//!   with its `schema_migrations` record, so it is applied entirely or not at all.
//! - Idempotent: applied versions are skipped.
//! - Safe against concurrent runners: every transaction first takes a
//!   transaction-scoped advisory lock (a session lock would not survive the
//!   Data API, which has no sessions), then re-reads what is applied.
//! - Refuses to run when an applied migration's text changed (checksum).

use std::collections::BTreeMap;
use std::fmt;

use sha2::{Digest, Sha256};

use crate::params;
use crate::store::{Database, DbError, Executor, Statement, Transaction, split_statements};

/// One numbered migration.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    /// Version, from the file name's number. Strictly increasing.
    pub version: i64,
    /// Name, from the rest of the file name.
    pub name: &'static str,
    /// The SQL script: statements separated by `;`, no parameters.
    pub sql: &'static str,
}

impl fmt::Debug for Migration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Migration")
            .field("version", &self.version)
            .field("name", &self.name)
            .field("checksum", &self.checksum())
            .finish()
    }
}

impl Migration {
    /// sha256 of the script, hex. Line endings are normalised so a checkout
    /// with CRLF does not look like an edit.
    pub fn checksum(&self) -> String {
        hex::encode(Sha256::digest(self.sql.replace("\r\n", "\n").as_bytes()))
    }
}

/// hookbox's migrations, in order. `shared/migrations/NNNN_name.sql`; a test
/// checks this list matches the folder.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "inbox_outbox",
        sql: include_str!("../migrations/0001_inbox_outbox.sql"),
    },
    Migration {
        version: 2,
        name: "example_orders",
        sql: include_str!("../migrations/0002_example_orders.sql"),
    },
    Migration {
        version: 3,
        name: "outbox_ordered_delivery",
        sql: include_str!("../migrations/0003_outbox_ordered_delivery.sql"),
    },
    Migration {
        version: 4,
        name: "outbox_leases",
        sql: include_str!("../migrations/0004_outbox_leases.sql"),
    },
    Migration {
        version: 5,
        name: "outbox_claim_function",
        sql: include_str!("../migrations/0005_outbox_claim_function.sql"),
    },
    Migration {
        version: 6,
        name: "inbox_body_by_reference",
        sql: include_str!("../migrations/0006_inbox_body_by_reference.sql"),
    },
    Migration {
        version: 7,
        name: "outbox_payload_by_reference",
        sql: include_str!("../migrations/0007_outbox_payload_by_reference.sql"),
    },
    Migration {
        version: 8,
        name: "inbox_body_dedupe",
        sql: include_str!("../migrations/0008_inbox_body_dedupe.sql"),
    },
    Migration {
        version: 9,
        name: "function_roles",
        sql: include_str!("../migrations/0009_function_roles.sql"),
    },
    Migration {
        version: 10,
        name: "archive_retention",
        sql: include_str!("../migrations/0010_archive_retention.sql"),
    },
    Migration {
        version: 11,
        name: "publish",
        sql: include_str!("../migrations/0011_publish.sql"),
    },
    Migration {
        version: 12,
        name: "outbox_attempts",
        sql: include_str!("../migrations/0012_outbox_attempts.sql"),
    },
    Migration {
        version: 13,
        name: "destination_health",
        sql: include_str!("../migrations/0013_destination_health.sql"),
    },
    Migration {
        version: 14,
        name: "claim_plans",
        sql: include_str!("../migrations/0014_claim_plans.sql"),
    },
    Migration {
        version: 15,
        name: "outbox_replay_index",
        sql: include_str!("../migrations/0015_outbox_replay_index.sql"),
    },
    Migration {
        version: 16,
        name: "delivery_index_entries",
        sql: include_str!("../migrations/0016_delivery_index_entries.sql"),
    },
    Migration {
        version: 17,
        name: "delivering_attempt_on_the_row",
        sql: include_str!("../migrations/0017_delivering_attempt_on_the_row.sql"),
    },
    Migration {
        version: 18,
        name: "forward_at_ingest",
        sql: include_str!("../migrations/0018_forward_at_ingest.sql"),
    },
    Migration {
        version: 19,
        name: "forwarding_hardened",
        sql: include_str!("../migrations/0019_forwarding_hardened.sql"),
    },
    Migration {
        version: 20,
        name: "tenants",
        sql: include_str!("../migrations/0020_tenants.sql"),
    },
    Migration {
        version: 21,
        name: "tenant_management",
        sql: include_str!("../migrations/0021_tenant_management.sql"),
    },
    Migration {
        version: 22,
        name: "messages_recover",
        sql: include_str!("../migrations/0022_messages_recover.sql"),
    },
    Migration {
        version: 23,
        name: "api_event_types_idempotency",
        sql: include_str!("../migrations/0023_api_event_types_idempotency.sql"),
    },
    Migration {
        version: 24,
        name: "claim_at_scale",
        sql: include_str!("../migrations/0024_claim_at_scale.sql"),
    },
    Migration {
        version: 25,
        name: "management_login",
        sql: include_str!("../migrations/0025_management_login.sql"),
    },
    Migration {
        version: 26,
        name: "childless_messages_purge",
        sql: include_str!("../migrations/0026_childless_messages_purge.sql"),
    },
    Migration {
        version: 27,
        name: "drop_held",
        sql: include_str!("../migrations/0027_drop_held.sql"),
    },
    Migration {
        version: 28,
        name: "claim_walks_on",
        sql: include_str!("../migrations/0028_claim_walks_on.sql"),
    },
    Migration {
        version: 29,
        name: "trail",
        sql: include_str!("../migrations/0029_trail.sql"),
    },
    Migration {
        version: 30,
        name: "portal",
        sql: include_str!("../migrations/0030_portal.sql"),
    },
    Migration {
        version: 31,
        name: "claim_walk_one_descent",
        sql: include_str!("../migrations/0031_claim_walk_one_descent.sql"),
    },
    Migration {
        version: 32,
        name: "unhealthy_destinations",
        sql: include_str!("../migrations/0032_unhealthy_destinations.sql"),
    },
    Migration {
        version: 33,
        name: "endpoint_relay_doc",
        sql: include_str!("../migrations/0033_endpoint_relay_doc.sql"),
    },
];

/// Why migrating failed.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// The database failed (see [`DbError`] for which errors are retryable).
    #[error(transparent)]
    Db(#[from] DbError),
    /// An applied migration's text differs from the one in this build.
    #[error(
        "migration {version} ({name}) was applied with checksum {applied} but this build has \
         {expected}: applied migrations must never be edited; add a new migration instead"
    )]
    ChecksumMismatch {
        /// The version.
        version: i64,
        /// Its name in this build.
        name: &'static str,
        /// Checksum recorded in the database.
        applied: String,
        /// Checksum of this build's text.
        expected: String,
    },
    /// The migration list itself is wrong (duplicate or unordered versions,
    /// unreadable script).
    #[error("invalid migration list: {0}")]
    Invalid(String),
    /// One statement of a migration failed; the migration was rolled back.
    #[error("migration {version} ({name}), statement {index}, failed: {source}")]
    Failed {
        /// The version.
        version: i64,
        /// Its name.
        name: &'static str,
        /// 1-based statement number within the script.
        index: usize,
        /// The database error.
        source: DbError,
    },
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrationReport {
    /// Versions this run applied, in order.
    pub applied: Vec<i64>,
    /// Versions that were already applied.
    pub already_applied: Vec<i64>,
    /// Versions recorded in the database that this build does not know
    /// (a newer build migrated the database); left alone.
    pub unknown_applied: Vec<i64>,
}

/// "hookbox" in ASCII: the advisory lock key of migrations.
const LOCK_KEY: i64 = 0x0068_6f6f_6b62_6f78;

const LOCK: Statement = Statement::new(
    "migrate.lock",
    "SELECT true AS locked FROM (SELECT pg_advisory_xact_lock(:key)) AS l",
);
const CREATE_TABLE: Statement = Statement::new(
    "migrate.create_table",
    "CREATE TABLE IF NOT EXISTS schema_migrations (
        version      bigint      PRIMARY KEY,
        name         text        NOT NULL,
        checksum     text        NOT NULL,
        applied_at   timestamptz NOT NULL DEFAULT now(),
        execution_ms bigint      NOT NULL
    )",
);
const APPLIED: Statement = Statement::new(
    "migrate.applied",
    "SELECT version, checksum FROM schema_migrations ORDER BY version",
);
const RECORD: Statement = Statement::new(
    "migrate.record",
    "INSERT INTO schema_migrations (version, name, checksum, execution_ms)
     VALUES (:version, :name, :checksum, :execution_ms)",
);

/// Applies `hookbox`'s own migrations.
pub async fn migrate(db: &dyn Database) -> Result<MigrationReport, MigrateError> {
    Migrator::new(MIGRATIONS).run(db).await
}

/// Runs a list of migrations.
#[derive(Debug, Clone, Copy)]
pub struct Migrator {
    migrations: &'static [Migration],
}

impl Migrator {
    /// A runner for `migrations` (normally [`MIGRATIONS`]).
    pub fn new(migrations: &'static [Migration]) -> Self {
        Self { migrations }
    }

    fn validate(&self) -> Result<(), MigrateError> {
        for pair in self.migrations.windows(2) {
            if pair[0].version >= pair[1].version {
                return Err(MigrateError::Invalid(format!(
                    "versions must increase: {} ({}) is followed by {} ({})",
                    pair[0].version, pair[0].name, pair[1].version, pair[1].name
                )));
            }
        }
        for m in self.migrations {
            split_statements(m.sql).map_err(|e| {
                MigrateError::Invalid(format!("migration {} ({}): {e}", m.version, m.name))
            })?;
        }
        Ok(())
    }

    /// Applies every migration not yet applied, one transaction each.
    pub async fn run(&self, db: &dyn Database) -> Result<MigrationReport, MigrateError> {
        self.validate()?;
        let mut report = MigrationReport::default();
        {
            let tx = db.begin().await?;
            let created = async {
                lock(tx.as_ref()).await?;
                tx.execute(&CREATE_TABLE, &params! {}).await
            }
            .await;
            finish(tx, created.map(|_| ())).await?;
        }
        loop {
            let tx = db.begin().await?;
            match self.step(tx.as_ref(), &mut report).await {
                Ok(done) => {
                    if !done {
                        // a migration ran, its record is written: not committed yet
                        crate::failpoint::hit!(crate::failpoint::MIGRATION_BEFORE_COMMIT);
                    }
                    tx.commit().await?;
                    if done {
                        return Ok(report);
                    }
                }
                Err(e) => {
                    // The error that matters is the first one; a failed
                    // rollback only means the connection is gone too.
                    let _ = tx.rollback().await;
                    return Err(e);
                }
            }
        }
    }

    /// Under the lock: checks checksums, applies the first pending migration.
    /// Returns true when nothing was left to apply.
    async fn step(
        &self,
        tx: &dyn Transaction,
        report: &mut MigrationReport,
    ) -> Result<bool, MigrateError> {
        lock(tx).await?;
        let applied: BTreeMap<i64, String> = tx
            .execute(&APPLIED, &params! {})
            .await?
            .rows
            .iter()
            .map(|r| Ok((r.i64("version")?, r.text("checksum")?)))
            .collect::<Result<_, DbError>>()?;
        for m in self.migrations {
            if let Some(recorded) = applied.get(&m.version) {
                let expected = m.checksum();
                if *recorded != expected {
                    return Err(MigrateError::ChecksumMismatch {
                        version: m.version,
                        name: m.name,
                        applied: recorded.clone(),
                        expected,
                    });
                }
            }
        }
        report.unknown_applied = applied
            .keys()
            .filter(|v| !self.migrations.iter().any(|m| m.version == **v))
            .copied()
            .collect();
        let Some(next) = self
            .migrations
            .iter()
            .find(|m| !applied.contains_key(&m.version))
        else {
            report.already_applied = self
                .migrations
                .iter()
                .map(|m| m.version)
                .filter(|v| !report.applied.contains(v))
                .collect();
            return Ok(true);
        };
        let started = std::time::Instant::now();
        let statements =
            split_statements(next.sql).map_err(|e| MigrateError::Invalid(e.to_string()))?;
        for (i, sql) in statements.into_iter().enumerate() {
            let statement = Statement::new(next.name, sql);
            tx.execute(&statement, &params! {})
                .await
                .map_err(|source| MigrateError::Failed {
                    version: next.version,
                    name: next.name,
                    index: i + 1,
                    source,
                })?;
        }
        let elapsed_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        tx.execute(
            &RECORD,
            &params! {
                "version" => next.version,
                "name" => next.name,
                "checksum" => next.checksum(),
                "execution_ms" => elapsed_ms,
            },
        )
        .await?;
        tracing::info!(
            version = next.version,
            name = next.name,
            elapsed_ms,
            "migration applied"
        );
        report.applied.push(next.version);
        Ok(false)
    }
}

async fn lock(tx: &dyn Executor) -> Result<(), DbError> {
    tx.execute(&LOCK, &params! { "key" => LOCK_KEY })
        .await
        .map(|_| ())
}

async fn finish(tx: Box<dyn Transaction>, outcome: Result<(), DbError>) -> Result<(), DbError> {
    match outcome {
        Ok(()) => tx.commit().await,
        Err(e) => {
            let _ = tx.rollback().await;
            Err(e)
        }
    }
}

//! A diagnostic: what each statement cost PostgreSQL during a measured
//! stretch, from `pg_stat_statements`. Only when the cluster was started
//! with it (`HOOKBOX_PG_OPTIONS='-c shared_preload_libraries=pg_stat_statements'`
//! and `HOOKBOX_BENCH_STATEMENTS=1`); otherwise it does nothing. Printed on
//! stderr, never a figure.

use hookbox::store::{Executor, Statement};

/// A stretch being measured: the counters were reset at its start.
#[derive(Debug)]
pub struct StatementReport {
    enabled: bool,
}

async fn run(db: &dyn Executor, sql: &'static str) -> anyhow::Result<hookbox::store::Rows> {
    Ok(db
        .execute(
            &Statement::new("bench.statements", sql),
            &hookbox::params! {},
        )
        .await?)
}

impl StatementReport {
    /// Resets the counters of the cluster `db` belongs to.
    pub async fn start(db: &dyn Executor) -> anyhow::Result<StatementReport> {
        let enabled = std::env::var_os("HOOKBOX_BENCH_STATEMENTS").is_some();
        if enabled {
            run(db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements").await?;
            run(db, "SELECT pg_stat_statements_reset()::text AS reset").await?;
        }
        Ok(StatementReport { enabled })
    }

    /// Prints the statements of the current database by total time, each
    /// per `operations` (deliveries): calls, rows, ms, buffers hit.
    pub async fn print(
        &self,
        db: &dyn Executor,
        name: &str,
        operations: u64,
    ) -> anyhow::Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let rows = run(
            db,
            "SELECT format('%8s ms %7s calls %9s rows %10s blks/call %8s µs/call  %s', \
                 round(total_exec_time::numeric, 1), calls, rows, \
                 round((shared_blks_hit + shared_blks_read)::numeric / greatest(calls, 1), 1), \
                 round((total_exec_time * 1000 / greatest(calls, 1))::numeric, 1), \
                 left(regexp_replace(query, '\\s+', ' ', 'g'), 90)) AS line \
             FROM pg_stat_statements \
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
             ORDER BY total_exec_time DESC LIMIT 12",
        )
        .await?;
        eprintln!("   statements of {name} ({operations} deliveries):");
        for row in rows.rows {
            if let Ok(hookbox::store::Value::Text(line)) = row.value("line") {
                eprintln!("     {line}");
            }
        }
        Ok(())
    }
}

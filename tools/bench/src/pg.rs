//! The benchmark's database: one durable throwaway cluster (fsync on, as
//! production pays), a fresh database per flow, and pgbench for baselines.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use hookbox::store::postgres::{PgDatabase, PgOptions};
use hookbox::store::{Database, Executor as _, Statement};
use hookbox_testkit::PrivateCluster;

/// The cluster every flow runs on.
#[derive(Debug)]
pub struct Bench {
    cluster: PrivateCluster,
    bindir: PathBuf,
    /// `plan_cache_mode = force_custom_plan` on every database (a
    /// diagnostic: plans made for each statement's parameters).
    pub custom_plans: bool,
}

impl Bench {
    /// Starts a durable cluster (about a second).
    pub fn start() -> anyhow::Result<Bench> {
        let cluster = std::panic::catch_unwind(PrivateCluster::start_durable)
            .map_err(|_| anyhow::anyhow!("cannot start a durable PostgreSQL cluster"))?;
        let bindir = hookbox_testkit::find_bindir()?;
        Ok(Bench {
            cluster,
            bindir,
            custom_plans: false,
        })
    }

    /// The maintenance database's URL.
    pub fn admin_url(&self) -> &str {
        self.cluster.url()
    }

    /// The URL of database `name` on the cluster.
    pub fn url_of(&self, name: &str) -> String {
        let admin = self.cluster.url();
        match admin.rsplit_once('/') {
            Some((base, _)) => format!("{base}/{name}"),
            None => admin.to_string(),
        }
    }

    /// Creates database `name` (dropping an old one), migrates it, and
    /// returns its URL and a pool of `max_connections`.
    pub async fn database(
        &self,
        name: &str,
        max_connections: usize,
    ) -> anyhow::Result<(String, Arc<dyn Database>)> {
        let admin = PgDatabase::connect(self.admin_url(), &PgOptions::default())?;
        let mut statements = vec![
            format!("DROP DATABASE IF EXISTS {name}"),
            format!("CREATE DATABASE {name}"),
        ];
        if self.custom_plans {
            statements.push(format!(
                "ALTER DATABASE {name} SET plan_cache_mode = force_custom_plan"
            ));
        }
        for sql in statements {
            let sql: &'static str = Box::leak(sql.into_boxed_str());
            admin
                .execute(
                    &Statement::new("bench.create_database", sql),
                    &hookbox::params! {},
                )
                .await
                .with_context(|| format!("creating database {name}"))?;
        }
        let url = self.url_of(name);
        let db: Arc<dyn Database> = Arc::new(PgDatabase::connect(
            &url,
            &PgOptions {
                max_connections,
                ..PgOptions::default()
            },
        )?);
        hookbox::migrate::migrate(db.as_ref())
            .await
            .with_context(|| format!("migrating {name}"))?;
        Ok((url, db))
    }

    /// Runs pgbench on `url` with `script` (`-M prepared`, `clients`
    /// connections, `seconds`).
    pub fn pgbench(
        &self,
        url: &str,
        script: &str,
        clients: usize,
        seconds: u64,
    ) -> anyhow::Result<Pgbench> {
        let file = tempfile::Builder::new()
            .prefix("hookbox-bench-")
            .suffix(".sql")
            .tempfile()?;
        std::fs::write(file.path(), script)?;
        let before = crate::stats::cpu_seconds().1;
        let out = std::process::Command::new(self.bindir.join("pgbench"))
            .args(["-n", "-M", "prepared", "-c"])
            .arg(clients.to_string())
            .arg("-j")
            .arg(clients.min(2).to_string())
            .arg("-T")
            .arg(seconds.max(1).to_string())
            .arg("-f")
            .arg(file.path())
            .arg(url)
            .output()
            .context("running pgbench")?;
        let text = String::from_utf8_lossy(&out.stdout);
        anyhow::ensure!(
            out.status.success(),
            "pgbench failed: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let pg_cpu = crate::stats::cpu_seconds().1 - before;
        let tps =
            parse_tps(&text).ok_or_else(|| anyhow::anyhow!("no tps in pgbench output: {text}"))?;
        let transactions = parse_transactions(&text).unwrap_or(0);
        Ok(Pgbench {
            tps,
            transactions,
            pg_cpu_us: pg_cpu * 1e6 / transactions.max(1) as f64,
        })
    }
}

/// What one pgbench run measured.
#[derive(Debug, Clone, Copy)]
pub struct Pgbench {
    /// Transactions per second, without the initial connection time.
    pub tps: f64,
    pub transactions: u64,
    /// PostgreSQL CPU per transaction, µs.
    pub pg_cpu_us: f64,
}

/// The "number of transactions actually processed: N" of pgbench's output.
pub fn parse_transactions(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("number of transactions actually processed:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// The `tps = N` of pgbench's output.
pub fn parse_tps(text: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with("tps ="))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|v| v.parse().ok())
}

/// SQL on one line, `--` comments removed (on one line a comment would
/// swallow the rest of the statement, its `;` included).
pub fn one_line(sql: &str) -> String {
    sql.lines()
        .map(|line| line.split_once("--").map_or(line, |(code, _)| code))
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgbench_tps_is_read_from_its_summary() {
        let out = "number of failed transactions: 0 (0.000%)\nlatency average = 1.2 ms\n\
                   initial connection time = 3.1 ms\ntps = 6543.210987 (without initial connection time)\n";
        assert_eq!(parse_tps(out), Some(6543.210987));
        assert_eq!(parse_tps("nothing"), None);
        let out = "number of transactions actually processed: 6543\nlatency average = 1 ms\n";
        assert_eq!(parse_transactions(out), Some(6543));
        assert_eq!(parse_transactions("nothing"), None);
    }

    #[test]
    fn statements_become_one_line() {
        assert_eq!(one_line("SELECT 1\n   FROM  t\n"), "SELECT 1 FROM t");
        assert_eq!(one_line("SELECT 1 -- one\n  , 2 -- two\n"), "SELECT 1 , 2");
    }
}

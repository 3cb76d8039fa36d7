//! The machine a run measured: what BENCHMARKS.md says it ran on.

use std::fmt::Write as _;

use hookbox::store::{Database, Statement};

/// What the report says about the machine.
#[derive(Debug, Clone)]
pub struct Machine {
    pub date: String,
    pub cores: usize,
    pub cpu: String,
    pub memory_gib: f64,
    pub kernel: String,
    pub postgres: String,
    pub fsync: String,
    pub synchronous_commit: String,
    pub rustc: String,
    pub commit: String,
    pub load_before: String,
    pub load_after: String,
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").trim().to_string()
}

fn command(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or_else(
            || "unknown".into(),
            |o| first_line(&String::from_utf8_lossy(&o.stdout)),
        )
}

/// The 1, 5 and 15 minute load averages.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

async fn show(db: &dyn Database, setting: &'static str) -> String {
    let sql: &'static str = match setting {
        "fsync" => "SELECT current_setting('fsync') AS v",
        "synchronous_commit" => "SELECT current_setting('synchronous_commit') AS v",
        _ => "SELECT version() AS v",
    };
    match db
        .execute(&Statement::new("bench.show", sql), &hookbox::params! {})
        .await
    {
        Ok(rows) => rows
            .rows
            .first()
            .and_then(|r| r.text("v").ok())
            .unwrap_or_else(|| "unknown".into()),
        Err(e) => format!("unknown ({e})"),
    }
}

impl Machine {
    /// Reads the machine and the benchmark cluster's settings.
    pub async fn read(db: &dyn Database) -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map_or_else(|| "unknown".into(), |(_, v)| v.trim().to_string());
        let memory_gib = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find(|l| l.starts_with("MemTotal:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|kb| kb.parse::<f64>().ok())
            })
            .map_or(0.0, |kb| kb / (1024.0 * 1024.0));
        let version = show(db, "version").await;
        Machine {
            date: chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string(),
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu,
            memory_gib,
            kernel: first_line(
                &std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default(),
            ),
            postgres: version.split(" on ").next().unwrap_or(&version).to_string(),
            fsync: show(db, "fsync").await,
            synchronous_commit: show(db, "synchronous_commit").await,
            rustc: command("rustc", &["--version"]),
            commit: command("git", &["rev-parse", "--short=12", "HEAD"]),
            load_before: load_average(),
            load_after: String::new(),
        }
    }

    /// The machine section of the report.
    pub fn markdown(&self, profile: &str, quick: bool) -> String {
        let mut out = String::new();
        let rows = [
            ("date", self.date.clone()),
            ("cores", self.cores.to_string()),
            ("CPU", self.cpu.clone()),
            ("memory", format!("{:.0} GiB", self.memory_gib)),
            ("kernel", self.kernel.clone()),
            ("PostgreSQL", self.postgres.clone()),
            (
                "durability",
                format!(
                    "fsync {}, synchronous_commit {} (a throwaway cluster on this machine's disk)",
                    self.fsync, self.synchronous_commit
                ),
            ),
            ("build", format!("{} (profile `{profile}`)", self.rustc)),
            ("commit", self.commit.clone()),
            (
                "mode",
                if quick {
                    "--quick (short runs: figures are indicative only)".into()
                } else {
                    "full".to_string()
                },
            ),
            (
                "load average (1, 5, 15 min)",
                format!("{} before, {} after", self.load_before, self.load_after),
            ),
        ];
        let _ = writeln!(out, "| machine | |\n| --- | --- |");
        for (k, v) in rows {
            let _ = writeln!(out, "| {k} | {v} |");
        }
        out
    }
}

//! Cold start of each function's binary against a hello-world
//! `lambda_runtime` binary: the time from exec to the first
//! `GET /2018-06-01/runtime/invocation/next` on the Runtime API emulator
//! ([`crate::runtime_api`]), median of N starts interleaved (so the
//! machine's load falls on every binary alike; at least [`MIN_RUNS`]), each
//! started with Lambda's environment only ([`crate::runtime_api::lambda_env`]
//! plus what the template gives: Data API, SQS, S3, endpoints never called at
//! init), nothing of the caller's; and each binary's size and dynamic
//! relocations (what the loader applies before `main`). Used by `tools/dev
//! deploy coldstart` (the `coldstart` example) and `hookbox-bench
//! --coldstart`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::runtime_api::{Function, Init};
use crate::smoke;

/// Fewest starts per binary a figure is given for: fewer and a median moves
/// with the machine's load.
pub const MIN_RUNS: usize = 21;

/// The binaries measured; the first is the baseline.
pub const FUNCTIONS: [&str; 6] = [
    "hello",
    "authorizer",
    "ingest",
    "processor",
    "relay",
    "migrate",
];

/// What function `name` gets at start, as the template gives it.
pub fn env(name: &str) -> Vec<(&'static str, String)> {
    let mut env = smoke::aws_env();
    let unused = "http://127.0.0.1:9".to_string(); // discard: nothing is sent at init
    if !matches!(name, "hello" | "migrate" | "processor") {
        env.push((
            "HOOKBOX_CONFIG",
            smoke::events_dir()
                .join("partners-test.json")
                .display()
                .to_string(),
        ));
    }
    if !matches!(name, "hello" | "authorizer") {
        env.extend([
            ("HOOKBOX_DB", "data-api".to_string()),
            (
                "DB_CLUSTER_ARN",
                "arn:aws:rds:us-east-1:123456789012:cluster:hookbox".into(),
            ),
            (
                "DB_SECRET_ARN",
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:db-AbCdEf".into(),
            ),
            ("DB_NAME", "hookbox".into()),
            ("AWS_ENDPOINT_URL_RDS_DATA", unused.clone()),
        ]);
    }
    if matches!(name, "ingest" | "processor" | "relay") {
        env.extend([
            ("HOOKBOX_QUEUE_URL", format!("{unused}/123456789012/inbox")),
            ("AWS_ENDPOINT_URL_SQS", unused.clone()),
            ("HOOKBOX_BLOB_BUCKET", "hookbox-blobs".into()),
            ("AWS_ENDPOINT_URL_S3", unused),
        ]);
    }
    env
}

/// `DIR/<name>/bootstrap` (cargo-lambda's layout), else `DIR/<name>`
/// (cargo's own, e.g. target/release).
pub fn binary(dir: &Path, name: &str) -> PathBuf {
    let lambda = dir.join(name).join("bootstrap");
    if lambda.is_file() {
        lambda
    } else {
        dir.join(name)
    }
}

/// One binary's figures.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Its name (one of [`FUNCTIONS`]).
    pub name: &'static str,
    /// Its size, bytes (`None`: unreadable).
    pub size: Option<u64>,
    /// Its dynamic relocations (`Err`: not a readable ELF file).
    pub relocations: Result<Relocations, String>,
    /// Median time to its first `/runtime/invocation/next`.
    pub median: Duration,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// The dynamic relocations of an executable: what the loader must apply to
/// its own image before `main` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Relocations {
    /// Every entry of its dynamic relocation sections (`.rela.dyn`,
    /// `.rela.plt`, …).
    pub total: u64,
    /// Of those, the `R_*_RELATIVE` ones (x86_64 and aarch64): one per
    /// pointer in a position-independent image; none in a non-PIE one.
    pub relative: u64,
}

/// The dynamic relocations of the ELF file at `path` (x86_64 or aarch64).
/// `Err` names the file and what could not be read.
pub fn relocations(path: &Path) -> Result<Relocations, String> {
    use object::read::elf::{ElfFile64, FileHeader as _};
    use object::{Object as _, RelocationFlags};

    let data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = ElfFile64::<object::Endianness>::parse(&*data)
        .map_err(|e| format!("{}: not a 64-bit ELF file: {e}", path.display()))?;
    let machine = file.elf_header().e_machine(file.endian());
    let relative_type = match machine {
        object::elf::EM_X86_64 => object::elf::R_X86_64_RELATIVE,
        object::elf::EM_AARCH64 => object::elf::R_AARCH64_RELATIVE,
        other => {
            return Err(format!(
                "{}: machine {other} is neither x86_64 nor aarch64",
                path.display()
            ));
        }
    };
    let mut counts = Relocations {
        total: 0,
        relative: 0,
    };
    for (_, relocation) in file.dynamic_relocations().into_iter().flatten() {
        counts.total += 1;
        if matches!(relocation.flags(), RelocationFlags::Elf { r_type } if r_type == relative_type)
        {
            counts.relative += 1;
        }
    }
    Ok(counts)
}

/// Checks that the executable at `path` leaves the loader no relative
/// relocations of its own image: linked non-PIE, as functions/link.rs links
/// the bootstraps.
///
/// # Panics
/// When it is not a readable ELF file, or has relative relocations (a
/// position-independent link).
pub fn assert_no_relative_relocations(path: &Path) {
    let counts = relocations(path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        counts.relative,
        0,
        "{} has {} relative relocations of {} dynamic ones: it was linked as a \
         position-independent executable (is `build = \"../link.rs\"` in its Cargo.toml?)",
        path.display(),
        counts.relative,
        counts.total
    );
}

/// Starts every binary of `dir` `runs` times (at least [`MIN_RUNS`]),
/// interleaved; the figures in [`FUNCTIONS`] order. `Err` names a binary
/// that is missing or did not start.
pub async fn measure(dir: &Path, runs: usize) -> Result<Vec<Measured>, String> {
    let runs = runs.max(MIN_RUNS);
    for name in FUNCTIONS {
        let b = binary(dir, name);
        if !b.is_file() {
            return Err(format!(
                "{} is missing: build the functions first",
                b.display()
            ));
        }
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); FUNCTIONS.len()];
    for _ in 0..runs {
        for (i, name) in FUNCTIONS.iter().enumerate() {
            let mut f = Function::spawn(&binary(dir, name), name, &env(name)).await;
            let init = f.init(Duration::from_secs(10)).await;
            f.kill().await;
            match init {
                Init::Ready(d) => times[i].push(d),
                other => return Err(format!("{name} did not start: {other:?}")),
            }
        }
    }
    Ok(FUNCTIONS
        .iter()
        .zip(times)
        .map(|(name, t)| Measured {
            name,
            size: std::fs::metadata(binary(dir, name)).ok().map(|m| m.len()),
            relocations: relocations(&binary(dir, name)),
            median: median(t),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_independent_executable_counts_its_relative_relocations() {
        // this test binary is linked with rustc's defaults: a PIE
        let me = std::env::current_exe().expect("current_exe");
        let counts = relocations(&me).expect("an ELF test binary");
        assert!(counts.relative > 100, "{counts:?}");
        assert!(counts.total >= counts.relative, "{counts:?}");
    }

    #[test]
    fn a_file_that_is_not_elf_is_named_in_the_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bootstrap");
        std::fs::write(&path, b"#!/bin/sh\n").expect("write");
        let err = relocations(&path).expect_err("not ELF");
        assert!(
            err.contains("bootstrap") && err.contains("not a 64-bit ELF"),
            "{err}"
        );
    }
}

//! Cold start of each function's binary against a hello-world
//! `lambda_runtime` binary built the same way: the time from exec to the
//! first `GET /2018-06-01/runtime/invocation/next` on the testkit's Runtime
//! API emulator, median of N starts interleaved (so the machine's load falls
//! on every binary alike), with the environment the template gives (Data
//! API, SQS, S3; endpoints never called at init); and the binaries' sizes.
//! The measurement is `hookbox_testkit::coldstart`, which `tools/dev
//! deploy coldstart` prints too.

use std::path::Path;

use hookbox_testkit::coldstart::{self, FUNCTIONS};

use crate::report::{Figure, Goal};

pub const SECTION: &str = "Cold start and binary size";

/// Every cold start and size figure of the binaries in `dir`.
pub async fn run(dir: &Path, runs: usize) -> anyhow::Result<(Vec<Figure>, String)> {
    let measured = coldstart::measure(dir, runs).await.map_err(|e| {
        anyhow::anyhow!(
            "{e} (tools/dev deploy build, or cargo build --profile bench-quick --bins \
             -p hookbox-hello -p hookbox-authorizer -p hookbox-ingest -p hookbox-processor \
             -p hookbox-relay -p hookbox-migrate)"
        )
    })?;
    let medians: Vec<std::time::Duration> = measured.iter().map(|m| m.median).collect();
    let sizes: Vec<f64> = measured
        .iter()
        .map(|m| m.size.map_or(f64::NAN, |b| b as f64 / 1e6))
        .collect();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let mut figures = Vec::new();
    for i in 1..FUNCTIONS.len() {
        figures.push(Figure::ratio(
            SECTION,
            format!("{} cold start", FUNCTIONS[i]),
            "ms",
            ms(medians[i]),
            ("hello-world", ms(medians[0])),
            Goal::None,
        ));
        figures.push(Figure::ratio(
            SECTION,
            format!("{} binary size", FUNCTIONS[i]),
            "MB",
            sizes[i],
            ("hello-world", sizes[0]),
            Goal::None,
        ));
    }
    let note = format!(
        "Binaries of `{}`; exec → first `/runtime/invocation/next` on the testkit's Runtime \
         API emulator, median of {runs} interleaved starts, with the template's environment \
         (no network call at init). Lambda adds its own sandbox start to both sides. The \
         release profile (fat LTO, what `tools/dev deploy build` ships) gives smaller binaries \
         than a bench-quick build.\n",
        dir.display()
    );
    Ok((figures, note))
}

//! Cold start of each function's binary against a hello-world
//! `lambda_runtime` binary: the time from exec to the first
//! `GET /2018-06-01/runtime/invocation/next` on the testkit's Runtime API
//! emulator, median of N starts interleaved (so the machine's load falls on
//! every binary alike; at least 21), each started with Lambda's environment
//! only (the variables Lambda sets plus the template's; nothing of the
//! caller's shell), endpoints never called at init; and each binary's size
//! and dynamic relocations. The measurement is `hookbox_testkit::coldstart`,
//! which `tools/dev deploy coldstart` prints too.

use std::path::Path;

use hookbox_testkit::coldstart::{self, MIN_RUNS};

use crate::report::{Figure, Goal};

pub const SECTION: &str = "Cold start and binary size";

/// Goal: every function's cold start at most this many times hello-world's.
pub const GOAL: f64 = 1.3;

/// Every cold start, size and relocation figure of the binaries in `dir`.
pub async fn run(dir: &Path, runs: usize) -> anyhow::Result<(Vec<Figure>, String)> {
    let measured = coldstart::measure(dir, runs).await.map_err(|e| {
        anyhow::anyhow!(
            "{e} (tools/dev deploy build, or cargo build --profile bench-quick --bins \
             -p hookbox-hello -p hookbox-authorizer -p hookbox-ingest -p hookbox-processor \
             -p hookbox-relay -p hookbox-migrate)"
        )
    })?;
    let runs = runs.max(MIN_RUNS);
    let hello = &measured[0];
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let mb = |b: Option<u64>| b.map_or(f64::NAN, |b| b as f64 / 1e6);
    let mut figures = Vec::new();
    for m in &measured[1..] {
        figures.push(
            Figure::ratio(
                SECTION,
                format!("{} cold start", m.name),
                "ms",
                ms(m.median),
                ("hello-world", ms(hello.median)),
                Goal::RatioAtMost(GOAL),
            )
            .when_missed(format!(
                "{} takes {:.2} ms from exec to its first /runtime/invocation/next against \
                 hello-world's {:.2} ms; check its relocations (non-PIE linking, \
                 functions/link.rs) and what its init does",
                m.name,
                ms(m.median),
                ms(hello.median)
            )),
        );
        figures.push(Figure::ratio(
            SECTION,
            format!("{} binary size", m.name),
            "MB",
            mb(m.size),
            ("hello-world", mb(hello.size)),
            Goal::None,
        ));
    }
    let mut note = format!(
        "Binaries of `{}`; exec → first `/runtime/invocation/next` on the testkit's Runtime \
         API emulator, median of {runs} interleaved starts, each with Lambda's environment \
         only (the variables Lambda sets on `provided.al2023` and the template's; nothing \
         of the caller's shell; no network call at init). Lambda adds its own sandbox \
         start to both sides. The release profile (fat LTO, what `tools/dev deploy build` \
         ships) gives smaller binaries than a bench-quick build. The functions' \
         bootstraps are linked non-PIE (functions/link.rs), hello-world with rustc's \
         defaults.\n\n| binary | size | relocations | of which relative |\n| --- | ---: | ---: | ---: |\n",
        dir.display()
    );
    for m in &measured {
        let (total, relative) = match &m.relocations {
            Ok(r) => (r.total.to_string(), r.relative.to_string()),
            Err(e) => (format!("unreadable: {e}"), String::new()),
        };
        note.push_str(&format!(
            "| {} | {:.1} MB | {total} | {relative} |\n",
            m.name,
            mb(m.size)
        ));
    }
    Ok((figures, note))
}

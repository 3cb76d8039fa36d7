//! `hookbox-bench`: every benchmark of hookbox in one command, each figure
//! beside a baseline measured in the same run on the same database, written
//! to `BENCHMARKS.md` with the machine it ran on and a cost model.
//!
//! ```sh
//! cargo run --profile bench-quick -p hookbox-bench              # full run → BENCHMARKS.md
//! cargo run --profile bench-quick -p hookbox-bench -- --quick   # CI: short runs, fails only on a broken run
//! cargo run --profile bench-quick -p hookbox-bench -- --scale   # also the 1 M / 10 M row scale runs (long)
//! ```
//!
//! Layout: `ingest`, `processor`, `relay`, `signatures` (each flow against
//! its baseline), `calls` (database calls per operation through both
//! adapters), `e2e` (open-loop latency through the local stack, and
//! `histogram`), `scale`, `coldstart`, `cost` (the cost and capacity model),
//! `report` (figures → Markdown), `machine`, `pg` (the durable cluster and
//! pgbench), `counting`, `stats`.

mod batches;
mod calls;
mod coldstart;
mod cost;
mod counting;
mod e2e;
mod forwarding;
mod histogram;
mod ingest;
mod machine;
mod pg;
mod processor;
mod relay;
mod relay_aws;
mod report;
mod scale;
mod signatures;
mod statements;
mod stats;
mod tenant_setup;
mod tenants;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;

use crate::report::Report;

/// Runs every hookbox benchmark against its baseline and writes BENCHMARKS.md.
#[derive(Debug, Parser)]
#[command(name = "hookbox-bench")]
struct Args {
    /// Short runs (CI): fails only when a benchmark errors or measures
    /// nothing, never on a figure. Writes to target/bench-quick unless --out.
    #[arg(long)]
    quick: bool,
    /// Directory for BENCHMARKS.md and e2e-latency.png (default: the
    /// workspace root; with --quick, target/bench-quick).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also run the scale section: latency with many rows already in the
    /// inbox and outbox (long: minutes per 10 M rows).
    #[arg(long)]
    scale: bool,
    /// Row counts of the scale section.
    #[arg(long, value_delimiter = ',', default_value = "1000000,10000000")]
    scale_rows: Vec<u64>,
    /// Cold start and sizes of the function binaries in this directory
    /// (`target/lambda` after `tools/dev deploy build`, or a cargo profile's
    /// directory); skipped when absent.
    #[arg(long)]
    coldstart: Option<PathBuf>,
    /// Starts per binary for --coldstart (at least 21; the median of 101
    /// barely moves with the machine's other work).
    #[arg(long, default_value_t = 101)]
    coldstart_runs: usize,
    /// Diagnostic: `plan_cache_mode = force_custom_plan` on the benchmark
    /// databases (every prepared statement planned for its parameters).
    #[arg(long)]
    custom_plans: bool,
    /// Diagnostic: every line the functions would log at INFO, in their
    /// format (flat JSON, request and trace ids), formatted and discarded,
    /// so the figures include what logging costs (issue 43).
    #[arg(long)]
    logs: bool,
    /// Only these sections (ingest, processor, relay, relay-aws, tenants, batches, signatures,
    /// calls, forwarding, e2e, coldstart), comma-separated; for working on one.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
}

/// How long each section runs.
#[derive(Debug, Clone, Copy)]
struct Plan {
    /// Slices of each side, alternating, and their length.
    ingest_slices: u64,
    slice_seconds: u64,
    ingest_large_bodies: u64,
    processor_slices: u64,
    relay_rows: usize,
    relay_rounds: usize,
    relay_aws_rows: usize,
    signature_rounds: usize,
    e2e_seconds: f64,
    e2e_drain: Duration,
    tenants: tenants::Sizes,
    batch_rounds: usize,
}

const QUICK: Plan = Plan {
    ingest_slices: 1,
    slice_seconds: 1,
    ingest_large_bodies: 40,
    processor_slices: 1,
    relay_rows: 600,
    relay_rounds: 1,
    relay_aws_rows: 200,
    signature_rounds: 11,
    e2e_seconds: 1.5,
    e2e_drain: Duration::from_secs(20),
    tenants: tenants::QUICK,
    batch_rounds: 3,
};

const FULL: Plan = Plan {
    ingest_slices: 4,
    slice_seconds: 2,
    ingest_large_bodies: 400,
    processor_slices: 4,
    relay_rows: 5_000,
    relay_rounds: 3,
    relay_aws_rows: 2_000,
    signature_rounds: 101,
    e2e_seconds: 10.0,
    e2e_drain: Duration::from_secs(60),
    tenants: tenants::FULL,
    batch_rounds: 21,
};

const E2E_RATES: [f64; 3] = [50.0, 200.0, 1_000.0];
const COST_RATES: [f64; 3] = [10.0, 1_000.0, 10_000.0];

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// The profile this binary was built with, from its path
/// (`target/<profile>/hookbox-bench`).
fn profile() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| {
            p.parent()
                .and_then(|d| d.file_name())
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// A section that failed: the run is broken.
#[derive(Debug)]
struct Broken {
    section: &'static str,
    error: String,
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    // the functions' metric lines (EMF) would bury the progress on stdout
    hookbox::metrics::print_to_stdout(false);
    if args.logs {
        use tracing_subscriber::layer::SubscriberExt as _;
        let subscriber = tracing_subscriber::registry()
            .with(tracing_subscriber::filter::LevelFilter::INFO)
            .with(hookbox::log_format::layer(std::io::sink));
        tracing::subscriber::set_global_default(subscriber)
            .context("installing the functions' log format")?;
        hookbox::log_format::begin_invocation(
            "bench",
            Some("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"),
        );
    }
    let plan = if args.quick { QUICK } else { FULL };
    let out = args.out.clone().unwrap_or_else(|| {
        if args.quick {
            target_dir().join("bench-quick")
        } else {
            workspace_root()
        }
    });
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let out = std::fs::canonicalize(&out).unwrap_or(out);
    let wanted = |s: &str| args.only.is_empty() || args.only.iter().any(|o| o == s);
    let started = Instant::now();

    let mut bench = pg::Bench::start()?;
    bench.custom_plans = args.custom_plans;
    let (_, admin) = bench.database("bench_machine", 1).await?;
    let mut machine = machine::Machine::read(admin.as_ref()).await;
    // PostgreSQL CPU is counted for this cluster alone
    let backend = admin
        .execute(
            &hookbox::store::Statement::new("bench.backend_pid", "SELECT pg_backend_pid() AS pid"),
            &hookbox::params! {},
        )
        .await?;
    let backend = backend
        .rows
        .first()
        .map(|r| r.i64("pid"))
        .transpose()?
        .unwrap_or(0);
    match u32::try_from(backend).ok().and_then(stats::parent_of) {
        Some(postmaster) => stats::set_postmaster(postmaster),
        None => eprintln!(
            "cannot find the cluster's postmaster: PostgreSQL CPU counts every postgres process"
        ),
    }
    let mut report = Report::default();
    let mut broken: Vec<Broken> = Vec::new();
    let mut cost = cost::Measured::default();
    let mut have = [false; 4]; // ingest, processor, relay, calls

    macro_rules! section {
        ($name:literal, $section:expr, $run:expr) => {
            if wanted($name) {
                let t = Instant::now();
                eprintln!("== {}", $name);
                match $run.await {
                    Ok(v) => {
                        eprintln!("   {} done in {:.1} s", $name, t.elapsed().as_secs_f64());
                        Some(v)
                    }
                    Err(e) => {
                        eprintln!("   {} FAILED: {e:#}", $name);
                        broken.push(Broken {
                            section: $section,
                            error: format!("{e:#}"),
                        });
                        None
                    }
                }
            } else {
                None
            }
        };
    }

    if let Some((figures, note, c)) = section!(
        "ingest",
        ingest::SECTION,
        ingest::run(
            &bench,
            plan.ingest_slices,
            plan.slice_seconds,
            plan.ingest_large_bodies
        )
    ) {
        report.figures.extend(figures);
        report.notes.push((ingest::SECTION, note));
        cost.db_cpu_us[0] = c.pg_cpu_us;
        cost.own_cpu_us[0] = c.own_cpu_us;
        have[0] = true;
    }
    if let Some((figures, note, c)) = section!(
        "processor",
        processor::SECTION,
        processor::run(&bench, plan.processor_slices, plan.slice_seconds)
    ) {
        report.figures.extend(figures);
        report.notes.push((processor::SECTION, note));
        cost.db_cpu_us[1] = c.pg_cpu_us;
        cost.own_cpu_us[1] = c.own_cpu_us;
        have[1] = true;
    }
    if let Some((figures, note, c)) = section!(
        "relay",
        relay::SECTION,
        relay::run(&bench, plan.relay_rows, plan.relay_rounds)
    ) {
        report.figures.extend(figures);
        report.notes.push((relay::SECTION, note));
        cost.db_cpu_us[2] = c.pg_cpu_us;
        cost.own_cpu_us[2] = c.own_cpu_us;
        have[2] = true;
    }
    if let Some((figures, note)) = section!(
        "relay-aws",
        relay_aws::SECTION,
        relay_aws::run(&bench, plan.relay_aws_rows, plan.relay_rounds)
    ) {
        report.figures.extend(figures);
        report.notes.push((relay_aws::SECTION, note));
    }
    if let Some((figures, note)) = section!(
        "tenants",
        tenants::SECTION,
        tenants::run(&bench, plan.tenants)
    ) {
        report.figures.extend(figures);
        report.notes.push((tenants::SECTION, note));
    }
    if let Some(figures) = section!("signatures", signatures::SECTION, async {
        signatures::run(plan.signature_rounds)
    }) {
        report.figures.extend(figures);
        report.notes.push((
            signatures::SECTION,
            "One preset per recipe shape of the registry (the first in registry order; \
             \"and N like it\" counts the other presets of that shape), signed by \
             `Preset::sign` and verified by its verifier, against the bare primitive of its \
             recipe over the same body. Best batch of each case over the rounds, in a \
             rotated order (the method of `shared/benches/signature.rs`, explained in \
             docs/signatures.md)."
                .into(),
        ));
    }
    if let Some((figures, note, per)) = section!("calls", calls::SECTION, calls::run(&bench)) {
        report.figures.extend(figures);
        report.notes.push((calls::SECTION, note));
        cost.calls = [per.ingest, per.processor, per.relay_batch];
        cost.relay_batch_rows = per.relay_rows_per_batch.max(relay::BATCH as f64);
        have[3] = true;
    }
    if let Some((figures, note)) = section!(
        "batches",
        batches::SECTION,
        batches::run(&bench, plan.batch_rounds)
    ) {
        report.figures.extend(figures);
        report.notes.push((batches::SECTION, note));
    }
    if let Some((figures, note, per)) =
        section!("forwarding", forwarding::SECTION, forwarding::run(&bench))
    {
        report.figures.extend(figures);
        report.notes.push((forwarding::SECTION, note));
        cost.forwarding_ingest_calls = Some(per.ingest_calls);
    }
    let png = out.join("e2e-latency.png");
    if let Some((figures, note)) = section!(
        "e2e",
        e2e::SECTION,
        e2e::run(&bench, &E2E_RATES, plan.e2e_seconds, plan.e2e_drain, &png)
    ) {
        report.figures.extend(figures);
        report.notes.push((
            e2e::SECTION,
            format!("{note}\n![latency histogram](e2e-latency.png)\n"),
        ));
    }
    if args.scale {
        if let Some((figures, note)) = section!(
            "scale",
            scale::SECTION,
            scale::run(&bench, &args.scale_rows)
        ) {
            report.figures.extend(figures);
            report.notes.push((scale::SECTION, note));
        }
    } else {
        report.notes.push((
            scale::SECTION,
            "Not run: `--scale` runs it (ingest and processor claim latency with 1 M and 10 M \
             rows in the inbox and 1 M delivered outbox rows, against an empty database; \
             tens of minutes on two cores)."
                .into(),
        ));
    }
    match &args.coldstart {
        Some(dir) => {
            if let Some((figures, note)) = section!(
                "coldstart",
                coldstart::SECTION,
                coldstart::run(dir, args.coldstart_runs)
            ) {
                report.figures.extend(figures);
                report.notes.push((coldstart::SECTION, note));
            }
        }
        None => report.notes.push((
            coldstart::SECTION,
            "Not run: `--coldstart target/lambda` (after `tools/dev deploy build`) measures \
             each function's cold start and binary size against a hello-world `lambda_runtime` \
             binary built the same way."
                .into(),
        )),
    }
    if have.iter().all(|h| *h) {
        report.appendices.push((
            "Cost and capacity model".into(),
            cost::markdown(&cost, &COST_RATES),
        ));
    }
    for f in report.figures.iter().filter(|f| f.is_broken()) {
        broken.push(Broken {
            section: f.section,
            error: format!(
                "{} measured nothing ({} / {:?})",
                f.name, f.hookbox, f.baseline
            ),
        });
    }

    machine.load_after = machine::load_average();
    report.preamble = preamble(&machine, &args, started.elapsed(), &broken);
    let path = out.join("BENCHMARKS.md");
    // sections not run this time (scale, cold start) keep their last figures
    let markdown = match std::fs::read_to_string(&path) {
        Ok(previous) => report::keep_sections_not_run(&report.markdown(), &previous),
        Err(_) => report.markdown(),
    };
    std::fs::write(&path, markdown).with_context(|| format!("writing {}", path.display()))?;
    eprintln!(
        "wrote {} ({} figures, {} goals missed) in {:.0} s",
        path.display(),
        report.figures.len(),
        report.missed().len(),
        started.elapsed().as_secs_f64()
    );
    if !broken.is_empty() {
        for b in &broken {
            eprintln!("broken: {}: {}", b.section, b.error);
        }
        anyhow::bail!("{} benchmark section(s) broken", broken.len());
    }
    Ok(())
}

fn preamble(machine: &machine::Machine, args: &Args, took: Duration, broken: &[Broken]) -> String {
    let mut out = String::from(
        "# hookbox benchmarks\n\n\
         Generated by `cargo run --profile bench-quick -p hookbox-bench` (tools/bench); do \
         not edit by hand, run it again. Every figure stands beside a baseline measured in \
         the same run, on the same durable PostgreSQL database, over the same work or the \
         same seconds, so load from elsewhere on the machine falls on both sides; the ratio \
         is the figure to compare across machines. Absolute rates are this machine's only.\n\n",
    );
    out.push_str(&machine.markdown(&profile(), args.quick));
    out.push_str(&format!("\nThe run took {:.0} s.", took.as_secs_f64()));
    if args.custom_plans {
        out.push_str(
            " Diagnostic run: `--custom-plans` (plan_cache_mode = force_custom_plan on the \
             benchmark databases), not hookbox as it ships.",
        );
    }
    if !broken.is_empty() {
        out.push_str("\n\n**Broken sections in this run:**\n");
        for b in broken {
            out.push_str(&format!("- {}: {}\n", b.section, b.error));
        }
    }
    out.push('\n');
    out
}

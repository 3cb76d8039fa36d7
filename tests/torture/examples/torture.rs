//! The long torture run: `cargo run -p hookbox-torture --example
//! torture -- [--adapter postgres|data-api|both]`, sized by TORTURE_SEED
//! (default 1), TORTURE_WEBHOOKS (default 10000) and TORTURE_SEEDS (how
//! many seeds from TORTURE_SEED, default 1). Prints the figures of each
//! run; exits 1 with the failing seed and its replay command.

use std::process::ExitCode;

use hookbox_torture::{Adapter, Scenario, quiet_injected_crashes, run};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let adapters = match args
        .iter()
        .position(|a| a == "--adapter")
        .and_then(|i| args.get(i + 1))
    {
        Some(a) if a == "postgres" => vec![Adapter::Postgres],
        Some(a) if a == "data-api" => vec![Adapter::DataApi],
        None => vec![Adapter::Postgres, Adapter::DataApi],
        Some(a) if a == "both" => vec![Adapter::Postgres, Adapter::DataApi],
        Some(other) => {
            eprintln!("--adapter {other}: expected postgres, data-api or both");
            return ExitCode::from(2);
        }
    };
    let first = env("TORTURE_SEED", 1);
    let seeds = env("TORTURE_SEEDS", 1);
    let webhooks = usize::try_from(env("TORTURE_WEBHOOKS", 10_000)).unwrap_or(10_000);
    let _scenario = fail::FailScenario::setup();
    quiet_injected_crashes();
    for adapter in adapters {
        for seed in first..first + seeds {
            let started = std::time::Instant::now();
            match run(adapter, &Scenario::bounded(seed, webhooks)).await {
                Ok(figures) => println!(
                    "seed {seed} {adapter:?} in {:.1} s: {figures:#?}",
                    started.elapsed().as_secs_f64()
                ),
                Err(failure) => {
                    eprintln!("{failure}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    ExitCode::SUCCESS
}

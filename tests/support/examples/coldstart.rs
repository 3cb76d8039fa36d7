//! Cold start of each function's `bootstrap` against a hello-world
//! `lambda_runtime` binary built the same way ([`hookbox_testkit::coldstart`]),
//! printed as a table.
//!
//! ```sh
//! tools/dev deploy coldstart        # cargo lambda build --release, then this
//! cargo run -p hookbox-testkit --example coldstart -- target/lambda 25   # at least 21
//! cargo run -p hookbox-testkit --example coldstart -- target/release 25   # cargo's layout
//! ```

use std::path::PathBuf;

use hookbox_testkit::coldstart;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "target/lambda".into()));
    let runs: usize = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(25)
        .max(coldstart::MIN_RUNS);
    let measured = coldstart::measure(&dir, runs)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let hello = measured[0].median;
    println!(
        "cold start: exec → first /runtime/invocation/next, median of {runs} interleaved starts, \
         Lambda's environment only"
    );
    println!("| binary | size (MB) | relocations | relative | median (ms) | × hello |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for m in &measured {
        let (total, relative) = match &m.relocations {
            Ok(r) => (r.total.to_string(), r.relative.to_string()),
            Err(e) => (e.clone(), "?".into()),
        };
        println!(
            "| {} | {:.1} | {total} | {relative} | {:.2} | {:.2} |",
            m.name,
            m.size.unwrap_or(0) as f64 / 1e6,
            m.median.as_secs_f64() * 1e3,
            m.median.as_secs_f64() / hello.as_secs_f64()
        );
    }
}

//! The bounded torture run of CI: a few seeds through each database
//! adapter, every failpoint armed, outages, duplicates, bursts, large
//! bodies, a flaky receiver and tenants' endpoints changing under it; each
//! run must pass its ledger check. The long run is `cargo run -p
//! hookbox-torture --example torture` (see tests/torture/README.md).

use hookbox_torture::{Adapter, Scenario, quiet_injected_crashes, run};

// (each seed covers every kind the assertions below ask for, through both
// adapters: with the batched partner, seed 2 held no tenant delivery on
// PostgreSQL and seed 5 refused no AWS entry for good)
const SEEDS: [u64; 3] = [1, 3, 6];
const WEBHOOKS: usize = 1_000;

async fn bounded(adapter: Adapter) {
    // failpoints are process-wide: one scenario at a time
    let _scenario = fail::FailScenario::setup();
    quiet_injected_crashes();
    for seed in SEEDS {
        match run(adapter, &Scenario::bounded(seed, WEBHOOKS)).await {
            Ok(figures) => {
                assert_eq!((figures.lost, figures.double_applied), (0, 0));
                assert!(
                    figures.crashes.values().sum::<u64>() > 0,
                    "seed {seed}: no crash was injected: {figures:?}"
                );
                assert!(
                    figures.deliveries.get("hang").copied().unwrap_or(0) > 0,
                    "seed {seed}: no delivery hung past its timeout: {figures:?}"
                );
                let figure = |key: &str| figures.deliveries.get(key).copied().unwrap_or(0);
                assert!(
                    figures.aws_outages > 0
                        && figure("aws entries failed") > 0
                        && figure("aws refused for good") > 0
                        && figure("bus read") > 0
                        && figure("fifo read") > 0,
                    "seed {seed}: the AWS destinations saw no outage, failure or message: {figures:?}"
                );
                assert!(
                    figure("fw events forwarded at ingest") > 0
                        && figure("fw payloads compared") > 0
                        && figure("fw payloads from the blob store") > 0,
                    "seed {seed}: forwarding at ingest, or the payload comparison, or the \
                     processor's blob path was not exercised: {figures:?}"
                );
                // the batched partner: every event of its POSTs stored once
                // (regrouped resends among them)
                assert_eq!(
                    figure("bt events stored"),
                    (WEBHOOKS / 4) as u64,
                    "seed {seed}: {figures:?}"
                );
                assert!(
                    figure("bt POSTs (regrouped resends included)") > 0
                        && figure("bt events forwarded at ingest") > 0
                        && figures.answers.get("batch 202").is_some_and(|n| *n > 0),
                    "seed {seed}: the batched partner's POSTs were not forwarded at ingest, or \
                     none was spooled: {figures:?}"
                );
                // the tenants' endpoints: delivered and verified under every
                // kind of change (tenants.rs makes one of each first)
                for key in [
                    "tenant attempts verified",
                    "tenant attempts with two signatures",
                    "tenant ordered deliveries checked",
                    "tenant deliveries held, sent on enable",
                    "tenant rotations",
                    "tenant rotations through SQL",
                    "tenant endpoints added",
                    "tenant endpoints disabled",
                    "tenant endpoints deleted",
                ] {
                    assert!(figure(key) > 0, "seed {seed}: no {key}: {figures:?}");
                }
                assert_eq!(
                    figures.refused.values().sum::<u64>(),
                    (WEBHOOKS / 20) as u64,
                    "seed {seed}: every refusable request was sent: {figures:?}"
                );
                println!("seed {seed} {adapter:?}: {figures:?}");
            }
            Err(failure) => panic!("{failure}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ledger_holds_under_faults_through_postgres() {
    bounded(Adapter::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ledger_holds_under_faults_through_the_data_api() {
    bounded(Adapter::DataApi).await;
}

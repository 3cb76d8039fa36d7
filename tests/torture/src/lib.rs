//! The torture run: a seeded scenario through ingest, the processor, the
//! sweeper and the relay on one injected clock, with crashes at random
//! failpoints (`hookbox::failpoint`), database and queue outages, duplicate
//! and concurrent resends, reordering, large bodies and a flaky receiver;
//! then a ledger check of the promise. Through either database adapter.
//!
//! What a run does, step by step (10 s of the clock each):
//! 0. between relay runs, while the database is up, one change to the
//!    tenants' endpoints (`tenants.rs`: added, rotated, disabled, enabled,
//!    deleted);
//! 1. partners send the webhooks due now (signed; `sw`: Standard Webhooks,
//!    `gh`: GitHub; `bt`: POSTs of many events, some resent regrouped,
//!    [`batched`]), each answer recorded; a 5xx or a crash is resent a
//!    minute later, like a partner would;
//! 2. two processor invocations receive and process a batch each at once
//!    (a crash leaves its messages to the queue's visibility timeout);
//! 3. every minute the relay sweeps and runs retention, and two relay
//!    instances deliver at once, to the HTTP receivers, an EventBridge bus
//!    and a FIFO SQS queue (moto behind a fault proxy, [`aws`]), whose
//!    queues are then read;
//! 4. outages (the database, the queue, PostgreSQL itself, the AWS
//!    services) start and end at random.
//!
//! Then, with the faults off and every endpoint enabled, it runs to
//! quiescence and checks the ledger (`ledger.rs`, `tenant_ledger.rs`). A
//! failing run returns its seed and the command to replay.

pub mod aws;
mod batched;
mod db;
mod exact;
pub mod faults;
mod invoke;
mod ledger;
mod outages;
mod partners;
pub mod receiver;
mod router;
mod scenario;
mod tenant_ledger;
mod tenants;

pub use scenario::Scenario;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::TimeDelta;
use futures::FutureExt as _;
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::clock::{Clock, ManualClock};
use hookbox::config::ConfigStore;
use hookbox::example::OrdersHandler;
use hookbox::inbox::ingest::{Ingest, IngestRequest};
use hookbox::metrics::Metrics;
use hookbox::processing::{Processor, ProcessorConfig, RoutingHandler};
use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
use hookbox::relay::{Relay, RelaySettings};
use hookbox::signature::Headers;
use hookbox::store::Executor;

use db::database;
pub use faults::quiet_injected_crashes;
use faults::{FlakyDb, FlakyQueue, arm_failpoints, disarm_failpoints};
use invoke::{invoke, refuse};
use ledger::{check_ledger, quiet, statement};
use partners::{refusable, signed_headers};
use receiver::{GONE, Receivers};
use router::Router;
use scenario::{config, t0, webhooks};
use tenants::Tenants;

const STEP_S: i64 = 10;

/// Which adapter of the database port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adapter {
    /// tokio-postgres.
    Postgres,
    /// aws-sdk-rdsdata through the local Data API.
    DataApi,
}

/// What a run did and found.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    /// Requests sent (first sends, duplicates, bursts, resends).
    pub requests: u64,
    /// Answers by status (`crash` for an invocation that died).
    pub answers: BTreeMap<String, u64>,
    /// Crashes injected, per failpoint.
    pub crashes: BTreeMap<String, u64>,
    /// Outages of the database (through the Data API: pauses, answered
    /// `DatabaseResumingException` by the local Data API itself).
    pub db_outages: u64,
    /// Outages of the queue.
    pub queue_outages: u64,
    /// Times PostgreSQL itself was stopped (and started again).
    pub postgres_stops: u64,
    /// Requests that had to be refused, by kind and answer.
    pub refused: BTreeMap<String, u64>,
    /// Delivery attempts by answer (HTTP), and what reached the AWS
    /// destinations (`bus read`, `fifo duplicates`, `aws entries failed`,
    /// …).
    pub deliveries: BTreeMap<String, u64>,
    /// Outages of the AWS services (every PutEvents and SendMessageBatch
    /// answered 503).
    pub aws_outages: u64,
    /// Messages in the DLQ at the end (each with its row: checked).
    pub dead_lettered: u64,
    /// Webhooks accepted but not processed exactly once (must be 0).
    pub lost: u64,
    /// Events whose effect was applied more than once (must be 0).
    pub double_applied: u64,
    /// Simulated time, to quiescence.
    pub simulated: Duration,
}

/// A failed run: what the ledger found.
#[derive(Debug)]
pub struct Failure {
    /// The scenario.
    pub scenario: Scenario,
    /// The adapter.
    pub adapter: Adapter,
    /// Every violation.
    pub violations: Vec<String>,
    /// The figures so far.
    pub figures: Figures,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "torture run failed: seed {} ({:?}, {} webhooks), {} violations:",
            self.scenario.seed,
            self.adapter,
            self.scenario.webhooks,
            self.violations.len()
        )?;
        for v in self.violations.iter().take(400) {
            writeln!(f, "  - {v}")?;
        }
        writeln!(f, "figures: {:?}", self.figures)?;
        write!(
            f,
            "replay: TORTURE_SEED={} TORTURE_WEBHOOKS={} cargo run -p hookbox-torture --example torture -- --adapter {}",
            self.scenario.seed,
            self.scenario.webhooks,
            match self.adapter {
                Adapter::Postgres => "postgres",
                Adapter::DataApi => "data-api",
            }
        )
    }
}

/// Runs `scenario` through `adapter` and checks the ledger.
///
/// Failpoints are process-wide: the caller holds a `fail::FailScenario`.
pub async fn run(adapter: Adapter, scenario: &Scenario) -> Result<Figures, Box<Failure>> {
    let mut rng = fastrand::Rng::with_seed(scenario.seed);
    let fp_rng = Arc::new(Mutex::new(fastrand::Rng::with_seed(scenario.seed ^ 0x5eed)));
    let crashes: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
    let clock = Arc::new(ManualClock::new(t0()));
    let database = database(adapter);
    let db = Arc::new(FlakyDb::new(database.db.clone()));

    // a crashed migration is run again, as CloudFormation retries the
    // custom resource
    arm_failpoints(0.3, fp_rng.clone(), crashes.clone());
    let mut migrated = false;
    for _ in 0..50 {
        let attempt = AssertUnwindSafe(hookbox::migrate::migrate(db.as_ref()))
            .catch_unwind()
            .await;
        if let Ok(Ok(_)) = attempt {
            migrated = true;
            break;
        }
    }
    disarm_failpoints();
    if !migrated {
        hookbox::migrate::migrate(db.as_ref())
            .await
            .unwrap_or_else(|e| panic!("migrate: {e}"));
    }
    db.execute(
        &statement("CREATE TABLE torture_effects (inbox_id uuid NOT NULL)"),
        &hookbox::params! {},
    )
    .await
    .unwrap_or_else(|e| panic!("the effects table: {e}"));
    // the tenants and their first endpoints, before the first webhook
    let mut tenants = Tenants::create(db.as_ref(), scenario.seed, clock.now())
        .await
        .unwrap_or_else(|e| panic!("the tenants: {e}"));

    let memory = MemoryQueue::new(
        MemoryQueueConfig {
            visibility_timeout: Duration::from_secs(30),
            max_receive_count: 4,
        },
        clock.clone(),
    );
    let queue = Arc::new(FlakyQueue::new(memory.clone()));
    let blobs = Arc::new(MemoryBlobStore::new());
    let mut aws = aws::Aws::start().await;
    let mut aws_rng = fastrand::Rng::with_seed(scenario.seed ^ 0xa3_5eed);
    let store = Arc::new(ConfigStore::fixed(
        config(aws.destinations()),
        clock.clone(),
    ));
    // as the relay's run does at its start: ingest forwards a partner's
    // events only to the destinations its routes name as synced to the
    // database (before a sync it leaves them all to the processor)
    hookbox::outbox::destinations::sync(db.as_ref(), store.current().await.as_ref(), clock.now())
        .await
        .unwrap_or_else(|e| panic!("syncing the destinations: {e}"));
    // as the template: routed webhooks forwarded in the insert
    let ingest = Ingest::new(
        store.clone(),
        db.clone(),
        queue.clone(),
        blobs.clone(),
        clock.clone(),
    )
    .with_forwarding_at_ingest(true);
    let handler = Router {
        erp: OrdersHandler::new("erp"),
        gone: OrdersHandler::new(GONE),
        routing: RoutingHandler::new(store.clone()),
    };
    let processor_config = ProcessorConfig::default();
    let receivers =
        Arc::new(Receivers::new(scenario.seed ^ 0xfeed, scenario.receiver_fail_pct).await);
    // two relay instances (scheduled invocations overlapping): leases keep
    // them off each other's rows
    let relays: Vec<Relay> = ["torture-relay-a", "torture-relay-b"]
        .into_iter()
        .map(|worker| {
            aws.wire(Relay::new(
                db.clone(),
                blobs.clone(),
                receivers.clone(),
                Some(queue.clone() as Arc<dyn hookbox::queue::Queue>),
                clock.clone(),
                RelaySettings::new(worker),
            ))
            .with_endpoints(Arc::new(tenants.directory()))
        })
        .collect();
    let relay = &relays[0];

    // the sending plan: step → webhooks (index, copies at once)
    let hooks = webhooks(scenario, &mut rng);
    let send_steps = (scenario.webhooks as i64 / 8).max(60);
    let mut plan: BTreeMap<i64, Vec<(usize, usize)>> = BTreeMap::new();
    for (i, _) in hooks.iter().enumerate() {
        let first = rng.i64(0..send_steps);
        plan.entry(first).or_default().push((i, 1));
        if rng.u8(0..100) < scenario.duplicate_pct {
            for _ in 0..rng.usize(1..4) {
                let later = first + rng.i64(0..60);
                plan.entry(later).or_default().push((i, 1));
            }
        }
    }
    for _ in 0..scenario.bursts {
        let i = rng.usize(0..hooks.len());
        plan.entry(rng.i64(0..send_steps))
            .or_default()
            .push((i, 100));
    }
    // the batched partner's POSTs, spread over the sending steps (a
    // regrouped resend after its original)
    let batches = batched::Batches::plan(scenario.seed, scenario.batched_events);
    // (a generator of its own: the rest of the scenario draws what it drew
    // before the batched partner existed)
    let mut batch_rng = fastrand::Rng::with_seed(scenario.seed ^ 0xba7c);
    let mut batch_plan: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for p in 0..batches.posts.len() {
        let at = if batches.posts[p].id.ends_with("-regrouped") {
            send_steps + batch_rng.i64(0..60)
        } else {
            batch_rng.i64(0..send_steps)
        };
        batch_plan.entry(at).or_default().push(p);
    }
    let mut batch_accepted: HashSet<usize> = HashSet::new();
    // the refusable requests, spread over the sending steps
    let mut refusals: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for n in 0..scenario.bad_requests {
        refusals.entry(rng.i64(0..send_steps)).or_default().push(n);
    }
    let outages = outages::plan(scenario.outages, send_steps, &mut rng);
    let aws_outages = outages::plan_aws(send_steps, &mut aws_rng);

    let mut figures = Figures::default();
    let mut violations: Vec<String> = Vec::new();
    // event id → statuses answered (2xx means accepted)
    let mut answered: HashMap<String, Vec<u16>> = HashMap::new();

    arm_failpoints(scenario.crash_chance, fp_rng.clone(), crashes.clone());
    let mut step: i64 = 0;
    let mut stopped = false;
    let mut db_paused = false;
    let mut aws_was_down = false;
    let last_step = send_steps + 60 * 30; // resends may go on for a while
    while step <= last_step {
        // outages
        let (flaky, queue_down, killed) = outages::down_at(&outages, step);
        if killed != stopped {
            if killed {
                figures.postgres_stops += 1;
                database
                    .cluster
                    .kill()
                    .unwrap_or_else(|e| panic!("stopping PostgreSQL: {e}"));
            } else {
                database
                    .cluster
                    .restart()
                    .unwrap_or_else(|e| panic!("starting PostgreSQL again: {e}"));
            }
            stopped = killed;
        }
        if flaky != db_paused {
            if flaky {
                figures.db_outages += 1;
            }
            match &database.data_api {
                // the local Data API answers DatabaseResumingException itself
                Some(server) if flaky => server.api().pause(None),
                Some(server) => server.api().resume(),
                None => db.outage.set_down(flaky),
            }
            db_paused = flaky;
        }
        let db_down = flaky || stopped;
        if queue_down && !queue.outage.is_down() {
            figures.queue_outages += 1;
        }
        queue.outage.set_down(queue_down);
        let aws_down = outages::aws_down_at(&aws_outages, step);
        if aws_down && !aws_was_down {
            figures.aws_outages += 1;
        }
        aws.set_down(aws_down);
        aws_was_down = aws_down;

        // tenants' endpoints change between relay runs, one a step while
        // the database is up (a management call is the SaaS's, not
        // hookbox's, and the run must know whether it took effect), before
        // anything else of the step (the ledger counts on it)
        if step % 6 != 0 && !db_down && tenants.calls() < scenario.endpoint_changes {
            if let Err(e) = tenants.change(db.as_ref(), clock.now()).await {
                violations.push(e);
            }
        }

        // 1. partners send
        let due = plan.remove(&step).unwrap_or_default();
        for (i, copies) in due {
            let hook = &hooks[i];
            let headers = signed_headers(hook, clock.now());
            let sends = (0..copies).map(|_| {
                let request = IngestRequest {
                    partner: hook.partner,
                    headers: Headers::from_pairs(
                        headers.iter().map(|(n, v)| (n.as_str(), v.as_str())),
                    ),
                    body: &hook.body,
                    url: None,
                };
                let ingest = &ingest;
                async move {
                    let mut metrics = Metrics::new();
                    AssertUnwindSafe(ingest.handle(&request, &mut metrics))
                        .catch_unwind()
                        .await
                        .map(|r| r.status)
                }
            });
            let results = futures::future::join_all(sends).await;
            let mut resend = false;
            for result in results {
                figures.requests += 1;
                let key = match result {
                    Ok(status) => {
                        answered
                            .entry(hook.event_id.clone())
                            .or_default()
                            .push(status);
                        if (400..500).contains(&status) {
                            violations.push(format!(
                                "{}: a valid webhook was answered {status}",
                                hook.event_id
                            ));
                        }
                        if status >= 500 {
                            resend = true;
                            if !(db_down && queue_down) {
                                violations.push(format!(
                                    "{}: answered {status} while the database or the queue was up",
                                    hook.event_id
                                ));
                            }
                        }
                        status.to_string()
                    }
                    Err(_) => {
                        resend = true;
                        "crash".to_owned()
                    }
                };
                *figures.answers.entry(key).or_default() += 1;
            }
            if resend {
                plan.entry(step + 6).or_default().push((i, 1));
            }
        }

        for p in batch_plan.remove(&step).unwrap_or_default() {
            let post = &batches.posts[p];
            let body = batches.body(post);
            let headers = batched::headers(post, &body, clock.now());
            let request = IngestRequest {
                partner: batched::BATCHED,
                headers: Headers::from_pairs(headers.iter().map(|(n, v)| (n.as_str(), v.as_str()))),
                body: &body,
                url: None,
            };
            let result = AssertUnwindSafe(ingest.handle(&request, &mut Metrics::new()))
                .catch_unwind()
                .await
                .map(|r| r.status);
            figures.requests += 1;
            let answer = match result {
                Ok(status) if (200..300).contains(&status) => {
                    batch_accepted.extend(post.events.iter().copied());
                    status.to_string()
                }
                Ok(status) => {
                    if status < 500 {
                        violations
                            .push(format!("{}: a valid batch was answered {status}", post.id));
                    } else if !(db_down && queue_down) {
                        violations.push(format!(
                            "{}: answered {status} while the database or the queue was up",
                            post.id
                        ));
                    }
                    plan_resend(&mut batch_plan, step, p);
                    status.to_string()
                }
                Err(_) => {
                    plan_resend(&mut batch_plan, step, p);
                    "crash".to_owned()
                }
            };
            *figures
                .answers
                .entry(format!("batch {answer}"))
                .or_default() += 1;
        }

        for n in refusals.remove(&step).unwrap_or_default() {
            let victim = &hooks[n % hooks.len()];
            let request = refusable(scenario.seed, n, clock.now(), victim);
            let status = refuse(&ingest, &request).await;
            let answer = status.map_or_else(|| "crash".to_owned(), |s| s.to_string());
            *figures
                .refused
                .entry(format!("{} {answer}", request.kind))
                .or_default() += 1;
            if !status.is_some_and(|s| (400..500).contains(&s)) {
                violations.push(format!(
                    "a {} request (bad-{}-{n}) was answered {answer}, not a 4xx",
                    request.kind, scenario.seed
                ));
            }
        }

        // 2. two processor invocations at once
        let processor = Processor {
            db: db.as_ref(),
            queue: queue.as_ref(),
            blobs: blobs.as_ref(),
            clock: clock.as_ref(),
            handler: &handler,
            config: &processor_config,
        };
        // an SQS outage stops the event source's receives as well as the
        // sends (receives that worked while every send failed would burn
        // the receive counts of spooled events into the DLQ: see the README)
        let invocations = (0..2).map(|_| async {
            if queue.outage.is_down() {
                0
            } else {
                invoke(&processor, &memory).await
            }
        });
        futures::future::join_all(invocations).await;

        // 3. the relay, every minute
        if step % 6 == 0 {
            let _ = AssertUnwindSafe(relay.sweep()).catch_unwind().await;
            aws.arm(db.as_ref(), &mut aws_rng).await;
            let drains = relays
                .iter()
                .map(|r| AssertUnwindSafe(r.drain(&store)).catch_unwind());
            let _ = futures::future::join_all(drains).await;
            let _ = AssertUnwindSafe(relay.purge()).catch_unwind().await;
            aws.observe().await;
            // the secrets the relays sealed, seen at the time they signed
            if let Err(e) = tenants.observe_secrets(db.as_ref(), clock.now()).await {
                if !db_down {
                    violations.push(e);
                }
            }
        }

        clock.advance(TimeDelta::seconds(STEP_S));
        step += 1;
        if plan.is_empty()
            && batch_plan.is_empty()
            && step > send_steps
            && step > outages::last_end(&outages)
            && step > outages::last_end(&aws_outages)
            && !stopped
        {
            break;
        }
    }
    disarm_failpoints();
    db.outage.set_down(false);
    if let Some(server) = &database.data_api {
        server.api().resume();
    }
    queue.outage.set_down(false);
    aws.set_down(false);
    if stopped {
        database
            .cluster
            .restart()
            .unwrap_or_else(|e| panic!("starting PostgreSQL again: {e}"));
    }
    // what the disabled endpoints missed must reach them
    if let Err(e) = tenants.enable_all(db.as_ref(), clock.now()).await {
        violations.push(e);
    }

    // quiescence: no faults; the event source, the sweeper and the relay
    // until nothing is left to do (deferrals, backoffs and leases expire)
    let processor = Processor {
        db: db.as_ref(),
        queue: queue.as_ref(),
        blobs: blobs.as_ref(),
        clock: clock.as_ref(),
        handler: &handler,
        config: &processor_config,
    };
    for minute in 0..(3 * 24 * 60) {
        for _ in 0..50 {
            if invoke(&processor, &memory).await == 0 {
                break;
            }
        }
        let _ = relay.sweep().await;
        aws.arm(db.as_ref(), &mut aws_rng).await;
        let _ = relay.drain(&store).await;
        aws.observe().await;
        if let Err(e) = tenants.observe_secrets(db.as_ref(), clock.now()).await {
            violations.push(e);
        }
        if minute % 10 == 0 && quiet(db.as_ref(), &memory).await {
            break;
        }
        clock.advance(TimeDelta::seconds(60));
    }
    figures.simulated = (clock.now() - t0()).to_std().unwrap_or_default();
    figures.crashes = crashes.lock().unwrap_or_else(|p| p.into_inner()).clone();
    figures.deliveries = receivers
        .attempts()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();

    check_ledger(
        db.as_ref(),
        &memory,
        &hooks,
        &answered,
        ledger::Downstream {
            receivers: &receivers,
            aws: &aws,
        },
        &mut figures,
        &mut violations,
    )
    .await;
    batched::check(
        db.as_ref(),
        &batches,
        &batch_accepted,
        &mut figures,
        &mut violations,
    )
    .await;
    tenant_ledger::check_tenants(
        db.as_ref(),
        &tenants,
        &receivers.endpoint_attempts(),
        &mut figures,
        &mut violations,
    )
    .await;
    if violations.is_empty() {
        Ok(figures)
    } else {
        Err(Box::new(Failure {
            scenario: scenario.clone(),
            adapter,
            violations,
            figures,
        }))
    }
}

/// A POST answered 5xx or crashed: sent again a minute later, as a
/// provider would.
fn plan_resend(plan: &mut BTreeMap<i64, Vec<usize>>, step: i64, post: usize) {
    plan.entry(step + 6).or_default().push(post);
}

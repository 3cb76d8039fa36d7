//! The outages of a run: when each starts and ends, and what it takes down.
//!
//! Four kinds in turn: the database (through PostgreSQL: its calls fail as
//! a database failing over does; through the Data API: the local Data API
//! pauses, answering `DatabaseResumingException` as Aurora Serverless v2
//! does while it resumes, and its open transactions are gone), the queue,
//! both, and PostgreSQL itself stopped (killed, then started again).

/// One outage, in steps of the run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outage {
    pub(crate) start: i64,
    pub(crate) length: i64,
    pub(crate) database: bool,
    pub(crate) queue: bool,
    pub(crate) postgres_stopped: bool,
}

impl Outage {
    fn covers(&self, step: i64) -> bool {
        (self.start..self.start + self.length).contains(&step)
    }
}

/// `count` outages within the first `send_steps` steps.
pub(crate) fn plan(count: usize, send_steps: i64, rng: &mut fastrand::Rng) -> Vec<Outage> {
    let mut outages: Vec<Outage> = (0..count)
        .map(|k| {
            let (database, queue, postgres_stopped) = match k % 4 {
                0 => (true, false, false),
                1 => (false, true, false),
                2 => (true, true, false),
                _ => (false, false, true),
            };
            // the first database outage outlasts the queue's receives
            // (60 + 300 + 900 s): spooled events must keep circulating
            let length = if k == 0 {
                rng.i64(150..200)
            } else {
                rng.i64(6..30)
            };
            Outage {
                start: rng.i64(0..send_steps),
                length,
                database,
                queue,
                postgres_stopped,
            }
        })
        .collect();
    outages.sort_by_key(|o| o.start);
    outages
}

/// What is down at `step`: (database calls, queue, PostgreSQL stopped).
pub(crate) fn down_at(outages: &[Outage], step: i64) -> (bool, bool, bool) {
    let any = |f: fn(&Outage) -> bool| outages.iter().any(|o| f(o) && o.covers(step));
    (
        any(|o| o.database),
        any(|o| o.queue),
        any(|o| o.postgres_stopped),
    )
}

/// Two outages of the AWS services (EventBridge and SQS at once), 1 to 5
/// minutes each, within the first `send_steps` steps; drawn from their own
/// generator, so the rest of the scenario is as it was.
pub(crate) fn plan_aws(send_steps: i64, rng: &mut fastrand::Rng) -> Vec<Outage> {
    (0..2)
        .map(|_| Outage {
            start: rng.i64(0..send_steps),
            length: rng.i64(6..30),
            database: false,
            queue: false,
            postgres_stopped: false,
        })
        .collect()
}

/// Whether an outage of `outages` covers `step`.
pub(crate) fn aws_down_at(outages: &[Outage], step: i64) -> bool {
    outages.iter().any(|o| o.covers(step))
}

/// The step after the last outage ends.
pub(crate) fn last_end(outages: &[Outage]) -> i64 {
    outages
        .iter()
        .map(|o| o.start + o.length)
        .max()
        .unwrap_or(0)
}

//! The sweeper: inbox rows stranded past `sweep_after` (their message lost,
//! or never sent while the queue was down) go back onto the queue.

use crate::inbox::{self, InboxMessage};
use crate::outbox::relay::{Relay, chrono_duration};
use crate::store::DbError;

/// What the sweeper did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Rows found stranded and sent to the queue.
    pub swept: u64,
    /// Rows found stranded whose message could not be sent (they are swept
    /// again after another `sweep_after`).
    pub send_failed: u64,
}

impl Relay {
    /// Sends inbox rows overdue by more than `sweep_after` to the queue
    /// again (processing is idempotent, so a duplicate message is
    /// harmless), marking when. At most 10 sweep statements.
    pub async fn sweep(&self) -> Result<SweepReport, DbError> {
        let mut report = SweepReport::default();
        let Some(queue) = &self.queue else {
            return Ok(report);
        };
        let grace = chrono_duration(self.settings.sweep_after);
        for _ in 0..10 {
            let stranded = inbox::sweep_stranded(
                self.db.as_ref(),
                self.clock.now(),
                grace,
                self.settings.sweep_batch,
            )
            .await?;
            if !stranded.is_empty() {
                crate::failpoint::hit!(crate::failpoint::SWEEPER_BEFORE_SEND);
            }
            for row in &stranded {
                let body = InboxMessage::stored(row.id, &row.partner, &row.event_id).to_body();
                let sent = match body {
                    Ok(body) => queue.send(&body).await.map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                };
                match sent {
                    Ok(_) => {
                        report.swept += 1;
                        tracing::info!(inbox_id = %row.id, partner = %row.partner, "swept a stranded inbox row back onto the queue");
                    }
                    Err(error) => {
                        report.send_failed += 1;
                        tracing::warn!(inbox_id = %row.id, error = %error, "cannot enqueue a stranded inbox row; the next sweep tries again");
                    }
                }
            }
            if (stranded.len() as i64) < self.settings.sweep_batch {
                break;
            }
        }
        Ok(report)
    }
}

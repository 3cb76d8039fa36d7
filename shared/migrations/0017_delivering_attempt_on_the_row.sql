-- hookbox schema, version 17: a delivery's delivering attempt is kept on its
-- outbox row, not inserted into the attempt log (docs/relay.md, "Attempt
-- log").
--
-- Version 12 inserted a row into outbox_attempts for every attempt, in the
-- statement that records the batch. Most attempts are a first attempt that
-- delivers, and the outbox row is rewritten by that statement anyway (a new
-- row version: its status changes), so the attempt's time, latency and
-- response excerpt now go on that row version: three columns more on a
-- write that happens anyway, instead of a heap row, an index entry and their
-- WAL per delivery. Attempts that do not deliver (a retry, a dead row) are
-- logged as before.
--
-- Every attempt is recorded exactly once: outbox_attempt_log is the attempt
-- log, outbox_attempts plus the delivering attempt of each delivered row.
-- Whatever takes a delivered row out of that state first moves its
-- delivering attempt into outbox_attempts: replay (back to pending), and
-- retention (deleted or archived) while the attempt is younger than the
-- attempt log's own retention.
ALTER TABLE outbox
    ADD COLUMN last_attempted_at timestamptz,
    ADD COLUMN last_latency_ms   integer CHECK (last_latency_ms >= 0),
    ADD COLUMN last_response     text;
-- the archive has the outbox's columns, in its order (archiving copies rows
-- with SELECT *)
ALTER TABLE outbox_archive
    ADD COLUMN last_attempted_at timestamptz,
    ADD COLUMN last_latency_ms   integer,
    ADD COLUMN last_response     text;

CREATE VIEW outbox_attempt_log AS
    SELECT outbox_id, attempt, attempted_at, destination, status_code, latency_ms,
           error, response_excerpt
      FROM outbox_attempts
    UNION ALL
    SELECT id, attempts, last_attempted_at, destination, last_status_code, last_latency_ms,
           last_error, last_response
      FROM outbox
     WHERE status = 'delivered' AND last_attempted_at IS NOT NULL;

GRANT SELECT ON outbox_attempt_log TO hookbox_relay;

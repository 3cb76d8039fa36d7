-- hookbox schema, version 12: the attempt log. Every delivery attempt the
-- relay records: when, to which destination, the status code (NULL: no
-- answer), how long it took, the error, and the first 1 KiB of the
-- response body. Written by the statement that records the batch's results
-- (still one statement per batch: hookbox::outbox::repo), for the rows that
-- statement changed. Kept for HOOKBOX_ATTEMPT_RETENTION_DAYS (its own
-- retention, default 30 days), whatever happens to the outbox row.
CREATE TABLE outbox_attempts (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    outbox_id        uuid        NOT NULL,
    -- the row's attempt count after this attempt (1 for the first; an
    -- operator's retry, which resets the count, starts again at 1)
    attempt          integer     NOT NULL CHECK (attempt > 0),
    attempted_at     timestamptz NOT NULL,
    destination      text        NOT NULL,
    status_code      integer,
    latency_ms       integer     CHECK (latency_ms >= 0),
    error            text,
    response_excerpt text
);
-- "every attempt of this delivery", oldest first
CREATE INDEX outbox_attempts_outbox ON outbox_attempts (outbox_id, id);
-- time ranges (an operator's queries): attempts arrive in time order, so a
-- BRIN index (a few pages, next to nothing per insert) is enough; retention
-- walks the primary key, oldest first
CREATE INDEX outbox_attempts_age ON outbox_attempts USING brin (attempted_at);

GRANT SELECT, INSERT, DELETE ON outbox_attempts TO hookbox_relay;

-- hookbox schema, version 3: ordered delivery per aggregate, cheaper relay updates.
--
-- For a destination configured with `ordered: true` the relay delivers the
-- rows of one aggregate one at a time, oldest first: a row is not claimed
-- while an older row of the same destination and aggregate is undelivered,
-- that is pending (waiting or being retried) or dead (an operator must
-- retry it, with `hookbox outbox retry`, before the later rows go). The
-- claim asks "is there an older undelivered row of this aggregate?" of this
-- index; it replaces the pending-only index of version 1.
DROP INDEX outbox_pending_aggregate;
CREATE INDEX outbox_undelivered_aggregate
    ON outbox (destination, aggregate_type, aggregate_id, seq)
    WHERE status IN ('pending', 'dead');

-- Since this version a claim no longer moves next_attempt_at (version 1's
-- comment on that column): it sets locked_until/locked_by only, and a row is
-- claimable when due and not leased.
-- The relay updates each row twice (lease, result). The lease touches no
-- indexed column, so with free space on the page PostgreSQL updates the row
-- in place (HOT): leave that space.
ALTER TABLE outbox SET (fillfactor = 80);

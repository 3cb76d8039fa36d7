-- hookbox schema, version 5: the relay's claim as a function with a fixed plan.
--
-- The claim must walk outbox_pending_due in due order and stop after its
-- limit. The planner chose that only while its statistics counted the
-- pending rows well: a burst written after the last ANALYZE (or into a
-- table never analyzed) looked like a few rows, and it picked a bitmap scan
-- of EVERY due row plus a sort, tens of milliseconds per batch for a 20k
-- burst, until autovacuum analyzed the table (on a large table, only after
-- 10% of it changed). Planner settings cannot be given to one statement, but
-- a function can carry them: no bitmap scans and no sorts while it runs, so
-- the ordered index walk is the plan whatever the statistics say, and one
-- generic plan is cached per connection (no planning per batch, through
-- direct connections and the Data API alike).
--
-- Same semantics as the statement it replaces: up to p_limit rows that are
-- pending, due at p_now and not leased, oldest due first, skipping rows
-- another claim holds (SKIP LOCKED); for the destinations in p_ordered
-- (a JSON array of names) only rows with no older pending or dead row of the
-- same aggregate. Each is leased until p_lease_until to p_worker, changing
-- only locked_until/locked_by (a HOT update, see version 4).
CREATE FUNCTION outbox_claim_due(
    p_now         timestamptz,
    p_lease_until timestamptz,
    p_worker      text,
    p_limit       bigint,
    p_ordered     jsonb
) RETURNS SETOF outbox
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_bitmapscan = off
SET enable_sort = off
AS $$
BEGIN
    RETURN QUERY
    WITH due AS (
        SELECT o.id FROM outbox AS o
         WHERE o.status = 'pending' AND o.next_attempt_at <= p_now
           AND (o.locked_until IS NULL OR o.locked_until <= p_now)
           AND NOT (o.destination IN (SELECT jsonb_array_elements_text(p_ordered))
                    AND EXISTS (SELECT 1 FROM outbox AS older
                                 WHERE older.destination = o.destination
                                   AND older.aggregate_type = o.aggregate_type
                                   AND older.aggregate_id = o.aggregate_id
                                   AND older.status IN ('pending', 'dead')
                                   AND older.seq < o.seq))
         ORDER BY o.next_attempt_at
         LIMIT p_limit
         FOR UPDATE SKIP LOCKED
    )
    UPDATE outbox AS o
       SET locked_until = p_lease_until,
           locked_by = p_worker
     WHERE o.id = ANY(ARRAY(SELECT id FROM due))
    RETURNING o.*;
END
$$;

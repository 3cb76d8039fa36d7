-- hookbox schema, version 14: the processor's claim as a function with a
-- fixed plan (as version 5 did for the relay's claim).
--
-- The claim finds its rows by primary key: `id = ANY(<the batch's ids>)`.
-- The planner costs that as ten index probes, so while the inbox is small
-- (a fresh deployment, a test, a few thousand rows) a sequential scan looks
-- cheaper, and that is the plan it makes. A direct connection keeps that
-- plan: after five executions a prepared statement switches to its cached
-- generic plan, which is planned again only when the table's statistics
-- change (an ANALYZE), not when the table grows. Until autovacuum analyzed
-- the inbox, every claim then scanned the whole table: 7× the database CPU
-- per message in the benchmark, growing with the inbox. A function can carry
-- planner settings: no sequential scans while it runs, so the key lookups are
-- the plan whatever the table's size when it was made, and one generic plan
-- is cached per connection (no planning per batch, through direct
-- connections and the Data API alike).
--
-- Same semantics as the statement it replaces (inbox::repo::CLAIM before
-- version 14): one row per distinct requested id, with its current status
-- and, when this claim took the lease, the claimed row. Rows another
-- transaction holds locked are skipped, not waited for. Pending and
-- deferred rows, and processing rows whose lease expired at p_now or that
-- p_claimer already holds, become processing until p_lease_until with
-- attempts + 1.
CREATE FUNCTION inbox_claim(
    p_ids         jsonb,
    p_now         timestamptz,
    p_lease_until timestamptz,
    p_claimer     uuid
) RETURNS TABLE (wanted_id uuid, current_status text, claimed inbox)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
BEGIN
    RETURN QUERY
    WITH wanted AS (
        SELECT DISTINCT CAST(e.value AS uuid) AS id
          FROM jsonb_array_elements_text(p_ids) AS e
    ), free AS (
        -- a row another transaction holds locked (a processor committing
        -- it, a replay, the sweeper) is skipped, not waited for: it comes
        -- back as busy and the other rows proceed
        SELECT f.id FROM inbox AS f
         WHERE f.id = ANY (ARRAY(SELECT w.id FROM wanted AS w))
           FOR UPDATE SKIP LOCKED
    ), taken AS (
        UPDATE inbox AS i
           SET status = 'processing',
               attempts = i.attempts + 1,
               locked_until = p_lease_until,
               locked_by = p_claimer,
               next_attempt_at = p_lease_until
         WHERE i.id = ANY (ARRAY(SELECT fr.id FROM free AS fr))
           -- a CASE, not OR/IN: the planner must not trade the key lookup
           -- for a scan of every active row (the partial indexes)
           AND CASE WHEN i.status IN ('pending', 'deferred') THEN true
                    -- an expired lease, or one this claimer took (a retried
                    -- claim whose first try committed its leases but could
                    -- not return them)
                    WHEN i.status = 'processing'
                        THEN i.locked_until <= p_now OR i.locked_by = p_claimer
                    ELSE false END
        RETURNING i.id AS taken_id, i AS taken_row
    )
    SELECT w.id,
           (SELECT cur.status FROM inbox AS cur WHERE cur.id = w.id),
           t.taken_row
      FROM wanted AS w
      LEFT JOIN taken AS t ON t.taken_id = w.id;
END
$$;
REVOKE EXECUTE ON FUNCTION inbox_claim(jsonb, timestamptz, timestamptz, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inbox_claim(jsonb, timestamptz, timestamptz, uuid) TO hookbox_processor;

-- The relay's claim (migration 13) had the same flaw: its plan, pinned
-- generic, was made at a connection's first claim, and with an empty or
-- small outbox (a fresh deployment, the local stack) the lease UPDATE
-- (`id = ANY(…)`) and the ordered destinations' older-row check were
-- sequential scans, kept while the outbox grew: a scan of every outbox row
-- per claim. No sequential scans while it runs either.
ALTER FUNCTION outbox_claim_due(timestamptz, timestamptz, text, bigint, jsonb, bigint, jsonb)
    SET enable_seqscan = off;

-- hookbox schema, version 16: the relay's claim held to its per-destination
-- plan whatever the statistics, and fewer index entries per delivery
-- (docs/relay.md).
--
-- The claim (version 13's, same arguments and rules) reads each
-- destination's due rows through its own index, as designed. Its plan is
-- generic, made at a connection's first claim from whatever statistics the
-- outbox had then, and with few pending rows in them (a fresh deployment, a
-- burst into an unanalyzed table) the planner had taken other indexes:
-- - finding the destinations with due rows, `min(destination)` read every
--   pending row through outbox_pending_created (and its heap tuple), at
--   every probe: a claim was O(backlog), not one probe per destination;
-- - a destination's walk went through outbox_pending_due (every
--   destination's due rows, in due order) and skipped the others' rows: one
--   destination's backlog stood in front of another's rows again.
-- Now the skip scan asks for `ORDER BY destination LIMIT 1` (sorts are off
-- while the claim runs, so only an index in destination order can answer),
-- and outbox_pending_due, which nothing reads since version 13, is dropped:
-- the destination index is the only one left that has pending rows in due
-- order. One index less to write per outbox row, too. The function below is
-- version 13's with those two changes (and version 14's enable_seqscan).
DROP INDEX outbox_pending_due;

-- A delivery is not a HOT update (its status is in the partial indexes'
-- predicates), so every index without a predicate gets an entry per
-- delivery. Version 15's outbox_destination_created, for bulk replay, was
-- one of them and the dearest: relay-bench's recording UPDATE went from a
-- median 1.7 to 3.3 ms per batch of 100 with it. Replay walks the seq span
-- of its range through outbox_seq_key instead (hookbox::admin::replay), an
-- operator's occasional statement paying for what every delivery paid.
DROP INDEX outbox_destination_created;

-- The attempt log keeps one btree: `(outbox_id, attempted_at)` lists a
-- delivery's attempts, oldest first; retention walks the BRIN index on
-- attempted_at. The identity key (a btree entry and a sequence value per
-- attempt, which nothing looked rows up by) is dropped with its column.

ALTER TABLE outbox_attempts DROP COLUMN id;
CREATE INDEX outbox_attempts_outbox ON outbox_attempts (outbox_id, attempted_at);

-- The claim: version 13's, its skip scan in index order.
CREATE OR REPLACE FUNCTION outbox_claim_due(
    p_now         timestamptz,
    p_lease_until timestamptz,
    p_worker      text,
    p_limit       bigint,
    p_ordered     jsonb,
    p_budget      bigint,
    p_caps        jsonb
) RETURNS SETOF outbox
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_bitmapscan = off
SET enable_sort = off
SET jit = off
SET enable_seqscan = off
AS $$
DECLARE
    v_probes text[];
BEGIN
    -- the probes: each destination whose cool-down is over gives one
    -- request to one claim at a time (its row lock; concurrent claims skip
    -- it), and stays closed to the others until this lease ends (when a
    -- probe that was not recorded may be taken again)
    WITH taken AS (
        UPDATE outbox_destinations AS h
           SET open_until = p_lease_until
         WHERE h.name = ANY(ARRAY(SELECT d.name FROM outbox_destinations AS d
                                   WHERE d.disabled_at IS NULL AND d.open_until <= p_now
                                   FOR UPDATE SKIP LOCKED))
        RETURNING h.name
    )
    SELECT coalesce(array_agg(name), '{}') INTO v_probes FROM taken;

    RETURN QUERY
    WITH RECURSIVE dests(name) AS (
        (SELECT o.destination FROM outbox AS o WHERE o.status = 'pending'
          ORDER BY o.destination LIMIT 1)
        UNION ALL
        SELECT (SELECT o.destination FROM outbox AS o
                 WHERE o.status = 'pending' AND o.destination > dests.name
                 ORDER BY o.destination LIMIT 1)
          FROM dests WHERE dests.name IS NOT NULL
    ), walk AS (
        SELECT d.name,
               CASE WHEN d.name = ANY(v_probes) THEN 1
                    ELSE least(coalesce(CAST(p_caps ->> d.name AS bigint), p_limit), p_limit)
               END AS cap
          FROM dests AS d
          LEFT JOIN outbox_destinations AS h ON h.name = d.name
         WHERE d.name IS NOT NULL
           AND h.disabled_at IS NULL
           AND (h.open_until IS NULL OR d.name = ANY(v_probes))
    ), due AS (
        SELECT x.id, x.seq, x.next_attempt_at, x.bytes
          FROM walk AS w
          CROSS JOIN LATERAL (
              SELECT o.id, o.seq, o.next_attempt_at,
                     CASE WHEN o.payload IS NULL THEN 0
                          ELSE coalesce(o.payload_size, octet_length(CAST(o.payload AS text)))
                     END
                     + octet_length(o.aggregate_type) + octet_length(o.aggregate_id)
                     + octet_length(o.event_type) + octet_length(o.destination)
                     + coalesce(octet_length(o.last_error), 0)
                     + coalesce(octet_length(o.payload_key), 0)
                     + octet_length(p_worker) + 128 AS bytes
                FROM outbox AS o
               WHERE o.destination = w.name
                 AND o.status = 'pending' AND o.next_attempt_at <= p_now
                 AND (o.locked_until IS NULL OR o.locked_until <= p_now OR o.locked_by = p_worker)
                 AND NOT (o.destination IN (SELECT jsonb_array_elements_text(p_ordered))
                          AND EXISTS (SELECT 1 FROM outbox AS older
                                       WHERE older.destination = o.destination
                                         AND older.aggregate_type = o.aggregate_type
                                         AND older.aggregate_id = o.aggregate_id
                                         AND older.status IN ('pending', 'dead')
                                         AND older.seq < o.seq))
               ORDER BY o.destination, o.next_attempt_at
               LIMIT w.cap
               FOR UPDATE SKIP LOCKED
          ) AS x
         WHERE w.cap > 0
    ), fitting AS (
        SELECT d.id, sum(d.bytes) OVER w AS running, row_number() OVER w AS n
          FROM due AS d
        WINDOW w AS (ORDER BY d.next_attempt_at, d.seq ROWS UNBOUNDED PRECEDING)
    )
    UPDATE outbox AS o
       SET locked_until = p_lease_until,
           locked_by = p_worker
     WHERE o.id = ANY(ARRAY(SELECT f.id FROM fitting AS f
                             WHERE f.n <= p_limit AND (f.running <= p_budget OR f.n = 1)))
    RETURNING o.*;
END
$$;

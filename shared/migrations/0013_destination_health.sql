-- hookbox schema, version 13: endpoint health and fairness between
-- destinations (docs/relay.md, "Endpoint health and fairness").
--
-- Health lives next to each destination's subscription in
-- outbox_destinations (the relay syncs the configuration there; the sync
-- never touches these columns). The statement that records a batch's
-- results updates it (still one statement per batch):
-- - a delivered attempt closes the breaker: no failures, not failing;
-- - a failed one counts; `trip_after` consecutive failures open the
--   breaker until `open_until` (now + `cool_down_secs`): nothing of the
--   destination is claimed meanwhile, so its rows wait without using up
--   their attempts; after it, a claim takes at most one row of it (the
--   probe): a failure opens it again, a success closes it;
-- - failing continuously for `disable_after_secs` disables it
--   (`disabled_at`, `disabled_reason`): nothing is claimed until an operator
--   enables it again (`hookbox destination enable`), and nothing is lost.
ALTER TABLE outbox_destinations
    ADD COLUMN trip_after           integer     NOT NULL DEFAULT 5 CHECK (trip_after > 0),
    ADD COLUMN cool_down_secs       integer     NOT NULL DEFAULT 60 CHECK (cool_down_secs > 0),
    ADD COLUMN disable_after_secs   bigint      NOT NULL DEFAULT 432000 CHECK (disable_after_secs >= 0),
    ADD COLUMN consecutive_failures integer     NOT NULL DEFAULT 0,
    ADD COLUMN failing_since        timestamptz,
    ADD COLUMN open_until           timestamptz,
    ADD COLUMN disabled_at          timestamptz,
    ADD COLUMN disabled_reason      text;

-- Fairness: the claim walks each destination's due rows on its own (this
-- index), at most its cap of them (the relay passes each destination's free
-- request slots), so one destination's backlog never stands in front of
-- another's rows. A partial index: only pending rows have an entry.
CREATE INDEX outbox_pending_destination_due ON outbox (destination, next_attempt_at)
    WHERE status = 'pending';

-- The claim (version 7's, with the same budget, token and ordered-delivery
-- rules and the same pinned settings), now per destination. The
-- destinations with due rows are found by a skip scan of the index above
-- (one probe per destination, whatever the backlog). Each gets at most its
-- cap (p_caps: {"name": n}; a destination not in it, p_limit) rows, oldest
-- due first; none while its breaker is open or it is disabled, one (the
-- probe, for one claim at a time) when its cool-down is over. The oldest due
-- across them are leased, up to p_limit and within p_budget.
DROP FUNCTION outbox_claim_due(timestamptz, timestamptz, text, bigint, jsonb, bigint);
CREATE FUNCTION outbox_claim_due(
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
        SELECT min(o.destination) FROM outbox AS o WHERE o.status = 'pending'
        UNION ALL
        SELECT (SELECT min(o.destination) FROM outbox AS o
                 WHERE o.status = 'pending' AND o.destination > dests.name)
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
               ORDER BY o.next_attempt_at
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
REVOKE EXECUTE ON FUNCTION outbox_claim_due(timestamptz, timestamptz, text, bigint, jsonb, bigint, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_claim_due(timestamptz, timestamptz, text, bigint, jsonb, bigint, jsonb) TO hookbox_relay;

-- Operators enable (and disable) destinations with the CLI; the relay
-- records health.
GRANT UPDATE ON outbox_destinations TO hookbox_relay;

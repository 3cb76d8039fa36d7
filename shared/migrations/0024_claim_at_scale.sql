-- hookbox schema, version 24: the relay's claim at tenants' scale, and fair
-- between tenants (docs/relay.md, "The claim with many destinations").
--
-- Version 20's claim walked every destination with pending rows at every
-- claim (a skip scan of outbox_pending_destination_due, one probe each), and
-- locked up to the whole batch of each before keeping the oldest due rows:
-- with 10,000 endpoints a claim was 10,000 probes, and the oldest rows won,
-- so a tenant's backlog stood in front of another tenant's new event, and a
-- tenant with 100 endpoints had 100 destinations' worth of the relay.
--
-- Now:
-- - Ranges. The destinations' names (outbox_destinations, configured and
--   endpoints alike) are cut into ranges of RANGE_SPAN (128) names,
--   recomputed by a claim when older than a minute. A claim starts at the
--   range its lease token hashes to and walks the destinations with pending
--   rows there, then the next ranges while it has found fewer ready
--   destinations (a due row) than its limit, at most 4 × RANGE_SPAN probes
--   in all. Tokens are random per batch, so claims spread over the ranges
--   (and a claim with few ready destinations walks them all), concurrent
--   lanes rarely walk the same range and compete for the same rows, and a
--   claim taken again under its own token (the recovery of a claim whose
--   answer was lost) walks the same ranges and takes its rows back. A
--   deployment with up to 128 destinations has one range: every claim sees
--   every destination, as before.
-- - Tenants. Among the ready destinations walked, each tenant is one share
--   and its endpoints split it; a configured destination (no tenant) is a
--   share of its own. Rows are ranked per share, round robin over its
--   destinations (each destination's oldest due row first, then its second,
--   …), and the claim takes the first turns of every share before the
--   second turn of any: rank 1 of each share, then rank 2, … (ties: oldest
--   due first). A tenant with 100 endpoints and a backlog gets half of a
--   claim beside a tenant with one endpoint and one new event, not 100/101.
-- - Bounded work. Each ready destination is read (and its rows locked) up
--   to its share of twice the limit (at least one row, at most its cap), so a
--   claim reads and locks about 2 × limit rows plus one per destination,
--   whatever the backlog, instead of up to limit rows per destination.
--
-- Unchanged: the lease (locked_until, locked_by = the batch's token, a
-- claim takes back its own token's rows), the caps the relay passes, the
-- breaker (an open destination is skipped, one claim probes it with one row
-- when its cool-down is over: now only a destination this claim walks and
-- finds ready), disabled and held destinations skipped, `ordered` per
-- aggregate (a row waits while an older row of its aggregate is pending or
-- dead), the byte budget (at least one row), the pinned plan settings.

-- The ranges: range i holds the names from `lo` (inclusive) to the next
-- range's `lo` (exclusive); range 0's `lo` is ''.
CREATE TABLE outbox_claim_ranges (
    i           integer     PRIMARY KEY,
    lo          text        NOT NULL,
    computed_at timestamptz NOT NULL
);

-- The destinations with pending rows from `p_lo` (inclusive) up to `p_hi`
-- (exclusive; NULL: the end), at most `p_max`, in name order, each with
-- whether it is ready: a due row not leased to another claim (a skip scan
-- of outbox_pending_destination_due, then its due rows from the oldest
-- until one is free: rows in flight are passed over).
CREATE FUNCTION outbox_claim_range(p_lo text, p_hi text, p_max integer, p_now timestamptz,
                                   p_worker text)
RETURNS TABLE (r_name text, r_ready boolean)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_bitmapscan = off
SET enable_sort = off
SET jit = off
SET enable_seqscan = off
AS $$
BEGIN
    RETURN QUERY
    WITH RECURSIVE dests(name, n) AS (
        (SELECT o.destination, 1 FROM outbox AS o
          WHERE o.status = 'pending' AND o.destination >= p_lo
          ORDER BY o.destination LIMIT 1)
        UNION ALL
        SELECT (SELECT o.destination FROM outbox AS o
                 WHERE o.status = 'pending' AND o.destination > d.name
                 ORDER BY o.destination LIMIT 1), d.n + 1
          FROM dests AS d
         WHERE d.name IS NOT NULL AND d.n < p_max AND (p_hi IS NULL OR d.name < p_hi)
    )
    -- (a lateral with LIMIT, not EXISTS: the planner may turn an EXISTS
    -- into one hashed read of every due row, the whole backlog)
    SELECT d.name, r.ready IS NOT NULL
      FROM dests AS d
      LEFT JOIN LATERAL (
          SELECT true AS ready FROM outbox AS o
           WHERE o.destination = d.name AND o.status = 'pending'
             AND o.next_attempt_at <= p_now
             AND (o.locked_until IS NULL OR o.locked_until <= p_now OR o.locked_by = p_worker)
           ORDER BY o.destination, o.next_attempt_at
           LIMIT 1
      ) AS r ON true
     WHERE d.name IS NOT NULL AND (p_hi IS NULL OR d.name < p_hi);
END
$$;

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
    c_span    CONSTANT integer := 128;   -- names per range
    c_probes  CONSTANT integer := 512;   -- destinations walked per claim, at most
    v_computed timestamptz;
    v_ranges  text[];
    v_count   integer;
    v_start   integer;
    v_i       integer;
    v_walked  integer := 0;
    v_part    text[];
    v_seen    integer;
    v_ready   text[] := '{}';
    v_probes  text[];
BEGIN
    -- the ranges, recomputed by one claim at a time when a minute old
    SELECT max(r.computed_at) INTO v_computed FROM outbox_claim_ranges AS r;
    IF (v_computed IS NULL OR v_computed < p_now - interval '60 seconds'
        OR v_computed > p_now + interval '60 seconds')
       AND pg_try_advisory_xact_lock(hashtext('hookbox.outbox_claim_ranges')) THEN
        DELETE FROM outbox_claim_ranges;
        INSERT INTO outbox_claim_ranges (i, lo, computed_at)
        SELECT CAST((s.n - 1) / c_span AS integer), CASE WHEN s.n = 1 THEN '' ELSE s.name END, p_now
          FROM (SELECT d.name, row_number() OVER (ORDER BY d.name) AS n
                  FROM outbox_destinations AS d) AS s
         WHERE (s.n - 1) % c_span = 0;
    END IF;
    v_ranges := ARRAY(SELECT r.lo FROM outbox_claim_ranges AS r ORDER BY r.i);
    IF cardinality(v_ranges) = 0 THEN
        v_ranges := ARRAY[''];
    END IF;
    v_count := cardinality(v_ranges);
    v_start := (hashtext(p_worker) & 2147483647) % v_count;

    -- walk from the token's range while fewer destinations are ready than
    -- the limit
    FOR v_step IN 0 .. v_count - 1 LOOP
        v_i := (v_start + v_step) % v_count;
        SELECT coalesce(array_agg(w.r_name) FILTER (WHERE w.r_ready), '{}'), count(*)
          INTO v_part, v_seen
          FROM outbox_claim_range(v_ranges[v_i + 1],
                                  CASE WHEN v_i + 1 < v_count THEN v_ranges[v_i + 2] END,
                                  c_probes - v_walked, p_now, p_worker) AS w;
        v_ready := v_ready || v_part;
        v_walked := v_walked + v_seen;
        EXIT WHEN cardinality(v_ready) >= p_limit OR v_walked >= c_probes;
    END LOOP;

    -- breaker probes: ready destinations of this walk whose cool-down is over
    WITH taken AS (
        UPDATE outbox_destinations AS h
           SET open_until = p_lease_until
         WHERE h.name = ANY(ARRAY(SELECT d.name FROM outbox_destinations AS d
                                   WHERE d.name = ANY(v_ready)
                                     AND d.disabled_at IS NULL AND NOT d.held
                                     AND d.open_until <= p_now
                                   FOR UPDATE SKIP LOCKED))
        RETURNING h.name
    )
    SELECT coalesce(array_agg(name), '{}') INTO v_probes FROM taken;

    RETURN QUERY
    WITH walk AS (
        SELECT w.name, w.pos,
               CASE WHEN h.tenant_id IS NULL THEN 'd:' || w.name ELSE 't:' || h.tenant_id END
                   AS share,
               CASE WHEN w.name = ANY(v_probes) THEN 1
                    ELSE least(coalesce(CAST(p_caps ->> w.name AS bigint), p_limit), p_limit)
               END AS cap,
               coalesce(h.ordered, false)
                   OR w.name IN (SELECT jsonb_array_elements_text(p_ordered)) AS ordered
          FROM unnest(v_ready) WITH ORDINALITY AS w(name, pos)
          LEFT JOIN outbox_destinations AS h ON h.name = w.name
         WHERE h.disabled_at IS NULL
           AND NOT coalesce(h.held, false)
           AND (h.open_until IS NULL OR w.name = ANY(v_probes))
    ), sized AS (
        SELECT w.name, w.pos, w.share, w.cap, w.ordered,
               count(*) OVER (PARTITION BY w.share) AS per_share,
               (SELECT count(DISTINCT x.share) FROM walk AS x WHERE x.cap > 0) AS shares
          FROM walk AS w
         WHERE w.cap > 0
    ), due AS (
        SELECT s.share, s.pos, x.id, x.seq, x.next_attempt_at, x.bytes
          FROM sized AS s
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
               WHERE o.destination = s.name
                 AND o.status = 'pending' AND o.next_attempt_at <= p_now
                 AND (o.locked_until IS NULL OR o.locked_until <= p_now OR o.locked_by = p_worker)
                 AND NOT (s.ordered
                          AND EXISTS (SELECT 1 FROM outbox AS older
                                       WHERE older.destination = o.destination
                                         AND older.aggregate_type = o.aggregate_type
                                         AND older.aggregate_id = o.aggregate_id
                                         AND older.status IN ('pending', 'dead')
                                         AND older.seq < o.seq))
               ORDER BY o.destination, o.next_attempt_at
               LIMIT least(s.cap,
                           CAST(ceil(2.0 * p_limit / (s.shares * s.per_share)) AS bigint))
               FOR UPDATE SKIP LOCKED
          ) AS x
    ), turns AS (
        SELECT d.id, d.seq, d.next_attempt_at, d.bytes,
               row_number() OVER (PARTITION BY d.share
                                  ORDER BY d.j, d.next_attempt_at, d.seq) AS k
          FROM (SELECT u.*, row_number() OVER (PARTITION BY u.pos
                                               ORDER BY u.next_attempt_at, u.seq) AS j
                  FROM due AS u) AS d
    ), chosen AS (
        SELECT t.id, t.bytes, t.k, t.next_attempt_at, t.seq
          FROM turns AS t
         ORDER BY t.k, t.next_attempt_at, t.seq
         LIMIT p_limit
    ), fitting AS (
        SELECT c.id, sum(c.bytes) OVER w AS running, row_number() OVER w AS n
          FROM chosen AS c
        WINDOW w AS (ORDER BY c.k, c.next_attempt_at, c.seq ROWS UNBOUNDED PRECEDING)
    )
    UPDATE outbox AS o
       SET locked_until = p_lease_until,
           locked_by = p_worker
     WHERE o.id = ANY(ARRAY(SELECT f.id FROM fitting AS f
                             WHERE f.running <= p_budget OR f.n = 1))
    RETURNING o.*;
END
$$;

GRANT SELECT, INSERT, DELETE ON outbox_claim_ranges TO hookbox_relay;
GRANT EXECUTE ON FUNCTION outbox_claim_range(text, text, integer, timestamptz, text)
    TO hookbox_relay;

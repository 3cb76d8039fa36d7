-- hookbox schema, version 31: the claim's walk reads each destination with
-- one index descent instead of two, in one statement per stretch of names
-- instead of one per range, and looks for breaker probes only while some
-- breaker's cool-down is over (docs/relay.md, "The claim with many
-- destinations").
--
-- Version 24's walk found the next destination with pending rows by a skip
-- scan (one descent of the pending rows' index per destination), then asked
-- whether it was ready (a due row not leased to another worker) with a
-- second descent of the same index; it walked range by range (128 names
-- each), one statement per range, and as a drain emptied the ranges a claim
-- ran a dozen statements to find its destinations. Then, for the breaker
-- probes, it read each ready destination's row again by its primary key.
-- With 10,000 endpoints carrying two rows each (the tenants benchmark,
-- BENCHMARKS.md) those were the claim's costs that grow with the number of
-- destinations.
--
-- Now:
-- * the skip scan's step reads the destination's first pending row in due
--   order (the same index, `outbox_pending_destination_due`, the same
--   descent), and that row alone decides: not due yet, not ready (no row of
--   it is due); due and free (or the worker's own), ready. Only when it is
--   due but leased to another worker (rows in flight) does the walk probe
--   on past it, as version 24 did for every destination;
-- * one statement walks from the token's range to the last name, and a
--   second from the first name back to the token's range; each ends, as
--   version 24's walk did, with the range in which the claim has found as
--   many ready destinations as it wants (the ranges' first names are passed
--   in), or at 512 destinations walked;
-- * the breaker probes' statement runs only while some breaker's cool-down
--   is over (an index of open breakers answers that with one descent).
-- What a claim takes is unchanged: the same destinations in the same
-- order, the same bound (512 destinations walked), the same walk on past
-- rows a concurrent claim holds (version 28).

CREATE INDEX outbox_destinations_open ON outbox_destinations (open_until)
    WHERE open_until IS NOT NULL;

-- The destinations with pending rows from `p_lo` (inclusive) and after
-- `p_after` (NULL: no such bound) up to `p_hi` (exclusive; NULL: the end),
-- in name order, each with whether it is ready (a due row not leased to
-- another worker): at most `p_max` of them, and once `p_want` are ready,
-- only the rest of that one's range (`p_bounds`: the ranges' first names).
CREATE FUNCTION outbox_claim_walk(p_lo text, p_after text, p_hi text, p_bounds text[],
                                  p_max integer, p_want integer, p_now timestamptz,
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
    -- row 0 holds the start; each step reads the next destination's first
    -- pending row in due order (one descent of outbox_pending_destination_due),
    -- and probes on past it only when it is due but leased to another worker
    WITH RECURSIVE dests(name, ready, n, found, met, bound) AS (
        SELECT CAST(NULL AS text), false, 0, 0, false, CAST(NULL AS text)
        UNION ALL
        SELECT x.destination, r.ready, d.n + 1, d.found + CAST(r.ready AS integer),
               d.met OR d.found + CAST(r.ready AS integer) >= p_want,
               CASE WHEN d.met THEN d.bound
                    WHEN d.found + CAST(r.ready AS integer) >= p_want
                    THEN (SELECT min(b.lo) FROM unnest(p_bounds) AS b(lo)
                           WHERE b.lo > x.destination)
               END
          FROM dests AS d
          CROSS JOIN LATERAL (
              SELECT o.destination, o.next_attempt_at, o.locked_until, o.locked_by
                FROM outbox AS o
               WHERE o.status = 'pending'
                 AND o.destination >= CASE WHEN d.n = 0 THEN p_lo ELSE '' END
                 AND o.destination > coalesce(d.name, p_after, '')
               ORDER BY o.destination, o.next_attempt_at
               LIMIT 1
          ) AS x
          -- (a lateral with LIMIT, not EXISTS: the planner may turn an EXISTS
          -- into one hashed read of every due row, the whole backlog)
          LEFT JOIN LATERAL (
              SELECT true AS free FROM outbox AS o
               WHERE x.next_attempt_at <= p_now
                 AND x.locked_until > p_now AND x.locked_by IS DISTINCT FROM p_worker
                 AND o.destination = x.destination AND o.status = 'pending'
                 AND o.next_attempt_at <= p_now
                 AND (o.locked_until IS NULL OR o.locked_until <= p_now
                      OR o.locked_by = p_worker)
               ORDER BY o.destination, o.next_attempt_at
               LIMIT 1
          ) AS past ON true
          CROSS JOIN LATERAL (
              SELECT x.next_attempt_at <= p_now
                     AND (x.locked_until IS NULL OR x.locked_until <= p_now
                          OR coalesce(x.locked_by = p_worker, false)
                          OR past.free IS NOT NULL) AS ready
          ) AS r
         WHERE d.n < p_max
           AND (d.n = 0 OR ((p_hi IS NULL OR d.name < p_hi)
                            AND (NOT d.met OR d.bound IS NULL OR d.name < d.bound)))
    )
    SELECT d.name, d.ready
      FROM dests AS d
     WHERE d.n > 0 AND (p_hi IS NULL OR d.name < p_hi)
       AND (NOT d.met OR d.bound IS NULL OR d.name < d.bound);
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
    v_from    text;      -- where the token's walk starts: its range's first name
    v_lo      text;      -- the segment walked: from v_lo (after v_after) to v_hi
    v_after   text;
    v_hi      text;
    v_wrapped boolean := false;
    v_done    boolean := false;   -- every name walked once
    v_round   integer := 0;
    v_walked  integer := 0;
    v_part    text[];
    v_seen    integer;
    v_last    text;
    v_ready   text[] := '{}';
    v_probes  text[];
    v_got     bigint;
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
    v_from := v_ranges[(hashtext(p_worker) & 2147483647) % v_count + 1];
    v_lo := v_from;

    LOOP
        v_round := v_round + 1;
        -- walk from the token's first name to the last, then from the first
        -- name to the token's (or, in a later round, on from where the last
        -- round stopped) while fewer destinations are ready than the limit
        v_ready := '{}';
        WHILE NOT v_done AND cardinality(v_ready) < p_limit AND v_walked < c_probes LOOP
            SELECT coalesce(array_agg(w.r_name) FILTER (WHERE w.r_ready), '{}'), count(*),
                   max(w.r_name)
              INTO v_part, v_seen, v_last
              FROM outbox_claim_walk(v_lo, v_after, v_hi, v_ranges, c_probes - v_walked,
                                     CAST(least(p_limit, c_probes) AS integer)
                                         - cardinality(v_ready),
                                     p_now, p_worker) AS w;
            v_ready := v_ready || v_part;
            v_walked := v_walked + v_seen;
            IF cardinality(v_ready) >= p_limit OR v_walked >= c_probes THEN
                v_after := v_last;            -- stopped early: a later round goes on after it
            ELSIF v_wrapped OR v_from = '' THEN
                v_done := true;               -- reached the token's first name again
            ELSE
                v_wrapped := true;            -- reached the last name: on from the first
                v_lo := '';
                v_after := NULL;
                v_hi := v_from;
            END IF;
        END LOOP;
        -- (a first walk that found nothing ready still runs the statements
        -- below, as version 24 did: they are planned at a relay's first claim)
        EXIT WHEN v_round > 1 AND cardinality(v_ready) = 0;

        -- breaker probes: ready destinations of this walk whose cool-down is
        -- over; looked for only while some breaker's is (one descent of the
        -- open breakers' index: with every breaker closed, none per name)
        v_probes := '{}';
        IF EXISTS (SELECT 1 FROM outbox_destinations AS c WHERE c.open_until <= p_now) THEN
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
        END IF;

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
        GET DIAGNOSTICS v_got = ROW_COUNT;
        -- a claim that locked nothing although its walk found ready destinations
        -- (a concurrent claim, walking the same ranges, took their rows after
        -- this walk read them) walks on, to the ranges after, within the same
        -- probe budget: a claim never comes back empty while its budget can
        -- still reach due rows. (Only then: a claim that took rows has spent
        -- part of its byte budget, and its caller claims again.)
        EXIT WHEN v_got > 0 OR cardinality(v_ready) = 0
                  OR v_done OR v_walked >= c_probes;
    END LOOP;
END
$$;

DROP FUNCTION outbox_claim_range(text, text, integer, timestamptz, text);

REVOKE EXECUTE ON FUNCTION outbox_claim_walk(text, text, text, text[], integer, integer, timestamptz,
                                       text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox_claim_walk(text, text, text, text[], integer, integer, timestamptz,
                                       text)
    TO hookbox_relay;

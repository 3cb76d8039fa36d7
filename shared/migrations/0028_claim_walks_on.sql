-- hookbox schema, version 28: a claim that comes back empty only when
-- nothing it may take is due (docs/relay.md, "The claim with many
-- destinations").
--
-- Version 24's claim walked ranges of destinations from the one its token
-- hashes to until it had found `limit` ready destinations (a due row not
-- leased), then locked their rows (FOR UPDATE SKIP LOCKED). Two claims
-- running at once over the same ranges both read those destinations as
-- ready; the second then skips the rows the first locked. With few rows
-- per destination (10,000 endpoints with two due rows each) that left the
-- second claim with nothing while thousands of rows were due elsewhere:
-- a relay lane that finds nothing pauses (`idle`), and a drain's lane ends.
-- In the tenants benchmark (4 lanes, 20,000 rows on 10,000 endpoints) one
-- or two of the four lanes stopped that way in every run, early.
--
-- Now a claim that locked no row although its walk found ready
-- destinations walks on from the range after its last one, within the
-- same bound (512 destinations walked, each range at most once), and
-- locks what it finds there. Everything else is version 24's.

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
    v_step    integer := 0;
    v_got     bigint;
    v_first   integer;   -- ranges the first walk took
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

    LOOP
        -- walk from the token's range (or, in a second round, from where the
        -- first stopped) while fewer destinations are ready than the limit
        v_ready := '{}';
        WHILE v_step < v_count LOOP
            v_i := (v_start + v_step) % v_count;
            v_step := v_step + 1;
            SELECT coalesce(array_agg(w.r_name) FILTER (WHERE w.r_ready), '{}'), count(*)
              INTO v_part, v_seen
              FROM outbox_claim_range(v_ranges[v_i + 1],
                                      CASE WHEN v_i + 1 < v_count THEN v_ranges[v_i + 2] END,
                                      c_probes - v_walked, p_now, p_worker) AS w;
            v_ready := v_ready || v_part;
            v_walked := v_walked + v_seen;
            EXIT WHEN cardinality(v_ready) >= p_limit OR v_walked >= c_probes;
        END LOOP;
        v_first := coalesce(v_first, v_step);
        -- (a first walk that found nothing ready still runs the statements
        -- below, as version 24 did: they are planned at a relay's first claim)
        EXIT WHEN v_step > v_first AND cardinality(v_ready) = 0;

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
        GET DIAGNOSTICS v_got = ROW_COUNT;
        -- a claim that locked nothing although its walk found ready destinations
        -- (a concurrent claim, walking the same ranges, took their rows after
        -- this walk read them) walks on, to the ranges after, within the same
        -- probe budget: a claim never comes back empty while its budget can
        -- still reach due rows. (Only then: a claim that took rows has spent
        -- part of its byte budget, and its caller claims again.)
        EXIT WHEN v_got > 0 OR cardinality(v_ready) = 0
                  OR v_step >= v_count OR v_walked >= c_probes;
    END LOOP;
END
$$;


-- hookbox schema, version 29: one trail from webhook to delivery
-- (docs/operations.md, "Following one webhook").
--
-- Every outbox row written for an inbound webhook records the inbox row it
-- came from: `inbox_id`, and `origin`, a small JSON object naming it for
-- readers that no longer have the inbox row (retention) or do not read it
-- (the relay's log lines): {inbox_id, partner, event_id, received_at,
-- trace_id}. `received_at` is when ingest received the webhook (the relay
-- measures end-to-end latency from it); `trace_id` the X-Ray trace of the
-- webhook's ingest or processing, which the relay's delivery lines name.
--
-- How a row gets them: the columns default to the transaction's
-- `hookbox.origin` setting, which the functions that publish on behalf of
-- an inbound webhook set for the rows they write and restore after:
-- - hookbox_ingest_store (ingest's one statement) for the deliveries it
--   writes, with the new argument p_trace_id;
-- - hookbox_publish_at and hookbox_publish_to_at with a new last argument,
--   p_origin, what the processor passes for every row a route or a
--   business handler writes while it processes an inbox row.
-- The previous signatures stay (a function still running the previous
-- code keeps working during a deploy) and write no origin. Any other
-- insert (hookbox_publish from a business transaction) has none.

ALTER TABLE outbox ADD COLUMN inbox_id uuid, ADD COLUMN origin jsonb;
ALTER TABLE outbox_archive ADD COLUMN inbox_id uuid, ADD COLUMN origin jsonb;

-- The origin a caller gave, checked: NULL, or an object of the five keys
-- (inbox_id required, a uuid; partner, event_id, trace_id strings;
-- received_at a timestamp), at most 2048 bytes as text: every outbox row
-- stays under the Data API's 64 KB.
CREATE FUNCTION public.hookbox_origin_checked(p_origin jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_key text;
BEGIN
    IF p_origin IS NULL OR p_origin = 'null'::jsonb THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(p_origin) <> 'object' THEN
        RAISE EXCEPTION 'hookbox origin: % is not an object', left(p_origin::text, 64)
            USING ERRCODE = '22023';
    END IF;
    FOR v_key IN SELECT jsonb_object_keys(p_origin) LOOP
        IF v_key NOT IN ('inbox_id', 'partner', 'event_id', 'received_at', 'trace_id') THEN
            RAISE EXCEPTION 'hookbox origin: unknown key % (inbox_id, partner, event_id, received_at, trace_id)',
                quote_literal(left(v_key, 64)) USING ERRCODE = '22023';
        END IF;
        IF jsonb_typeof(p_origin -> v_key) <> 'string' THEN
            RAISE EXCEPTION 'hookbox origin: % is not a string', v_key USING ERRCODE = '22023';
        END IF;
    END LOOP;
    IF NOT p_origin ? 'inbox_id'
       OR (p_origin ->> 'inbox_id') !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN
        RAISE EXCEPTION 'hookbox origin: inbox_id % is not a uuid',
            quote_nullable(left(p_origin ->> 'inbox_id', 64)) USING ERRCODE = '22023';
    END IF;
    IF octet_length(p_origin::text) > 2048 THEN
        RAISE EXCEPTION 'hookbox origin: % bytes, over the 2048-byte limit', octet_length(p_origin::text)
            USING ERRCODE = '22001';
    END IF;
    RETURN p_origin;
END
$$;

-- The transaction's origin (hookbox.origin), checked; NULL when unset.
-- Every outbox insert evaluates it (the columns' defaults), so it is an
-- expression PostgreSQL inlines: no FROM, no SET clause (every name is
-- qualified), and only a set origin calls the check.
CREATE FUNCTION public.hookbox_origin() RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN COALESCE(pg_catalog.current_setting('hookbox.origin', true), '') = ''
                THEN NULL
                ELSE public.hookbox_origin_checked(
                    CAST(pg_catalog.current_setting('hookbox.origin', true) AS jsonb)) END
$$;

-- Set after the columns exist, so rows already there stay NULL (no rewrite).
ALTER TABLE outbox ALTER COLUMN origin SET DEFAULT public.hookbox_origin();
ALTER TABLE outbox ALTER COLUMN inbox_id SET DEFAULT CAST(public.hookbox_origin() ->> 'inbox_id' AS uuid);

-- `hookbox inbox show`: an event's deliveries.
CREATE INDEX outbox_by_inbox_id ON outbox (inbox_id) WHERE inbox_id IS NOT NULL;
CREATE INDEX outbox_archive_by_inbox_id ON outbox_archive (inbox_id) WHERE inbox_id IS NOT NULL;

-- The claim of version 28, counting a row's origin in the bytes it adds
-- to the claim's answer (the Data API's 1 MiB).
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
                         + coalesce(octet_length(CAST(o.origin AS text)), 0)
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

-- The relay's notices to the alarm topic (hookbox::outbox::relay::notices):
-- when each (destination, kind) was last noticed, for which episode (a
-- trip's failing_since, a disablement's disabled_at), and the dead
-- deliveries held back since. Shared by every relay: one notice per
-- episode, at most one dead-delivery notice per interval.
CREATE TABLE hookbox_notices (
    destination text        NOT NULL,
    kind        text        NOT NULL CHECK (kind IN ('tripped', 'disabled', 'dead')),
    episode     timestamptz,
    sent_at     timestamptz NOT NULL,
    held_back   bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (destination, kind)
);
GRANT SELECT, INSERT, UPDATE ON hookbox_notices TO hookbox_relay;

-- hookbox_publish_at of version 20 writing rows with p_origin (the
-- processor passes the inbox row it processes).
CREATE FUNCTION public.hookbox_publish_at(
    p_event_type     text,
    p_payload        jsonb,
    p_aggregate_type text,
    p_aggregate_id   text,
    p_destination    text,
    p_now            timestamptz,
    p_payload_key    text,
    p_payload_size   bigint,
    p_payload_sha256 bytea,
    p_origin         jsonb
) RETURNS SETOF uuid
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_previous text := pg_catalog.current_setting('hookbox.origin', true);
BEGIN
    IF p_origin IS NULL THEN
        RETURN QUERY SELECT p.id FROM public.hookbox_publish_at(
            p_event_type, p_payload, p_aggregate_type, p_aggregate_id, p_destination, p_now,
            p_payload_key, p_payload_size, p_payload_sha256) AS p(id);
        RETURN;
    END IF;
    PERFORM pg_catalog.set_config('hookbox.origin',
        COALESCE(public.hookbox_origin_checked(p_origin)::text, ''), true);
    RETURN QUERY SELECT p.id FROM public.hookbox_publish_at(
        p_event_type, p_payload, p_aggregate_type, p_aggregate_id, p_destination, p_now,
        p_payload_key, p_payload_size, p_payload_sha256) AS p(id);
    PERFORM pg_catalog.set_config('hookbox.origin', COALESCE(v_previous, ''), true);
END
$$;

-- hookbox_publish_to_at of version 22 writing rows with p_origin.
CREATE FUNCTION public.hookbox_publish_to_at(
    p_tenant         text,
    p_event_type     text,
    p_payload        jsonb,
    p_aggregate_type text,
    p_aggregate_id   text,
    p_channels       text[],
    p_now            timestamptz,
    p_origin         jsonb
) RETURNS TABLE (id uuid, endpoint_id text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_previous text := pg_catalog.current_setting('hookbox.origin', true);
BEGIN
    IF p_origin IS NULL THEN
        RETURN QUERY SELECT p.id, p.endpoint_id FROM public.hookbox_publish_to_at(
            p_tenant, p_event_type, p_payload, p_aggregate_type, p_aggregate_id, p_channels,
            p_now) AS p;
        RETURN;
    END IF;
    PERFORM pg_catalog.set_config('hookbox.origin',
        COALESCE(public.hookbox_origin_checked(p_origin)::text, ''), true);
    RETURN QUERY SELECT p.id, p.endpoint_id FROM public.hookbox_publish_to_at(
        p_tenant, p_event_type, p_payload, p_aggregate_type, p_aggregate_id, p_channels,
        p_now) AS p;
    PERFORM pg_catalog.set_config('hookbox.origin', COALESCE(v_previous, ''), true);
END
$$;

-- hookbox_ingest_store of version 19, its deliveries naming the row they
-- came from and the trace of the ingest that stored it (p_trace_id).
CREATE FUNCTION public.hookbox_ingest_store(
    p_id                 uuid,
    p_partner            text,
    p_event_id           text,
    p_event_id_derived   boolean,
    p_event_type         text,
    p_ordering_key       text,
    p_body               bytea,
    p_dedupe_digest      bytea,
    p_headers            jsonb,
    p_signature_verified boolean,
    p_now                timestamptz,
    p_status             text,
    p_last_error         text,
    p_destinations       text[],
    p_trace_id           text
) RETURNS TABLE (stored_id uuid, inserted boolean, stored_status text, deliveries bigint,
                 refusal text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_due timestamptz := LEAST(p_now, pg_catalog.now());
    v_event_type text := COALESCE(NULLIF(p_event_type, ''), 'untyped');
    v_aggregate_type text := 'partner:' || p_partner;
    v_aggregate_id text := COALESCE(NULLIF(p_ordering_key, ''), p_event_id);
    v_destinations text[] := COALESCE(p_destinations, '{}'::text[]);
    v_payload jsonb;
    v_refusal text;
    v_check record;
    v_waits boolean;
    v_status text;
    v_id uuid;
    v_count bigint := 0;
    v_destination text;
    v_previous text;
BEGIN
    IF p_status NOT IN ('processed', 'quarantined') THEN
        RAISE EXCEPTION 'hookbox_ingest_store: status % is neither processed nor quarantined',
            p_status USING ERRCODE = '22023';
    END IF;
    IF p_status = 'quarantined' AND cardinality(v_destinations) > 0 THEN
        RAISE EXCEPTION 'hookbox_ingest_store: a quarantined event has no deliveries'
            USING ERRCODE = '22023';
    END IF;
    IF cardinality(v_destinations) > 0 THEN
        SELECT format('destination %s is not named by a route of partner %s (as the relay last synced the configuration)',
                      d.name, p_partner)
          INTO v_refusal
          FROM pg_catalog.unnest(v_destinations) AS d(name)
         WHERE NOT EXISTS (SELECT 1 FROM public.outbox_destinations AS o
                            WHERE o.name = d.name AND p_partner = ANY (o.routed_from))
         LIMIT 1;
        IF v_refusal IS NULL THEN
            BEGIN
                v_payload := pg_catalog.convert_from(p_body, 'UTF8')::jsonb;
            EXCEPTION
                WHEN invalid_text_representation OR untranslatable_character
                     OR character_not_in_repertoire OR numeric_value_out_of_range
                     OR program_limit_exceeded OR statement_too_complex
                     OR invalid_parameter_value THEN
                    v_refusal := 'the body is not JSON an outbox row can hold: ' || SQLERRM;
            END;
        END IF;
        IF v_refusal IS NULL THEN
            SELECT * INTO v_check FROM public.hookbox_publish_refusal(
                v_event_type, v_payload, v_aggregate_type, v_aggregate_id, NULL::text,
                NULL::text, NULL::bigint);
            v_refusal := v_check.refusal;
        END IF;
    END IF;

    v_waits := p_ordering_key IS NOT NULL AND EXISTS (
        SELECT 1 FROM public.inbox AS i
         WHERE i.partner = p_partner AND i.ordering_key = p_ordering_key
           AND i.status IN ('pending', 'processing', 'deferred'));
    v_status := CASE WHEN v_waits OR v_refusal IS NOT NULL THEN 'pending' ELSE p_status END;

    INSERT INTO public.inbox AS i (id, partner, event_id, event_id_derived, event_type,
                                   ordering_key, body, body_key, body_size, body_sha256,
                                   dedupe_digest, headers, signature_verified, status,
                                   next_attempt_at, received_at, enqueued_at, last_error,
                                   processed_at)
    VALUES (p_id, p_partner, p_event_id, p_event_id_derived, p_event_type, p_ordering_key,
            p_body, NULL, NULL, NULL, p_dedupe_digest, p_headers, p_signature_verified,
            v_status,
            CASE WHEN v_status = 'pending' THEN p_now END,
            p_now,
            CASE WHEN v_status = 'pending' THEN p_now END,
            CASE WHEN v_status = 'pending' THEN NULL ELSE p_last_error END,
            CASE WHEN v_status = 'pending' THEN NULL ELSE p_now END)
    -- any unique key: (partner, event_id), or (partner, dedupe_digest)
    ON CONFLICT DO NOTHING
    RETURNING i.id INTO v_id;

    IF v_id IS NULL THEN
        -- the stored duplicate, as in inbox.insert_if_new
        RETURN QUERY
            SELECT i.id, false, i.status, 0::bigint, NULL::text FROM public.inbox AS i
             WHERE i.partner = p_partner AND i.event_id = p_event_id
            UNION ALL
            SELECT i.id, false, i.status, 0::bigint, NULL::text FROM public.inbox AS i
             WHERE i.partner = p_partner AND i.dedupe_digest = p_dedupe_digest
               AND i.event_id <> p_event_id
             LIMIT 1;
        RETURN;
    END IF;

    IF v_status = 'processed' THEN
        -- the trail: every delivery names this row (hookbox_origin)
        v_previous := pg_catalog.current_setting('hookbox.origin', true);
        PERFORM pg_catalog.set_config('hookbox.origin', public.hookbox_origin_checked(
            pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                'inbox_id', v_id, 'partner', p_partner, 'event_id', p_event_id,
                'received_at', p_now, 'trace_id', p_trace_id)))::text, true);
        FOREACH v_destination IN ARRAY v_destinations LOOP
            PERFORM public.hookbox_publish_at(v_event_type, v_payload, v_aggregate_type,
                                              v_aggregate_id, v_destination, v_due,
                                              NULL::text, NULL::bigint, NULL::bytea);
            v_count := v_count + 1;
        END LOOP;
        PERFORM pg_catalog.set_config('hookbox.origin', COALESCE(v_previous, ''), true);
    END IF;
    RETURN QUERY SELECT v_id, true, v_status, v_count, v_refusal;
END
$$;

-- Version 19's signature, for a function still running the previous code.
CREATE OR REPLACE FUNCTION public.hookbox_ingest_store(
    p_id                 uuid,
    p_partner            text,
    p_event_id           text,
    p_event_id_derived   boolean,
    p_event_type         text,
    p_ordering_key       text,
    p_body               bytea,
    p_dedupe_digest      bytea,
    p_headers            jsonb,
    p_signature_verified boolean,
    p_now                timestamptz,
    p_status             text,
    p_last_error         text,
    p_destinations       text[]
) RETURNS TABLE (stored_id uuid, inserted boolean, stored_status text, deliveries bigint,
                 refusal text)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT * FROM public.hookbox_ingest_store(
        p_id, p_partner, p_event_id, p_event_id_derived, p_event_type, p_ordering_key, p_body,
        p_dedupe_digest, p_headers, p_signature_verified, p_now, p_status, p_last_error,
        p_destinations, NULL::text)
$$;

REVOKE EXECUTE ON FUNCTION public.hookbox_publish_at(text, jsonb, text, text, text, timestamptz, text, bigint, bytea, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.hookbox_publish_at(text, jsonb, text, text, text, timestamptz, text, bigint, bytea, jsonb)
    TO hookbox_processor;
REVOKE EXECUTE ON FUNCTION public.hookbox_publish_to_at(text, text, jsonb, text, text, text[], timestamptz, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.hookbox_publish_to_at(text, text, jsonb, text, text, text[], timestamptz, jsonb)
    TO hookbox_processor;
REVOKE EXECUTE ON FUNCTION public.hookbox_ingest_store(uuid, text, text, boolean, text, text, bytea, bytea, jsonb, boolean, timestamptz, text, text, text[], text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.hookbox_ingest_store(uuid, text, text, boolean, text, text, bytea, bytea, jsonb, boolean, timestamptz, text, text, text[], text)
    TO hookbox_ingest;

-- hookbox schema, version 19: forwarding hardened (docs/forwarding.md,
-- "What ingest's role can do").
--
-- 1. One definition of what an outbox row may hold:
--    hookbox_publish_refusal, called by hookbox_publish_at (which raises
--    it) and by ingest's function (which leaves the event to the processor
--    instead: a verified webhook is never answered 5xx for what its body
--    holds). Whether an event waits behind an earlier one of its key is
--    now an explicit step of that function, not the join order of a
--    statement. (Migration 18's comment counts spooled events among those
--    it waits behind: a spooled event is not in the inbox until the
--    processor stores it, so it holds nothing up.)
-- 2. Ingest's role loses hookbox_publish_at (any event type, aggregate,
--    destination, blob key or due time) and gains hookbox_ingest_store: it
--    stores the inbox row AND writes that row's deliveries, derived from the
--    row itself: the payload is the stored body, the aggregate is
--    `partner:<partner>` with the ordering key (else the event id), each
--    destination one the partner's routes name (as the relay last synced
--    them: outbox_destinations.routed_from), due now, inline.
-- 3. No overload hijack: every call inside a SECURITY DEFINER function is
--    schema-qualified with typed arguments, and PUBLIC loses CREATE on
--    schema public where the migrations own it (PostgreSQL 13 and 14 grant
--    it by default).

-- Which partners' routes name each destination (the relay syncs it with the
-- rest of the destination: hookbox::outbox::destinations::sync).
ALTER TABLE outbox_destinations ADD COLUMN routed_from text[] NOT NULL DEFAULT '{}';

-- PostgreSQL 13 and 14 let every role CREATE in schema public: a role that
-- can add a better-matching overload of a function called with untyped
-- arguments runs its own code as the caller. Revoked where the migrations
-- own the schema (elsewhere the owner must do it; the qualified, typed
-- calls below are safe either way).
DO $$
BEGIN
    IF pg_catalog.pg_has_role(current_user,
                              (SELECT n.nspowner FROM pg_catalog.pg_namespace AS n
                                WHERE n.nspname = 'public'),
                              'USAGE') THEN
        REVOKE CREATE ON SCHEMA public FROM PUBLIC;
    END IF;
END
$$;

-- Why an outbox row could not hold this event (NULL when it can), with the
-- SQLSTATE hookbox_publish_at raises it under, and the payload's size
-- (bytes of its JSON text as the row keeps it, or the stored blob's size).
-- The only definition of these limits: hookbox_publish_at raises what it
-- returns; ingest's function leaves such an event to the processor.
CREATE FUNCTION public.hookbox_publish_refusal(
    p_event_type     text,
    p_payload        jsonb,
    p_aggregate_type text,
    p_aggregate_id   text,
    p_destination    text,
    p_payload_key    text,
    p_payload_size   bigint,
    OUT refusal_code text,
    OUT refusal      text,
    OUT payload_size bigint
)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    refusal_code := '22023';
    IF p_event_type IS NULL OR p_event_type = '' THEN
        refusal := 'hookbox_publish: event_type is required';
        RETURN;
    END IF;
    IF p_aggregate_type IS NULL OR p_aggregate_type = '' THEN
        refusal := 'hookbox_publish: aggregate_type is required';
        RETURN;
    END IF;
    IF p_aggregate_id IS NULL OR p_aggregate_id = '' THEN
        refusal := 'hookbox_publish: aggregate_id is required';
        RETURN;
    END IF;
    refusal_code := '22001';
    IF octet_length(p_event_type) > 256 THEN
        refusal := format('hookbox_publish: event_type is %s bytes, over the 256-byte limit',
                          octet_length(p_event_type));
        RETURN;
    END IF;
    IF octet_length(p_aggregate_type) > 128 THEN
        refusal := format('hookbox_publish: aggregate_type is %s bytes, over the 128-byte limit',
                          octet_length(p_aggregate_type));
        RETURN;
    END IF;
    IF octet_length(p_aggregate_id) > 512 THEN
        refusal := format('hookbox_publish: aggregate_id is %s bytes, over the 512-byte limit',
                          octet_length(p_aggregate_id));
        RETURN;
    END IF;
    refusal_code := '22023';
    IF p_destination = '' THEN
        refusal := 'hookbox_publish: destination is empty (NULL publishes to the subscribers)';
        RETURN;
    END IF;
    IF p_payload_key IS NULL THEN
        IF p_payload IS NULL THEN
            refusal := 'hookbox_publish: payload is required (JSON null is ''null''::jsonb)';
            RETURN;
        END IF;
        -- measured as the row keeps it: jsonb writes numbers out in full
        -- (1e300 is 301 digits) and puts a space after every ':' and ','
        payload_size := octet_length(p_payload::text);
        IF payload_size > 262144 THEN
            refusal_code := '22001';
            refusal := format('hookbox_publish: the payload is %s bytes of JSON, over the 262144-byte limit of a payload kept in its row (the Rust API puts larger ones in the blob store)',
                              payload_size);
        END IF;
    ELSE
        -- a filter cannot look into a payload in the blob store
        IF p_destination IS NULL THEN
            refusal := 'hookbox_publish: a payload stored by reference needs a destination';
            RETURN;
        END IF;
        payload_size := p_payload_size;
    END IF;
    IF refusal IS NULL THEN
        refusal_code := NULL;
    END IF;
END
$$;

-- hookbox_publish_at of version 11, its limits now hookbox_publish_refusal's
-- and every call qualified and typed.
CREATE OR REPLACE FUNCTION public.hookbox_publish_at(
    p_event_type     text,
    p_payload        jsonb,
    p_aggregate_type text,
    p_aggregate_id   text,
    p_destination    text,
    p_now            timestamptz,
    p_payload_key    text,
    p_payload_size   bigint,
    p_payload_sha256 bytea
) RETURNS SETOF uuid
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_check record;
    v_destination text;
    v_id uuid;
BEGIN
    SELECT * INTO v_check FROM public.hookbox_publish_refusal(
        p_event_type, p_payload, p_aggregate_type, p_aggregate_id, p_destination,
        p_payload_key, p_payload_size);
    IF v_check.refusal IS NOT NULL THEN
        RAISE EXCEPTION USING MESSAGE = v_check.refusal, ERRCODE = v_check.refusal_code;
    END IF;

    FOR v_destination IN
        SELECT p_destination WHERE p_destination IS NOT NULL
        UNION ALL
        SELECT d.name FROM public.outbox_destinations AS d
         WHERE p_destination IS NULL
           AND p_event_type LIKE ANY (d.event_like)
           AND NOT EXISTS (
               SELECT 1 FROM jsonb_array_elements(d.filters) AS f
                WHERE p_payload IS NULL
                   OR (p_payload #> ARRAY(SELECT jsonb_array_elements_text(f -> 'path')))
                      IS DISTINCT FROM (f -> 'equals'))
        ORDER BY 1
    LOOP
        v_id := public.hookbox_uuid_v7();
        INSERT INTO public.outbox (id, aggregate_type, aggregate_id, event_type, destination,
                                   payload, payload_key, payload_size, payload_sha256,
                                   status, next_attempt_at, created_at)
        VALUES (v_id, p_aggregate_type, p_aggregate_id, p_event_type, v_destination,
                CASE WHEN p_payload_key IS NULL THEN p_payload END,
                p_payload_key, v_check.payload_size, p_payload_sha256,
                'pending', p_now, p_now);
        RETURN NEXT v_id;
    END LOOP;
    RETURN;
END
$$;

CREATE OR REPLACE FUNCTION public.hookbox_publish(
    p_event_type     text,
    p_payload        jsonb,
    p_aggregate_type text,
    p_aggregate_id   text,
    p_destination    text DEFAULT NULL
) RETURNS SETOF uuid
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT public.hookbox_publish_at(p_event_type, p_payload, p_aggregate_type, p_aggregate_id,
                                     p_destination, pg_catalog.now(), NULL::text,
                                     NULL::bigint, NULL::bytea)
$$;

-- Ingest's one statement for an event it finishes itself (forwarding at
-- ingest, hookbox::inbox::routed): stores the inbox row unless (partner,
-- event_id) or (partner, dedupe_digest) is already stored, and, only when
-- it inserted it `processed`, writes one outbox row per destination.
--
-- `p_status` is what ingest would finish the row as (`processed`, or
-- `quarantined` with `p_last_error`: the partner's unrouted policy). The
-- row is stored `pending` instead, with no delivery, for the processor
-- (the caller enqueues it) when:
-- - an earlier event of its partner and ordering key is still active
--   (received order per key, docs/forwarding.md "Order"), or
-- - its deliveries would be refused (`refusal` says why): a destination no
--   route of the partner names (as last synced), a body jsonb cannot hold,
--   or what hookbox_publish_refusal refuses.
-- Everything a delivery holds comes from the row: the payload is the
-- stored body, the event type the row's (else `untyped`), the aggregate
-- `partner:<partner>` and the ordering key (else the event id), due at
-- p_now but never later than the database's clock.
--
-- Returns one row: the stored row's id, whether this call inserted it, its
-- status, the deliveries written and the refusal; none when a concurrent
-- insert of the same key is not visible yet (the caller looks it up).
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
    p_destinations       text[]
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
        FOREACH v_destination IN ARRAY v_destinations LOOP
            PERFORM public.hookbox_publish_at(v_event_type, v_payload, v_aggregate_type,
                                              v_aggregate_id, v_destination, v_due,
                                              NULL::text, NULL::bigint, NULL::bytea);
            v_count := v_count + 1;
        END LOOP;
    END IF;
    RETURN QUERY SELECT v_id, true, v_status, v_count, v_refusal;
END
$$;

REVOKE EXECUTE ON FUNCTION public.hookbox_publish_refusal(text, jsonb, text, text, text, text, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION public.hookbox_ingest_store(uuid, text, text, boolean, text, text, bytea, bytea, jsonb, boolean, timestamptz, text, text, text[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION public.hookbox_publish_at(text, jsonb, text, text, text, timestamptz, text, bigint, bytea)
    FROM hookbox_ingest;
GRANT EXECUTE ON FUNCTION public.hookbox_ingest_store(uuid, text, text, boolean, text, text, bytea, bytea, jsonb, boolean, timestamptz, text, text, text[])
    TO hookbox_ingest;

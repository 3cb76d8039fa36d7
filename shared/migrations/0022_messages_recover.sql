-- hookbox schema, version 22: messages, their attempts, and recovering an
-- endpoint (docs/tenants.md, "Messages and attempts" and "Recover").
--
-- A message is what a SaaS publishes to one tenant (Svix's message): its
-- id (`msg_…`), event type, payload, channels and, optionally, the caller's
-- own id for it (`event_id`, Svix's eventId: unique per tenant, a repeated
-- one answers the message already recorded and publishes nothing). Each
-- delivery (outbox row) of it names it (`outbox.message_id`). A publish
-- records its message even when no endpoint matches (no delivery).
--
-- Lifetime: a message is deleted with its tenant, and by the outbox's
-- retention with its last delivery (a trigger on outbox deletes, which
-- fires only for rows that name a message: a configured destination's
-- delivery pays nothing). A message left without deliveries (none
-- matched, or they were deleted undelivered with their endpoint) is
-- deleted when retention deletes a younger tenant delivery.

CREATE TABLE hookbox_messages (
    id           text        PRIMARY KEY CHECK (id ~ '^msg_[0-9a-f]{32}$'),
    tenant_id    text        NOT NULL REFERENCES hookbox_tenants (id) ON DELETE CASCADE,
    event_type   text        NOT NULL,
    -- the caller's own id (Svix's eventId): one message per tenant
    event_id     text        CHECK (event_id ~ '^[A-Za-z0-9._:-]+$' AND octet_length(event_id) <= 256),
    payload      jsonb       NOT NULL,
    -- its JSON text's bytes as jsonb writes it out
    payload_size bigint      NOT NULL,
    channels     text[],
    -- deliveries written when it was published
    deliveries   integer     NOT NULL CHECK (deliveries >= 0),
    -- no outbox row names it (none was written, or they were all deleted
    -- undelivered): retention finds it by this
    childless    boolean     NOT NULL,
    created_at   timestamptz NOT NULL,
    UNIQUE (tenant_id, event_id)
);
CREATE INDEX hookbox_messages_tenant ON hookbox_messages (tenant_id, id);
CREATE INDEX hookbox_messages_childless ON hookbox_messages (created_at) WHERE childless;

-- Each delivery names its message. Only tenants' deliveries have one, so
-- the index is partial: a configured destination's row, and its
-- delivery's new row version, get no entry. (The archive has the outbox's
-- columns in its order: retention archives with SELECT *.)
ALTER TABLE outbox ADD COLUMN message_id text;
ALTER TABLE outbox_archive ADD COLUMN message_id text;
CREATE INDEX outbox_message ON outbox (message_id) WHERE message_id IS NOT NULL;

GRANT SELECT ON hookbox_messages TO hookbox_management;

-- When the last outbox row naming a message is deleted: by retention (a
-- delivered row) the message goes too, and so do up to 100 childless
-- messages older than that row (they are past the retention as well); by
-- anything else (an endpoint or tenant deleted with undelivered rows) it
-- stays, childless, until retention or its tenant's deletion.
CREATE FUNCTION public.hookbox_message_forget() RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM public.outbox AS o WHERE o.message_id = OLD.message_id) THEN
        RETURN NULL;
    END IF;
    IF OLD.status = 'delivered' THEN
        DELETE FROM public.hookbox_messages AS m WHERE m.id = OLD.message_id;
        DELETE FROM public.hookbox_messages AS m
         WHERE m.id = ANY (ARRAY(SELECT x.id FROM public.hookbox_messages AS x
                                  WHERE x.childless AND x.created_at < OLD.created_at
                                  ORDER BY x.created_at LIMIT 100));
    ELSE
        UPDATE public.hookbox_messages AS m SET childless = true
         WHERE m.id = OLD.message_id AND NOT m.childless;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER outbox_message_forget
    AFTER DELETE ON outbox
    FOR EACH ROW WHEN (OLD.message_id IS NOT NULL)
    EXECUTE FUNCTION public.hookbox_message_forget();

-- ------------------------------------------------------------- publishing

-- The one writer of a message and its deliveries (hookbox_publish_to_at and
-- hookbox_message_create call it; p_fn names the caller in refusals):
-- records the message, then writes one outbox row per matching endpoint of
-- the tenant (as version 20's hookbox_publish_to_at did), each naming it.
-- With p_event_id already recorded for the tenant: that message, marked
-- duplicate, and nothing written.
CREATE FUNCTION public.hookbox_message_write(
    p_fn             text,
    p_tenant         text,
    p_event_type     text,
    p_payload        jsonb,
    p_aggregate_type text,
    p_aggregate_id   text,
    p_channels       text[],
    p_event_id       text,
    p_now            timestamptz,
    OUT message      public.hookbox_messages,
    OUT duplicate    boolean,
    OUT ids          uuid[],
    OUT endpoints    text[]
)
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_tenant text;
    v_check record;
    v_channels text[] := CASE WHEN cardinality(p_channels) > 0 THEN p_channels END;
BEGIN
    IF p_tenant IS NULL OR p_tenant = '' THEN
        RAISE EXCEPTION '%: tenant is required', p_fn USING ERRCODE = '22023';
    END IF;
    v_tenant := public.hookbox_tenant_id(p_tenant);
    IF v_tenant IS NULL THEN
        RAISE EXCEPTION '%: no tenant %', p_fn, pg_catalog.quote_literal(p_tenant)
            USING ERRCODE = 'P0002';
    END IF;
    IF (p_aggregate_type IS NULL) <> (p_aggregate_id IS NULL) THEN
        RAISE EXCEPTION '%: aggregate_type and aggregate_id go together (both, or neither)', p_fn
            USING ERRCODE = '22023';
    END IF;
    IF p_event_id IS NOT NULL AND (p_event_id !~ '^[A-Za-z0-9._:-]+$' OR octet_length(p_event_id) > 256) THEN
        RAISE EXCEPTION '%: event_id % must be 1 to 256 letters, digits, ''.'', '':'', ''-'' or ''_''',
            p_fn, pg_catalog.quote_literal(pg_catalog.left(p_event_id, 300)) USING ERRCODE = '22023';
    END IF;
    message.id := public.hookbox_new_id('msg');
    SELECT * INTO v_check FROM public.hookbox_publish_refusal(
        p_event_type, p_payload, coalesce(p_aggregate_type, 'message'),
        coalesce(p_aggregate_id, message.id), NULL::text, NULL::text, NULL::bigint);
    IF v_check.refusal IS NOT NULL THEN
        RAISE EXCEPTION USING MESSAGE = pg_catalog.replace(v_check.refusal, 'hookbox_publish:',
                                                           p_fn || ':'),
                              ERRCODE = v_check.refusal_code;
    END IF;

    endpoints := ARRAY(
        SELECT d.name
          FROM public.outbox_destinations AS d
          JOIN public.hookbox_endpoints AS e ON e.id = d.name
         WHERE d.tenant_id = v_tenant
           AND p_event_type LIKE ANY (d.event_like)
           AND (e.channels IS NULL OR e.channels && coalesce(v_channels, '{}'))
         ORDER BY d.name);
    message.tenant_id := v_tenant;
    message.event_type := p_event_type;
    message.event_id := p_event_id;
    message.payload := p_payload;
    message.payload_size := v_check.payload_size;
    message.channels := v_channels;
    message.deliveries := cardinality(endpoints);
    message.childless := cardinality(endpoints) = 0;
    message.created_at := p_now;
    INSERT INTO public.hookbox_messages AS m VALUES (message.*)
        ON CONFLICT (tenant_id, event_id) DO NOTHING;
    IF NOT FOUND THEN
        -- the caller's event_id again: what was recorded the first time
        SELECT * INTO message FROM public.hookbox_messages AS m
         WHERE m.tenant_id = v_tenant AND m.event_id = p_event_id;
        duplicate := true;
        ids := '{}';
        endpoints := '{}';
        RETURN;
    END IF;
    duplicate := false;
    ids := ARRAY(SELECT public.hookbox_uuid_v7() FROM pg_catalog.unnest(endpoints));
    INSERT INTO public.outbox (id, aggregate_type, aggregate_id, event_type, destination,
                               payload, payload_size, status, next_attempt_at, created_at,
                               message_id)
    SELECT r.id, coalesce(p_aggregate_type, 'message'), coalesce(p_aggregate_id, message.id),
           p_event_type, r.endpoint, p_payload, v_check.payload_size, 'pending', p_now, p_now,
           message.id
      FROM unnest(ids, endpoints) AS r(id, endpoint);
END
$$;

-- Version 20's, recording the message: one statement still publishes (the
-- message and its deliveries), and answers each delivery's id and endpoint.
CREATE OR REPLACE FUNCTION public.hookbox_publish_to_at(
    p_tenant         text,
    p_event_type     text,
    p_payload        jsonb,
    p_aggregate_type text,
    p_aggregate_id   text,
    p_channels       text[],
    p_now            timestamptz
) RETURNS TABLE (id uuid, endpoint_id text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    RETURN QUERY
    SELECT r.id, r.endpoint
      FROM public.hookbox_message_write('hookbox_publish_to', p_tenant, p_event_type, p_payload,
                                        p_aggregate_type, p_aggregate_id, p_channels, NULL,
                                        p_now) AS w
     CROSS JOIN LATERAL unnest(w.ids, w.endpoints) AS r(id, endpoint);
END
$$;

-- ---------------------------------------------------------------- messages

-- A message as the functions answer it. The payload only up to
-- p_payload_max bytes (rows stay under the Data API's 64 KB): a larger one
-- is null, with payload_omitted (hookbox_message_payload reads it in
-- pieces).
CREATE FUNCTION public.hookbox_message_doc(m public.hookbox_messages, p_payload_max bigint)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT pg_catalog.jsonb_build_object(
        'id', m.id, 'tenant_id', m.tenant_id, 'event_type', m.event_type,
        'event_id', m.event_id,
        'payload', CASE WHEN m.payload_size <= p_payload_max THEN m.payload END,
        'payload_size', m.payload_size,
        'payload_omitted', m.payload_size > p_payload_max,
        'channels', m.channels, 'deliveries', m.deliveries, 'created_at', m.created_at)
$$;

-- The message p_message names among p_tenant's (NULL when none).
CREATE FUNCTION public.hookbox_message_find(p_fn text, p_tenant text, p_message text)
RETURNS public.hookbox_messages
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_tenant text := public.hookbox_tenant_id(p_tenant);
    v public.hookbox_messages;
BEGIN
    IF v_tenant IS NULL THEN
        RAISE EXCEPTION '%: no tenant %', p_fn, pg_catalog.quote_nullable(p_tenant)
            USING ERRCODE = 'P0002';
    END IF;
    -- its id, or the caller's event_id
    SELECT * INTO v FROM public.hookbox_messages AS m
     WHERE m.tenant_id = v_tenant AND (m.id = p_message OR m.event_id = p_message)
     ORDER BY m.id = p_message DESC LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: tenant % has no message %', p_fn, pg_catalog.quote_literal(v_tenant),
            pg_catalog.quote_nullable(p_message) USING ERRCODE = 'P0002';
    END IF;
    RETURN v;
END
$$;

-- Publishes p_spec to p_tenant's matching endpoints, due now: event_type
-- and payload (required), event_id (the caller's own id: a repeated one
-- answers the message recorded with it, `duplicate`, and publishes
-- nothing), channels. Answers the message and `deliveries` (written). The
-- actor is checked as by the other functions; a message is traffic, not a
-- change, so the audit trail does not record it.
CREATE FUNCTION public.hookbox_message_create(p_tenant text, p_spec jsonb,
                                              p_actor jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_message_create';
    v_type text;
    v_written record;
BEGIN
    PERFORM public.hookbox_actor(p_actor);
    PERFORM public.hookbox_check_keys(c_fn, p_spec, ARRAY['event_type', 'payload', 'event_id', 'channels']);
    v_type := public.hookbox_field_text(c_fn, p_spec, 'event_type');
    IF v_type IS NULL THEN
        RAISE EXCEPTION '%: event_type is required', c_fn USING ERRCODE = '22023';
    END IF;
    IF NOT p_spec ? 'payload' THEN
        RAISE EXCEPTION '%: payload is required (any JSON)', c_fn USING ERRCODE = '22023';
    END IF;
    SELECT * INTO v_written FROM public.hookbox_message_write(
        c_fn, p_tenant, v_type, p_spec -> 'payload', NULL, NULL,
        public.hookbox_field_list(c_fn, p_spec, 'channels', 64, '^[A-Za-z0-9_.:-]{1,128}$',
            'a channel (1 to 128 letters, digits, ''_'', ''.'', '':'' or ''-'')'),
        public.hookbox_field_text(c_fn, p_spec, 'event_id'), pg_catalog.now());
    RETURN public.hookbox_message_doc(v_written.message, 32768)
        || pg_catalog.jsonb_build_object('duplicate', v_written.duplicate,
                                         'written', cardinality(v_written.ids));
END
$$;

-- A message of p_tenant, by its id or its event_id; the payload up to 32
-- KiB (a larger one: hookbox_message_payload).
CREATE FUNCTION public.hookbox_message_get(p_tenant text, p_message text) RETURNS jsonb
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT public.hookbox_message_doc(
        public.hookbox_message_find('hookbox_message_get', p_tenant, p_message), 32768)
$$;

-- A piece of a message's payload as JSON text: p_len characters from
-- p_from (1 for the first), and the text's size in bytes.
CREATE FUNCTION public.hookbox_message_payload(p_tenant text, p_message text, p_from integer,
                                               p_len integer)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v public.hookbox_messages := public.hookbox_message_find('hookbox_message_payload', p_tenant,
                                                             p_message);
    v_text text := CAST(v.payload AS text);
BEGIN
    IF p_from IS NULL OR p_from < 1 OR p_len IS NULL OR p_len NOT BETWEEN 1 AND 16384 THEN
        RAISE EXCEPTION 'hookbox_message_payload: from must be 1 or more and len 1 to 16384, not % and %',
            coalesce(CAST(p_from AS text), 'NULL'), coalesce(CAST(p_len AS text), 'NULL')
            USING ERRCODE = '22023';
    END IF;
    RETURN pg_catalog.jsonb_build_object('id', v.id, 'size', octet_length(v_text),
                                         'chunk', substring(v_text FROM p_from FOR p_len));
END
$$;

-- A page of p_tenant's messages in id order (creation order) after
-- p_after (an id), of the event types p_event_types (exact names; NULL:
-- all), on channel p_channel (NULL: any), created in [p_since, p_until).
-- Payloads up to 8 KiB (larger: null, payload_omitted); a page stops
-- before 48 KiB of documents (so it stays one Data API row), whatever
-- p_limit (1 to 250).
CREATE FUNCTION public.hookbox_message_list(p_tenant text, p_after text DEFAULT NULL,
                                            p_limit integer DEFAULT 50,
                                            p_event_types text[] DEFAULT NULL,
                                            p_since timestamptz DEFAULT NULL,
                                            p_until timestamptz DEFAULT NULL,
                                            p_channel text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_tenant text := public.hookbox_tenant_id(p_tenant);
    v_page jsonb;
    v_more boolean;
BEGIN
    IF v_tenant IS NULL THEN
        RAISE EXCEPTION 'hookbox_message_list: no tenant %', pg_catalog.quote_nullable(p_tenant)
            USING ERRCODE = 'P0002';
    END IF;
    IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 250 THEN
        RAISE EXCEPTION 'hookbox_message_list: limit must be 1 to 250, not %', coalesce(CAST(p_limit AS text), 'NULL')
            USING ERRCODE = '22023';
    END IF;
    SELECT coalesce(pg_catalog.jsonb_agg(f.doc ORDER BY f.id), '[]') INTO v_page
      FROM (SELECT d.id, d.doc,
                   sum(octet_length(CAST(d.doc AS text))) OVER (ORDER BY d.id) AS running,
                   row_number() OVER (ORDER BY d.id) AS n
              FROM (SELECT m.id, public.hookbox_message_doc(m, 8192) AS doc
                      FROM public.hookbox_messages AS m
                     WHERE m.tenant_id = v_tenant AND (p_after IS NULL OR m.id > p_after)
                       AND (p_event_types IS NULL OR m.event_type = ANY (p_event_types))
                       AND (p_channel IS NULL OR p_channel = ANY (m.channels))
                       AND (p_since IS NULL OR m.created_at >= p_since)
                       AND (p_until IS NULL OR m.created_at < p_until)
                     ORDER BY m.id LIMIT p_limit) AS d) AS f
     WHERE f.running <= 49152 OR f.n = 1;
    SELECT EXISTS (SELECT 1 FROM public.hookbox_messages AS m
                    WHERE m.tenant_id = v_tenant
                      AND m.id > coalesce(v_page -> -1 ->> 'id', p_after, '')
                      AND (p_event_types IS NULL OR m.event_type = ANY (p_event_types))
                      AND (p_channel IS NULL OR p_channel = ANY (m.channels))
                      AND (p_since IS NULL OR m.created_at >= p_since)
                      AND (p_until IS NULL OR m.created_at < p_until))
      INTO v_more;
    RETURN pg_catalog.jsonb_build_object('data', v_page,
                                         'iterator', coalesce(v_page -> -1 -> 'id', pg_catalog.to_jsonb(p_after)),
                                         'done', NOT v_more);
END
$$;

-- ---------------------------------------------------------------- attempts

-- The attempts of the deliveries p_deliveries, from the attempt log
-- (outbox_attempt_log: failed attempts, and each delivered row's
-- delivering attempt) joined to their rows. An attempt's id is stable:
-- `atmpt_`, its time (microseconds since 1970, 16 hex digits) and its
-- delivery's id (32 hex digits), so ids sort in time order and a
-- delivering attempt keeps its id when replay or retention moves it into
-- outbox_attempts. `status`: success (a 2xx answer: it delivered the row)
-- or failed; `delivery_status`: the row's (pending, delivered, dead).
CREATE FUNCTION public.hookbox_attempts(p_deliveries uuid[])
RETURNS TABLE (id text, message_id text, succeeded boolean, attempted_at timestamptz, doc jsonb)
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT x.id, o.message_id, x.succeeded, a.attempted_at,
           pg_catalog.jsonb_build_object(
               'id', x.id, 'delivery_id', o.id, 'message_id', o.message_id,
               'endpoint_id', o.destination, 'url', e.url, 'attempt', a.attempt,
               'timestamp', a.attempted_at, 'status_code', a.status_code,
               'latency_ms', a.latency_ms, 'error', pg_catalog.left(a.error, 1024),
               'response', a.response_excerpt,
               'status', CASE WHEN x.succeeded THEN 'success' ELSE 'failed' END,
               'delivery_status', o.status,
               'next_attempt_at', CASE WHEN o.status = 'pending' THEN o.next_attempt_at END)
      FROM public.outbox AS o
      JOIN public.outbox_attempt_log AS a ON a.outbox_id = o.id
      LEFT JOIN public.hookbox_endpoints AS e ON e.id = o.destination
     CROSS JOIN LATERAL (
         SELECT 'atmpt_'
                || pg_catalog.lpad(pg_catalog.to_hex(
                       CAST(extract(epoch FROM a.attempted_at) * 1000000 AS bigint)), 16, '0')
                || pg_catalog.replace(CAST(o.id AS text), '-', '') COLLATE "C" AS id,
                coalesce(a.status_code BETWEEN 200 AND 299, false) AS succeeded) AS x
     WHERE o.id = ANY (p_deliveries)
$$;

-- The attempt filters both lists share: p_status success or failed (NULL:
-- both).
CREATE FUNCTION public.hookbox_attempt_checks(p_fn text, p_limit integer, p_status text,
                                              p_since timestamptz, p_until timestamptz)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 250 THEN
        RAISE EXCEPTION '%: limit must be 1 to 250, not %', p_fn, coalesce(CAST(p_limit AS text), 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF p_status IS NOT NULL AND p_status NOT IN ('success', 'failed') THEN
        RAISE EXCEPTION '%: status must be success or failed, not %', p_fn,
            pg_catalog.quote_literal(p_status) USING ERRCODE = '22023';
    END IF;
    IF p_since IS NOT NULL AND p_until IS NOT NULL AND p_until <= p_since THEN
        RAISE EXCEPTION '%: until (%) must be after since (%)', p_fn, p_until, p_since
            USING ERRCODE = '22023';
    END IF;
END
$$;

-- The first documents of p_docs (a JSON array), at most p_limit and
-- under 48 KiB together (at least one): a page that stays one Data API row.
CREATE FUNCTION public.hookbox_attempt_page(p_docs jsonb, p_limit integer) RETURNS jsonb
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT coalesce(pg_catalog.jsonb_agg(f.doc ORDER BY f.n), '[]')
      FROM (SELECT d.doc, d.n,
                   sum(octet_length(CAST(d.doc AS text))) OVER (ORDER BY d.n) AS running
              FROM pg_catalog.jsonb_array_elements(p_docs) WITH ORDINALITY AS d(doc, n)) AS f
     WHERE f.n <= p_limit AND (f.running <= 49152 OR f.n = 1)
$$;

-- A page of one message's attempts (to every endpoint, or p_endpoint's),
-- in time order after p_after (an attempt id), made in [p_since, p_until).
-- A page stops before 48 KiB of documents, whatever p_limit (1 to 250).
CREATE FUNCTION public.hookbox_attempt_list_by_message(p_tenant text, p_message text,
                                                       p_after text DEFAULT NULL,
                                                       p_limit integer DEFAULT 50,
                                                       p_status text DEFAULT NULL,
                                                       p_endpoint text DEFAULT NULL,
                                                       p_since timestamptz DEFAULT NULL,
                                                       p_until timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_attempt_list_by_message';
    v public.hookbox_messages := public.hookbox_message_find(c_fn, p_tenant, p_message);
    v_endpoint text;
    v_rows jsonb;
    v_page jsonb;
BEGIN
    PERFORM public.hookbox_attempt_checks(c_fn, p_limit, p_status, p_since, p_until);
    IF p_endpoint IS NOT NULL THEN
        SELECT e.id INTO v_endpoint FROM public.hookbox_endpoints AS e
         WHERE e.tenant_id = v.tenant_id AND (e.id = p_endpoint OR e.uid = p_endpoint);
        IF NOT FOUND THEN
            RAISE EXCEPTION '%: tenant % has no endpoint %', c_fn, pg_catalog.quote_literal(v.tenant_id),
                pg_catalog.quote_literal(p_endpoint) USING ERRCODE = 'P0002';
        END IF;
    END IF;
    SELECT coalesce(pg_catalog.jsonb_agg(t.doc ORDER BY t.id), '[]') INTO v_rows
      FROM (SELECT * FROM public.hookbox_attempts(ARRAY(
                SELECT o.id FROM public.outbox AS o
                 WHERE o.message_id = v.id AND (v_endpoint IS NULL OR o.destination = v_endpoint))) AS a
             WHERE (p_after IS NULL OR a.id > p_after COLLATE "C")
               AND (p_status IS NULL OR a.succeeded = (p_status = 'success'))
               AND (p_since IS NULL OR a.attempted_at >= p_since)
               AND (p_until IS NULL OR a.attempted_at < p_until)
             ORDER BY a.id LIMIT p_limit + 1) AS t;
    v_page := public.hookbox_attempt_page(v_rows, p_limit);
    RETURN pg_catalog.jsonb_build_object(
        'data', v_page,
        'iterator', coalesce(v_page -> -1 -> 'id', pg_catalog.to_jsonb(p_after)),
        'done', pg_catalog.jsonb_array_length(v_page) = pg_catalog.jsonb_array_length(v_rows));
END
$$;

-- A page of one endpoint's attempts: its deliveries found through the
-- tenant's messages (outbox rows have no index by destination once
-- delivered: one would cost every delivery an entry), so in message order
-- (creation order), each message's attempts in time order, after p_after
-- (the previous page's iterator: `<message id>/<attempt id>`). A call walks
-- at most 2,000 messages: a page may then be short, or empty, and not done
-- (`iterator` says where the walk stopped). A page stops before 48 KiB of
-- documents, whatever p_limit (1 to 250).
CREATE FUNCTION public.hookbox_attempt_list_by_endpoint(p_tenant text, p_endpoint text,
                                                        p_after text DEFAULT NULL,
                                                        p_limit integer DEFAULT 50,
                                                        p_status text DEFAULT NULL,
                                                        p_since timestamptz DEFAULT NULL,
                                                        p_until timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_attempt_list_by_endpoint';
    c_walk constant integer := 2000;
    v_tenant text := public.hookbox_tenant_id(p_tenant);
    v_endpoint text;
    v_after_msg text := nullif(pg_catalog.split_part(p_after, '/', 1), '');
    v_after_att text := nullif(pg_catalog.split_part(p_after, '/', 2), '');
    v_walked text[];
    v_rows jsonb;
    v_page jsonb;
BEGIN
    IF v_tenant IS NULL THEN
        RAISE EXCEPTION '%: no tenant %', c_fn, pg_catalog.quote_nullable(p_tenant)
            USING ERRCODE = 'P0002';
    END IF;
    SELECT e.id INTO v_endpoint FROM public.hookbox_endpoints AS e
     WHERE e.tenant_id = v_tenant AND (e.id = p_endpoint OR e.uid = p_endpoint);
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: tenant % has no endpoint %', c_fn, pg_catalog.quote_literal(v_tenant),
            pg_catalog.quote_nullable(p_endpoint) USING ERRCODE = 'P0002';
    END IF;
    PERFORM public.hookbox_attempt_checks(c_fn, p_limit, p_status, p_since, p_until);
    IF p_after IS NOT NULL AND (v_after_msg !~ '^msg_[0-9a-f]{32}$'
                                OR v_after_att !~ '^atmpt_[0-9a-f]{48}$') THEN
        RAISE EXCEPTION '%: after % is not an iterator of this list', c_fn,
            pg_catalog.quote_literal(pg_catalog.left(p_after, 200)) USING ERRCODE = '22023';
    END IF;
    v_walked := ARRAY(SELECT m.id FROM public.hookbox_messages AS m
                       WHERE m.tenant_id = v_tenant
                         AND (v_after_msg IS NULL OR m.id >= v_after_msg)
                       ORDER BY m.id LIMIT c_walk);
    SELECT coalesce(pg_catalog.jsonb_agg(t.doc ORDER BY t.message_id, t.id), '[]') INTO v_rows
      FROM (SELECT * FROM public.hookbox_attempts(ARRAY(
                SELECT o.id FROM public.outbox AS o
                 WHERE o.message_id = ANY (v_walked) AND o.destination = v_endpoint)) AS a
             WHERE (v_after_msg IS NULL OR a.message_id > v_after_msg
                    OR (a.message_id = v_after_msg AND a.id > v_after_att COLLATE "C"))
               AND (p_status IS NULL OR a.succeeded = (p_status = 'success'))
               AND (p_since IS NULL OR a.attempted_at >= p_since)
               AND (p_until IS NULL OR a.attempted_at < p_until)
             ORDER BY a.message_id, a.id LIMIT p_limit + 1) AS t;
    v_page := public.hookbox_attempt_page(v_rows, p_limit);
    IF pg_catalog.jsonb_array_length(v_page) < pg_catalog.jsonb_array_length(v_rows) THEN
        RETURN pg_catalog.jsonb_build_object('data', v_page, 'done', false,
            'iterator', (v_page -> -1 ->> 'message_id') || '/' || (v_page -> -1 ->> 'id'));
    END IF;
    IF cardinality(v_walked) = c_walk THEN
        -- the walk stopped: go on after its last message's attempts
        RETURN pg_catalog.jsonb_build_object('data', v_page, 'done', false,
            'iterator', v_walked[c_walk] || '/atmpt_' || pg_catalog.repeat('f', 48));
    END IF;
    RETURN pg_catalog.jsonb_build_object('data', v_page, 'done', true,
        'iterator', coalesce((v_page -> -1 ->> 'message_id') || '/' || (v_page -> -1 ->> 'id'), p_after));
END
$$;

-- One attempt of p_tenant's, by its id (which names its delivery).
CREATE FUNCTION public.hookbox_attempt_get(p_tenant text, p_attempt text) RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_attempt_get';
    v_tenant text := public.hookbox_tenant_id(p_tenant);
    v_doc jsonb;
BEGIN
    IF v_tenant IS NULL THEN
        RAISE EXCEPTION '%: no tenant %', c_fn, pg_catalog.quote_nullable(p_tenant)
            USING ERRCODE = 'P0002';
    END IF;
    IF p_attempt IS NULL OR p_attempt !~ '^atmpt_[0-9a-f]{48}$' THEN
        RAISE EXCEPTION '%: % is not an attempt id (atmpt_ and 48 hex digits)', c_fn,
            pg_catalog.quote_nullable(pg_catalog.left(p_attempt, 200)) USING ERRCODE = '22023';
    END IF;
    SELECT a.doc INTO v_doc
      FROM public.hookbox_attempts(ARRAY(
               SELECT o.id FROM public.outbox AS o
                 JOIN public.hookbox_messages AS m ON m.id = o.message_id
                WHERE o.id = CAST(pg_catalog.substr(p_attempt, 23) AS uuid)
                  AND m.tenant_id = v_tenant)) AS a
     WHERE a.id = p_attempt COLLATE "C";
    IF v_doc IS NULL THEN
        RAISE EXCEPTION '%: tenant % has no attempt %', c_fn, pg_catalog.quote_literal(v_tenant),
            pg_catalog.quote_literal(p_attempt) USING ERRCODE = 'P0002';
    END IF;
    RETURN v_doc;
END
$$;

-- ----------------------------------------------------------------- recover

-- Sends again an endpoint's failed deliveries created in [p_since,
-- p_until) (NULL: up to now): dead ones, and pending ones that failed at
-- least once (not one a relay holds leased now). As replay does
-- (hookbox::admin::replay): pending, due now, attempts back to 0, the same
-- id (the receiver's `webhook-id`); delivered ones are never touched, nor
-- pending ones not attempted yet. Recorded in the audit trail; answers how
-- many.
CREATE FUNCTION public.hookbox_endpoint_recover(p_tenant text, p_endpoint text,
                                                p_since timestamptz,
                                                p_until timestamptz DEFAULT NULL,
                                                p_actor jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_endpoint_recover';
    v_tenant public.hookbox_tenants := public.hookbox_tenant_find(c_fn, p_tenant);
    v public.hookbox_endpoints := public.hookbox_endpoint_find(c_fn, v_tenant, p_endpoint);
    v_dead bigint;
    v_failed bigint;
    v_changes jsonb;
BEGIN
    IF p_since IS NULL THEN
        RAISE EXCEPTION '%: since is required', c_fn USING ERRCODE = '22023';
    END IF;
    IF p_until IS NOT NULL AND p_until <= p_since THEN
        RAISE EXCEPTION '%: until (%) must be after since (%)', c_fn, p_until, p_since
            USING ERRCODE = '22023';
    END IF;
    WITH picked AS (
        SELECT o.id, o.status FROM public.outbox AS o
         WHERE o.destination = v.id AND o.status = 'pending' AND o.attempts > 0
           AND o.created_at >= p_since AND (p_until IS NULL OR o.created_at < p_until)
        UNION ALL
        SELECT o.id, o.status FROM public.outbox AS o
         WHERE o.status = 'dead' AND o.destination = v.id
           AND o.created_at >= p_since AND (p_until IS NULL OR o.created_at < p_until)
    ), resent AS (
        UPDATE public.outbox AS o
           SET status = 'pending', attempts = 0, next_attempt_at = pg_catalog.now(),
               locked_until = NULL, locked_by = NULL, processed_at = NULL
          FROM picked AS p
         WHERE o.id = p.id AND o.status = p.status
           AND (o.status = 'dead'
                OR (o.attempts > 0 AND (o.locked_until IS NULL OR o.locked_until <= pg_catalog.now())))
        RETURNING p.status
    )
    SELECT count(*) FILTER (WHERE r.status = 'dead'), count(*) FILTER (WHERE r.status = 'pending')
      INTO v_dead, v_failed
      FROM resent AS r;
    v_changes := pg_catalog.jsonb_build_object('since', p_since, 'until', p_until,
                                               'recovered', v_dead + v_failed,
                                               'dead', v_dead, 'failed', v_failed);
    PERFORM public.hookbox_audit_add(v_tenant.id, v.id, 'endpoint.recovered', v_changes, p_actor);
    RETURN pg_catalog.jsonb_build_object('id', v.id) || v_changes;
END
$$;

-- ------------------------------------------------------------ tenant delete

-- Version 21's, deleting the tenant's messages too and counting them.
CREATE OR REPLACE FUNCTION public.hookbox_tenant_delete(p_tenant text, p_actor jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_tenant_delete';
    v public.hookbox_tenants := public.hookbox_tenant_find(c_fn, p_tenant);
    v_endpoints bigint;
    v_secrets bigint;
    v_undelivered bigint;
    v_messages bigint;
BEGIN
    SELECT count(*) INTO v_secrets FROM public.hookbox_endpoint_secrets AS s
      JOIN public.hookbox_endpoints AS e ON e.id = s.endpoint_id
     WHERE e.tenant_id = v.id;
    WITH gone AS (
        DELETE FROM public.hookbox_messages AS m WHERE m.tenant_id = v.id RETURNING 1)
    SELECT count(*) INTO v_messages FROM gone;
    WITH gone AS (
        DELETE FROM public.outbox AS o
         USING public.hookbox_endpoints AS e
         WHERE e.tenant_id = v.id AND o.destination = e.id AND o.status = 'pending'
        RETURNING 1)
    SELECT count(*) INTO v_undelivered FROM gone;
    WITH gone AS (
        DELETE FROM public.outbox_destinations AS d WHERE d.tenant_id = v.id RETURNING 1)
    SELECT count(*) INTO v_endpoints FROM gone;
    DELETE FROM public.hookbox_tenants AS t WHERE t.id = v.id;
    PERFORM public.hookbox_audit_add(v.id, NULL, 'tenant.deleted',
        pg_catalog.jsonb_build_object('uid', v.uid, 'endpoints', v_endpoints,
                                      'secrets', v_secrets, 'undelivered', v_undelivered,
                                      'messages', v_messages),
        p_actor);
    RETURN pg_catalog.jsonb_build_object('id', v.id, 'uid', v.uid, 'endpoints', v_endpoints,
                                         'secrets', v_secrets, 'undelivered', v_undelivered,
                                         'messages', v_messages);
END
$$;

-- Who may call what: the helpers belong to the functions above.
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    public.hookbox_message_create(text, jsonb, jsonb),
    public.hookbox_message_get(text, text),
    public.hookbox_message_payload(text, text, integer, integer),
    public.hookbox_message_list(text, text, integer, text[], timestamptz, timestamptz, text),
    public.hookbox_attempt_list_by_message(text, text, text, integer, text, text, timestamptz,
                                           timestamptz),
    public.hookbox_attempt_list_by_endpoint(text, text, text, integer, text, timestamptz,
                                            timestamptz),
    public.hookbox_attempt_get(text, text),
    public.hookbox_endpoint_recover(text, text, timestamptz, timestamptz, jsonb)
TO hookbox_manager;
-- creating a message is publishing
GRANT EXECUTE ON FUNCTION public.hookbox_message_create(text, jsonb, jsonb) TO hookbox_publisher;

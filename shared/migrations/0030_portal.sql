-- hookbox schema, version 30: the customer portal (docs/portal.md).
--
-- Portal links: the SaaS mints a link for one tenant (the management API's
-- `POST /api/v1/auth/app-portal-access/{app_id}`, `hookbox tenant link`, or
-- hookbox_portal_link_create from its own backend); its customer opens it
-- in a browser, with no hookbox account, and manages that tenant's
-- endpoints: everything the page does is scoped to the tenant by the link
-- alone. A link's key is 244 random bits (two version 4 UUIDs, from
-- PostgreSQL's strong random source) that only its minting answer holds:
-- the database keeps its SHA-256, so a dump cannot open a portal, and every
-- request checks the key against it (a revoked link stops at once). A link
-- lives from 1 hour to 7 days (7 days unless asked otherwise, as Svix's),
-- may be read-only, and is revoked one at a time, by the session id it was
-- minted with, or all of a tenant's at once. Deleting the tenant deletes
-- its links.
--
-- What a customer does there that the management functions did not offer:
-- resending one delivery, sending an example to one endpoint, the
-- endpoint's attempts newest first with each message's event type, and its
-- success and failure counts by hour. The HTTP API serves the same
-- functions under Svix's paths where Svix has them.

CREATE TABLE hookbox_portal_links (
    id          text        PRIMARY KEY CHECK (id ~ '^pl_[0-9a-f]{32}$'),
    tenant_id   text        NOT NULL REFERENCES hookbox_tenants (id) ON DELETE CASCADE,
    -- SHA-256 of the key (lower-case hex); the key itself is never stored
    key_sha256  text        NOT NULL UNIQUE CHECK (key_sha256 ~ '^[0-9a-f]{64}$'),
    read_only   boolean     NOT NULL,
    -- the caller's own label for the links of one of its sessions (Svix's
    -- sessionId): revoked together
    session_id  text        CHECK (octet_length(session_id) BETWEEN 1 AND 256),
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    revoked_at  timestamptz
);
CREATE INDEX hookbox_portal_links_tenant ON hookbox_portal_links (tenant_id, id);

-- A link's document (never its key).
CREATE FUNCTION public.hookbox_portal_link_doc(l public.hookbox_portal_links) RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT pg_catalog.jsonb_build_object(
        'id', l.id, 'tenant_id', l.tenant_id, 'read_only', l.read_only,
        'session_id', l.session_id, 'created_at', l.created_at, 'expires_at', l.expires_at,
        'revoked_at', l.revoked_at)
$$;

-- Mints a portal link for p_tenant (its id or uid): p_spec's `expiry`
-- (seconds, 3,600 to 604,800; default 604,800), `read_only` (default
-- false) and `session_id`. Answers the link's document and its `key`
-- (`hbp_` and 64 hex digits): the only time the key is ever shown.
-- Recorded in the audit trail (`portal.link_created`, without the key).
CREATE FUNCTION public.hookbox_portal_link_create(p_tenant text, p_spec jsonb DEFAULT '{}',
                                                  p_actor jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_portal_link_create';
    v_tenant public.hookbox_tenants;
    v_expiry bigint;
    v_key text;
    v public.hookbox_portal_links;
BEGIN
    PERFORM public.hookbox_check_keys(c_fn, coalesce(p_spec, '{}'),
                                      ARRAY['expiry', 'read_only', 'session_id']);
    v_tenant := public.hookbox_tenant_find(c_fn, p_tenant);
    v_expiry := coalesce(public.hookbox_field_int(c_fn, p_spec, 'expiry', 604800), 604800);
    IF v_expiry < 3600 THEN
        RAISE EXCEPTION '%: expiry must be 3600 to 604800 seconds (1 hour to 7 days), not %',
            c_fn, v_expiry USING ERRCODE = '22023';
    END IF;
    v_key := 'hbp_' || pg_catalog.replace(CAST(pg_catalog.gen_random_uuid() AS text), '-', '')
                    || pg_catalog.replace(CAST(pg_catalog.gen_random_uuid() AS text), '-', '');
    v.id := public.hookbox_new_id('pl');
    v.tenant_id := v_tenant.id;
    v.key_sha256 := pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(v_key, 'UTF8')), 'hex');
    v.read_only := coalesce(public.hookbox_field_bool(c_fn, p_spec, 'read_only'), false);
    v.session_id := public.hookbox_field_text(c_fn, p_spec, 'session_id');
    IF v.session_id = '' OR octet_length(v.session_id) > 256 THEN
        RAISE EXCEPTION '%: session_id must be 1 to 256 bytes', c_fn USING ERRCODE = '22023';
    END IF;
    v.created_at := pg_catalog.now();
    v.expires_at := v.created_at + pg_catalog.make_interval(secs => v_expiry);
    INSERT INTO public.hookbox_portal_links VALUES (v.*);
    PERFORM public.hookbox_audit_add(v_tenant.id, NULL, 'portal.link_created',
        pg_catalog.jsonb_build_object('link', v.id, 'read_only', v.read_only,
                                      'session_id', v.session_id, 'expires_at', v.expires_at),
        p_actor);
    RETURN public.hookbox_portal_link_doc(v) || pg_catalog.jsonb_build_object('key', v_key);
END
$$;

-- Revokes p_tenant's links: p_link's (its id), those minted with
-- p_session_id, or, both NULL, every one not revoked yet. Answers how many.
CREATE FUNCTION public.hookbox_portal_link_revoke(p_tenant text, p_link text DEFAULT NULL,
                                                  p_session_id text DEFAULT NULL,
                                                  p_actor jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_portal_link_revoke';
    v_tenant public.hookbox_tenants := public.hookbox_tenant_find(c_fn, p_tenant);
    v_count bigint;
BEGIN
    IF p_link IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM public.hookbox_portal_links AS l
         WHERE l.id = p_link AND l.tenant_id = v_tenant.id) THEN
        RAISE EXCEPTION '%: tenant % has no portal link %', c_fn,
            pg_catalog.quote_literal(v_tenant.id), pg_catalog.quote_literal(p_link)
            USING ERRCODE = 'P0002';
    END IF;
    WITH gone AS (
        UPDATE public.hookbox_portal_links AS l SET revoked_at = pg_catalog.now()
         WHERE l.tenant_id = v_tenant.id AND l.revoked_at IS NULL
           AND (p_link IS NULL OR l.id = p_link)
           AND (p_session_id IS NULL OR l.session_id = p_session_id)
        RETURNING 1)
    SELECT count(*) INTO v_count FROM gone;
    PERFORM public.hookbox_audit_add(v_tenant.id, NULL, 'portal.links_revoked',
        pg_catalog.jsonb_build_object('link', p_link, 'session_id', p_session_id,
                                      'revoked', v_count),
        p_actor);
    RETURN pg_catalog.jsonb_build_object('tenant_id', v_tenant.id, 'revoked', v_count);
END
$$;

-- The session a link's key opens at p_now (the portal's clock), or NULL:
-- no such key, or revoked, or expired, or its tenant gone. One index
-- descent; the portal calls it at every request.
CREATE FUNCTION public.hookbox_portal_session(p_key_sha256 text, p_now timestamptz)
RETURNS jsonb
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT public.hookbox_portal_link_doc(l)
           || pg_catalog.jsonb_build_object(
                  'tenant', pg_catalog.jsonb_build_object('id', t.id, 'uid', t.uid,
                                                          'name', t.name))
      FROM public.hookbox_portal_links AS l
      JOIN public.hookbox_tenants AS t ON t.id = l.tenant_id
     WHERE l.key_sha256 = p_key_sha256 AND l.revoked_at IS NULL AND l.expires_at > p_now
$$;

-- Logging out: revokes the link whose key hashes to p_key_sha256 (Svix's
-- `POST /api/v1/auth/logout` with the key as the bearer token). Answers
-- the link's id, or NULL when the key opened nothing.
CREATE FUNCTION public.hookbox_portal_logout(p_key_sha256 text, p_now timestamptz)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v public.hookbox_portal_links;
BEGIN
    UPDATE public.hookbox_portal_links AS l SET revoked_at = p_now
     WHERE l.key_sha256 = p_key_sha256 AND l.revoked_at IS NULL AND l.expires_at > p_now
    RETURNING * INTO v;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    PERFORM public.hookbox_audit_add(v.tenant_id, NULL, 'portal.logged_out',
        pg_catalog.jsonb_build_object('link', v.id),
        pg_catalog.jsonb_build_object('face', 'portal', 'principal', v.id));
    RETURN v.id;
END
$$;

-- ------------------------------------------------------------- resending

-- Sends the delivery of p_message (its id or event_id) to p_endpoint again,
-- due now, with the same id (the receiver's `webhook-id`): a dead or
-- delivered one goes back to pending with its attempts from 1 (a delivered
-- one's delivering attempt kept in the attempt log first), a pending one
-- not leased is made due now. One a relay holds leased now is left as it
-- is (`in_flight`). A delivery the retention has already archived or
-- deleted cannot be resent (P0002, saying so). Recorded in the audit trail
-- (`message.resent`).
CREATE FUNCTION public.hookbox_message_resend(p_tenant text, p_message text, p_endpoint text,
                                              p_actor jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_message_resend';
    v_tenant public.hookbox_tenants := public.hookbox_tenant_find(c_fn, p_tenant);
    v_ep public.hookbox_endpoints := public.hookbox_endpoint_find(c_fn, v_tenant, p_endpoint);
    v_msg public.hookbox_messages := public.hookbox_message_find(c_fn, v_tenant.id, p_message);
    v public.outbox;
    v_outcome text;
BEGIN
    SELECT * INTO v FROM public.outbox AS o
     WHERE o.message_id = v_msg.id AND o.destination = v_ep.id
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: message % has no delivery to endpoint % to resend (never written, or archived after the retention period)',
            c_fn, pg_catalog.quote_literal(v_msg.id), pg_catalog.quote_literal(v_ep.id)
            USING ERRCODE = 'P0002';
    END IF;
    IF v.status = 'pending' AND v.locked_until > pg_catalog.now() THEN
        v_outcome := 'in_flight';
    ELSIF v.status = 'pending' THEN
        UPDATE public.outbox AS o SET next_attempt_at = pg_catalog.now() WHERE o.id = v.id;
        v_outcome := 'due_now';
    ELSE
        IF v.status = 'delivered' AND v.last_attempted_at IS NOT NULL THEN
            INSERT INTO public.outbox_attempts (outbox_id, attempt, attempted_at, destination,
                                                status_code, latency_ms, error, response_excerpt)
            VALUES (v.id, v.attempts, v.last_attempted_at, v.destination, v.last_status_code,
                    v.last_latency_ms, v.last_error, v.last_response);
        END IF;
        UPDATE public.outbox AS o
           SET status = 'pending', attempts = 0, next_attempt_at = pg_catalog.now(),
               locked_until = NULL, locked_by = NULL, processed_at = NULL
         WHERE o.id = v.id;
        v_outcome := 'resent';
    END IF;
    PERFORM public.hookbox_audit_add(v_tenant.id, v_ep.id, 'message.resent',
        pg_catalog.jsonb_build_object('message', v_msg.id, 'delivery', v.id,
                                      'was', v.status, 'outcome', v_outcome),
        p_actor);
    RETURN pg_catalog.jsonb_build_object('message_id', v_msg.id, 'endpoint_id', v_ep.id,
                                         'delivery_id', v.id, 'was', v.status,
                                         'outcome', v_outcome);
END
$$;

-- ----------------------------------------------------------- send example

-- Sends one example message of p_event_type (p_payload: any JSON, an
-- object of the caller's choosing) to p_endpoint alone, whatever its
-- subscription: recorded as a message of the tenant with one delivery.
-- Answers the message and its delivery's id.
CREATE FUNCTION public.hookbox_endpoint_send_example(p_tenant text, p_endpoint text,
                                                     p_event_type text, p_payload jsonb,
                                                     p_actor jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_endpoint_send_example';
    v_tenant public.hookbox_tenants := public.hookbox_tenant_find(c_fn, p_tenant);
    v_ep public.hookbox_endpoints := public.hookbox_endpoint_find(c_fn, v_tenant, p_endpoint);
    v_check record;
    m public.hookbox_messages;
    v_id uuid := public.hookbox_uuid_v7();
BEGIN
    PERFORM public.hookbox_actor(p_actor);
    IF p_payload IS NULL THEN
        RAISE EXCEPTION '%: payload is required (any JSON)', c_fn USING ERRCODE = '22023';
    END IF;
    m.id := public.hookbox_new_id('msg');
    SELECT * INTO v_check FROM public.hookbox_publish_refusal(
        p_event_type, p_payload, 'message', m.id, NULL::text, NULL::text, NULL::bigint);
    IF v_check.refusal IS NOT NULL THEN
        RAISE EXCEPTION USING MESSAGE = pg_catalog.replace(v_check.refusal, 'hookbox_publish:',
                                                           c_fn || ':'),
                              ERRCODE = v_check.refusal_code;
    END IF;
    m.tenant_id := v_tenant.id;
    m.event_type := p_event_type;
    m.payload := p_payload;
    m.payload_size := v_check.payload_size;
    m.deliveries := 1;
    m.childless := false;
    m.created_at := pg_catalog.now();
    INSERT INTO public.hookbox_messages VALUES (m.*);
    INSERT INTO public.outbox (id, aggregate_type, aggregate_id, event_type, destination,
                               payload, payload_size, status, next_attempt_at, created_at,
                               message_id)
    VALUES (v_id, 'message', m.id, p_event_type, v_ep.id, p_payload, v_check.payload_size,
            'pending', m.created_at, m.created_at, m.id);
    RETURN public.hookbox_message_doc(m, 32768)
        || pg_catalog.jsonb_build_object('endpoint_id', v_ep.id, 'delivery_id', v_id);
END
$$;

-- --------------------------------------------------------------- reading

-- A page of an endpoint's attempts, newest first: its tenant's messages
-- walked from the newest (at most 2,000 a call), each message's attempts
-- to the endpoint newest first, before p_before (the previous page's
-- iterator: `<message id>/<attempt id>`), each with its message's event
-- type. Filters and page bounds as hookbox_attempt_list_by_endpoint's.
CREATE FUNCTION public.hookbox_portal_attempts(p_tenant text, p_endpoint text,
                                               p_before text DEFAULT NULL,
                                               p_limit integer DEFAULT 50,
                                               p_status text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_portal_attempts';
    c_walk constant integer := 2000;
    v_tenant text := public.hookbox_tenant_id(p_tenant);
    v_endpoint text;
    v_before_msg text := nullif(pg_catalog.split_part(p_before, '/', 1), '');
    v_before_att text := nullif(pg_catalog.split_part(p_before, '/', 2), '');
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
    PERFORM public.hookbox_attempt_checks(c_fn, p_limit, p_status, NULL, NULL);
    IF p_before IS NOT NULL AND (v_before_msg !~ '^msg_[0-9a-f]{32}$'
                                 OR v_before_att !~ '^atmpt_[0-9a-f]{48}$') THEN
        RAISE EXCEPTION '%: before % is not an iterator of this list', c_fn,
            pg_catalog.quote_literal(pg_catalog.left(p_before, 200)) USING ERRCODE = '22023';
    END IF;
    v_walked := ARRAY(SELECT m.id FROM public.hookbox_messages AS m
                       WHERE m.tenant_id = v_tenant
                         AND (v_before_msg IS NULL OR m.id <= v_before_msg)
                       ORDER BY m.id DESC LIMIT c_walk);
    SELECT coalesce(pg_catalog.jsonb_agg(t.doc ORDER BY t.message_id DESC, t.id DESC), '[]')
      INTO v_rows
      FROM (SELECT a.message_id, a.id,
                   a.doc || pg_catalog.jsonb_build_object('event_type', m.event_type) AS doc
              FROM public.hookbox_attempts(ARRAY(
                       SELECT o.id FROM public.outbox AS o
                        WHERE o.message_id = ANY (v_walked) AND o.destination = v_endpoint)) AS a
              JOIN public.hookbox_messages AS m ON m.id = a.message_id
             WHERE (v_before_msg IS NULL OR a.message_id < v_before_msg
                    OR (a.message_id = v_before_msg AND a.id < v_before_att COLLATE "C"))
               AND (p_status IS NULL OR a.succeeded = (p_status = 'success'))
             ORDER BY a.message_id DESC, a.id DESC LIMIT p_limit + 1) AS t;
    v_page := public.hookbox_attempt_page(v_rows, p_limit);
    IF pg_catalog.jsonb_array_length(v_page) < pg_catalog.jsonb_array_length(v_rows) THEN
        RETURN pg_catalog.jsonb_build_object('data', v_page, 'done', false,
            'iterator', (v_page -> -1 ->> 'message_id') || '/' || (v_page -> -1 ->> 'id'));
    END IF;
    IF cardinality(v_walked) = c_walk THEN
        -- the walk stopped: go on before its last (oldest) message's attempts
        RETURN pg_catalog.jsonb_build_object('data', v_page, 'done', false,
            'iterator', v_walked[c_walk] || '/atmpt_' || pg_catalog.repeat('0', 48));
    END IF;
    RETURN pg_catalog.jsonb_build_object('data', v_page, 'done', true, 'iterator', NULL);
END
$$;

-- An endpoint's attempts by hour over the p_hours (1 to 168) before p_now:
-- successes and failures per hour, oldest first, every hour present; the
-- attempts of the tenant's messages of that span and the day before it (at
-- most 20,000 messages: `complete` says whether the walk saw them all),
-- and the endpoint's health.
CREATE FUNCTION public.hookbox_endpoint_stats(p_tenant text, p_endpoint text,
                                              p_hours integer, p_now timestamptz)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_endpoint_stats';
    c_walk constant integer := 20000;
    v_tenant text := public.hookbox_tenant_id(p_tenant);
    v_endpoint public.hookbox_endpoints;
    v_end timestamptz := pg_catalog.date_trunc('hour', p_now) + interval '1 hour';
    v_start timestamptz;
    v_walked text[];
    v_buckets jsonb;
BEGIN
    IF v_tenant IS NULL THEN
        RAISE EXCEPTION '%: no tenant %', c_fn, pg_catalog.quote_nullable(p_tenant)
            USING ERRCODE = 'P0002';
    END IF;
    SELECT * INTO v_endpoint FROM public.hookbox_endpoints AS e
     WHERE e.tenant_id = v_tenant AND (e.id = p_endpoint OR e.uid = p_endpoint);
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: tenant % has no endpoint %', c_fn, pg_catalog.quote_literal(v_tenant),
            pg_catalog.quote_nullable(p_endpoint) USING ERRCODE = 'P0002';
    END IF;
    IF p_hours IS NULL OR p_hours NOT BETWEEN 1 AND 168 THEN
        RAISE EXCEPTION '%: hours must be 1 to 168, not %', c_fn,
            coalesce(CAST(p_hours AS text), 'NULL') USING ERRCODE = '22023';
    END IF;
    v_start := v_end - pg_catalog.make_interval(hours => p_hours);
    -- message ids are `msg_` and a version 7 UUID: its first 12 hex digits
    -- are its creation's milliseconds since 1970
    v_walked := ARRAY(
        SELECT m.id FROM public.hookbox_messages AS m
         WHERE m.tenant_id = v_tenant
           AND m.id >= 'msg_' || pg_catalog.lpad(pg_catalog.to_hex(
                   CAST(extract(epoch FROM v_start - interval '1 day') * 1000 AS bigint)), 12, '0')
         ORDER BY m.id DESC LIMIT c_walk);
    SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'start', h.start, 'success', coalesce(c.success, 0),
               'failed', coalesce(c.failed, 0)) ORDER BY h.start)
      INTO v_buckets
      FROM pg_catalog.generate_series(v_start, v_end - interval '1 hour', interval '1 hour')
               AS h(start)
      LEFT JOIN (
          SELECT pg_catalog.date_trunc('hour', a.attempted_at) AS start,
                 count(*) FILTER (WHERE a.succeeded) AS success,
                 count(*) FILTER (WHERE NOT a.succeeded) AS failed
            FROM public.hookbox_attempts(ARRAY(
                     SELECT o.id FROM public.outbox AS o
                      WHERE o.message_id = ANY (v_walked)
                        AND o.destination = v_endpoint.id)) AS a
           WHERE a.attempted_at >= v_start AND a.attempted_at < v_end
           GROUP BY 1) AS c ON c.start = h.start;
    RETURN pg_catalog.jsonb_build_object(
        'id', v_endpoint.id, 'hours', p_hours, 'buckets', v_buckets,
        'complete', cardinality(v_walked) < c_walk,
        'health', (public.hookbox_endpoint_doc(v_endpoint) -> 'health'),
        'disabled', (public.hookbox_endpoint_doc(v_endpoint) -> 'disabled'));
END
$$;

-- Recorded when hookbox's code shows an endpoint's secret to someone (the
-- portal's reveal, the API's `GET …/secret`, `hookbox endpoint secret`).
CREATE FUNCTION public.hookbox_endpoint_secret_revealed(p_tenant text, p_endpoint text,
                                                        p_actor jsonb DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_endpoint_secret_revealed';
    v_tenant public.hookbox_tenants := public.hookbox_tenant_find(c_fn, p_tenant);
    v public.hookbox_endpoints := public.hookbox_endpoint_find(c_fn, v_tenant, p_endpoint);
BEGIN
    PERFORM public.hookbox_audit_add(v_tenant.id, v.id, 'endpoint.secret_revealed', '{}', p_actor);
    RETURN v.id;
END
$$;

REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC;
-- the SaaS's backend (and its own portal, if it builds one) may call these
GRANT EXECUTE ON FUNCTION
    public.hookbox_portal_link_create(text, jsonb, jsonb),
    public.hookbox_portal_link_revoke(text, text, text, jsonb),
    public.hookbox_message_resend(text, text, text, jsonb),
    public.hookbox_endpoint_send_example(text, text, text, jsonb, jsonb),
    public.hookbox_portal_attempts(text, text, text, integer, text),
    public.hookbox_endpoint_stats(text, text, integer, timestamptz)
TO hookbox_manager;
-- only hookbox's own code opens a session from a key, or shows a secret
GRANT EXECUTE ON FUNCTION
    public.hookbox_portal_session(text, timestamptz),
    public.hookbox_portal_logout(text, timestamptz),
    public.hookbox_endpoint_secret_revealed(text, text, jsonb)
TO hookbox_management;

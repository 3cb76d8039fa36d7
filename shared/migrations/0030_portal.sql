-- hookbox schema, version 30: the customer portal (docs/portal.md).
--
-- Operator links open the operator page (/admin) the same way; only
-- hookbox_management may mint them (`hookbox admin link`).
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
    -- a customer's link opens its tenant's portal; an operator's link
    -- opens the operator page (/admin) and no tenant's portal
    kind        text        NOT NULL CHECK (kind IN ('tenant', 'operator')),
    tenant_id   text        REFERENCES hookbox_tenants (id) ON DELETE CASCADE
                CHECK ((kind = 'tenant') = (tenant_id IS NOT NULL)),
    -- who minted an operator's link (the CLI's principal)
    principal   text        CHECK (octet_length(principal) <= 256),
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
        'id', l.id, 'kind', l.kind, 'tenant_id', l.tenant_id, 'principal', l.principal,
        'read_only', l.read_only,
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
    v.kind := 'tenant';
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

-- An operator's link (docs/portal.md, "The operator page"): opens /admin
-- for p_expiry seconds (300 to 86,400; default 3,600), minted by
-- p_principal. Only hookbox_management's members may mint one (the CLI's
-- `hookbox admin link`, through the stack's database credentials: someone
-- with the stack's IAM rights); a SaaS's backend (hookbox_manager) cannot.
CREATE FUNCTION public.hookbox_operator_link_create(p_expiry integer DEFAULT 3600,
                                                    p_principal text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_operator_link_create';
    v_key text;
    v public.hookbox_portal_links;
BEGIN
    IF p_expiry IS NULL OR p_expiry NOT BETWEEN 300 AND 86400 THEN
        RAISE EXCEPTION '%: expiry must be 300 to 86400 seconds (5 minutes to a day), not %',
            c_fn, coalesce(CAST(p_expiry AS text), 'NULL') USING ERRCODE = '22023';
    END IF;
    v_key := 'hbp_' || pg_catalog.replace(CAST(pg_catalog.gen_random_uuid() AS text), '-', '')
                    || pg_catalog.replace(CAST(pg_catalog.gen_random_uuid() AS text), '-', '');
    v.id := public.hookbox_new_id('pl');
    v.kind := 'operator';
    v.principal := pg_catalog.left(coalesce(nullif(p_principal, ''), session_user), 256);
    v.key_sha256 := pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(v_key, 'UTF8')), 'hex');
    v.read_only := false;
    v.created_at := pg_catalog.now();
    v.expires_at := v.created_at + pg_catalog.make_interval(secs => p_expiry);
    INSERT INTO public.hookbox_portal_links VALUES (v.*);
    RETURN public.hookbox_portal_link_doc(v) || pg_catalog.jsonb_build_object('key', v_key);
END
$$;

-- Revokes every operator link not revoked yet; answers how many.
CREATE FUNCTION public.hookbox_operator_links_revoke() RETURNS bigint
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    WITH gone AS (
        UPDATE public.hookbox_portal_links AS l SET revoked_at = pg_catalog.now()
         WHERE l.kind = 'operator' AND l.revoked_at IS NULL
        RETURNING 1)
    SELECT count(*) FROM gone
$$;

-- The session a link's key opens at p_now (the caller's clock), or NULL:
-- no such key, or revoked, or expired, or its tenant gone. One index
-- descent; the portal and the operator page call it at every request, and
-- each opens only its own kind.
CREATE FUNCTION public.hookbox_portal_session(p_key_sha256 text, p_now timestamptz)
RETURNS jsonb
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT public.hookbox_portal_link_doc(l)
           || pg_catalog.jsonb_build_object(
                  'tenant', CASE WHEN t.id IS NOT NULL THEN
                      pg_catalog.jsonb_build_object('id', t.id, 'uid', t.uid, 'name', t.name) END)
      FROM public.hookbox_portal_links AS l
      LEFT JOIN public.hookbox_tenants AS t ON t.id = l.tenant_id
     WHERE l.key_sha256 = p_key_sha256 AND l.revoked_at IS NULL AND l.expires_at > p_now
       AND (l.kind = 'operator' OR t.id IS NOT NULL)
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
    IF v.kind = 'operator' THEN
        RETURN v.id;
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

-- ------------------------------------------------------- the event catalog

-- Event types (migration 23's catalogue) gain an example payload (what the
-- portal's "send an example" sends; else the latest schema's first
-- `examples` entry) and `enforce_schema`: publishing an event of the type
-- (hookbox_publish, hookbox_publish_to, a message) checks its payload
-- against the type's latest schema and refuses it, naming where it fails.
ALTER TABLE hookbox_event_types
    ADD COLUMN example        jsonb,
    ADD COLUMN enforce_schema boolean NOT NULL DEFAULT false;

-- The schema of the highest version of p_schemas ({"1": {...}, "2": {...}}).
CREATE FUNCTION public.hookbox_latest_schema(p_schemas jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.value FROM pg_catalog.jsonb_each(
               CASE WHEN pg_catalog.jsonb_typeof(p_schemas) = 'object' THEN p_schemas END) AS s
     ORDER BY CASE WHEN s.key ~ '^[0-9]{1,9}$' THEN CAST(s.key AS integer) ELSE 0 END DESC
     LIMIT 1
$$;

-- The first keyword of p_schema (at any depth) that enforcement does not
-- understand, with where it is; NULL when every one is understood. The
-- validator below knows: type, enum, const, required, properties,
-- additionalProperties, minProperties, maxProperties, items, minItems,
-- maxItems, uniqueItems, minLength, maxLength, pattern, minimum, maximum,
-- exclusiveMinimum, exclusiveMaximum, multipleOf, allOf, anyOf, oneOf, not;
-- and it ignores annotations ($schema, $id, $comment, title, description,
-- examples, default, format, deprecated, readOnly, writeOnly).
CREATE FUNCTION public.hookbox_json_schema_unsupported(p_schema jsonb, p_path text DEFAULT '#')
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_known constant text[] := ARRAY[
        'type', 'enum', 'const', 'required', 'properties', 'additionalProperties',
        'minProperties', 'maxProperties', 'items', 'minItems', 'maxItems', 'uniqueItems',
        'minLength', 'maxLength', 'pattern', 'minimum', 'maximum', 'exclusiveMinimum',
        'exclusiveMaximum', 'multipleOf', 'allOf', 'anyOf', 'oneOf', 'not',
        '$schema', '$id', '$comment', 'title', 'description', 'examples', 'default', 'format',
        'deprecated', 'readOnly', 'writeOnly'];
    v_key text;
    v_sub jsonb;
    v_found text;
    v_i integer;
BEGIN
    IF p_schema IS NULL OR pg_catalog.jsonb_typeof(p_schema) = 'boolean' THEN
        RETURN NULL;
    END IF;
    IF pg_catalog.jsonb_typeof(p_schema) <> 'object' THEN
        RETURN p_path || ' (a schema is an object or a boolean)';
    END IF;
    FOR v_key, v_sub IN SELECT e.k, e.v FROM pg_catalog.jsonb_each(p_schema) AS e(k, v) ORDER BY e.k LOOP
        IF NOT v_key = ANY (c_known) THEN
            RETURN p_path || '/' || v_key;
        END IF;
        IF v_key = 'properties' AND pg_catalog.jsonb_typeof(v_sub) = 'object' THEN
            FOR v_found IN
                SELECT public.hookbox_json_schema_unsupported(p.v, p_path || '/properties/' || p.k)
                  FROM pg_catalog.jsonb_each(v_sub) AS p(k, v)
            LOOP
                IF v_found IS NOT NULL THEN RETURN v_found; END IF;
            END LOOP;
        ELSIF v_key IN ('additionalProperties', 'items', 'not') THEN
            v_found := public.hookbox_json_schema_unsupported(v_sub, p_path || '/' || v_key);
            IF v_found IS NOT NULL THEN RETURN v_found; END IF;
        ELSIF v_key IN ('allOf', 'anyOf', 'oneOf') THEN
            IF pg_catalog.jsonb_typeof(v_sub) <> 'array' THEN
                RETURN p_path || '/' || v_key || ' (must be a list of schemas)';
            END IF;
            FOR v_i IN 0 .. pg_catalog.jsonb_array_length(v_sub) - 1 LOOP
                v_found := public.hookbox_json_schema_unsupported(v_sub -> v_i,
                                                                   p_path || '/' || v_key || '/' || v_i);
                IF v_found IS NOT NULL THEN RETURN v_found; END IF;
            END LOOP;
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;

-- Where p_value (at p_path, `$` for the whole) first fails p_schema, and
-- why; NULL when it conforms. The keywords of hookbox_json_schema_unsupported.
CREATE FUNCTION public.hookbox_json_schema_error(p_schema jsonb, p_value jsonb,
                                                 p_path text DEFAULT '$')
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_kind text := pg_catalog.jsonb_typeof(p_value);
    v_types text[];
    v_key text;
    v_sub jsonb;
    v_err text;
    v_n numeric;
    v_text text;
    v_count integer;
    v_i integer;
BEGIN
    IF p_schema IS NULL OR p_schema = 'true' OR p_schema = '{}' THEN
        RETURN NULL;
    END IF;
    IF p_schema = 'false' THEN
        RETURN p_path || ': nothing is allowed here';
    END IF;
    IF p_value IS NULL THEN
        RETURN p_path || ': no value';
    END IF;
    IF p_schema ? 'type' THEN
        v_types := CASE WHEN pg_catalog.jsonb_typeof(p_schema -> 'type') = 'array'
                        THEN ARRAY(SELECT pg_catalog.jsonb_array_elements_text(p_schema -> 'type'))
                        ELSE ARRAY[p_schema ->> 'type'] END;
        IF NOT (v_kind = ANY (v_types)
                OR (v_kind = 'number' AND 'integer' = ANY (v_types)
                    AND CAST(p_value AS text)::numeric = trunc(CAST(p_value AS text)::numeric))) THEN
            RETURN pg_catalog.format('%s: expected %s, got %s', p_path,
                                     pg_catalog.array_to_string(v_types, ' or '),
                                     CASE WHEN v_kind = 'number' AND 'integer' = ANY (v_types)
                                          THEN 'a fraction' ELSE v_kind END);
        END IF;
    END IF;
    IF p_schema ? 'enum' AND NOT EXISTS (
           SELECT 1 FROM pg_catalog.jsonb_array_elements(p_schema -> 'enum') AS e(v)
            WHERE e.v = p_value) THEN
        RETURN pg_catalog.format('%s: %s is not one of %s', p_path,
                                 pg_catalog.left(CAST(p_value AS text), 100), p_schema -> 'enum');
    END IF;
    IF p_schema ? 'const' AND p_value <> p_schema -> 'const' THEN
        RETURN pg_catalog.format('%s: must be %s', p_path, p_schema -> 'const');
    END IF;
    IF v_kind = 'string' THEN
        v_text := p_value #>> '{}';
        IF p_schema ? 'minLength' AND pg_catalog.char_length(v_text) < CAST(p_schema ->> 'minLength' AS numeric) THEN
            RETURN pg_catalog.format('%s: shorter than %s characters', p_path, p_schema ->> 'minLength');
        END IF;
        IF p_schema ? 'maxLength' AND pg_catalog.char_length(v_text) > CAST(p_schema ->> 'maxLength' AS numeric) THEN
            RETURN pg_catalog.format('%s: longer than %s characters', p_path, p_schema ->> 'maxLength');
        END IF;
        IF p_schema ? 'pattern' AND v_text !~ (p_schema ->> 'pattern') THEN
            RETURN pg_catalog.format('%s: does not match the pattern %s', p_path, p_schema -> 'pattern');
        END IF;
    ELSIF v_kind = 'number' THEN
        v_n := CAST(p_value AS text)::numeric;
        IF p_schema ? 'minimum' AND v_n < CAST(p_schema ->> 'minimum' AS numeric) THEN
            RETURN pg_catalog.format('%s: %s is less than the minimum %s', p_path, v_n, p_schema ->> 'minimum');
        END IF;
        IF p_schema ? 'maximum' AND v_n > CAST(p_schema ->> 'maximum' AS numeric) THEN
            RETURN pg_catalog.format('%s: %s is more than the maximum %s', p_path, v_n, p_schema ->> 'maximum');
        END IF;
        IF p_schema ? 'exclusiveMinimum' AND v_n <= CAST(p_schema ->> 'exclusiveMinimum' AS numeric) THEN
            RETURN pg_catalog.format('%s: %s must be more than %s', p_path, v_n, p_schema ->> 'exclusiveMinimum');
        END IF;
        IF p_schema ? 'exclusiveMaximum' AND v_n >= CAST(p_schema ->> 'exclusiveMaximum' AS numeric) THEN
            RETURN pg_catalog.format('%s: %s must be less than %s', p_path, v_n, p_schema ->> 'exclusiveMaximum');
        END IF;
        IF p_schema ? 'multipleOf' AND CAST(p_schema ->> 'multipleOf' AS numeric) > 0
           AND v_n % CAST(p_schema ->> 'multipleOf' AS numeric) <> 0 THEN
            RETURN pg_catalog.format('%s: %s is not a multiple of %s', p_path, v_n, p_schema ->> 'multipleOf');
        END IF;
    ELSIF v_kind = 'object' THEN
        IF pg_catalog.jsonb_typeof(p_schema -> 'required') = 'array' THEN
            FOR v_key IN SELECT pg_catalog.jsonb_array_elements_text(p_schema -> 'required') LOOP
                IF NOT p_value ? v_key THEN
                    RETURN pg_catalog.format('%s: %s is required', p_path, v_key);
                END IF;
            END LOOP;
        END IF;
        SELECT count(*) INTO v_count FROM pg_catalog.jsonb_object_keys(p_value);
        IF p_schema ? 'minProperties' AND v_count < CAST(p_schema ->> 'minProperties' AS numeric) THEN
            RETURN pg_catalog.format('%s: fewer than %s fields', p_path, p_schema ->> 'minProperties');
        END IF;
        IF p_schema ? 'maxProperties' AND v_count > CAST(p_schema ->> 'maxProperties' AS numeric) THEN
            RETURN pg_catalog.format('%s: more than %s fields', p_path, p_schema ->> 'maxProperties');
        END IF;
        FOR v_key, v_sub IN SELECT e.k, e.v FROM pg_catalog.jsonb_each(p_value) AS e(k, v) ORDER BY e.k LOOP
            v_err := NULL;
            IF (p_schema -> 'properties') ? v_key THEN
                v_err := public.hookbox_json_schema_error(p_schema -> 'properties' -> v_key, v_sub,
                                                          p_path || '.' || v_key);
            ELSIF p_schema ? 'additionalProperties' THEN
                IF p_schema -> 'additionalProperties' = 'false' THEN
                    RETURN pg_catalog.format('%s: %s is not allowed (additionalProperties: false)',
                                             p_path, pg_catalog.left(v_key, 100));
                END IF;
                v_err := public.hookbox_json_schema_error(p_schema -> 'additionalProperties', v_sub,
                                                          p_path || '.' || v_key);
            END IF;
            IF v_err IS NOT NULL THEN RETURN v_err; END IF;
        END LOOP;
    ELSIF v_kind = 'array' THEN
        v_count := pg_catalog.jsonb_array_length(p_value);
        IF p_schema ? 'minItems' AND v_count < CAST(p_schema ->> 'minItems' AS numeric) THEN
            RETURN pg_catalog.format('%s: fewer than %s items', p_path, p_schema ->> 'minItems');
        END IF;
        IF p_schema ? 'maxItems' AND v_count > CAST(p_schema ->> 'maxItems' AS numeric) THEN
            RETURN pg_catalog.format('%s: more than %s items', p_path, p_schema ->> 'maxItems');
        END IF;
        IF p_schema -> 'uniqueItems' = 'true' AND v_count > (
               SELECT count(DISTINCT e.v) FROM pg_catalog.jsonb_array_elements(p_value) AS e(v)) THEN
            RETURN pg_catalog.format('%s: items are not unique', p_path);
        END IF;
        IF p_schema ? 'items' THEN
            FOR v_i IN 0 .. v_count - 1 LOOP
                v_err := public.hookbox_json_schema_error(p_schema -> 'items', p_value -> v_i,
                                                          p_path || '[' || v_i || ']');
                IF v_err IS NOT NULL THEN RETURN v_err; END IF;
            END LOOP;
        END IF;
    END IF;
    IF pg_catalog.jsonb_typeof(p_schema -> 'allOf') = 'array' THEN
        FOR v_sub IN SELECT pg_catalog.jsonb_array_elements(p_schema -> 'allOf') LOOP
            v_err := public.hookbox_json_schema_error(v_sub, p_value, p_path);
            IF v_err IS NOT NULL THEN RETURN v_err; END IF;
        END LOOP;
    END IF;
    IF pg_catalog.jsonb_typeof(p_schema -> 'anyOf') = 'array' AND NOT EXISTS (
           SELECT 1 FROM pg_catalog.jsonb_array_elements(p_schema -> 'anyOf') AS a(s)
            WHERE public.hookbox_json_schema_error(a.s, p_value, p_path) IS NULL) THEN
        RETURN pg_catalog.format('%s: matches none of anyOf', p_path);
    END IF;
    IF pg_catalog.jsonb_typeof(p_schema -> 'oneOf') = 'array' AND 1 <> (
           SELECT count(*) FROM pg_catalog.jsonb_array_elements(p_schema -> 'oneOf') AS a(s)
            WHERE public.hookbox_json_schema_error(a.s, p_value, p_path) IS NULL) THEN
        RETURN pg_catalog.format('%s: does not match exactly one of oneOf', p_path);
    END IF;
    IF p_schema ? 'not' AND public.hookbox_json_schema_error(p_schema -> 'not', p_value, p_path) IS NULL THEN
        RETURN pg_catalog.format('%s: matches the schema under not', p_path);
    END IF;
    RETURN NULL;
END
$$;

-- Refuses (22023) a payload of p_event_type that its catalogue entry's
-- latest schema does not accept, when the type enforces its schema; names
-- the type and where the payload fails. Nothing for a type not in the
-- catalogue, or not enforcing, or a payload stored by reference (NULL).
CREATE FUNCTION public.hookbox_event_type_check(p_fn text, p_event_type text, p_payload jsonb)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_error text;
BEGIN
    IF p_payload IS NULL THEN
        RETURN;
    END IF;
    SELECT public.hookbox_json_schema_error(public.hookbox_latest_schema(t.schemas), p_payload)
      INTO v_error
      FROM public.hookbox_event_types AS t
     WHERE t.name = p_event_type AND t.enforce_schema AND NOT t.archived;
    IF v_error IS NOT NULL THEN
        RAISE EXCEPTION '%: the payload does not match the schema of event type %: %', p_fn,
            pg_catalog.quote_literal(p_event_type), v_error USING ERRCODE = '22023';
    END IF;
END
$$;

-- A catalogue entry as the SQL face answers it.
CREATE FUNCTION public.hookbox_event_type_doc(t public.hookbox_event_types) RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT pg_catalog.jsonb_build_object(
        'name', t.name, 'description', t.description, 'deprecated', t.deprecated,
        'archived', t.archived, 'schema', public.hookbox_latest_schema(t.schemas),
        'schemas', t.schemas,
        'example', coalesce(t.example, public.hookbox_latest_schema(t.schemas) -> 'examples' -> 0),
        'enforce_schema', t.enforce_schema, 'created_at', t.created_at, 'updated_at', t.updated_at)
$$;

-- Refuses (22023) what enforcing p_schemas cannot do: a keyword the
-- validator does not know, or an example (p_example, else the schema's
-- first `examples` entry) it refuses. (The HTTP API calls it too.)
CREATE FUNCTION public.hookbox_event_type_enforceable(p_fn text, p_schemas jsonb, p_example jsonb)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_schema jsonb := public.hookbox_latest_schema(p_schemas);
    v_unsupported text;
    v_error text;
BEGIN
    IF v_schema IS NULL THEN
        RAISE EXCEPTION '%: enforce_schema needs a schema', p_fn USING ERRCODE = '22023';
    END IF;
    v_unsupported := public.hookbox_json_schema_unsupported(v_schema);
    IF v_unsupported IS NOT NULL THEN
        RAISE EXCEPTION '%: schema keyword % cannot be enforced (docs/portal.md, "The event catalog")',
            p_fn, v_unsupported USING ERRCODE = '22023';
    END IF;
    IF coalesce(p_example, v_schema -> 'examples' -> 0) IS NOT NULL THEN
        v_error := public.hookbox_json_schema_error(v_schema, coalesce(p_example, v_schema -> 'examples' -> 0));
        IF v_error IS NOT NULL THEN
            RAISE EXCEPTION '%: the example does not match the schema: %', p_fn, v_error
                USING ERRCODE = '22023';
        END IF;
    END IF;
END
$$;

-- The example of p_name (its own, else its latest schema's first), or
-- NULL when it has none, is archived or is not in the catalogue; never
-- raises (the portal calls it inside a write's transaction).
CREATE FUNCTION public.hookbox_event_type_example(p_name text) RETURNS jsonb
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT coalesce(t.example, public.hookbox_latest_schema(t.schemas) -> 'examples' -> 0)
      FROM public.hookbox_event_types AS t
     WHERE t.name = p_name AND NOT t.archived
$$;

-- Creates or replaces the event type p_spec names: `name` and
-- `description` (required), `schema` (a JSON Schema: the type's version 1;
-- or `schemas` by version, as Svix keeps them), `example`, `deprecated`,
-- `archived`, `enforce_schema` (its schema must then use only the keywords
-- enforcement knows, and the example must conform). Answers it.
CREATE FUNCTION public.hookbox_event_type_put(p_spec jsonb, p_actor jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_event_type_put';
    v public.hookbox_event_types;
BEGIN
    PERFORM public.hookbox_actor(p_actor);
    PERFORM public.hookbox_check_keys(c_fn, p_spec, ARRAY['name', 'description', 'schema', 'schemas',
        'example', 'deprecated', 'archived', 'enforce_schema']);
    v.name := public.hookbox_field_text(c_fn, p_spec, 'name');
    IF v.name IS NULL OR v.name !~ '^[A-Za-z0-9._-]+$' OR octet_length(v.name) > 256 THEN
        RAISE EXCEPTION '%: name % must be 1 to 256 letters, digits, ''.'', ''-'' or ''_''', c_fn,
            coalesce(pg_catalog.quote_literal(pg_catalog.left(v.name, 300)), 'NULL')
            USING ERRCODE = '22023';
    END IF;
    v.description := public.hookbox_field_text(c_fn, p_spec, 'description');
    IF v.description IS NULL THEN
        RAISE EXCEPTION '%: description is required', c_fn USING ERRCODE = '22023';
    END IF;
    IF p_spec ? 'schema' AND p_spec ? 'schemas' THEN
        RAISE EXCEPTION '%: give schema or schemas, not both', c_fn USING ERRCODE = '22023';
    END IF;
    v.schemas := CASE WHEN p_spec -> 'schema' <> 'null'
                      THEN pg_catalog.jsonb_build_object('1', p_spec -> 'schema')
                      WHEN p_spec -> 'schemas' <> 'null' THEN p_spec -> 'schemas' END;
    IF v.schemas IS NOT NULL AND (pg_catalog.jsonb_typeof(v.schemas) <> 'object' OR EXISTS (
           SELECT 1 FROM pg_catalog.jsonb_each(v.schemas) AS s(k, x)
            WHERE s.k !~ '^[0-9]{1,9}$' OR pg_catalog.jsonb_typeof(s.x) NOT IN ('object', 'boolean'))) THEN
        RAISE EXCEPTION '%: schemas must map versions (1, 2, ...) to JSON Schemas', c_fn
            USING ERRCODE = '22023';
    END IF;
    v.example := CASE WHEN p_spec -> 'example' <> 'null' THEN p_spec -> 'example' END;
    v.deprecated := coalesce(public.hookbox_field_bool(c_fn, p_spec, 'deprecated'), false);
    v.archived := coalesce(public.hookbox_field_bool(c_fn, p_spec, 'archived'), false);
    v.enforce_schema := coalesce(public.hookbox_field_bool(c_fn, p_spec, 'enforce_schema'), false);
    IF v.enforce_schema THEN
        PERFORM public.hookbox_event_type_enforceable(c_fn, v.schemas, v.example);
    END IF;
    v.created_at := pg_catalog.now();
    v.updated_at := v.created_at;
    INSERT INTO public.hookbox_event_types AS t
           (name, description, archived, deprecated, schemas, created_at, updated_at, example,
            enforce_schema)
    VALUES (v.name, v.description, v.archived, v.deprecated, v.schemas, v.created_at,
            v.updated_at, v.example, v.enforce_schema)
    ON CONFLICT (name) DO UPDATE
       SET description = excluded.description, archived = excluded.archived,
           deprecated = excluded.deprecated, schemas = excluded.schemas,
           example = excluded.example, enforce_schema = excluded.enforce_schema,
           updated_at = excluded.updated_at
    RETURNING * INTO v;
    RETURN public.hookbox_event_type_doc(v);
END
$$;

CREATE FUNCTION public.hookbox_event_type_get(p_name text) RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v public.hookbox_event_types;
BEGIN
    SELECT * INTO v FROM public.hookbox_event_types AS t WHERE t.name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'hookbox_event_type_get: no event type %', pg_catalog.quote_nullable(p_name)
            USING ERRCODE = 'P0002';
    END IF;
    RETURN public.hookbox_event_type_doc(v);
END
$$;

-- A page of the catalogue by name after p_after (archived ones too with
-- p_archived): at most p_limit types (1 to 250), and under 48 KiB of
-- documents (at least one), so a page stays within a Data API answer
-- whatever the schemas weigh; `iterator` is where the next starts.
CREATE FUNCTION public.hookbox_event_type_list(p_after text DEFAULT NULL,
                                               p_limit integer DEFAULT 50,
                                               p_archived boolean DEFAULT false)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_docs jsonb;
    v_page jsonb;
BEGIN
    IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 250 THEN
        RAISE EXCEPTION 'hookbox_event_type_list: limit must be 1 to 250, not %',
            coalesce(CAST(p_limit AS text), 'NULL') USING ERRCODE = '22023';
    END IF;
    SELECT coalesce(pg_catalog.jsonb_agg(x.doc ORDER BY x.name), '[]') INTO v_docs
      FROM (SELECT t.name, public.hookbox_event_type_doc(t) AS doc
              FROM public.hookbox_event_types AS t
             WHERE (p_after IS NULL OR t.name > p_after) AND (p_archived OR NOT t.archived)
             ORDER BY t.name LIMIT p_limit + 1) AS x;
    v_page := public.hookbox_attempt_page(v_docs, p_limit);
    RETURN pg_catalog.jsonb_build_object(
        'data', v_page,
        'done', pg_catalog.jsonb_array_length(v_page) = pg_catalog.jsonb_array_length(v_docs),
        'iterator', v_page -> -1 ->> 'name');
END
$$;

-- Deletes an event type from the catalogue (deliveries never depend on
-- it); answers its name.
CREATE FUNCTION public.hookbox_event_type_delete(p_name text, p_actor jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    PERFORM public.hookbox_actor(p_actor);
    DELETE FROM public.hookbox_event_types AS t WHERE t.name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'hookbox_event_type_delete: no event type %', pg_catalog.quote_nullable(p_name)
            USING ERRCODE = 'P0002';
    END IF;
    RETURN pg_catalog.jsonb_build_object('name', p_name, 'deleted', true);
END
$$;

-- hookbox_publish_at of version 20, checking the payload against its event
-- type's schema where the type enforces it (the only change).
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
    PERFORM public.hookbox_event_type_check('hookbox_publish', p_event_type, p_payload);
    IF p_destination IS NOT NULL AND EXISTS (
           SELECT 1 FROM public.outbox_destinations AS d
            WHERE d.name = p_destination AND d.tenant_id IS NOT NULL) THEN
        RAISE EXCEPTION 'hookbox_publish: % is a tenant''s endpoint: publish to its tenant with hookbox_publish_to',
            pg_catalog.quote_literal(p_destination) USING ERRCODE = '22023';
    END IF;

    FOR v_destination IN
        SELECT p_destination WHERE p_destination IS NOT NULL
        UNION ALL
        SELECT d.name FROM public.outbox_destinations AS d
         WHERE p_destination IS NULL
           AND d.tenant_id IS NULL
           AND p_event_type LIKE ANY (d.event_like)
           AND NOT EXISTS (
               SELECT 1 FROM pg_catalog.jsonb_array_elements(d.filters) AS f
                WHERE p_payload IS NULL
                   OR (p_payload #> ARRAY(SELECT pg_catalog.jsonb_array_elements_text(f -> 'path')))
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

-- hookbox_message_write of version 22 (hookbox_publish_to, messages), checking
-- the payload against its event type's schema the same way (the only change).
CREATE OR REPLACE FUNCTION public.hookbox_message_write(
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
    PERFORM public.hookbox_event_type_check(p_fn, p_event_type, p_payload);

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

REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC;
-- the SaaS's backend (and its own portal, if it builds one) may call these
GRANT EXECUTE ON FUNCTION
    public.hookbox_portal_link_create(text, jsonb, jsonb),
    public.hookbox_portal_link_revoke(text, text, text, jsonb),
    public.hookbox_message_resend(text, text, text, jsonb),
    public.hookbox_endpoint_send_example(text, text, text, jsonb, jsonb),
    public.hookbox_portal_attempts(text, text, text, integer, text),
    public.hookbox_endpoint_stats(text, text, integer, timestamptz),
    public.hookbox_event_type_put(jsonb, jsonb),
    public.hookbox_event_type_get(text),
    public.hookbox_event_type_example(text),
    public.hookbox_event_type_list(text, integer, boolean),
    public.hookbox_event_type_delete(text, jsonb)
TO hookbox_manager;
-- only hookbox's own code opens a session from a key, or shows a secret;
-- the HTTP API checks a schema it is asked to enforce as the SQL face does
GRANT EXECUTE ON FUNCTION
    public.hookbox_operator_link_create(integer, text),
    public.hookbox_operator_links_revoke(),
    public.hookbox_event_type_enforceable(text, jsonb, jsonb),
    public.hookbox_portal_session(text, timestamptz),
    public.hookbox_portal_logout(text, timestamptz),
    public.hookbox_endpoint_secret_revealed(text, text, jsonb)
TO hookbox_management;

-- The operator page (/admin) served by the management function: what its
-- routes read and change (counts and lists; replay an inbox row, retry a
-- dead delivery, enable a destination). A role of its own, granted to
-- hookbox_management, whose members serve the page.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookbox_operator') THEN
        CREATE ROLE hookbox_operator NOLOGIN;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
END
$$;
GRANT SELECT, UPDATE ON inbox, outbox, outbox_destinations TO hookbox_operator;
GRANT SELECT ON outbox_attempts, outbox_attempt_log, hookbox_tenants, hookbox_endpoints
    TO hookbox_operator;
GRANT hookbox_operator TO hookbox_management;

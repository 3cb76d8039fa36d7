-- hookbox schema, version 21: managing tenants and endpoints in SQL
-- (docs/tenants.md, "SQL").
--
-- A SaaS backend manages its customers' endpoints in its own transaction,
-- from any language, as it publishes: these functions are the whole model
-- (the HTTP API and the CLI call them too). Each takes and returns JSON
-- documents; each error names the function, the field and the value
-- (SQLSTATE 22023 for a bad field, P0002 for a tenant or endpoint that does
-- not exist, 23505 for a uid already taken). Every change is written to the
-- audit trail in the same transaction.
--
-- Secrets: SQL never reads or writes a signing secret in clear. A new
-- endpoint has none until hookbox's code (the relay before its first
-- delivery, the HTTP API or the CLI at once) generates one and seals it
-- (hookbox_endpoint_secret_store); a rotation through SQL retires the
-- current secret after its grace period and leaves the new one to them the
-- same way.
--
-- Roles: hookbox_manager may call these functions and nothing else (grant
-- it to the SaaS backend's role, like hookbox_publisher). The audit records
-- the SQL face and the session's role; only members of hookbox_management
-- (the management API's and the CLI's role) may name another face and
-- principal (`p_actor`: {"face": "api", "principal": "…"}).

DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['hookbox_manager', 'hookbox_management'] LOOP
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            END IF;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;
        END;
    END LOOP;
END
$$;
GRANT hookbox_manager TO hookbox_management;

-- Who made a change: the SQL face and the session's role, unless the
-- session may speak for another face (hookbox_management).
CREATE FUNCTION public.hookbox_actor(p_actor jsonb, OUT face text, OUT principal text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    face := 'sql';
    principal := session_user;
    IF p_actor IS NOT NULL AND pg_catalog.pg_has_role(session_user, 'hookbox_management', 'MEMBER') THEN
        IF p_actor ->> 'face' NOT IN ('sql', 'api', 'cli', 'portal', 'relay') THEN
            RAISE EXCEPTION 'hookbox: actor face % is not one of sql, api, cli, portal, relay',
                pg_catalog.quote_nullable(p_actor ->> 'face') USING ERRCODE = '22023';
        END IF;
        face := p_actor ->> 'face';
        principal := coalesce(p_actor ->> 'principal', session_user);
    END IF;
END
$$;

CREATE FUNCTION public.hookbox_audit_add(p_tenant text, p_endpoint text, p_action text,
                                         p_changes jsonb, p_actor jsonb)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, public, pg_temp
AS $$
    INSERT INTO public.hookbox_audit (at, tenant_id, endpoint_id, action, face, principal, changes)
    SELECT pg_catalog.now(), p_tenant, p_endpoint, p_action, a.face, a.principal,
           coalesce(p_changes, '{}')
      FROM public.hookbox_actor(p_actor) AS a
$$;

CREATE FUNCTION public.hookbox_tenant_doc(t public.hookbox_tenants) RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT pg_catalog.jsonb_build_object(
        'id', t.id, 'uid', t.uid, 'name', t.name, 'metadata', t.metadata,
        'rate_limit', t.rate_limit, 'disabled', t.disabled_at IS NOT NULL,
        'created_at', t.created_at, 'updated_at', t.updated_at)
$$;

CREATE FUNCTION public.hookbox_endpoint_doc(e public.hookbox_endpoints) RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT pg_catalog.jsonb_build_object(
        'id', e.id, 'tenant_id', e.tenant_id, 'uid', e.uid, 'url', e.url,
        'description', e.description, 'version', e.version,
        'disabled', e.disabled OR d.disabled_at IS NOT NULL,
        'disabled_reason', CASE WHEN e.disabled THEN 'disabled by its owner'
                                ELSE d.disabled_reason END,
        'held', d.held,
        'filter_types', e.filter_types, 'channels', e.channels,
        -- the names only: a header's value may be a credential
        'header_names', (SELECT coalesce(pg_catalog.jsonb_agg(k ORDER BY k), '[]')
                           FROM pg_catalog.jsonb_object_keys(e.headers) AS k),
        'metadata', e.metadata, 'rate_limit', e.rate_limit, 'ordered', d.ordered,
        'health', pg_catalog.jsonb_build_object(
            'consecutive_failures', d.consecutive_failures, 'failing_since', d.failing_since,
            'open_until', d.open_until),
        'created_at', e.created_at, 'updated_at', e.updated_at)
      FROM public.outbox_destinations AS d
     WHERE d.name = e.id
$$;

-- The tenant p_tenant names (id or uid), locked for the caller's change.
CREATE FUNCTION public.hookbox_tenant_find(p_fn text, p_tenant text) RETURNS public.hookbox_tenants
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v public.hookbox_tenants;
BEGIN
    SELECT * INTO v FROM public.hookbox_tenants AS t
     WHERE t.id = p_tenant OR t.uid = p_tenant
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: no tenant %', p_fn, pg_catalog.quote_nullable(p_tenant)
            USING ERRCODE = 'P0002';
    END IF;
    RETURN v;
END
$$;

-- The endpoint p_endpoint names (id or uid) among the tenant's, locked.
CREATE FUNCTION public.hookbox_endpoint_find(p_fn text, p_tenant public.hookbox_tenants,
                                             p_endpoint text)
RETURNS public.hookbox_endpoints
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v public.hookbox_endpoints;
BEGIN
    SELECT * INTO v FROM public.hookbox_endpoints AS e
     WHERE e.tenant_id = p_tenant.id AND (e.id = p_endpoint OR e.uid = p_endpoint)
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: tenant % has no endpoint %', p_fn, pg_catalog.quote_literal(p_tenant.id),
            pg_catalog.quote_nullable(p_endpoint) USING ERRCODE = 'P0002';
    END IF;
    RETURN v;
END
$$;

-- Refuses, naming it, a field of p_doc that is not in p_known.
CREATE FUNCTION public.hookbox_check_keys(p_fn text, p_doc jsonb, p_known text[]) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_key text;
BEGIN
    IF p_doc IS NULL OR pg_catalog.jsonb_typeof(p_doc) <> 'object' THEN
        RAISE EXCEPTION '%: expected a JSON object of fields, got %', p_fn,
            coalesce(pg_catalog.jsonb_typeof(p_doc), 'NULL') USING ERRCODE = '22023';
    END IF;
    FOR v_key IN SELECT k FROM pg_catalog.jsonb_object_keys(p_doc) AS k ORDER BY k LOOP
        IF NOT v_key = ANY (p_known) THEN
            RAISE EXCEPTION '%: unknown field % (known: %)', p_fn, pg_catalog.quote_literal(v_key),
                pg_catalog.array_to_string(p_known, ', ') USING ERRCODE = '22023';
        END IF;
    END LOOP;
END
$$;

-- p_doc's field p_field as text (NULL when absent or null), refused unless a
-- string.
CREATE FUNCTION public.hookbox_field_text(p_fn text, p_doc jsonb, p_field text) RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    IF NOT p_doc ? p_field OR pg_catalog.jsonb_typeof(p_doc -> p_field) = 'null' THEN
        RETURN NULL;
    END IF;
    IF pg_catalog.jsonb_typeof(p_doc -> p_field) <> 'string' THEN
        RAISE EXCEPTION '%: % must be a string, not %', p_fn, p_field,
            pg_catalog.jsonb_typeof(p_doc -> p_field) USING ERRCODE = '22023';
    END IF;
    RETURN p_doc ->> p_field;
END
$$;

-- A map of strings (metadata, headers), or the empty map when absent.
CREATE FUNCTION public.hookbox_field_map(p_fn text, p_doc jsonb, p_field text, p_max integer)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v jsonb := p_doc -> p_field;
    v_bad text;
BEGIN
    IF v IS NULL OR pg_catalog.jsonb_typeof(v) = 'null' THEN
        RETURN '{}';
    END IF;
    IF pg_catalog.jsonb_typeof(v) <> 'object' THEN
        RAISE EXCEPTION '%: % must be an object of strings, not %', p_fn, p_field,
            pg_catalog.jsonb_typeof(v) USING ERRCODE = '22023';
    END IF;
    SELECT k INTO v_bad FROM pg_catalog.jsonb_each(v) AS e(k, x)
     WHERE pg_catalog.jsonb_typeof(x) <> 'string' ORDER BY k LIMIT 1;
    IF v_bad IS NOT NULL THEN
        RAISE EXCEPTION '%: %.% must be a string', p_fn, p_field, v_bad USING ERRCODE = '22023';
    END IF;
    IF (SELECT count(*) FROM pg_catalog.jsonb_object_keys(v)) > p_max
       OR octet_length(CAST(v AS text)) > 16384 THEN
        RAISE EXCEPTION '%: % holds more than % entries or 16384 bytes', p_fn, p_field, p_max
            USING ERRCODE = '22023';
    END IF;
    RETURN v;
END
$$;

-- A list of strings matching p_pattern (NULL when absent or null; an empty
-- list is refused: leave the field out for "all").
CREATE FUNCTION public.hookbox_field_list(p_fn text, p_doc jsonb, p_field text, p_max integer,
                                          p_pattern text, p_what text)
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v jsonb := p_doc -> p_field;
    v_item jsonb;
BEGIN
    IF v IS NULL OR pg_catalog.jsonb_typeof(v) = 'null' THEN
        RETURN NULL;
    END IF;
    IF pg_catalog.jsonb_typeof(v) <> 'array' THEN
        RAISE EXCEPTION '%: % must be a list of strings, not %', p_fn, p_field,
            pg_catalog.jsonb_typeof(v) USING ERRCODE = '22023';
    END IF;
    IF pg_catalog.jsonb_array_length(v) NOT BETWEEN 1 AND p_max THEN
        RAISE EXCEPTION '%: % holds % entries: 1 to % (leave it out, or null, for all)', p_fn,
            p_field, pg_catalog.jsonb_array_length(v), p_max USING ERRCODE = '22023';
    END IF;
    FOR v_item IN SELECT x FROM pg_catalog.jsonb_array_elements(v) AS x LOOP
        IF pg_catalog.jsonb_typeof(v_item) <> 'string' OR NOT (v_item #>> '{}') ~ p_pattern
           OR octet_length(v_item #>> '{}') > 256 THEN
            RAISE EXCEPTION '%: % holds %, not %', p_fn, p_field, CAST(v_item AS text), p_what
                USING ERRCODE = '22023';
        END IF;
    END LOOP;
    RETURN ARRAY(SELECT DISTINCT x FROM pg_catalog.jsonb_array_elements_text(v) AS x ORDER BY x);
END
$$;

-- A positive integer field (NULL when absent or null).
CREATE FUNCTION public.hookbox_field_int(p_fn text, p_doc jsonb, p_field text, p_max bigint)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v jsonb := p_doc -> p_field;
BEGIN
    IF v IS NULL OR pg_catalog.jsonb_typeof(v) = 'null' THEN
        RETURN NULL;
    END IF;
    IF pg_catalog.jsonb_typeof(v) <> 'number' OR CAST(v AS numeric) <> trunc(CAST(v AS numeric))
       OR CAST(v AS numeric) NOT BETWEEN 1 AND p_max THEN
        RAISE EXCEPTION '%: % must be a whole number from 1 to %, not %', p_fn, p_field, p_max,
            CAST(v AS text) USING ERRCODE = '22023';
    END IF;
    RETURN CAST(v AS integer);
END
$$;

CREATE FUNCTION public.hookbox_field_bool(p_fn text, p_doc jsonb, p_field text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v jsonb := p_doc -> p_field;
BEGIN
    IF v IS NULL OR pg_catalog.jsonb_typeof(v) = 'null' THEN
        RETURN NULL;
    END IF;
    IF pg_catalog.jsonb_typeof(v) <> 'boolean' THEN
        RAISE EXCEPTION '%: % must be true or false, not %', p_fn, p_field, CAST(v AS text)
            USING ERRCODE = '22023';
    END IF;
    RETURN CAST(v AS boolean);
END
$$;

-- A uid: the SaaS's own id for a tenant or an endpoint.
CREATE FUNCTION public.hookbox_field_uid(p_fn text, p_doc jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v text := public.hookbox_field_text(p_fn, p_doc, 'uid');
BEGIN
    IF v IS NOT NULL AND (v !~ '^[A-Za-z0-9._-]+$' OR octet_length(v) > 256
                          OR v ~ '^(app|ep|msg)_') THEN
        RAISE EXCEPTION '%: uid % must be 1 to 256 letters, digits, ''.'', ''-'' or ''_'', not starting with app_, ep_ or msg_ (hookbox''s own ids)',
            p_fn, pg_catalog.quote_literal(v) USING ERRCODE = '22023';
    END IF;
    RETURN v;
END
$$;

-- ------------------------------------------------------------------ tenants

CREATE FUNCTION public.hookbox_tenant_create(p_spec jsonb, p_actor jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_tenant_create';
    v public.hookbox_tenants;
BEGIN
    PERFORM public.hookbox_check_keys(c_fn, p_spec, ARRAY['uid', 'name', 'metadata', 'rate_limit']);
    v.id := public.hookbox_new_id('app');
    v.uid := public.hookbox_field_uid(c_fn, p_spec);
    v.name := public.hookbox_field_text(c_fn, p_spec, 'name');
    IF v.name IS NULL OR v.name = '' OR octet_length(v.name) > 256 THEN
        RAISE EXCEPTION '%: name is required: 1 to 256 bytes', c_fn USING ERRCODE = '22023';
    END IF;
    v.metadata := public.hookbox_field_map(c_fn, p_spec, 'metadata', 64);
    v.rate_limit := public.hookbox_field_int(c_fn, p_spec, 'rate_limit', 65535);
    v.created_at := pg_catalog.now();
    v.updated_at := v.created_at;
    IF v.uid IS NOT NULL AND EXISTS (SELECT 1 FROM public.hookbox_tenants AS t WHERE t.uid = v.uid) THEN
        RAISE EXCEPTION '%: a tenant with uid % exists', c_fn, pg_catalog.quote_literal(v.uid)
            USING ERRCODE = '23505';
    END IF;
    INSERT INTO public.hookbox_tenants VALUES (v.*);
    PERFORM public.hookbox_audit_add(v.id, NULL, 'tenant.created',
                                     public.hookbox_tenant_doc(v) - 'created_at' - 'updated_at',
                                     p_actor);
    RETURN public.hookbox_tenant_doc(v);
END
$$;

CREATE FUNCTION public.hookbox_tenant_get(p_tenant text) RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v public.hookbox_tenants;
BEGIN
    SELECT * INTO v FROM public.hookbox_tenants AS t WHERE t.id = p_tenant OR t.uid = p_tenant;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'hookbox_tenant_get: no tenant %', pg_catalog.quote_nullable(p_tenant)
            USING ERRCODE = 'P0002';
    END IF;
    RETURN public.hookbox_tenant_doc(v);
END
$$;

-- A page of tenants in id order (creation order to the millisecond) after p_after (an id; NULL: from the
-- first): {"data": [...], "iterator": <the last id, for the next page>,
-- "done": <no more>}.
CREATE FUNCTION public.hookbox_tenant_list(p_after text DEFAULT NULL, p_limit integer DEFAULT 50)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_page jsonb;
    v_more boolean;
BEGIN
    IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 250 THEN
        RAISE EXCEPTION 'hookbox_tenant_list: limit must be 1 to 250, not %', coalesce(CAST(p_limit AS text), 'NULL')
            USING ERRCODE = '22023';
    END IF;
    SELECT coalesce(pg_catalog.jsonb_agg(public.hookbox_tenant_doc(t) ORDER BY t.id), '[]')
      INTO v_page
      FROM (SELECT * FROM public.hookbox_tenants AS x
             WHERE p_after IS NULL OR x.id > p_after
             ORDER BY x.id LIMIT p_limit) AS t;
    SELECT EXISTS (SELECT 1 FROM public.hookbox_tenants AS x
                    WHERE x.id > coalesce(v_page -> -1 ->> 'id', p_after, ''))
      INTO v_more;
    RETURN pg_catalog.jsonb_build_object('data', v_page, 'iterator', v_page -> -1 -> 'id',
                                         'done', NOT v_more);
END
$$;

-- Changes the fields p_changes names (uid, name, metadata, rate_limit; a
-- null clears uid or rate_limit); the others stay.
CREATE FUNCTION public.hookbox_tenant_update(p_tenant text, p_changes jsonb, p_actor jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_tenant_update';
    v public.hookbox_tenants := public.hookbox_tenant_find(c_fn, p_tenant);
    v_before jsonb := public.hookbox_tenant_doc(v);
BEGIN
    PERFORM public.hookbox_check_keys(c_fn, p_changes, ARRAY['uid', 'name', 'metadata', 'rate_limit']);
    IF p_changes ? 'uid' THEN
        v.uid := public.hookbox_field_uid(c_fn, p_changes);
        IF v.uid IS NOT NULL AND EXISTS (SELECT 1 FROM public.hookbox_tenants AS t
                                          WHERE t.uid = v.uid AND t.id <> v.id) THEN
            RAISE EXCEPTION '%: a tenant with uid % exists', c_fn, pg_catalog.quote_literal(v.uid)
                USING ERRCODE = '23505';
        END IF;
    END IF;
    IF p_changes ? 'name' THEN
        v.name := public.hookbox_field_text(c_fn, p_changes, 'name');
        IF v.name IS NULL OR v.name = '' OR octet_length(v.name) > 256 THEN
            RAISE EXCEPTION '%: name must be 1 to 256 bytes', c_fn USING ERRCODE = '22023';
        END IF;
    END IF;
    IF p_changes ? 'metadata' THEN
        v.metadata := public.hookbox_field_map(c_fn, p_changes, 'metadata', 64);
    END IF;
    IF p_changes ? 'rate_limit' THEN
        v.rate_limit := public.hookbox_field_int(c_fn, p_changes, 'rate_limit', 65535);
    END IF;
    v.updated_at := pg_catalog.now();
    UPDATE public.hookbox_tenants AS t
       SET uid = v.uid, name = v.name, metadata = v.metadata, rate_limit = v.rate_limit,
           updated_at = v.updated_at
     WHERE t.id = v.id;
    PERFORM public.hookbox_audit_add(v.id, NULL, 'tenant.updated',
        (SELECT coalesce(pg_catalog.jsonb_object_agg(k, pg_catalog.jsonb_build_object(
                    'from', v_before -> k, 'to', public.hookbox_tenant_doc(v) -> k)), '{}')
           FROM pg_catalog.jsonb_object_keys(p_changes) AS k
          WHERE v_before -> k IS DISTINCT FROM public.hookbox_tenant_doc(v) -> k),
        p_actor);
    RETURN public.hookbox_tenant_doc(v);
END
$$;

-- Disables (p_disabled) or enables a tenant: every endpoint of a disabled
-- tenant is held (its deliveries wait), whatever its own state.
CREATE FUNCTION public.hookbox_tenant_set_disabled(p_tenant text, p_disabled boolean,
                                                   p_actor jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_tenant_set_disabled';
    v public.hookbox_tenants := public.hookbox_tenant_find(c_fn, p_tenant);
BEGIN
    IF p_disabled IS NULL THEN
        RAISE EXCEPTION '%: disabled must be true or false', c_fn USING ERRCODE = '22023';
    END IF;
    IF (v.disabled_at IS NOT NULL) = p_disabled THEN
        RETURN public.hookbox_tenant_doc(v);
    END IF;
    v.disabled_at := CASE WHEN p_disabled THEN pg_catalog.now() END;
    v.updated_at := pg_catalog.now();
    UPDATE public.hookbox_tenants AS t SET disabled_at = v.disabled_at, updated_at = v.updated_at
     WHERE t.id = v.id;
    UPDATE public.outbox_destinations AS d
       SET held = p_disabled OR e.disabled
      FROM public.hookbox_endpoints AS e
     WHERE e.id = d.name AND e.tenant_id = v.id;
    PERFORM public.hookbox_audit_add(v.id, NULL,
                                     CASE WHEN p_disabled THEN 'tenant.disabled' ELSE 'tenant.enabled' END,
                                     NULL, p_actor);
    RETURN public.hookbox_tenant_doc(v);
END
$$;

-- Deletes a tenant with its endpoints, their secrets and their undelivered
-- deliveries; says how many of each. Delivered and dead deliveries stay
-- (history, until retention).
CREATE FUNCTION public.hookbox_tenant_delete(p_tenant text, p_actor jsonb DEFAULT NULL)
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
BEGIN
    SELECT count(*) INTO v_secrets FROM public.hookbox_endpoint_secrets AS s
      JOIN public.hookbox_endpoints AS e ON e.id = s.endpoint_id
     WHERE e.tenant_id = v.id;
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
                                      'secrets', v_secrets, 'undelivered', v_undelivered),
        p_actor);
    RETURN pg_catalog.jsonb_build_object('id', v.id, 'uid', v.uid, 'endpoints', v_endpoints,
                                         'secrets', v_secrets, 'undelivered', v_undelivered);
END
$$;

-- ---------------------------------------------------------------- endpoints

-- Checks an endpoint's fields (all of them on create, those named on
-- update) and writes the endpoint row and its outbox_destinations row.
CREATE FUNCTION public.hookbox_endpoint_write(p_fn text, p_tenant public.hookbox_tenants,
                                              p_old public.hookbox_endpoints, p_doc jsonb)
RETURNS public.hookbox_endpoints
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v public.hookbox_endpoints := p_old;
    v_ordered boolean;
    v_name text;
    v_types text[];
BEGIN
    PERFORM public.hookbox_check_keys(p_fn, p_doc,
        ARRAY['uid', 'url', 'description', 'version', 'disabled', 'filter_types', 'channels',
              'headers', 'metadata', 'rate_limit', 'ordered']);
    IF p_old.id IS NULL THEN
        v.id := public.hookbox_new_id('ep');
        v.tenant_id := p_tenant.id;
        v.created_at := pg_catalog.now();
        v.version := 1;
        v.disabled := false;
        v.description := '';
        v.headers := '{}';
        v.metadata := '{}';
        IF NOT p_doc ? 'url' THEN
            RAISE EXCEPTION '%: url is required', p_fn USING ERRCODE = '22023';
        END IF;
    END IF;
    IF p_doc ? 'uid' THEN
        v.uid := public.hookbox_field_uid(p_fn, p_doc);
        IF v.uid IS NOT NULL AND EXISTS (SELECT 1 FROM public.hookbox_endpoints AS e
                                          WHERE e.tenant_id = p_tenant.id AND e.uid = v.uid
                                            AND e.id <> v.id) THEN
            RAISE EXCEPTION '%: tenant % has an endpoint with uid %', p_fn,
                pg_catalog.quote_literal(p_tenant.id), pg_catalog.quote_literal(v.uid)
                USING ERRCODE = '23505';
        END IF;
    END IF;
    IF p_doc ? 'url' THEN
        v.url := public.hookbox_field_text(p_fn, p_doc, 'url');
        IF v.url IS NULL OR v.url !~ '^https?://[^[:space:]/?#]+([/?#][^[:space:]]*)?$'
           OR octet_length(v.url) > 2048 THEN
            RAISE EXCEPTION '%: url % is not an http:// or https:// URL of at most 2048 bytes',
                p_fn, pg_catalog.quote_nullable(pg_catalog.left(v.url, 200)) USING ERRCODE = '22023';
        END IF;
    END IF;
    IF p_doc ? 'description' THEN
        v.description := coalesce(public.hookbox_field_text(p_fn, p_doc, 'description'), '');
        IF octet_length(v.description) > 4096 THEN
            RAISE EXCEPTION '%: description is % bytes, over 4096', p_fn, octet_length(v.description)
                USING ERRCODE = '22023';
        END IF;
    END IF;
    IF p_doc ? 'version' THEN
        v.version := coalesce(public.hookbox_field_int(p_fn, p_doc, 'version', 2147483647), 1);
    END IF;
    IF p_doc ? 'disabled' THEN
        v.disabled := coalesce(public.hookbox_field_bool(p_fn, p_doc, 'disabled'), false);
    END IF;
    IF p_doc ? 'filter_types' THEN
        v.filter_types := public.hookbox_field_list(p_fn, p_doc, 'filter_types', 256,
            '^[^[:cntrl:]]+$', 'an event type or pattern of 1 to 256 characters');
    END IF;
    IF p_doc ? 'channels' THEN
        v.channels := public.hookbox_field_list(p_fn, p_doc, 'channels', 64,
            '^[A-Za-z0-9_.:-]{1,128}$', 'a channel (1 to 128 letters, digits, ''_'', ''.'', '':'' or ''-'')');
    END IF;
    IF p_doc ? 'headers' THEN
        v.headers := public.hookbox_field_map(p_fn, p_doc, 'headers', 20);
        SELECT k INTO v_name FROM pg_catalog.jsonb_each_text(v.headers) AS h(k, x)
         WHERE k !~ '^[A-Za-z0-9-]{1,64}$'
            OR pg_catalog.lower(k) ~ '^(webhook-|svix-|content-|host$|user-agent$|connection$|transfer-encoding$|te$|upgrade$|keep-alive$|proxy-|trailer$|expect$)'
            OR x ~ '[[:cntrl:]]'
         ORDER BY k LIMIT 1;
        IF v_name IS NOT NULL THEN
            RAISE EXCEPTION '%: header % is not allowed (a name of letters, digits and ''-''; not webhook-*, svix-*, content-*, host, user-agent or a hop-by-hop header; no control characters in its value)',
                p_fn, pg_catalog.quote_literal(v_name) USING ERRCODE = '22023';
        END IF;
    END IF;
    IF p_doc ? 'metadata' THEN
        v.metadata := public.hookbox_field_map(p_fn, p_doc, 'metadata', 64);
    END IF;
    IF p_doc ? 'rate_limit' THEN
        v.rate_limit := public.hookbox_field_int(p_fn, p_doc, 'rate_limit', 65535);
    END IF;
    v_ordered := public.hookbox_field_bool(p_fn, p_doc, 'ordered');
    v.updated_at := pg_catalog.now();
    v_types := coalesce(v.filter_types, ARRAY['*']);

    IF p_old.id IS NULL THEN
        INSERT INTO public.outbox_destinations AS d (name, event_types, event_like, filters,
                                                     synced_at, tenant_id, ordered, held)
        VALUES (v.id, v_types,
                ARRAY(SELECT public.hookbox_like_pattern(x) FROM pg_catalog.unnest(v_types) AS x),
                '[]', v.updated_at, p_tenant.id, coalesce(v_ordered, false),
                v.disabled OR p_tenant.disabled_at IS NOT NULL);
        INSERT INTO public.hookbox_endpoints VALUES (v.*);
    ELSE
        UPDATE public.hookbox_endpoints AS e
           SET uid = v.uid, url = v.url, description = v.description, version = v.version,
               disabled = v.disabled, filter_types = v.filter_types, channels = v.channels,
               headers = v.headers, metadata = v.metadata, rate_limit = v.rate_limit,
               updated_at = v.updated_at
         WHERE e.id = v.id;
        UPDATE public.outbox_destinations AS d
           SET event_types = v_types,
               event_like = ARRAY(SELECT public.hookbox_like_pattern(x) FROM pg_catalog.unnest(v_types) AS x),
               ordered = coalesce(v_ordered, d.ordered),
               held = v.disabled OR p_tenant.disabled_at IS NOT NULL,
               synced_at = v.updated_at,
               -- enabling by its owner also closes what continuous failure
               -- opened (it says the receiver is back)
               disabled_at = CASE WHEN p_old.disabled AND NOT v.disabled THEN NULL ELSE d.disabled_at END,
               disabled_reason = CASE WHEN p_old.disabled AND NOT v.disabled THEN NULL ELSE d.disabled_reason END
         WHERE d.name = v.id;
    END IF;
    RETURN v;
END
$$;

-- The fields of an endpoint document an audit entry compares.
CREATE FUNCTION public.hookbox_endpoint_changes(p_before jsonb, p_after jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT coalesce(pg_catalog.jsonb_object_agg(k, pg_catalog.jsonb_build_object(
               'from', p_before -> k, 'to', p_after -> k)), '{}')
      FROM pg_catalog.jsonb_object_keys(p_after) AS k
     WHERE k NOT IN ('updated_at', 'created_at', 'health', 'held', 'disabled_reason')
       AND p_before -> k IS DISTINCT FROM p_after -> k
$$;

-- Creates an endpoint of p_tenant from p_spec: url (required), uid,
-- description, version, disabled, filter_types (NULL: every type), channels,
-- headers, metadata, rate_limit, ordered.
CREATE FUNCTION public.hookbox_endpoint_create(p_tenant text, p_spec jsonb,
                                               p_actor jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_endpoint_create';
    v_tenant public.hookbox_tenants := public.hookbox_tenant_find(c_fn, p_tenant);
    v public.hookbox_endpoints;
    v_doc jsonb;
BEGIN
    v := public.hookbox_endpoint_write(c_fn, v_tenant, v, p_spec);
    v_doc := public.hookbox_endpoint_doc(v);
    PERFORM public.hookbox_audit_add(v_tenant.id, v.id, 'endpoint.created',
        public.hookbox_endpoint_changes('{}', v_doc) - 'id' - 'tenant_id', p_actor);
    RETURN v_doc;
END
$$;

CREATE FUNCTION public.hookbox_endpoint_get(p_tenant text, p_endpoint text) RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v public.hookbox_endpoints;
BEGIN
    SELECT e.* INTO v FROM public.hookbox_endpoints AS e
      JOIN public.hookbox_tenants AS t ON t.id = e.tenant_id
     WHERE (t.id = p_tenant OR t.uid = p_tenant) AND (e.id = p_endpoint OR e.uid = p_endpoint);
    IF NOT FOUND THEN
        RAISE EXCEPTION 'hookbox_endpoint_get: tenant % has no endpoint %',
            pg_catalog.quote_nullable(p_tenant), pg_catalog.quote_nullable(p_endpoint)
            USING ERRCODE = 'P0002';
    END IF;
    RETURN public.hookbox_endpoint_doc(v);
END
$$;

-- A page of a tenant's endpoints in id order after p_after (an id).
CREATE FUNCTION public.hookbox_endpoint_list(p_tenant text, p_after text DEFAULT NULL,
                                             p_limit integer DEFAULT 50)
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
        RAISE EXCEPTION 'hookbox_endpoint_list: no tenant %', pg_catalog.quote_nullable(p_tenant)
            USING ERRCODE = 'P0002';
    END IF;
    IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 250 THEN
        RAISE EXCEPTION 'hookbox_endpoint_list: limit must be 1 to 250, not %', coalesce(CAST(p_limit AS text), 'NULL')
            USING ERRCODE = '22023';
    END IF;
    SELECT coalesce(pg_catalog.jsonb_agg(public.hookbox_endpoint_doc(e) ORDER BY e.id), '[]')
      INTO v_page
      FROM (SELECT * FROM public.hookbox_endpoints AS x
             WHERE x.tenant_id = v_tenant AND (p_after IS NULL OR x.id > p_after)
             ORDER BY x.id LIMIT p_limit) AS e;
    SELECT EXISTS (SELECT 1 FROM public.hookbox_endpoints AS x
                    WHERE x.tenant_id = v_tenant
                      AND x.id > coalesce(v_page -> -1 ->> 'id', p_after, ''))
      INTO v_more;
    RETURN pg_catalog.jsonb_build_object('data', v_page, 'iterator', v_page -> -1 -> 'id',
                                         'done', NOT v_more);
END
$$;

-- Changes the fields p_changes names; the others stay. `disabled`: false
-- enables it (also after the breaker disabled it), true holds its
-- deliveries.
CREATE FUNCTION public.hookbox_endpoint_update(p_tenant text, p_endpoint text, p_changes jsonb,
                                               p_actor jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_endpoint_update';
    v_tenant public.hookbox_tenants := public.hookbox_tenant_find(c_fn, p_tenant);
    v_old public.hookbox_endpoints := public.hookbox_endpoint_find(c_fn, v_tenant, p_endpoint);
    v_before jsonb := public.hookbox_endpoint_doc(v_old);
    v public.hookbox_endpoints;
    v_doc jsonb;
    v_changes jsonb;
BEGIN
    v := public.hookbox_endpoint_write(c_fn, v_tenant, v_old, p_changes);
    v_doc := public.hookbox_endpoint_doc(v);
    v_changes := public.hookbox_endpoint_changes(v_before, v_doc);
    IF p_changes ? 'headers' AND v_old.headers IS DISTINCT FROM v.headers THEN
        -- values may be credentials: which headers, not what they hold
        v_changes := v_changes || pg_catalog.jsonb_build_object('headers', 'changed (values not recorded)');
    END IF;
    PERFORM public.hookbox_audit_add(v_tenant.id, v.id,
        CASE WHEN v_changes ? 'disabled' AND (v_doc ->> 'disabled')::boolean THEN 'endpoint.disabled'
             WHEN v_changes ? 'disabled' THEN 'endpoint.enabled'
             ELSE 'endpoint.updated' END,
        v_changes, p_actor);
    RETURN v_doc;
END
$$;

-- Deletes an endpoint with its secrets and its undelivered deliveries;
-- says how many.
CREATE FUNCTION public.hookbox_endpoint_delete(p_tenant text, p_endpoint text,
                                               p_actor jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_endpoint_delete';
    v_tenant public.hookbox_tenants := public.hookbox_tenant_find(c_fn, p_tenant);
    v public.hookbox_endpoints := public.hookbox_endpoint_find(c_fn, v_tenant, p_endpoint);
    v_undelivered bigint;
    v_secrets bigint;
BEGIN
    SELECT count(*) INTO v_secrets FROM public.hookbox_endpoint_secrets AS s
     WHERE s.endpoint_id = v.id;
    WITH gone AS (
        DELETE FROM public.outbox AS o
         WHERE o.destination = v.id AND o.status = 'pending'
        RETURNING 1)
    SELECT count(*) INTO v_undelivered FROM gone;
    DELETE FROM public.outbox_destinations AS d WHERE d.name = v.id;
    PERFORM public.hookbox_audit_add(v_tenant.id, v.id, 'endpoint.deleted',
        pg_catalog.jsonb_build_object('uid', v.uid, 'secrets', v_secrets,
                                      'undelivered', v_undelivered),
        p_actor);
    RETURN pg_catalog.jsonb_build_object('id', v.id, 'uid', v.uid, 'secrets', v_secrets,
                                         'undelivered', v_undelivered);
END
$$;

-- Rotation through SQL: the current secret is signed with for p_grace_secs
-- more (deliveries carry both signatures meanwhile), and hookbox's code
-- seals the new one before the endpoint's next delivery. Returns when the
-- old one stops being used.
CREATE FUNCTION public.hookbox_endpoint_rotate_secret(p_tenant text, p_endpoint text,
                                                      p_grace_secs integer DEFAULT 86400,
                                                      p_actor jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_endpoint_rotate_secret';
    v_tenant public.hookbox_tenants := public.hookbox_tenant_find(c_fn, p_tenant);
    v public.hookbox_endpoints := public.hookbox_endpoint_find(c_fn, v_tenant, p_endpoint);
    v_until timestamptz;
BEGIN
    IF p_grace_secs IS NULL OR p_grace_secs NOT BETWEEN 0 AND 604800 THEN
        RAISE EXCEPTION '%: grace must be 0 to 604800 seconds (7 days), not %', c_fn,
            coalesce(CAST(p_grace_secs AS text), 'NULL') USING ERRCODE = '22023';
    END IF;
    v_until := pg_catalog.now() + pg_catalog.make_interval(secs => p_grace_secs);
    UPDATE public.hookbox_endpoint_secrets AS s SET expires_at = v_until
     WHERE s.endpoint_id = v.id AND s.expires_at IS NULL;
    PERFORM public.hookbox_audit_add(v_tenant.id, v.id, 'endpoint.secret_rotated',
        pg_catalog.jsonb_build_object('previous_valid_until', v_until, 'new', 'sealed by hookbox'),
        p_actor);
    RETURN pg_catalog.jsonb_build_object('id', v.id, 'previous_valid_until', v_until);
END
$$;

-- Stores a secret sealed by hookbox's code as the endpoint's current one
-- (what a rotation through the API or the CLI, or the relay for an
-- endpoint without one, writes): the current one, if any, is retired after
-- p_grace_secs. With p_only_if_none, nothing happens when the endpoint has
-- a current secret already (two relays sealing one at once keep one).
-- Returns whether it was stored.
CREATE FUNCTION public.hookbox_endpoint_secret_store(p_endpoint text, p_secret_id uuid,
                                                     p_data_key_id uuid, p_sealed bytea,
                                                     p_grace_secs integer, p_only_if_none boolean,
                                                     p_actor jsonb DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v public.hookbox_endpoints;
BEGIN
    SELECT * INTO v FROM public.hookbox_endpoints AS e WHERE e.id = p_endpoint FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'hookbox_endpoint_secret_store: no endpoint %', pg_catalog.quote_nullable(p_endpoint)
            USING ERRCODE = 'P0002';
    END IF;
    IF p_only_if_none AND EXISTS (SELECT 1 FROM public.hookbox_endpoint_secrets AS s
                                   WHERE s.endpoint_id = v.id AND s.expires_at IS NULL) THEN
        RETURN false;
    END IF;
    UPDATE public.hookbox_endpoint_secrets AS s
       SET expires_at = pg_catalog.now() + pg_catalog.make_interval(secs => greatest(p_grace_secs, 0))
     WHERE s.endpoint_id = v.id AND s.expires_at IS NULL;
    INSERT INTO public.hookbox_endpoint_secrets (endpoint_id, id, data_key_id, sealed, created_at)
    VALUES (v.id, p_secret_id, p_data_key_id, p_sealed, pg_catalog.now());
    PERFORM public.hookbox_audit_add(v.tenant_id, v.id, 'endpoint.secret_sealed',
        pg_catalog.jsonb_build_object('secret_id', p_secret_id, 'previous_grace_secs',
                                      CASE WHEN p_only_if_none THEN NULL ELSE p_grace_secs END),
        p_actor);
    RETURN true;
END
$$;

-- The audit trail of a tenant, oldest first, after p_after (a seq).
CREATE FUNCTION public.hookbox_audit_list(p_tenant text, p_after bigint DEFAULT NULL,
                                          p_limit integer DEFAULT 100)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_tenant text := coalesce(public.hookbox_tenant_id(p_tenant), p_tenant);
    v_page jsonb;
BEGIN
    IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'hookbox_audit_list: limit must be 1 to 1000' USING ERRCODE = '22023';
    END IF;
    SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.to_jsonb(a) ORDER BY a.seq), '[]') INTO v_page
      FROM (SELECT * FROM public.hookbox_audit AS x
             WHERE x.tenant_id = v_tenant AND x.seq > coalesce(p_after, 0)
             ORDER BY x.seq LIMIT p_limit) AS a;
    RETURN pg_catalog.jsonb_build_object('data', v_page, 'iterator', v_page -> -1 ->> 'seq',
                                         'done', pg_catalog.jsonb_array_length(v_page) < p_limit);
END
$$;

-- Who may call what: the helpers belong to the functions above.
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    public.hookbox_tenant_create(jsonb, jsonb),
    public.hookbox_tenant_get(text),
    public.hookbox_tenant_list(text, integer),
    public.hookbox_tenant_update(text, jsonb, jsonb),
    public.hookbox_tenant_set_disabled(text, boolean, jsonb),
    public.hookbox_tenant_delete(text, jsonb),
    public.hookbox_endpoint_create(text, jsonb, jsonb),
    public.hookbox_endpoint_get(text, text),
    public.hookbox_endpoint_list(text, text, integer),
    public.hookbox_endpoint_update(text, text, jsonb, jsonb),
    public.hookbox_endpoint_delete(text, text, jsonb),
    public.hookbox_endpoint_rotate_secret(text, text, integer, jsonb),
    public.hookbox_audit_list(text, bigint, integer)
TO hookbox_manager;
-- sealing is hookbox's code's: the management API and CLI, and the relay
GRANT EXECUTE ON FUNCTION
    public.hookbox_endpoint_secret_store(text, uuid, uuid, bytea, integer, boolean, jsonb)
TO hookbox_management, hookbox_relay;
GRANT SELECT ON hookbox_endpoint_secrets, hookbox_data_keys, hookbox_endpoints, hookbox_tenants
    TO hookbox_management;
GRANT INSERT ON hookbox_data_keys TO hookbox_management;

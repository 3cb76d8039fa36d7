-- hookbox schema, version 20: tenants and their endpoints, as data
-- (docs/tenants.md).
--
-- A tenant is one customer of the SaaS that runs hookbox (Svix calls it an
-- application): hookbox's own id (`app_…`), and the SaaS's id for it
-- (`uid`: `acme`, a UUID, whatever the SaaS uses). An endpoint belongs to
-- one tenant: a URL and what it subscribes to, its signing secrets (sealed,
-- below), custom headers, metadata and `disabled`.
--
-- The relay treats an endpoint as it treats a configured HTTP destination:
-- every endpoint IS a row of outbox_destinations, named by the endpoint's id
-- (`ep_…`), with the tenant's id beside it. So an endpoint's deliveries are
-- outbox rows like any other (outbox.destination = the endpoint's id): one
-- claim, one health model (the breaker and automatic disabling of
-- migration 13), one attempt log. Configured destinations are the rows
-- without a tenant; the sync from the configuration never touches the
-- others.
--
-- Held, not lost: a disabled endpoint, or every endpoint of a disabled
-- tenant, is `held`: the claim takes none of its rows, which wait (their
-- attempts untouched) and go out, in order where `ordered`, when it is
-- enabled again.

CREATE TABLE hookbox_tenants (
    id          text        PRIMARY KEY CHECK (id ~ '^app_[0-9a-f]{32}$'),
    -- the SaaS's own id; never one of hookbox's ids (which `app_`, `ep_` and
    -- `msg_` start), so either names one tenant
    uid         text        UNIQUE
                CHECK (uid ~ '^[A-Za-z0-9._-]+$' AND octet_length(uid) <= 256
                       AND uid !~ '^(app|ep|msg)_'),
    name        text        NOT NULL CHECK (name <> '' AND octet_length(name) <= 256),
    metadata    jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
    -- most requests per second to each of its endpoints that sets none
    rate_limit  integer     CHECK (rate_limit > 0),
    disabled_at timestamptz,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);

-- An endpoint's row in outbox_destinations: its tenant, whether its
-- deliveries are ordered per aggregate (a configured destination's
-- `ordered` is passed to the claim by the relay; an endpoint's is here),
-- and whether it is held (disabled by its owner, or its tenant is).
ALTER TABLE outbox_destinations
    ADD COLUMN tenant_id text    REFERENCES hookbox_tenants (id) ON DELETE CASCADE,
    ADD COLUMN ordered   boolean NOT NULL DEFAULT false,
    ADD COLUMN held      boolean NOT NULL DEFAULT false;
CREATE INDEX outbox_destinations_tenant ON outbox_destinations (tenant_id, name)
    WHERE tenant_id IS NOT NULL;

CREATE TABLE hookbox_endpoints (
    id           text        PRIMARY KEY CHECK (id ~ '^ep_[0-9a-f]{32}$')
                 REFERENCES outbox_destinations (name) ON DELETE CASCADE,
    tenant_id    text        NOT NULL REFERENCES hookbox_tenants (id) ON DELETE CASCADE,
    uid          text        CHECK (uid ~ '^[A-Za-z0-9._-]+$' AND octet_length(uid) <= 256
                       AND uid !~ '^(app|ep|msg)_'),
    url          text        NOT NULL
                 CHECK (url ~ '^https?://[^[:space:]]+$' AND octet_length(url) <= 2048),
    description  text        NOT NULL DEFAULT '' CHECK (octet_length(description) <= 4096),
    version      integer     NOT NULL DEFAULT 1 CHECK (version > 0),
    -- disabled by its owner (the breaker's disabling is outbox_destinations'
    -- disabled_at, as for any destination)
    disabled     boolean     NOT NULL DEFAULT false,
    -- the event types it gets (exact names, or patterns where `*` stands for
    -- any run of characters); NULL: every type
    filter_types text[]      CHECK (cardinality(filter_types) BETWEEN 1 AND 256),
    -- the channels it gets; NULL: every message, whatever its channels
    channels     text[]      CHECK (cardinality(channels) BETWEEN 1 AND 64),
    headers      jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(headers) = 'object'),
    metadata     jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object'),
    rate_limit   integer     CHECK (rate_limit > 0),
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    UNIQUE (tenant_id, uid)
);
CREATE INDEX hookbox_endpoints_tenant ON hookbox_endpoints (tenant_id, id);

-- Signing secrets, sealed (envelope encryption): each is sealed by
-- hookbox's code with AES-256-GCM under a data key, bound to its endpoint
-- and id (the additional data), and the data key is kept only wrapped by
-- the key service (KMS in AWS, a local key in the local stack:
-- hookbox::tenants::vault). Nothing in the database can open them; SQL never
-- reads or writes a secret in clear. `expires_at` NULL: the current
-- secret (one per endpoint); set by a rotation: still signed with until
-- then (the grace period: deliveries carry both signatures).
CREATE TABLE hookbox_data_keys (
    id         uuid        PRIMARY KEY,
    -- which key wrapped it (a KMS key id, or `local:` and the local key's
    -- fingerprint): the service that can unwrap it
    wrapped_by text        NOT NULL,
    wrapped    bytea       NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE hookbox_endpoint_secrets (
    endpoint_id text        NOT NULL REFERENCES hookbox_endpoints (id) ON DELETE CASCADE,
    id          uuid        NOT NULL,
    data_key_id uuid        NOT NULL REFERENCES hookbox_data_keys (id),
    sealed      bytea       NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz,
    PRIMARY KEY (endpoint_id, id)
);
CREATE UNIQUE INDEX hookbox_endpoint_secrets_current ON hookbox_endpoint_secrets (endpoint_id)
    WHERE expires_at IS NULL;

-- The audit trail: every change to a tenant or an endpoint, what changed
-- (a secret's change recorded without its value), when, through which face
-- (sql, api, cli, portal, relay) and by whom. Kept when its tenant is
-- deleted (the deletion is its last entry).
CREATE TABLE hookbox_audit (
    seq         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL,
    tenant_id   text        NOT NULL,
    endpoint_id text,
    action      text        NOT NULL,
    face        text        NOT NULL CHECK (face IN ('sql', 'api', 'cli', 'portal', 'relay')),
    principal   text        NOT NULL,
    changes     jsonb       NOT NULL DEFAULT '{}'
);
CREATE INDEX hookbox_audit_tenant ON hookbox_audit (tenant_id, seq);

-- hookbox's ids: a prefix and a version 7 UUID's hex (creation order).
CREATE FUNCTION public.hookbox_new_id(p_prefix text) RETURNS text
LANGUAGE sql VOLATILE
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT p_prefix || '_' || pg_catalog.replace(CAST(public.hookbox_uuid_v7() AS text), '-', '')
$$;

-- `*` patterns as LIKE patterns (hookbox::matcher's like_pattern).
CREATE FUNCTION public.hookbox_like_pattern(p_pattern text) RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT pg_catalog.replace(
               pg_catalog.replace(
                   pg_catalog.replace(
                       pg_catalog.replace(p_pattern, '\', '\\'),
                       '%', '\%'),
                   '_', '\_'),
               '*', '%')
$$;

-- The tenant `p_tenant` names (its id or its uid), or NULL.
CREATE FUNCTION public.hookbox_tenant_id(p_tenant text) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT t.id FROM public.hookbox_tenants AS t
     WHERE t.id = p_tenant OR t.uid = p_tenant
$$;

-- Publishing to a tenant, in the caller's transaction: one outbox row per
-- endpoint of that tenant whose subscription matches (its event types; an
-- endpoint with channels only gets messages on one of them), disabled and held
-- ones included (their rows wait); never a row for another tenant's
-- endpoint or a configured destination. No matching endpoint: no row, and
-- an empty result (the event is not kept for endpoints created later: a
-- SaaS that wants that publishes again, or recovers). A tenant that does
-- not exist is an error (SQLSTATE P0002), not silence.
--
-- The aggregate: the caller's (its rows are delivered in publish order to
-- an endpoint that is `ordered`), else the new message's own id (no order
-- between messages).
CREATE FUNCTION public.hookbox_publish_to_at(
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
DECLARE
    v_tenant text;
    v_message text;
    v_check record;
    v_endpoint text;
    v_id uuid;
BEGIN
    IF p_tenant IS NULL OR p_tenant = '' THEN
        RAISE EXCEPTION 'hookbox_publish_to: tenant is required' USING ERRCODE = '22023';
    END IF;
    v_tenant := public.hookbox_tenant_id(p_tenant);
    IF v_tenant IS NULL THEN
        RAISE EXCEPTION 'hookbox_publish_to: no tenant %', pg_catalog.quote_literal(p_tenant)
            USING ERRCODE = 'P0002';
    END IF;
    IF (p_aggregate_type IS NULL) <> (p_aggregate_id IS NULL) THEN
        RAISE EXCEPTION 'hookbox_publish_to: aggregate_type and aggregate_id go together (both, or neither)'
            USING ERRCODE = '22023';
    END IF;
    v_message := public.hookbox_new_id('msg');
    SELECT * INTO v_check FROM public.hookbox_publish_refusal(
        p_event_type, p_payload, coalesce(p_aggregate_type, 'message'),
        coalesce(p_aggregate_id, v_message), NULL::text, NULL::text, NULL::bigint);
    IF v_check.refusal IS NOT NULL THEN
        RAISE EXCEPTION USING MESSAGE = pg_catalog.replace(v_check.refusal, 'hookbox_publish:',
                                                           'hookbox_publish_to:'),
                              ERRCODE = v_check.refusal_code;
    END IF;

    FOR v_endpoint IN
        SELECT d.name
          FROM public.outbox_destinations AS d
          JOIN public.hookbox_endpoints AS e ON e.id = d.name
         WHERE d.tenant_id = v_tenant
           AND p_event_type LIKE ANY (d.event_like)
           AND (e.channels IS NULL OR e.channels && coalesce(p_channels, '{}'))
         ORDER BY d.name
    LOOP
        v_id := public.hookbox_uuid_v7();
        INSERT INTO public.outbox (id, aggregate_type, aggregate_id, event_type, destination,
                                   payload, payload_size, status, next_attempt_at, created_at)
        VALUES (v_id, coalesce(p_aggregate_type, 'message'), coalesce(p_aggregate_id, v_message),
                p_event_type, v_endpoint, p_payload, v_check.payload_size, 'pending', p_now, p_now);
        id := v_id;
        endpoint_id := v_endpoint;
        RETURN NEXT;
    END LOOP;
    RETURN;
END
$$;

-- What a publisher calls: due at once (the transaction's time).
CREATE FUNCTION public.hookbox_publish_to(
    p_tenant         text,
    p_event_type     text,
    p_payload        jsonb,
    p_aggregate_type text DEFAULT NULL,
    p_aggregate_id   text DEFAULT NULL,
    p_channels       text[] DEFAULT NULL
) RETURNS SETOF uuid
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT p.id FROM public.hookbox_publish_to_at(p_tenant, p_event_type, p_payload,
                                                  p_aggregate_type, p_aggregate_id, p_channels,
                                                  pg_catalog.now()) AS p
$$;

-- hookbox_publish_at of version 19, with the configured destinations only:
-- publishing without a tenant never reaches an endpoint (fan-out skips
-- rows with a tenant; naming an endpoint is refused).
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

-- The claim (version 16's), with endpoints: a held destination is not
-- claimed (like a disabled one), and a destination is delivered in order
-- when the relay names it (configured) or its row says so (endpoints).
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
    v_probes text[];
BEGIN
    WITH taken AS (
        UPDATE outbox_destinations AS h
           SET open_until = p_lease_until
         WHERE h.name = ANY(ARRAY(SELECT d.name FROM outbox_destinations AS d
                                   WHERE d.disabled_at IS NULL AND NOT d.held
                                     AND d.open_until <= p_now
                                   FOR UPDATE SKIP LOCKED))
        RETURNING h.name
    )
    SELECT coalesce(array_agg(name), '{}') INTO v_probes FROM taken;

    RETURN QUERY
    WITH RECURSIVE dests(name) AS (
        (SELECT o.destination FROM outbox AS o WHERE o.status = 'pending'
          ORDER BY o.destination LIMIT 1)
        UNION ALL
        SELECT (SELECT o.destination FROM outbox AS o
                 WHERE o.status = 'pending' AND o.destination > dests.name
                 ORDER BY o.destination LIMIT 1)
          FROM dests WHERE dests.name IS NOT NULL
    ), walk AS (
        SELECT d.name,
               CASE WHEN d.name = ANY(v_probes) THEN 1
                    ELSE least(coalesce(CAST(p_caps ->> d.name AS bigint), p_limit), p_limit)
               END AS cap,
               coalesce(h.ordered, false)
                   OR d.name IN (SELECT jsonb_array_elements_text(p_ordered)) AS ordered
          FROM dests AS d
          LEFT JOIN outbox_destinations AS h ON h.name = d.name
         WHERE d.name IS NOT NULL
           AND h.disabled_at IS NULL
           AND NOT coalesce(h.held, false)
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
                 AND NOT (w.ordered
                          AND EXISTS (SELECT 1 FROM outbox AS older
                                       WHERE older.destination = o.destination
                                         AND older.aggregate_type = o.aggregate_type
                                         AND older.aggregate_id = o.aggregate_id
                                         AND older.status IN ('pending', 'dead')
                                         AND older.seq < o.seq))
               ORDER BY o.destination, o.next_attempt_at
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

REVOKE EXECUTE ON FUNCTION public.hookbox_new_id(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION public.hookbox_like_pattern(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION public.hookbox_tenant_id(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION public.hookbox_publish_to_at(text, text, jsonb, text, text, text[], timestamptz) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION public.hookbox_publish_to(text, text, jsonb, text, text, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.hookbox_publish_to(text, text, jsonb, text, text, text[])
    TO hookbox_publisher, hookbox_processor;
GRANT EXECUTE ON FUNCTION public.hookbox_publish_to_at(text, text, jsonb, text, text, text[], timestamptz)
    TO hookbox_processor;

-- The relay reads endpoints and their sealed secrets, seals a secret for an
-- endpoint that has none (one created or rotated through SQL), and wraps a
-- data key when there is none.
GRANT SELECT ON hookbox_tenants, hookbox_endpoints TO hookbox_relay;
GRANT SELECT, INSERT ON hookbox_endpoint_secrets, hookbox_data_keys, hookbox_audit TO hookbox_relay;

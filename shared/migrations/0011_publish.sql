-- hookbox schema, version 11: publishing from any service, inside its own
-- transaction, with subscriptions and fan-out (docs/publishing.md).
--
-- hookbox_publish(event_type, payload, aggregate_type, aggregate_id
-- [, destination]) is what every publisher calls, in SQL, through any
-- PostgreSQL client or through the RDS Data API (ExecuteStatement with a
-- transactionId): it writes one outbox row per destination that subscribes
-- to the event, in the caller's transaction, so the deliveries exist if and
-- only if the caller's business change commits. Each row is one delivery,
-- with its own id (its `webhook-id`, stable across retries), attempts,
-- status and, for ordered destinations, its place in its aggregate's order.
-- With a destination, it writes one row for that destination only,
-- subscribed or not. It returns the ids of the rows it wrote (none when no
-- destination subscribes).
--
-- Subscriptions are evaluated at publish, against outbox_destinations: the
-- configured destinations and what each subscribes to, which the relay
-- copies from the configuration at the start of every run
-- (hookbox::outbox::destinations::sync). A configuration change reaches
-- publishers at the relay's next run; rows written before it keep their
-- destinations.

-- What each configured destination subscribes to. `event_types` as
-- configured (exact names, or patterns where `*` stands for any run of
-- characters: `order.*`, `*`); `event_like` the same as LIKE patterns
-- (`%` and `_` escaped); `filters` a JSON array of
-- {"pointer": "/a/b", "path": ["a", "b"], "equals": <json>}: every one must
-- hold (the payload's value at the path equals the JSON value) for the
-- destination to get the event. No event types: explicit publishes only.
CREATE TABLE outbox_destinations (
    name        text        PRIMARY KEY CHECK (name <> ''),
    event_types text[]      NOT NULL DEFAULT '{}',
    event_like  text[]      NOT NULL DEFAULT '{}'
                CHECK (cardinality(event_like) = cardinality(event_types)),
    filters     jsonb       NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(filters) = 'array'),
    synced_at   timestamptz NOT NULL
);

-- A version 7 UUID (RFC 9562: 48 bits of Unix milliseconds, then random):
-- ids in creation order keep the outbox's primary key index compact, as
-- the ids Rust writes (Uuid::now_v7) do. From a version 4 UUID, with the
-- time in front and the version nibble set to 7.
CREATE FUNCTION hookbox_uuid_v7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE
SET search_path = pg_catalog
AS $$
    SELECT encode(
        set_bit(set_bit(
            overlay(uuid_send(gen_random_uuid())
                    PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                    FROM 1 FOR 6),
            52, 1), 53, 1),
        'hex')::uuid
$$;

-- The writer behind hookbox_publish, with what only hookbox's own code
-- passes: the time the rows are due (the caller's clock; tests inject one)
-- and a payload stored by reference (a blob put by the caller: key, size,
-- sha256; then p_payload is NULL). The limits are those of
-- hookbox::outbox::enqueue: every row stays inside the Data API's 64 KB
-- but its payload, and an inline payload is at most 256 KiB of JSON text
-- (the relay reads one above 32 KiB in pieces; larger ones go to the blob
-- store through the Rust API).
CREATE FUNCTION hookbox_publish_at(
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
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_size bigint;
    v_destination text;
    v_id uuid;
BEGIN
    IF p_event_type IS NULL OR p_event_type = '' THEN
        RAISE EXCEPTION 'hookbox_publish: event_type is required' USING ERRCODE = '22023';
    END IF;
    IF p_aggregate_type IS NULL OR p_aggregate_type = '' THEN
        RAISE EXCEPTION 'hookbox_publish: aggregate_type is required' USING ERRCODE = '22023';
    END IF;
    IF p_aggregate_id IS NULL OR p_aggregate_id = '' THEN
        RAISE EXCEPTION 'hookbox_publish: aggregate_id is required' USING ERRCODE = '22023';
    END IF;
    IF octet_length(p_event_type) > 256 THEN
        RAISE EXCEPTION 'hookbox_publish: event_type is % bytes, over the 256-byte limit',
            octet_length(p_event_type) USING ERRCODE = '22001';
    END IF;
    IF octet_length(p_aggregate_type) > 128 THEN
        RAISE EXCEPTION 'hookbox_publish: aggregate_type is % bytes, over the 128-byte limit',
            octet_length(p_aggregate_type) USING ERRCODE = '22001';
    END IF;
    IF octet_length(p_aggregate_id) > 512 THEN
        RAISE EXCEPTION 'hookbox_publish: aggregate_id is % bytes, over the 512-byte limit',
            octet_length(p_aggregate_id) USING ERRCODE = '22001';
    END IF;
    IF p_destination = '' THEN
        RAISE EXCEPTION 'hookbox_publish: destination is empty (NULL publishes to the subscribers)'
            USING ERRCODE = '22023';
    END IF;
    IF p_payload_key IS NULL THEN
        IF p_payload IS NULL THEN
            RAISE EXCEPTION 'hookbox_publish: payload is required (JSON null is ''null''::jsonb)'
                USING ERRCODE = '22023';
        END IF;
        v_size := octet_length(p_payload::text);
        IF v_size > 262144 THEN
            RAISE EXCEPTION 'hookbox_publish: the payload is % bytes of JSON, over the 262144-byte limit of a payload kept in its row (the Rust API puts larger ones in the blob store)',
                v_size USING ERRCODE = '22001';
        END IF;
    ELSE
        -- a filter cannot look into a payload in the blob store
        IF p_destination IS NULL THEN
            RAISE EXCEPTION 'hookbox_publish: a payload stored by reference needs a destination'
                USING ERRCODE = '22023';
        END IF;
        v_size := p_payload_size;
    END IF;

    FOR v_destination IN
        SELECT p_destination WHERE p_destination IS NOT NULL
        UNION ALL
        SELECT d.name FROM outbox_destinations AS d
         WHERE p_destination IS NULL
           AND p_event_type LIKE ANY (d.event_like)
           AND NOT EXISTS (
               SELECT 1 FROM jsonb_array_elements(d.filters) AS f
                WHERE p_payload IS NULL
                   OR (p_payload #> ARRAY(SELECT jsonb_array_elements_text(f -> 'path')))
                      IS DISTINCT FROM (f -> 'equals'))
        ORDER BY 1
    LOOP
        v_id := hookbox_uuid_v7();
        INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, destination,
                            payload, payload_key, payload_size, payload_sha256,
                            status, next_attempt_at, created_at)
        VALUES (v_id, p_aggregate_type, p_aggregate_id, p_event_type, v_destination,
                CASE WHEN p_payload_key IS NULL THEN p_payload END,
                p_payload_key, v_size, p_payload_sha256,
                'pending', p_now, p_now);
        RETURN NEXT v_id;
    END LOOP;
    RETURN;
END
$$;

-- What every publisher calls: due at once (the transaction's time).
CREATE FUNCTION hookbox_publish(
    p_event_type     text,
    p_payload        jsonb,
    p_aggregate_type text,
    p_aggregate_id   text,
    p_destination    text DEFAULT NULL
) RETURNS SETOF uuid
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT hookbox_publish_at(p_event_type, p_payload, p_aggregate_type, p_aggregate_id,
                              p_destination, now(), NULL, NULL, NULL)
$$;

-- Publishers: a role to grant to each service's own role
-- (`GRANT hookbox_publisher TO orders_service;`). It may call
-- hookbox_publish and nothing else: the functions write the outbox with
-- their owner's rights.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hookbox_publisher') THEN
        CREATE ROLE hookbox_publisher NOLOGIN;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
END
$$;

REVOKE EXECUTE ON FUNCTION hookbox_uuid_v7() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION hookbox_publish_at(text, jsonb, text, text, text, timestamptz, text, bigint, bytea) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION hookbox_publish(text, jsonb, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION hookbox_publish(text, jsonb, text, text, text)
    TO hookbox_publisher, hookbox_processor;
GRANT EXECUTE ON FUNCTION hookbox_publish_at(text, jsonb, text, text, text, timestamptz, text, bigint, bytea)
    TO hookbox_processor;
-- the relay keeps outbox_destinations in step with the configuration
GRANT SELECT, INSERT, UPDATE, DELETE ON outbox_destinations TO hookbox_relay;
GRANT SELECT ON outbox_destinations TO hookbox_processor;

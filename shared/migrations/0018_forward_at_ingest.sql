-- hookbox schema, version 18: forwarding at ingest (docs/forwarding.md,
-- "Where an event is routed"), and every SECURITY DEFINER function's
-- search_path with pg_temp last.
--
-- A partner event that routes can be stored and forwarded in ONE statement:
-- the inbox insert and, only when it inserted, one outbox row per matched
-- route (hookbox_publish_at with the destination named), in the same
-- transaction. Ingest's role gains exactly that: EXECUTE on
-- hookbox_publish_at. It still cannot read, change or delete outbox rows
-- (the function writes them with its owner's rights and checks every
-- limit), nor anything else.
GRANT EXECUTE ON FUNCTION hookbox_publish_at(text, jsonb, text, text, text, timestamptz, text, bigint, bytea)
    TO hookbox_ingest;

-- Received order per ordering key: an event is forwarded at ingest only
-- when no earlier event of its partner and key is still waiting for the
-- processor (spooled, too large to forward at ingest, being retried);
-- otherwise it waits behind them, and the processor forwards them in the
-- order they were received. The question is asked of active rows only.
CREATE INDEX inbox_active_ordering_key
    ON inbox (partner, ordering_key, received_at)
    WHERE status IN ('pending', 'processing', 'deferred') AND ordering_key IS NOT NULL;

-- PostgreSQL's documentation ("Writing SECURITY DEFINER Functions Safely"):
-- a SECURITY DEFINER function's search_path must exclude schemas writable
-- by untrusted users, and name pg_temp last; otherwise it is searched
-- first, and a caller's temporary table named `outbox` would shadow ours.
ALTER FUNCTION hookbox_publish_at(text, jsonb, text, text, text, timestamptz, text, bigint, bytea)
    SET search_path = pg_catalog, public, pg_temp;
ALTER FUNCTION hookbox_publish(text, jsonb, text, text, text)
    SET search_path = pg_catalog, public, pg_temp;

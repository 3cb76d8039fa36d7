-- hookbox schema, version 33: each endpoint keeps what the relay needs to
-- deliver to it (its relay document) on its own row, written when the
-- endpoint, its secrets, its tenant's rate limit or its destination settings
-- change, so that a claim reads it with one probe of the endpoints' primary
-- key (docs/relay.md, "Tenants' endpoints").
--
-- Version 32's claims built each endpoint's document at every claim: four
-- probes by key (the endpoint, its tenant, its secrets, its destination
-- row) and the JSON of each, about 10 us an endpoint; with 10,000 endpoints
-- a claim of 100 rows carries 100 documents, one read per delivery. Read
-- from the row, the same 100 cost a quarter of that.
--
-- The document holds every secret not expired when it was written, each
-- with its expiry (`expires_at`, NULL for the current one): the relay drops
-- those past their expiry at the time it signs, as the claims' `:now` did.
-- A change made through any path (the SQL functions, the management API,
-- the CLI, the relay sealing a secret, or a direct write to the tables)
-- rewrites it in the same transaction, through the triggers below.

ALTER TABLE public.hookbox_endpoints ADD COLUMN relay_doc jsonb;

-- The relay document of endpoint e: its tenant, URL, custom headers, rate
-- limit (its own, else its tenant's), sealed secrets not yet expired (never
-- opened in SQL) and destination settings. NULL without its destination row.
CREATE FUNCTION public.hookbox_endpoint_relay_doc(e public.hookbox_endpoints) RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT pg_catalog.jsonb_build_object(
        'tenant_id', e.tenant_id, 'url', e.url, 'headers', e.headers,
        'rate_limit', coalesce(e.rate_limit, (SELECT t.rate_limit
                                                FROM public.hookbox_tenants AS t
                                               WHERE t.id = e.tenant_id)),
        'secrets', (SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                               'id', s.id, 'data_key_id', s.data_key_id,
                               'sealed', pg_catalog.translate(pg_catalog.encode(s.sealed, 'base64'),
                                                              E'\n', ''),
                               'expires_at', s.expires_at)
                           ORDER BY s.created_at, s.id), '[]')
                      FROM public.hookbox_endpoint_secrets AS s
                     WHERE s.endpoint_id = e.id
                       AND (s.expires_at IS NULL OR s.expires_at > pg_catalog.now())),
        'ordered', d.ordered, 'trip_after', d.trip_after, 'cool_down_secs', d.cool_down_secs,
        'disable_after_secs', d.disable_after_secs)
      FROM public.outbox_destinations AS d
     WHERE d.name = e.id
$$;

-- Rewrites the relay documents of endpoints p_ids. Their rows are locked
-- first, in a statement of their own: a change of the same endpoint by
-- another transaction (which locks its row too) has committed by then, and
-- the next statement's snapshot sees it.
CREATE FUNCTION public.hookbox_endpoint_relay_doc_refresh(p_ids text[]) RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    PERFORM 1 FROM public.hookbox_endpoints AS e
      WHERE e.id = ANY(p_ids) ORDER BY e.id FOR UPDATE;
    UPDATE public.hookbox_endpoints AS e
       SET relay_doc = public.hookbox_endpoint_relay_doc(e)
     WHERE e.id = ANY(p_ids);
END
$$;
REVOKE ALL ON FUNCTION public.hookbox_endpoint_relay_doc_refresh(text[]) FROM PUBLIC;

-- The endpoint's own fields: written into the row being stored.
CREATE FUNCTION public.hookbox_endpoint_relay_doc_own() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    NEW.relay_doc := public.hookbox_endpoint_relay_doc(NEW);
    RETURN NEW;
END
$$;

CREATE TRIGGER hookbox_endpoints_relay_doc
    BEFORE INSERT OR UPDATE OF tenant_id, url, headers, rate_limit
    ON public.hookbox_endpoints
    FOR EACH ROW EXECUTE FUNCTION public.hookbox_endpoint_relay_doc_own();

-- What another table's change means for the documents.
CREATE FUNCTION public.hookbox_endpoint_relay_doc_changed() RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    IF TG_TABLE_NAME = 'hookbox_endpoint_secrets' THEN
        PERFORM public.hookbox_endpoint_relay_doc_refresh(ARRAY[
            CASE WHEN TG_OP = 'DELETE' THEN OLD.endpoint_id ELSE NEW.endpoint_id END]);
    ELSIF TG_TABLE_NAME = 'outbox_destinations' THEN
        PERFORM public.hookbox_endpoint_relay_doc_refresh(ARRAY[NEW.name]);
    ELSE
        PERFORM public.hookbox_endpoint_relay_doc_refresh(
            ARRAY(SELECT e.id FROM public.hookbox_endpoints AS e WHERE e.tenant_id = NEW.id));
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER hookbox_endpoint_secrets_relay_doc
    AFTER INSERT OR UPDATE OR DELETE ON public.hookbox_endpoint_secrets
    FOR EACH ROW EXECUTE FUNCTION public.hookbox_endpoint_relay_doc_changed();

-- (only the settings in the document, and only endpoints' rows: the relay's
-- health updates of every destination never fire it)
CREATE TRIGGER outbox_destinations_relay_doc
    AFTER UPDATE OF ordered, trip_after, cool_down_secs, disable_after_secs
    ON public.outbox_destinations
    FOR EACH ROW
    WHEN (NEW.name LIKE 'ep\_%'
          AND (OLD.ordered IS DISTINCT FROM NEW.ordered
               OR OLD.trip_after IS DISTINCT FROM NEW.trip_after
               OR OLD.cool_down_secs IS DISTINCT FROM NEW.cool_down_secs
               OR OLD.disable_after_secs IS DISTINCT FROM NEW.disable_after_secs))
    EXECUTE FUNCTION public.hookbox_endpoint_relay_doc_changed();

CREATE TRIGGER hookbox_tenants_relay_doc
    AFTER UPDATE OF rate_limit ON public.hookbox_tenants
    FOR EACH ROW
    WHEN (OLD.rate_limit IS DISTINCT FROM NEW.rate_limit)
    EXECUTE FUNCTION public.hookbox_endpoint_relay_doc_changed();

UPDATE public.hookbox_endpoints AS e SET relay_doc = public.hookbox_endpoint_relay_doc(e);

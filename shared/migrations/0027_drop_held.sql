-- hookbox schema, version 27: dropping what a held endpoint waits with, as
-- an explicit choice that says how many (issue 41: "held, not lost").
-- A disabled endpoint, or one of a disabled tenant (`held`), or one the
-- breaker disabled after failing continuously (`disabled_at`), keeps its
-- deliveries pending until it is enabled again. When its owner does not
-- want them any more (a week of stale events for a receiver coming back),
-- this marks them dead, with the reason and who chose it: they are no
-- longer sent on enable, the audit trail records the count, and until
-- retention deletes them `hookbox_endpoint_recover` can still send them.
-- Only deliveries created before p_until (NULL: all) and not leased to a
-- relay at that moment; refused (22023) for an endpoint that is not held,
-- whose deliveries are on their way.
CREATE FUNCTION public.hookbox_endpoint_drop_held(p_tenant text, p_endpoint text,
                                                  p_until timestamptz DEFAULT NULL,
                                                  p_actor jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    c_fn constant text := 'hookbox_endpoint_drop_held';
    v_tenant public.hookbox_tenants := public.hookbox_tenant_find(c_fn, p_tenant);
    v public.hookbox_endpoints := public.hookbox_endpoint_find(c_fn, v_tenant, p_endpoint);
    v_held boolean;
    v_dropped bigint;
    v_changes jsonb;
    v_who text := (SELECT a.face || ' ' || a.principal FROM public.hookbox_actor(p_actor) AS a);
BEGIN
    SELECT d.held OR d.disabled_at IS NOT NULL INTO v_held
      FROM public.outbox_destinations AS d
     WHERE d.name = v.id
       FOR UPDATE;
    IF NOT coalesce(v_held, false) THEN
        RAISE EXCEPTION '%: endpoint % of tenant % is not held (it and its tenant are enabled): its deliveries are on their way; disable it first to drop what waits',
            c_fn, pg_catalog.quote_literal(v.id), pg_catalog.quote_literal(v_tenant.id)
            USING ERRCODE = '22023';
    END IF;
    WITH dropped AS (
        UPDATE public.outbox AS o
           SET status = 'dead', processed_at = pg_catalog.now(),
               locked_until = NULL, locked_by = NULL,
               last_error = 'dropped while held, by ' || v_who || ' at '
                            || pg_catalog.to_char(pg_catalog.now() AT TIME ZONE 'UTC',
                                                  'YYYY-MM-DD HH24:MI:SS')
                            || ' UTC (hookbox_endpoint_drop_held)'
         WHERE o.destination = v.id AND o.status = 'pending'
           AND (p_until IS NULL OR o.created_at < p_until)
           AND (o.locked_until IS NULL OR o.locked_until <= pg_catalog.now())
        RETURNING 1
    )
    SELECT count(*) INTO v_dropped FROM dropped;
    v_changes := pg_catalog.jsonb_build_object('until', p_until, 'dropped', v_dropped);
    PERFORM public.hookbox_audit_add(v_tenant.id, v.id, 'endpoint.held_dropped', v_changes,
                                     p_actor);
    RETURN pg_catalog.jsonb_build_object('id', v.id) || v_changes;
END
$$;
REVOKE EXECUTE ON FUNCTION public.hookbox_endpoint_drop_held(text, text, timestamptz, jsonb)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.hookbox_endpoint_drop_held(text, text, timestamptz, jsonb)
    TO hookbox_manager;

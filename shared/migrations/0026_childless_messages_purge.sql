-- hookbox schema, version 26: retention deletes tenants' messages that no
-- delivery names (migration 22). A message goes with its last delivery
-- (the trigger hookbox_message_forget), but one that never had a delivery
-- (published to a tenant with no matching endpoint) or whose deliveries
-- were deleted undelivered (its endpoint deleted) is only `childless`;
-- without this a tenant publishing with no endpoint kept every message.
-- The relay's retention calls it once per batch, oldest first, through the
-- partial index hookbox_messages_childless; it deletes at most p_limit
-- messages created before p_before and says how many.
CREATE FUNCTION public.hookbox_messages_purge(p_before timestamptz, p_limit integer)
RETURNS bigint
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    WITH gone AS (
        DELETE FROM public.hookbox_messages AS m
         WHERE m.id = ANY (ARRAY(SELECT x.id FROM public.hookbox_messages AS x
                                  WHERE x.childless AND x.created_at < p_before
                                  ORDER BY x.created_at
                                  LIMIT greatest(p_limit, 0)))
           AND m.childless
        RETURNING 1
    )
    SELECT count(*) FROM gone
$$;
REVOKE EXECUTE ON FUNCTION public.hookbox_messages_purge(timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.hookbox_messages_purge(timestamptz, integer) TO hookbox_relay;

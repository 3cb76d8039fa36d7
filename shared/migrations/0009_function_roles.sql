-- Least privilege inside the database: one role per function, each granted
-- only the tables its statements touch. The migrate custom resource (the
-- master user, which owns the schema) sets each role's password from that
-- function's own Secrets Manager secret on every Create and Update
-- (hookbox_set_role_password below), so a role and its secret stay in step.
--
-- Roles belong to the cluster, not to one database: created NOLOGIN only
-- when missing, and a concurrent creation from another database of the same
-- cluster is not an error. Grants belong to this database.
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['hookbox_ingest', 'hookbox_processor', 'hookbox_relay'] LOOP
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

-- Nobody else runs our functions (PostgreSQL grants EXECUTE to PUBLIC by
-- default; since PostgreSQL 15 PUBLIC may not CREATE in schema public).
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC;

-- ingest: insert-if-new into the inbox and read back the row's id.
GRANT SELECT, INSERT ON inbox TO hookbox_ingest;

-- processor: claim and finish inbox rows (spooled events are inserted
-- first), write the outbox in the same transaction, the business tables.
GRANT SELECT, INSERT, UPDATE ON inbox TO hookbox_processor;
GRANT SELECT, INSERT ON outbox TO hookbox_processor;
GRANT SELECT, INSERT, UPDATE ON example_orders, example_order_transitions TO hookbox_processor;

-- relay: claim, deliver and record the outbox; sweep stranded inbox rows;
-- retention of both (archive or delete), of the archives themselves, and
-- of their blob objects.
GRANT SELECT, UPDATE, DELETE ON outbox, inbox TO hookbox_relay;
GRANT SELECT, INSERT, DELETE ON outbox_archive, inbox_archive TO hookbox_relay;
GRANT SELECT, INSERT, DELETE ON blob_deletions TO hookbox_relay;
GRANT EXECUTE ON FUNCTION outbox_claim_due(timestamptz, timestamptz, text, bigint, jsonb, bigint) TO hookbox_relay;

-- Sets a function role's password (LOGIN) from its secret. The password
-- travels as a parameter, never in the statement's text (statement logs
-- stay clean). Only the schema's owner (migrate) may call it.
-- Returns the role's name (the database port carries no `void`).
CREATE FUNCTION hookbox_set_role_password(p_role text, p_password text) RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
    IF p_role NOT IN ('hookbox_ingest', 'hookbox_processor', 'hookbox_relay') THEN
        RAISE EXCEPTION 'not a hookbox function role: %', p_role;
    END IF;
    IF length(p_password) < 16 THEN
        RAISE EXCEPTION 'the password of % is too short (at least 16 characters)', p_role;
    END IF;
    EXECUTE format('ALTER ROLE %I LOGIN PASSWORD %L', p_role, p_password);
    RETURN p_role;
END
$$;
REVOKE EXECUTE ON FUNCTION hookbox_set_role_password(text, text) FROM PUBLIC;

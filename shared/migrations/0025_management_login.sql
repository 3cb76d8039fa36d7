-- hookbox schema, version 25: the management API's database login.
-- The management function (infra/template.yaml, ManagementFunction) logs in
-- through the Data API as hookbox_management (migration 21) with its own
-- secret (ManagementDbSecret); migrate sets that role's password from the
-- secret on every Create and Update, as for the other function roles.
CREATE OR REPLACE FUNCTION hookbox_set_role_password(p_role text, p_password text) RETURNS text
LANGUAGE plpgsql
AS $$
BEGIN
    IF p_role NOT IN ('hookbox_ingest', 'hookbox_processor', 'hookbox_relay', 'hookbox_management') THEN
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

-- hookbox schema, version 23: what the HTTP management API keeps besides
-- tenants and endpoints (docs/tenants.md, "The HTTP API").
--
-- Event types: the catalogue Svix's API manages (`/api/v1/event-type`): a
-- name, a description, archived and deprecated flags, a feature flag and
-- JSON schemas by version. hookbox keeps it for the SaaS's tools and
-- portals; deliveries do not depend on it (an endpoint may filter on any
-- type or `*` pattern, listed here or not). Names are Svix's: letters,
-- digits, '-', '_' and '.'.
--
-- Idempotency keys: a POST with an `Idempotency-Key` header is answered
-- once; the same key with the same request (method, path, query and body)
-- within 24 hours gets the stored answer, the same key with another request
-- is refused. Keys are the caller's own: scoped by principal (a token's
-- name, or the IAM identity), so two callers never see each other's.
-- Rows older than 24 hours are ignored, and removed a few at a time by the
-- API as it stores new ones.

CREATE TABLE hookbox_event_types (
    name         text        PRIMARY KEY
                 CHECK (name ~ '^[A-Za-z0-9._-]+$' AND octet_length(name) <= 256),
    description  text        NOT NULL CHECK (octet_length(description) <= 4096),
    archived     boolean     NOT NULL DEFAULT false,
    deprecated   boolean     NOT NULL DEFAULT false,
    feature_flag text        CHECK (feature_flag ~ '^[A-Za-z0-9._-]+$'
                                    AND octet_length(feature_flag) <= 256),
    -- JSON schemas by version ({"1": {...}}); NULL: none
    schemas      jsonb       CHECK (schemas IS NULL OR jsonb_typeof(schemas) = 'object'),
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);

CREATE TABLE hookbox_api_idempotency (
    principal      text        NOT NULL,
    key            text        NOT NULL CHECK (octet_length(key) BETWEEN 1 AND 256),
    -- `POST /api/v1/app`: what the key was first used for
    request        text        NOT NULL,
    -- SHA-256 (hex) of the method, path, query and body
    request_sha256 text        NOT NULL,
    -- the stored answer (set in the transaction that made it)
    status         integer,
    response       text,
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (principal, key)
);
CREATE INDEX hookbox_api_idempotency_created ON hookbox_api_idempotency (created_at);

-- the management API's role (migration 21) reads and writes both
GRANT SELECT, INSERT, UPDATE, DELETE ON hookbox_event_types, hookbox_api_idempotency
    TO hookbox_management;

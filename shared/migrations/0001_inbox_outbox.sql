-- hookbox schema, version 1: the inbox (inbound webhooks, stored once each)
-- and the outbox (outbound webhooks, written in the business transaction).
--
-- Applied by hookbox::migrate, statement by statement inside one transaction,
-- through the database port (so the same runner works over the RDS Data API).
-- Never edit an applied migration: the runner refuses a changed checksum.
-- Add a new numbered file instead (and add new inbox/outbox columns to the
-- archive tables too, at the same position).

-- Inbound events. One row per (partner, event_id), whatever the partner's retries.
CREATE TABLE inbox (
    id                 uuid        PRIMARY KEY,
    partner            text        NOT NULL CHECK (partner <> ''),
    event_id           text        NOT NULL CHECK (event_id <> ''),
    -- true when the partner sent no event id and event_id is sha256(body).
    event_id_derived   boolean     NOT NULL DEFAULT false,
    event_type         text,
    ordering_key       text,
    -- the request body exactly as received (the signature was computed over it).
    body               bytea       NOT NULL,
    -- the request headers worth keeping (signature headers, content type, ...).
    headers            jsonb       NOT NULL DEFAULT '{}',
    signature_verified boolean     NOT NULL,
    status             text        NOT NULL DEFAULT 'pending'
                       CONSTRAINT inbox_status_check CHECK (status IN
                       ('pending', 'processing', 'deferred', 'processed', 'quarantined', 'dead')),
    -- processing attempts so far (claims).
    attempts           integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- when this row next needs attention: the queue's next delivery while
    -- pending/deferred, the lease expiry while processing. NULL once finished.
    next_attempt_at    timestamptz,
    -- lease of the processor currently working on the row.
    locked_until       timestamptz,
    last_error         text,
    received_at        timestamptz NOT NULL,
    -- when a queue message was last sent for the row (ingest, sweeper, replay).
    enqueued_at        timestamptz,
    -- first time the row was deferred in its current run of deferrals.
    deferred_since     timestamptz,
    processed_at       timestamptz,
    CONSTRAINT inbox_partner_event_id_key UNIQUE (partner, event_id),
    CONSTRAINT inbox_active_has_next_attempt CHECK (
        status NOT IN ('pending', 'processing', 'deferred') OR next_attempt_at IS NOT NULL)
);

-- Hot paths touch active rows only; history does not grow these indexes.
-- Sweeper (stranded rows) and processor leases: ordered by when they are due.
CREATE INDEX inbox_active_due ON inbox (next_attempt_at)
    WHERE status IN ('pending', 'processing', 'deferred');
-- Oldest pending age (stats, alarms).
CREATE INDEX inbox_active_received ON inbox (received_at)
    WHERE status IN ('pending', 'processing', 'deferred');
-- Operator views of rows that need a human.
CREATE INDEX inbox_attention ON inbox (received_at)
    WHERE status IN ('quarantined', 'dead');
-- Retention walks history by age: a BRIN index is tiny and fits rows that
-- arrive in time order.
CREATE INDEX inbox_received_brin ON inbox USING brin (received_at);

-- Outbound events, delivered by the relay at least once; id is the
-- `webhook-id` receivers deduplicate on.
CREATE TABLE outbox (
    id               uuid        PRIMARY KEY,
    -- insertion order, for ordered delivery per aggregate.
    seq              bigint      GENERATED ALWAYS AS IDENTITY UNIQUE,
    aggregate_type   text        NOT NULL CHECK (aggregate_type <> ''),
    aggregate_id     text        NOT NULL CHECK (aggregate_id <> ''),
    event_type       text        NOT NULL CHECK (event_type <> ''),
    destination      text        NOT NULL CHECK (destination <> ''),
    payload          jsonb       NOT NULL,
    status           text        NOT NULL DEFAULT 'pending'
                     CONSTRAINT outbox_status_check CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts         integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- due time while pending; a claim moves it to the lease expiry, so a
    -- leased row is simply "not due" and a crashed relay's rows come back.
    next_attempt_at  timestamptz NOT NULL,
    locked_until     timestamptz,
    locked_by        text,
    last_error       text,
    last_status_code integer,
    created_at       timestamptz NOT NULL,
    processed_at     timestamptz
);

-- The relay's claim: due pending rows in due order.
CREATE INDEX outbox_pending_due ON outbox (next_attempt_at)
    WHERE status = 'pending';
-- Oldest pending age (outbox lag).
CREATE INDEX outbox_pending_created ON outbox (created_at)
    WHERE status = 'pending';
-- Ordered delivery: "is there an older undelivered row of this aggregate?"
CREATE INDEX outbox_pending_aggregate ON outbox (destination, aggregate_type, aggregate_id, seq)
    WHERE status = 'pending';
CREATE INDEX outbox_dead ON outbox (created_at)
    WHERE status = 'dead';
CREATE INDEX outbox_created_brin ON outbox USING brin (created_at);

-- Where retention moves finished rows when archiving is chosen over deleting.
-- Same columns in the same order, no constraints or indexes but the key.
CREATE TABLE inbox_archive (LIKE inbox INCLUDING DEFAULTS);
ALTER TABLE inbox_archive ADD PRIMARY KEY (id);
CREATE TABLE outbox_archive (LIKE outbox);
ALTER TABLE outbox_archive ADD PRIMARY KEY (id);

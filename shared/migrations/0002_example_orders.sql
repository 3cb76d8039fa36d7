-- EXAMPLE DOMAIN (the part users replace): orders driven by partner events,
-- used by hookbox::example::OrdersHandler to show the processor's contract
-- (one transaction for business writes + outbox + inbox status, ordering by
-- state machine, deferral). Your own domain gets its own numbered
-- migration; to retire the example, add one that drops these two tables
-- (never edit this file once applied: the runner refuses changed checksums).

-- One row per order, in its current state.
CREATE TABLE example_orders (
    order_id     text        PRIMARY KEY CHECK (order_id <> ''),
    status       text        NOT NULL
                 CONSTRAINT example_orders_status_check CHECK (status IN
                 ('created', 'paid', 'shipped', 'delivered', 'cancelled')),
    amount_cents bigint,
    currency     text,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);

-- Every state change, with the inbox event that caused it: the effects the
-- tests count (no unique key on inbox_id on purpose: the inbox, not this
-- table, guarantees one effect per event).
CREATE TABLE example_order_transitions (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id    text        NOT NULL REFERENCES example_orders (order_id),
    from_status text,
    to_status   text        NOT NULL,
    inbox_id    uuid        NOT NULL,
    event_type  text        NOT NULL,
    at          timestamptz NOT NULL
);
CREATE INDEX example_order_transitions_order ON example_order_transitions (order_id, id);

-- hookbox schema, version 32: an index of the destinations that are not
-- healthy, so that recording a batch reads the health of only the
-- destinations that failed in it or were not healthy before it (docs/relay.md,
-- "Endpoint health").
--
-- Recording a batch updates the health of its destinations in the same
-- statement (`outbox::repo::record`): a failure counts, a success after
-- failures closes the breaker. A success to a destination that was healthy
-- changes nothing, but the statement still read that destination's row twice
-- by its primary key to find that out; with a batch spread over 100
-- endpoints, 200 descents for nothing. Now the statement keeps a success only
-- when its destination is in this index (none, while every destination is
-- healthy: one descent of an empty index), and reads the rows of the others.
-- A destination is healthy exactly when no failure is counted, it has no
-- failing-since time and no breaker is open: what the statement's own update
-- condition, unchanged, tests.

CREATE INDEX outbox_destinations_unhealthy ON outbox_destinations (name)
    WHERE consecutive_failures <> 0 OR failing_since IS NOT NULL OR open_until IS NOT NULL;

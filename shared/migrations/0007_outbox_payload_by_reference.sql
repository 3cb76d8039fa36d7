-- hookbox schema, version 7: large outbox payloads by reference, a claim that
-- stays inside the Data API's response limit, and what retention needs to
-- delete the objects no row refers to any more.
--
-- The RDS Data API returns at most 64 KB per result row and 1 MiB per
-- response. A payload whose JSON text is above the inline threshold (32 KiB
-- by default, as for inbox bodies) is put in the blob store (S3) under its
-- content-addressed key `outbox/{destination}/{sha256}` BEFORE the row is
-- written (in the business transaction), and the row keeps the reference:
-- key, size and sha256 (checked when the relay reads it). The object holds
-- the exact bytes every attempt POSTs. A row has exactly one of the two.
--
-- payload_size is the size of what the relay POSTs, either way: the object's
-- size for a reference, jsonb's canonical text for an inline payload
-- (computed by the insert; NULL on rows written before this version, where
-- readers compute it). The claim counts it against its byte budget without
-- turning each payload into text.
ALTER TABLE outbox ALTER COLUMN payload DROP NOT NULL;
ALTER TABLE outbox ADD COLUMN payload_key text;
ALTER TABLE outbox ADD COLUMN payload_size bigint;
ALTER TABLE outbox ADD COLUMN payload_sha256 bytea;
-- NOT VALID: every existing row has its payload inline and no reference,
-- which satisfies the check; skipping the scan keeps the migration instant
-- on a large outbox. New and updated rows are checked.
ALTER TABLE outbox ADD CONSTRAINT outbox_payload_inline_or_blob CHECK (
    (payload IS NOT NULL AND payload_key IS NULL AND payload_sha256 IS NULL)
    OR (payload IS NULL AND payload_key IS NOT NULL AND payload_size >= 0
        AND octet_length(payload_sha256) = 32)
) NOT VALID;

-- The archive keeps the same columns in the same order (retention moves
-- rows with INSERT ... SELECT *).
ALTER TABLE outbox_archive ALTER COLUMN payload DROP NOT NULL;
ALTER TABLE outbox_archive ADD COLUMN payload_key text;
ALTER TABLE outbox_archive ADD COLUMN payload_size bigint;
ALTER TABLE outbox_archive ADD COLUMN payload_sha256 bytea;

-- Retention. Content addressing lets two rows share an object (the same
-- bytes for the same partner or destination), so deleting a row must not
-- delete its object while another row, in any of the four tables, still
-- refers to it. The statements that delete rows queue their keys here (in
-- the same statement: no key is forgotten by a relay that stops between
-- the rows and the objects); the relay then deletes each object no row
-- refers to and drops it from the queue.
CREATE TABLE blob_deletions (
    key       text        PRIMARY KEY,
    queued_at timestamptz NOT NULL DEFAULT now()
);
-- "Does any row still refer to this key?", answered by an index per table.
-- Partial: only rows stored by reference have an entry, and no update of a
-- row changes its key, so the relay's leases stay in-place (HOT) updates.
-- Building them reads each table once (writers wait meanwhile); the inbox
-- and outbox hold what retention keeps (30 days by default).
CREATE INDEX inbox_body_key ON inbox (body_key) WHERE body_key IS NOT NULL;
CREATE INDEX inbox_archive_body_key ON inbox_archive (body_key) WHERE body_key IS NOT NULL;
CREATE INDEX outbox_payload_key ON outbox (payload_key) WHERE payload_key IS NOT NULL;
CREATE INDEX outbox_archive_payload_key ON outbox_archive (payload_key)
    WHERE payload_key IS NOT NULL;

-- The claim (version 5) with a byte budget. It keeps version 5's pinned plan
-- (a generic plan, no bitmap scans, no sorts chosen when an index walk can
-- do: the walk of outbox_pending_due in due order that stops at p_limit)
-- and its semantics, and adds three things.
--
-- The budget: a claimed row carries its inline payload (up to 40 KiB is
-- returned), so p_limit rows could pass the Data API's 1 MiB per response.
-- The claim leases rows, oldest due first, only while the bytes they add to
-- its answer add up to at most p_budget, and always at least one row. A
-- row's bytes: its inline payload (payload_size, jsonb's text; a payload by
-- reference counts 0), its other variable columns (names, last error, blob
-- key, the lease token) and 128 for the fixed-size ones. How: the index
-- walk locks up to p_limit due rows (LIMIT ... FOR UPDATE SKIP LOCKED, in
-- the CTE `due`, reading sizes only: no payload is turned into text); one
-- query level up (a window function may not share a query level with FOR
-- UPDATE) a running sum over them in due order (a sort of at most p_limit
-- rows in memory: a locked row set carries no order) keeps the prefix that
-- fits, and only that prefix is leased. Rows locked but not kept are not
-- leased: they are claimable again when the statement ends. The relay
-- passes 7/8 of 1 MiB (outbox::repo::CLAIM_BUDGET_BYTES).
--
-- JIT is off while it runs: the disabled sort counts as a huge cost (that is
-- how enable_sort = off works), which would make PostgreSQL JIT-compile
-- the statement on every call (~300 ms of compiling for a claim that takes
-- under a millisecond; the relay bench fell from 4,700 to 450 deliveries/s).
--
-- The token: a row leased to p_worker is claimable by p_worker again (lease
-- tokens name one batch). A claim that committed its leases but whose
-- answer never arrived (the Data API refusing a row or a response it cannot
-- carry, after the statement ran) is claimed again under the same token,
-- row by row, instead of leaving its rows leased until the lease ends and
-- failing the same way again.
--
-- The previous version is dropped: relays of the previous release call it
-- with five arguments and fail their claims until they are replaced (a
-- deployment replaces them right after migrating; nothing is leased by a
-- failed call).
DROP FUNCTION outbox_claim_due(timestamptz, timestamptz, text, bigint, jsonb);
CREATE FUNCTION outbox_claim_due(
    p_now         timestamptz,
    p_lease_until timestamptz,
    p_worker      text,
    p_limit       bigint,
    p_ordered     jsonb,
    p_budget      bigint
) RETURNS SETOF outbox
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_bitmapscan = off
SET enable_sort = off
SET jit = off
AS $$
BEGIN
    RETURN QUERY
    WITH due AS (
        SELECT o.id, o.seq, o.next_attempt_at,
               CASE WHEN o.payload IS NULL THEN 0
                    ELSE coalesce(o.payload_size, octet_length(CAST(o.payload AS text)))
               END
               + octet_length(o.aggregate_type) + octet_length(o.aggregate_id)
               + octet_length(o.event_type) + octet_length(o.destination)
               + coalesce(octet_length(o.last_error), 0)
               + coalesce(octet_length(o.payload_key), 0)
               + octet_length(p_worker) + 128 AS bytes
          FROM outbox AS o
         WHERE o.status = 'pending' AND o.next_attempt_at <= p_now
           AND (o.locked_until IS NULL OR o.locked_until <= p_now OR o.locked_by = p_worker)
           AND NOT (o.destination IN (SELECT jsonb_array_elements_text(p_ordered))
                    AND EXISTS (SELECT 1 FROM outbox AS older
                                 WHERE older.destination = o.destination
                                   AND older.aggregate_type = o.aggregate_type
                                   AND older.aggregate_id = o.aggregate_id
                                   AND older.status IN ('pending', 'dead')
                                   AND older.seq < o.seq))
         ORDER BY o.next_attempt_at
         LIMIT p_limit
         FOR UPDATE SKIP LOCKED
    ), fitting AS (
        SELECT d.id, sum(d.bytes) OVER w AS running, row_number() OVER w AS n
          FROM due AS d
        WINDOW w AS (ORDER BY d.next_attempt_at, d.seq ROWS UNBOUNDED PRECEDING)
    )
    UPDATE outbox AS o
       SET locked_until = p_lease_until,
           locked_by = p_worker
     WHERE o.id = ANY(ARRAY(SELECT f.id FROM fitting AS f
                             WHERE f.running <= p_budget OR f.n = 1))
    RETURNING o.*;
END
$$;

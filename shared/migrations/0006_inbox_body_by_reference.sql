-- hookbox schema, version 6: large inbox bodies by reference (a claim check).
--
-- The RDS Data API returns at most 64 KB per result row and 1 MiB per
-- response, so a body above the inline threshold (32 KiB by default) is put
-- in the blob store (S3) under its content-addressed key
-- `inbox/{partner}/{sha256}` BEFORE the insert, and the row keeps the
-- reference instead of the bytes: key, size and sha256 (checked on read).
-- A row has exactly one of the two.
ALTER TABLE inbox ALTER COLUMN body DROP NOT NULL;
ALTER TABLE inbox ADD COLUMN body_key text;
ALTER TABLE inbox ADD COLUMN body_size bigint;
ALTER TABLE inbox ADD COLUMN body_sha256 bytea;
-- NOT VALID: every existing row has its body inline and no reference, which
-- satisfies the check; skipping the scan keeps the migration instant on a
-- large inbox. New and updated rows are checked.
ALTER TABLE inbox ADD CONSTRAINT inbox_body_inline_or_blob CHECK (
    (body IS NOT NULL AND body_key IS NULL AND body_size IS NULL AND body_sha256 IS NULL)
    OR (body IS NULL AND body_key IS NOT NULL AND body_size >= 0
        AND octet_length(body_sha256) = 32)
) NOT VALID;

-- The row budget: every column partner input can grow is bounded when
-- written (ingest refuses a longer event type or ordering key with a 400;
-- stored headers and last_error are cut), so any row, with a body of up to
-- 40 KiB inline, stays under the Data API's 64 KB. The database holds the
-- same line, so no code path can write past it. NOT VALID: as above.
ALTER TABLE inbox ADD CONSTRAINT inbox_row_budget CHECK (
    octet_length(partner) <= 64
    AND octet_length(event_id) <= 512
    AND coalesce(octet_length(event_type), 0) <= 256
    AND coalesce(octet_length(ordering_key), 0) <= 512
    AND octet_length(CAST(headers AS text)) <= 16384
    AND coalesce(octet_length(last_error), 0) <= 8192
    AND coalesce(octet_length(body), 0) <= 40960
) NOT VALID;

-- The claim that holds a processing row: a token per claim call, so a claim
-- retried after it committed but could not return its rows (the Data API
-- refusing a row it cannot carry) takes its own leases back, and gives them
-- back, without touching another processor's.
ALTER TABLE inbox ADD COLUMN locked_by uuid;

-- The archive keeps the same columns in the same order (retention moves
-- rows with INSERT ... SELECT *).
ALTER TABLE inbox_archive ALTER COLUMN body DROP NOT NULL;
ALTER TABLE inbox_archive ADD COLUMN body_key text;
ALTER TABLE inbox_archive ADD COLUMN body_size bigint;
ALTER TABLE inbox_archive ADD COLUMN body_sha256 bytea;
ALTER TABLE inbox_archive ADD COLUMN locked_by uuid;

-- hookbox schema, version 8: deduplicating on the body as well as the event id.
--
-- GitHub, Shopify, Twilio and a generic HMAC over the body alone sign
-- neither a timestamp nor the event id header: a captured request resent
-- with a fresh X-GitHub-Delivery (or similar) verifies, and the event id
-- alone would store it again. For such partners (configuration:
-- dedupe_on_body, on by default for those schemes) ingest also writes the
-- body's sha256 here, and this index makes the same body from the same
-- partner a duplicate whatever its id. NULL for other partners (and every
-- row written before), so the index only covers the rows that use it.
ALTER TABLE inbox ADD COLUMN dedupe_digest bytea;
CREATE UNIQUE INDEX inbox_partner_dedupe_digest ON inbox (partner, dedupe_digest)
    WHERE dedupe_digest IS NOT NULL;

-- The archive keeps the same columns in the same order.
ALTER TABLE inbox_archive ADD COLUMN dedupe_digest bytea;

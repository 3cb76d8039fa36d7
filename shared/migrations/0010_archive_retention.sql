-- The archive tables get a retention of their own
-- (HOOKBOX_ARCHIVE_RETENTION_DAYS): the relay deletes archived rows older
-- than it in bounded batches, which needs the age column indexed, or every
-- batch would scan the whole archive.
-- (0009, the per-function database roles, grants the relay DELETE on both.)
CREATE INDEX IF NOT EXISTS inbox_archive_received_at ON inbox_archive (received_at);
CREATE INDEX IF NOT EXISTS outbox_archive_created_at ON outbox_archive (created_at);

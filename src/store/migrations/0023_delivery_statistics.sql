-- ANALYZE of the delivery log samples 300 rows per unit of the largest statistics target of its columns: 30,000
-- rows, each with its 1 KB payload, at the default target of 100. On PGlite that ANALYZE runs on the one
-- database thread (src/store/maintenance.ts), so every delivery waited for it: 560 ms at a million rows. The
-- planner needs little of it: every query on this table goes through an index, and only these columns appear in
-- its conditions. 10 samples 3,000 rows; 0 keeps no statistics for a column at all (docs/decisions.md,
-- "Small statistics for the delivery log").

ALTER TABLE webhook_deliveries
  ALTER COLUMN webhook_uid SET STATISTICS 10,
  ALTER COLUMN label SET STATISTICS 10,
  ALTER COLUMN received_at SET STATISTICS 10,
  ALTER COLUMN outbox_pending SET STATISTICS 10,
  ALTER COLUMN evaluated_at SET STATISTICS 10,
  ALTER COLUMN identity_source SET STATISTICS 10,
  ALTER COLUMN size SET STATISTICS 10,
  -- Unique among accepted rows: with its n_distinct the dedupe look-up stays a plain index scan.
  ALTER COLUMN identity SET STATISTICS 10,
  ALTER COLUMN id SET STATISTICS 0,
  ALTER COLUMN team_id SET STATISTICS 0,
  ALTER COLUMN factory_id SET STATISTICS 0,
  ALTER COLUMN webhook_name SET STATISTICS 0,
  ALTER COLUMN sender_delivery_id SET STATISTICS 0,
  ALTER COLUMN duplicate_of SET STATISTICS 0,
  ALTER COLUMN payload SET STATISTICS 0,
  ALTER COLUMN headers SET STATISTICS 0,
  ALTER COLUMN reason SET STATISTICS 0,
  ALTER COLUMN sender_ip SET STATISTICS 0;

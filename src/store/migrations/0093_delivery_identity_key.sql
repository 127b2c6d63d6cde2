-- The dedupe index of accepted deliveries on one 32-byte key instead of (webhook_uid, identity) as text: SHA-256
-- of the uid, a NUL and the identity in UTF-8 (deliveryKey in src/ingress/identity.ts). An entry takes 33 bytes of
-- key instead of about 100, so the index has about half the pages and each delivery writes less WAL (≈ 120 of
-- ≈ 1,900 bytes); its keys are random, so after a checkpoint nearly every insert touches a page not yet written
-- since, and fewer pages mean fewer full-page images (docs/performance.md, "Webhook ingress").
-- The accepted rows already logged get their key here: one pass over them (a table rewrite of those rows).

ALTER TABLE webhook_deliveries ADD COLUMN identity_key bytea;
ALTER TABLE webhook_deliveries ALTER COLUMN identity_key SET STATISTICS 0;
UPDATE webhook_deliveries
   SET identity_key = sha256(convert_to(webhook_uid, 'UTF8') || '\x00'::bytea || convert_to(identity, 'UTF8'))
 WHERE label = 'accepted' AND identity IS NOT NULL;
DROP INDEX webhook_deliveries_identity;
CREATE UNIQUE INDEX webhook_deliveries_identity ON webhook_deliveries (identity_key) WHERE label = 'accepted';

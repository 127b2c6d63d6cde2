-- A replay (POST /webhooks/{uid}/deliveries/{id}/replay): a new accepted delivery with the original's payload,
-- evaluated like any delivery, naming the delivery it replays and who asked for it.
ALTER TABLE webhook_deliveries ADD COLUMN replay_of text;
ALTER TABLE webhook_deliveries ADD COLUMN replayed_by text;

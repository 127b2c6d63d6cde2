-- Ascending order for the delivery log and firing indexes, for the reason given in 0005_runs_index_order.sql:
-- every delivery is the newest of its webhook, and in a DESC index that means 50/50 splits of the first page.

DROP INDEX webhook_deliveries_log;
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_uid, received_at, id);
DROP INDEX automation_firings_automation;
CREATE INDEX automation_firings_automation ON automation_firings (automation_id, created_at);

-- The webhook delivery log, which is also the outbox of accepted deliveries awaiting automation evaluation,
-- and the shared counters of the ingress rate limits.

CREATE TABLE webhook_deliveries (
  -- dlv_…: the delivery_id answered to the sender and shown in the log.
  id text PRIMARY KEY,
  webhook_uid text NOT NULL,
  team_id text NOT NULL,
  factory_id text NOT NULL,
  -- The webhook's name when the delivery arrived (the log outlives a deleted webhook).
  webhook_name text NOT NULL,
  label text NOT NULL CHECK (label IN ('accepted', 'duplicate', 'rejected_auth', 'rejected_invalid_json', 'rejected_too_large')),
  -- The dedupe key of an accepted or duplicate delivery: "<source>:<value>", see src/ingress/identity.ts.
  identity text,
  identity_source text CHECK (identity_source IN ('delivery_id_header', 'provider', 'agentyard_header', 'body_sha256')),
  -- The sender's own event ID when it gave one (absent when the identity is the body hash).
  sender_delivery_id text,
  -- For a duplicate: the accepted delivery it repeats.
  duplicate_of text,
  size integer NOT NULL,
  received_at timestamptz NOT NULL,
  -- The request body exactly as received; accepted deliveries only.
  payload bytea,
  -- A harmless subset of the request headers (content-type, user-agent, the identity header).
  headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- Why a delivery was rejected, as the sender was told.
  reason text,
  sender_ip text,
  -- The outbox: an accepted delivery waits here until the automation evaluator has handled it.
  outbox_pending boolean NOT NULL DEFAULT false,
  evaluated_at timestamptz
);
-- Dedupe: one accepted delivery per (webhook, identity), across every ingress process.
CREATE UNIQUE INDEX webhook_deliveries_identity ON webhook_deliveries (webhook_uid, identity) WHERE label = 'accepted';
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_uid, received_at DESC, id DESC);
CREATE INDEX webhook_deliveries_outbox ON webhook_deliveries (id) WHERE outbox_pending;

-- Counters of rate-limiter-flexible's PostgreSQL store (sender rate and failed-authentication budget), shared
-- by every ingress process. Unlogged: a counter lost in a crash only forgives a minute of traffic.
CREATE UNLOGGED TABLE webhook_rate_limits (
  key varchar(255) PRIMARY KEY,
  points integer NOT NULL DEFAULT 0,
  expire bigint
);

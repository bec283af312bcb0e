-- The event log (docs/events.md): every change a downstream system cares about, one row written in the same
-- transaction as the change (I9), kept EVENT_RETENTION_DAYS. `n` is write order only: under concurrency a smaller n can
-- commit later, so the feed's order is `position`, given after commit by one sequencer at a time (sequence_events,
-- db/functions/100_event-log.sql): a position is handed out only to committed rows, always above every position before
-- it, so a reader that has seen position p never later finds a new row below p.
CREATE TABLE events (
  id            text PRIMARY KEY CHECK (id ~ '^evt_[0-9a-f]{32}$'),  -- the webhook-id, the same on every redelivery
  n             bigserial NOT NULL UNIQUE,
  type          text NOT NULL,
  order_id      uuid,
  client_id     text,                  -- the order's client: a partner key's feed shows only its own
  sku           text,                  -- stock events
  sequence      bigint NOT NULL CHECK (sequence > 0),  -- per order (order events), per SKU (stock events)
  data          jsonb NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  position      bigint UNIQUE,
  sequenced_at  timestamptz
);
CREATE UNIQUE INDEX events_order_sequence_idx ON events (order_id, sequence) WHERE order_id IS NOT NULL;
CREATE UNIQUE INDEX events_sku_sequence_idx ON events (sku, sequence) WHERE order_id IS NULL AND sku IS NOT NULL;
CREATE INDEX events_unsequenced_idx ON events (n) WHERE position IS NULL;
CREATE INDEX events_client_position_idx ON events (client_id, position) WHERE client_id IS NOT NULL;
CREATE INDEX events_created_idx ON events (created_at);

-- The sequencer's one row: the last position handed out (never goes back, whatever retention deletes). Its row lock is
-- the "one sequencer at a time".
CREATE TABLE event_feed_head (
  only_row       boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  last_position  bigint NOT NULL DEFAULT 0
);
INSERT INTO event_feed_head DEFAULT VALUES;

-- Webhook endpoints (admin): where events are pushed, signed to the Standard Webhooks specification. During a rotation
-- both secrets sign until previous_secret_until.
CREATE TABLE webhook_endpoints (
  id                     uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  url                    text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
  description            text CHECK (length(description) <= 500),
  event_types            text[] NOT NULL CHECK (cardinality(event_types) > 0),
  secret                 text NOT NULL,
  previous_secret        text,
  previous_secret_until  timestamptz,
  enabled                boolean NOT NULL DEFAULT true,
  disabled_at            timestamptz,
  failing_since          timestamptz,  -- the first failure since the last success
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now()
);

-- One event to one endpoint: created when the event is sequenced (or by redeliverEvent), claimed by a worker with a
-- lease (FOR UPDATE SKIP LOCKED), DELIVERED on a 2xx or FAILED after the retry schedule. order_key: deliveries with
-- the same key go in position order (the order's id; a SKU for stock events; a redelivery its own).
CREATE TABLE webhook_deliveries (
  id               bigserial PRIMARY KEY,
  endpoint_id      uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id         text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  position         bigint NOT NULL,
  order_key        text NOT NULL,
  status           text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED')),
  attempt          integer NOT NULL DEFAULT 0 CHECK (attempt >= 0),
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  lease_until      timestamptz,
  http_status      integer,
  duration_ms      integer,
  last_error       text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  delivered_at     timestamptz
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (endpoint_id, position) WHERE status = 'PENDING';
CREATE INDEX webhook_deliveries_order_idx ON webhook_deliveries (endpoint_id, order_key, position) WHERE status = 'PENDING';
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);

-- Marketplaces as sales channels (docs/channels.md): the same units sold on the storefront and on marketplaces.
-- Each marketplace order has its effect once (I8: the event id in processed_events; the order under a unique
-- (channel, external order id)); a marketplace never lists more than lastunit has available after its rules (I13:
-- every availability change recomputes each channel's desired quantity in the same transaction, the pusher sends it).

CREATE TABLE channels (
  id                     text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  name                   text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  kind                   text NOT NULL CHECK (kind IN ('SANDBOX', 'SHOPIFY')),
  endpoint               text NOT NULL CHECK (endpoint ~ '^https?://'),
  buffer                 integer NOT NULL DEFAULT 0 CHECK (buffer >= 0),
  max_listed             integer CHECK (max_listed IS NULL OR max_listed >= 0),
  percent                integer NOT NULL DEFAULT 100 CHECK (percent BETWEEN 0 AND 100),
  zero_at_or_below       integer NOT NULL DEFAULT 0 CHECK (zero_at_or_below >= 0),
  max_pushes_per_second  integer NOT NULL DEFAULT 5 CHECK (max_pushes_per_second BETWEEN 1 AND 1000),
  -- the HMAC key marketplace webhooks are signed with: kept as is because verifying an HMAC needs the key itself;
  -- the API returns it once, from createChannel, and never again
  webhook_secret         text NOT NULL CHECK (length(webhook_secret) >= 16),
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now()
);

-- The push outbox, coalesced: one row per (channel, SKU) holding only the NEWEST desired quantity, written in the
-- transaction that changed the SKU's availability (trigger on inventory, db/functions/090_channels.sql). The pusher
-- sends rows whose desired_version is above pushed_version; a push carries desired_version, so an older push can never
-- overwrite a newer one at the marketplace (I13).
CREATE TABLE channel_listings (
  channel_id        text NOT NULL REFERENCES channels (id),
  sku               text NOT NULL REFERENCES products (sku),
  desired_quantity  integer NOT NULL CHECK (desired_quantity >= 0),
  desired_version   bigint NOT NULL,                 -- grows with every recomputation (inventory.version of the change)
  desired_at        timestamptz NOT NULL,            -- when the change that asked for it happened (push lag starts here)
  pushed_quantity   integer,
  pushed_version    bigint NOT NULL DEFAULT 0,
  pushed_at         timestamptz,
  attempts          integer NOT NULL DEFAULT 0,
  next_attempt_at   timestamptz NOT NULL DEFAULT now(),
  lease_until       timestamptz,
  last_error        text,
  PRIMARY KEY (channel_id, sku)
);
-- The pusher's scan: what is still to be sent.
CREATE INDEX channel_listings_pending_idx ON channel_listings (channel_id, next_attempt_at) WHERE desired_version > pushed_version;

-- Marketplace orders: the order row carries its channel and the marketplace's order id, unique per channel, so the
-- same order under two event ids (or an eBay reference reused by a combined invoice on one event) is one order.
ALTER TABLE orders ADD COLUMN channel_id text REFERENCES channels (id);
ALTER TABLE orders ADD COLUMN external_order_id text;
ALTER TABLE orders ADD CONSTRAINT orders_channel_external_pair CHECK ((channel_id IS NULL) = (external_order_id IS NULL));
CREATE UNIQUE INDEX orders_channel_external_idx ON orders (channel_id, external_order_id) WHERE channel_id IS NOT NULL;

-- A marketplace sold units lastunit no longer had: recorded (never negative stock, I1) and a cancellation asked of
-- the marketplace once: this row is its outbox (cancel_state PENDING until the marketplace acknowledged it).
CREATE TABLE channel_incidents (
  id                 bigserial PRIMARY KEY,
  channel_id         text NOT NULL REFERENCES channels (id),
  kind               text NOT NULL CHECK (kind IN ('CHANNEL_OVERSOLD')),
  external_order_id  text NOT NULL,
  order_id           uuid NOT NULL REFERENCES orders (id),
  sku                text NOT NULL,
  lines              jsonb NOT NULL,
  cancel_state       text NOT NULL DEFAULT 'PENDING' CHECK (cancel_state IN ('PENDING', 'DONE')),
  cancel_attempts    integer NOT NULL DEFAULT 0,
  next_attempt_at    timestamptz NOT NULL DEFAULT now(),
  last_error         text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  cancelled_at       timestamptz,
  UNIQUE (channel_id, external_order_id, kind)
);
CREATE INDEX channel_incidents_pending_idx ON channel_incidents (next_attempt_at) WHERE cancel_state = 'PENDING';

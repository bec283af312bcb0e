-- The tables of ARCHITECTURE.md section 3, squashed from the pre-release 001/002/005 files. The constraints here ARE the
-- invariants; application code only asks. Append-only from here on: a table change is a new numbered file, never an
-- edit (migrate refuses an applied file whose checksum changed). Functions live in db/functions/, re-applied on every migrate.

CREATE TABLE products (
  sku           text PRIMARY KEY CHECK (sku ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
  name          text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  price_amount  integer NOT NULL CHECK (price_amount >= 0),
  currency      char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  created_at    timestamptz NOT NULL DEFAULT now()
);

-- I1: no column may go negative, whatever the application asks.
CREATE TABLE inventory (
  sku         text PRIMARY KEY REFERENCES products (sku),
  available   integer NOT NULL DEFAULT 0 CHECK (available >= 0),
  reserved    integer NOT NULL DEFAULT 0 CHECK (reserved >= 0),
  sold        integer NOT NULL DEFAULT 0 CHECK (sold >= 0),
  version     bigint NOT NULL DEFAULT 1,  -- grows on every change; events carry it so clients drop stale ones
  updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE orders (
  id            uuid PRIMARY KEY,
  client_id     text NOT NULL,
  customer_id   text NOT NULL,
  status        text NOT NULL CHECK (status IN ('PROCESSING','RESERVED','AWAITING_PAYMENT','CONFIRMED','REJECTED','CANCELLED','EXPIRED')),
  total_amount  integer NOT NULL CHECK (total_amount >= 0),
  currency      char(3) NOT NULL,
  rejection     jsonb,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX orders_client_idx ON orders (client_id, created_at);

CREATE TABLE order_lines (
  order_id     uuid NOT NULL REFERENCES orders (id),
  sku          text NOT NULL REFERENCES products (sku),
  quantity     integer NOT NULL CHECK (quantity > 0),
  unit_amount  integer NOT NULL CHECK (unit_amount >= 0),
  PRIMARY KEY (order_id, sku)
);

CREATE TABLE reservations (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  order_id          uuid NOT NULL REFERENCES orders (id),
  sku               text NOT NULL REFERENCES products (sku),
  quantity          integer NOT NULL CHECK (quantity > 0),
  state             text NOT NULL CHECK (state IN ('HELD','AWAITING_PAYMENT','SOLD','RELEASED','EXPIRED')),
  expires_at        timestamptz NOT NULL,
  payment_deadline  timestamptz,
  released_reason   text,
  updated_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (order_id, sku)
);
-- The sweeper's scan: only live holds, oldest expiry first.
CREATE INDEX reservations_held_expiry_idx ON reservations (expires_at) WHERE state = 'HELD';

-- I4: one key (scoped to client + customer) is one row, so it can create at most one order.
CREATE TABLE idempotency_keys (
  client_id     text NOT NULL,
  customer_id   text NOT NULL,
  key           text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
  request_hash  text NOT NULL,
  order_id      uuid,
  state         text NOT NULL CHECK (state IN ('PROCESSING','DONE')),
  response      jsonb,
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  PRIMARY KEY (client_id, customer_id, key)
);
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (expires_at);

-- I8: an event's id is written in the same transaction as its effect.
CREATE TABLE processed_events (
  source        text NOT NULL,
  event_id      text NOT NULL,
  processed_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (source, event_id)
);

-- I9: the transactional outbox. A row is written in the same transaction as the change it announces.
CREATE TABLE outbox (
  id             bigserial PRIMARY KEY,
  topic          text NOT NULL,
  aggregate_key  text NOT NULL,
  payload        jsonb NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  published_at   timestamptz
);
CREATE INDEX outbox_unpublished_idx ON outbox (id) WHERE published_at IS NULL;

-- Payments (ARCHITECTURE.md section 2 step 4): hold first, then authorize outside any transaction; guarded transitions
-- move AWAITING_PAYMENT holds (db/functions/040_payments.sql).

-- One row per authorization attempt. The order id is the processor-side idempotency key, so attempt 1 is the only one today.
CREATE TABLE payments (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  order_id       uuid NOT NULL REFERENCES orders (id),
  attempt        integer NOT NULL DEFAULT 1 CHECK (attempt > 0),
  provider       text NOT NULL,
  provider_ref   text,
  state          text NOT NULL CHECK (state IN ('PENDING','UNKNOWN','AUTHORIZED','DECLINED','NOT_FOUND')),
  amount         integer NOT NULL CHECK (amount >= 0),
  currency       char(3) NOT NULL,
  reason         text,
  requested_at   timestamptz NOT NULL DEFAULT now(),
  deadline_at    timestamptz NOT NULL,
  outcome_at     timestamptz,
  next_check_at  timestamptz NOT NULL,   -- the reconciler's clock: deadline first, then lease / backoff
  checks         integer NOT NULL DEFAULT 0,
  UNIQUE (order_id, attempt)
);
-- The reconciler's scan: payments still waiting for an answer.
CREATE INDEX payments_open_idx ON payments (next_check_at) WHERE state IN ('PENDING','UNKNOWN');

-- A success that lost the race to a release: the money must go back, once (UNIQUE per order).
CREATE TABLE compensations (
  id           bigserial PRIMARY KEY,
  order_id     uuid NOT NULL UNIQUE REFERENCES orders (id),
  provider     text NOT NULL,
  provider_ref text,
  state        text NOT NULL DEFAULT 'PENDING' CHECK (state IN ('PENDING','DONE')),
  attempts     integer NOT NULL DEFAULT 0,
  lease_until  timestamptz,
  last_error   text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  done_at      timestamptz
);
CREATE INDEX compensations_pending_idx ON compensations (id) WHERE state = 'PENDING';

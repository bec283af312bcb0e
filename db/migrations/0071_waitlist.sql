-- Waitlists (issue 22): shoppers waiting for a sold-out SKU. A unit that comes back (expiry, release, decline,
-- cancellation with restock, restock) goes to the head of the SKU's list in the transaction that returns it: the
-- trigger on inventory (db/functions/113_waitlist.sql) claims it for the head as an order RESERVED until
-- now() + claim_seconds, through the one claim loop. Only rows flagged `waitlisted` fire it, so a SKU nobody waits
-- for pays nothing.
ALTER TABLE inventory ADD COLUMN waitlisted boolean NOT NULL DEFAULT false;

CREATE TABLE waitlist_entries (
  id               uuid PRIMARY KEY,
  place            bigint GENERATED ALWAYS AS IDENTITY,  -- arrival order: the head is the lowest WAITING place
  client_id        text NOT NULL,
  customer_id      text NOT NULL,     -- as the shopper sent it (the order's customerId)
  counted_customer text NOT NULL,     -- the buyer as counted (a public key's address unless a buyer token vouched)
  sku              text NOT NULL REFERENCES products (sku),
  quantity         integer NOT NULL CHECK (quantity BETWEEN 1 AND 100),
  idempotency_key  text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
  token_hash       text NOT NULL CHECK (token_hash ~ '^[0-9a-f]{64}$'),  -- also the offered order's token hash
  claim_seconds    integer NOT NULL CHECK (claim_seconds BETWEEN 1 AND 86400),  -- WAITLIST_CLAIM_SECONDS at join
  state            text NOT NULL CHECK (state IN ('WAITING', 'OFFERED', 'SKIPPED')),
  order_id         uuid UNIQUE REFERENCES orders (id),  -- I18: one offered order per entry, one entry per order
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  CHECK ((state = 'OFFERED') = (order_id IS NOT NULL)),
  UNIQUE (client_id, counted_customer, sku, idempotency_key)
);
-- I18: one waiting entry per customer and SKU
CREATE UNIQUE INDEX waitlist_one_waiting_idx ON waitlist_entries (client_id, counted_customer, sku) WHERE state = 'WAITING';
CREATE INDEX waitlist_head_idx ON waitlist_entries (sku, place) WHERE state = 'WAITING';

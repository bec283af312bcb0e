-- Fair drops (issue 9): a per-customer purchase limit per SKU (I12) and a cap on each buyer's active holds (I13), both
-- decided by a conditional write on a counter that moves in the same transaction as the units it counts, with CHECK
-- constraints the database enforces whatever code asks. db/functions/060_fair-drops.sql moves the counters.

-- The most units one customer (client + customer id) may hold or have bought of this SKU; NULL: no limit. It sits on
-- the inventory row because that row is what every claim locks: a limit set while claims run is seen by the next one.
ALTER TABLE inventory ADD COLUMN purchase_limit integer CHECK (purchase_limit IS NULL OR purchase_limit >= 1);

-- Whom this order's active hold is counted against (MAX_ACTIVE_HOLDS): `customer:<id>` for server-side keys,
-- `ip:<address>` for public keys; NULL when the hold was not counted (the limit was off).
ALTER TABLE orders ADD COLUMN hold_buyer text;

-- I12: units a customer holds or has bought of a limited SKU, over orders not released, expired or cancelled. Rows
-- exist only for SKUs with a limit (rebuilt from the reservations when a limit is set). `max_units` is the ceiling
-- the row was last claimed under (or its count, when a lowered limit found it above): claims raise `units` only by a
-- conditional write under the current limit, releases only lower it, so the CHECK holds on every path.
CREATE TABLE customer_purchases (
  client_id    text NOT NULL,
  customer_id  text NOT NULL,
  sku          text NOT NULL REFERENCES products (sku),
  units        integer NOT NULL CHECK (units >= 0),
  max_units    integer NOT NULL,
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (client_id, customer_id, sku),
  CHECK (units <= max_units)
);

-- I13: active holds (orders RESERVED or AWAITING_PAYMENT) per buyer; a row exists only while it is above zero.
CREATE TABLE buyer_holds (
  client_id   text NOT NULL,
  buyer       text NOT NULL,
  active      integer NOT NULL CHECK (active >= 0),
  max_active  integer NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (client_id, buyer),
  CHECK (active <= max_active)
);

-- Setting a limit on a SKU counts what its customers already hold or bought: this index is that scan.
CREATE INDEX reservations_counted_sku_idx ON reservations (sku) WHERE state IN ('HELD', 'AWAITING_PAYMENT', 'SOLD');

-- Core tables of ARCHITECTURE.md section 3. The constraints here ARE the invariants; application code only asks.

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

-- Availability events for SKUs this transaction changed (their rows are already locked by it, so this reads its own write).
CREATE FUNCTION emit_availability(p_skus text[]) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO outbox (topic, aggregate_key, payload)
  SELECT 'availability', i.sku,
         jsonb_build_object('sku', i.sku, 'available', i.available, 'soldOut', i.available = 0,
                            'version', i.version, 'updatedAt', i.updated_at)
    FROM inventory i WHERE i.sku = ANY (p_skus) ORDER BY i.sku
$$;

-- An order-status event (the owner's client id rides along so subscriptions deliver it only to that client).
CREATE FUNCTION emit_order_status(p_order_ids uuid[]) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO outbox (topic, aggregate_key, payload)
  SELECT 'order_status', o.id::text,
         jsonb_build_object('orderId', o.id, 'clientId', o.client_id, 'status', o.status, 'updatedAt', o.updated_at)
    FROM orders o WHERE o.id = ANY (p_order_ids)
$$;

-- The order as the API shows it, built in one place so every path answers the same shape.
CREATE FUNCTION order_json(p_order_id uuid) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'id', o.id, 'status', o.status, 'customerId', o.customer_id,
    'totalAmount', o.total_amount, 'currency', o.currency, 'rejection', o.rejection,
    'createdAt', o.created_at, 'updatedAt', o.updated_at,
    'lines', COALESCE((SELECT jsonb_agg(jsonb_build_object('sku', l.sku, 'quantity', l.quantity, 'unitAmount', l.unit_amount) ORDER BY l.sku)
                        FROM order_lines l WHERE l.order_id = o.id), '[]'::jsonb),
    'reservation', (SELECT jsonb_build_object(
                      'state', CASE WHEN bool_or(r.state = 'HELD') THEN 'HELD'
                                    WHEN bool_or(r.state = 'AWAITING_PAYMENT') THEN 'AWAITING_PAYMENT'
                                    ELSE min(r.state) END,
                      'expiresAt', min(r.expires_at))
                    FROM reservations r WHERE r.order_id = o.id HAVING count(*) > 0))
  FROM orders o WHERE o.id = p_order_id
$$;

-- placeOrder in one round trip (ARCHITECTURE.md section 2, steps 1-3), in two phases so that a transaction placing
-- several orders (005_claim_batches.sql) can take every key row before any inventory row lock.
--
-- Phase 1, prepare_order: everything that takes no inventory lock. Validation reads, the key row (I4, I5), and the
-- order, lines, hold and order-status event, all written before the claim (step 3: the claim as late as it can be).
-- Returns a final answer {kind: unknown_sku | mixed_currency | total_too_large | reused | in_progress | replayed, ...}
-- or {kind: 'prepared', ...} carrying what phase 2 needs.
--   p_payment: a payment follows: the key row stays PROCESSING so a concurrent retry answers IN_PROGRESS while the
--              payment step runs; the payment step finishes the key (finish_key, 002_payments.sql).
--   p_recovery_seconds: a key PROCESSING for longer than this (its request died between the hold and the
--              authorization), or whose order is already final, is finished and replayed, never executed again.
CREATE FUNCTION prepare_order(
  p_client_id text, p_customer_id text, p_key text, p_request_hash text,
  p_lines jsonb, p_hold_ttl_seconds integer, p_retention_hours integer,
  p_payment boolean DEFAULT false, p_recovery_seconds integer DEFAULT NULL
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_order_id     uuid := gen_random_uuid();
  v_now          timestamptz := now();
  v_expires      timestamptz := now() + make_interval(secs => p_hold_ttl_seconds);
  v_existing     idempotency_keys%ROWTYPE;
  v_status       text;
  v_unknown      text;
  v_currencies   integer;
  v_total        bigint;
  v_currency     char(3);
  v_lines        jsonb;
  v_status_event bigint;
BEGIN
  -- Unknown SKUs, mixed currencies and totals beyond integer range are bad input: answered before anything is
  -- written. Products are never deleted and prices are copied onto the order, so this read decides nothing about stock.
  SELECT min(l.sku) FILTER (WHERE p.sku IS NULL), count(DISTINCT p.currency), sum(p.price_amount::bigint * l.quantity), min(p.currency),
         jsonb_agg(jsonb_build_object('sku', l.sku, 'quantity', l.quantity, 'unitAmount', p.price_amount) ORDER BY l.sku)
    INTO v_unknown, v_currencies, v_total, v_currency, v_lines
    FROM jsonb_to_recordset(p_lines) AS l(sku text, quantity integer)
    LEFT JOIN products p ON p.sku = l.sku;
  IF v_unknown IS NOT NULL THEN
    RETURN jsonb_build_object('kind', 'unknown_sku', 'sku', v_unknown);
  END IF;
  IF v_currencies > 1 THEN
    RETURN jsonb_build_object('kind', 'mixed_currency');
  END IF;
  IF v_total > 2147483647 THEN
    RETURN jsonb_build_object('kind', 'total_too_large');
  END IF;

  -- I4: the key row first. A concurrent twin blocks here on the unique index until this transaction ends, then replays.
  INSERT INTO idempotency_keys (client_id, customer_id, key, request_hash, order_id, state, response, expires_at)
  VALUES (p_client_id, p_customer_id, p_key, p_request_hash, v_order_id,
          CASE WHEN p_payment THEN 'PROCESSING' ELSE 'DONE' END, jsonb_build_object('orderId', v_order_id),
          now() + make_interval(hours => p_retention_hours))
  ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN
    SELECT * INTO v_existing FROM idempotency_keys
     WHERE client_id = p_client_id AND customer_id = p_customer_id AND key = p_key;
    IF NOT FOUND THEN
      -- The twin rolled back or the row was cleaned up between our insert and read: let the caller retry the whole call.
      RAISE EXCEPTION 'idempotency key vanished' USING ERRCODE = '40001';
    END IF;
    -- I5: same key, different request: refused, nothing executed.
    IF v_existing.request_hash <> p_request_hash THEN
      RETURN jsonb_build_object('kind', 'reused', 'orderId', v_existing.order_id);
    END IF;
    IF v_existing.state = 'PROCESSING' THEN
      SELECT status INTO v_status FROM orders WHERE id = v_existing.order_id;
      IF v_status IN ('RESERVED', 'AWAITING_PAYMENT') AND
         (p_recovery_seconds IS NULL OR v_existing.created_at > now() - make_interval(secs => p_recovery_seconds)) THEN
        RETURN jsonb_build_object('kind', 'in_progress', 'orderId', v_existing.order_id, 'order', order_json(v_existing.order_id));
      END IF;
      -- the request that owned the key is finished or dead: the key replays the order from now on (never re-executes)
      UPDATE idempotency_keys SET state = 'DONE', response = jsonb_build_object('orderId', v_existing.order_id)
       WHERE client_id = p_client_id AND customer_id = p_customer_id AND key = p_key AND state = 'PROCESSING';
    END IF;
    RETURN jsonb_build_object('kind', 'replayed', 'order', order_json(v_existing.order_id), 'response', v_existing.response);
  END IF;

  INSERT INTO orders (id, client_id, customer_id, status, total_amount, currency, created_at, updated_at)
  VALUES (v_order_id, p_client_id, p_customer_id, 'RESERVED', v_total, v_currency, v_now, v_now);
  INSERT INTO order_lines (order_id, sku, quantity, unit_amount)
  SELECT v_order_id, l.sku, l.quantity, l."unitAmount" FROM jsonb_to_recordset(v_lines) AS l(sku text, quantity integer, "unitAmount" integer);
  INSERT INTO reservations (order_id, sku, quantity, state, expires_at, updated_at)
  SELECT v_order_id, l.sku, l.quantity, 'HELD', v_expires, v_now FROM jsonb_to_recordset(v_lines) AS l(sku text, quantity integer);
  -- I9
  INSERT INTO outbox (topic, aggregate_key, payload)
  VALUES ('order_status', v_order_id::text,
          jsonb_build_object('orderId', v_order_id, 'clientId', p_client_id, 'status', 'RESERVED', 'updatedAt', v_now))
  RETURNING id INTO v_status_event;

  RETURN jsonb_build_object('kind', 'prepared', 'orderId', v_order_id, 'clientId', p_client_id, 'customerId', p_customer_id,
    'key', p_key, 'payment', p_payment, 'lines', v_lines, 'totalAmount', v_total, 'currency', v_currency,
    'now', v_now, 'expiresAt', v_expires, 'statusEvent', v_status_event);
END
$$;

-- Phase 2, claim_order: the claims, then only one outbox insert per line (built from the UPDATE's own RETURNING) and
-- the commit hold the inventory row lock. A rejected claim takes no lock; the prepared order is then corrected to
-- REJECTED (recorded, so a retry with the same key replays the rejection). Returns the order document order_json()
-- would build, from what it already knows (no re-read).
CREATE FUNCTION claim_order(p jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_order_id   uuid := (p->>'orderId')::uuid;
  v_lines      jsonb := p->'lines';
  v_failed_sku text;
  v_failed_qty integer;
  v_left       integer;
  v_rejection  jsonb;
  v_line       record;
  v_inv        record;
BEGIN
  -- I3: every unit is claimed by one conditional UPDATE; lines in SKU order so all writers lock rows in one order (no deadlocks).
  IF jsonb_array_length(v_lines) = 1 THEN
    SELECT l.sku, l.quantity INTO v_line FROM jsonb_to_recordset(v_lines) AS l(sku text, quantity integer);
    UPDATE inventory SET available = available - v_line.quantity, reserved = reserved + v_line.quantity, version = version + 1, updated_at = now()
     WHERE sku = v_line.sku AND available >= v_line.quantity
    RETURNING sku, available, version, updated_at INTO v_inv;
    IF FOUND THEN
      INSERT INTO outbox (topic, aggregate_key, payload)
      VALUES ('availability', v_inv.sku, jsonb_build_object('sku', v_inv.sku, 'available', v_inv.available,
              'soldOut', v_inv.available = 0, 'version', v_inv.version, 'updatedAt', v_inv.updated_at));
    ELSE
      v_failed_sku := v_line.sku; v_failed_qty := v_line.quantity;
    END IF;
  ELSE
    BEGIN  -- a subtransaction: a line that cannot be claimed rolls back the earlier claims, their events and their row locks
      FOR v_line IN SELECT l.sku, l.quantity FROM jsonb_to_recordset(v_lines) AS l(sku text, quantity integer) ORDER BY l.sku LOOP
        UPDATE inventory SET available = available - v_line.quantity, reserved = reserved + v_line.quantity, version = version + 1, updated_at = now()
         WHERE sku = v_line.sku AND available >= v_line.quantity
        RETURNING sku, available, version, updated_at INTO v_inv;
        IF NOT FOUND THEN
          v_failed_sku := v_line.sku; v_failed_qty := v_line.quantity;
          RAISE EXCEPTION 'claim failed' USING ERRCODE = 'LU001';
        END IF;
        INSERT INTO outbox (topic, aggregate_key, payload)
        VALUES ('availability', v_inv.sku, jsonb_build_object('sku', v_inv.sku, 'available', v_inv.available,
                'soldOut', v_inv.available = 0, 'version', v_inv.version, 'updatedAt', v_inv.updated_at));
      END LOOP;
    EXCEPTION WHEN SQLSTATE 'LU001' THEN
      NULL;  -- claims undone; v_failed_sku survives (plpgsql variables are not rolled back)
    END;
  END IF;

  IF v_failed_sku IS NOT NULL THEN
    SELECT available INTO v_left FROM inventory WHERE sku = v_failed_sku;  -- for the message only: the decision was the UPDATE
    v_rejection := jsonb_build_object(
      'code', CASE WHEN v_left = 0 THEN 'SOLD_OUT' ELSE 'INSUFFICIENT_STOCK' END,
      'sku', v_failed_sku,
      'message', CASE WHEN v_left = 0 THEN format('%s is sold out', v_failed_sku)
                      ELSE format('not enough %s left for %s', v_failed_sku, v_failed_qty) END);
    UPDATE orders SET status = 'REJECTED', rejection = v_rejection WHERE id = v_order_id;
    DELETE FROM reservations WHERE order_id = v_order_id;
    UPDATE outbox SET payload = jsonb_set(payload, '{status}', '"REJECTED"') WHERE id = (p->>'statusEvent')::bigint;
    IF (p->>'payment')::boolean THEN  -- nothing to pay for: the key is final now
      UPDATE idempotency_keys SET state = 'DONE'
       WHERE client_id = p->>'clientId' AND customer_id = p->>'customerId' AND key = p->>'key';
    END IF;
  END IF;

  RETURN jsonb_build_object(
    'kind', CASE WHEN v_rejection IS NULL THEN 'placed' ELSE 'rejected' END,
    'order', jsonb_build_object(
      'id', v_order_id, 'status', CASE WHEN v_rejection IS NULL THEN 'RESERVED' ELSE 'REJECTED' END,
      'customerId', p->'customerId', 'totalAmount', p->'totalAmount', 'currency', p->'currency', 'rejection', v_rejection,
      'createdAt', p->'now', 'updatedAt', p->'now', 'lines', v_lines,
      'reservation', CASE WHEN v_rejection IS NULL THEN jsonb_build_object('state', 'HELD', 'expiresAt', p->'expiresAt') END));
END
$$;

-- placeOrder for one order: both phases in one statement, one round trip.
CREATE FUNCTION place_order(
  p_client_id text, p_customer_id text, p_key text, p_request_hash text,
  p_lines jsonb, p_hold_ttl_seconds integer, p_retention_hours integer,
  p_payment boolean DEFAULT false, p_recovery_seconds integer DEFAULT NULL
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_prepared jsonb := prepare_order(p_client_id, p_customer_id, p_key, p_request_hash, p_lines,
                                    p_hold_ttl_seconds, p_retention_hours, p_payment, p_recovery_seconds);
BEGIN
  IF v_prepared->>'kind' <> 'prepared' THEN
    RETURN v_prepared;
  END IF;
  RETURN claim_order(v_prepared);
END
$$;

-- Moves the units of the given (already locked) orders' reservations in state p_from to p_to: SOLD moves them
-- reserved -> sold, anything else (RELEASED, EXPIRED) reserved -> available. Inventory rows are locked in SKU order,
-- as every writer does, so this cannot deadlock with placeOrder. Returns the SKUs whose stock moved.
CREATE FUNCTION move_reserved_units(p_order_ids uuid[], p_from text, p_to text, p_reason text) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
  v_skus text[];
  v_qtys integer[];
BEGIN
  -- I6: only reservations still in p_from move; a second caller finds none.
  WITH moved AS (
    UPDATE reservations SET state = p_to, released_reason = p_reason, updated_at = now()
     WHERE order_id = ANY (p_order_ids) AND state = p_from
    RETURNING sku, quantity)
  SELECT array_agg(sku ORDER BY sku), array_agg(q ORDER BY sku) INTO v_skus, v_qtys
    FROM (SELECT sku, sum(quantity)::integer AS q FROM moved GROUP BY sku) s;
  -- I2: the same units leave reserved and enter sold or available, in this transaction.
  FOR i IN 1 .. coalesce(array_length(v_skus, 1), 0) LOOP
    UPDATE inventory
       SET reserved = reserved - v_qtys[i],
           sold = sold + CASE WHEN p_to = 'SOLD' THEN v_qtys[i] ELSE 0 END,
           available = available + CASE WHEN p_to = 'SOLD' THEN 0 ELSE v_qtys[i] END,
           version = version + 1, updated_at = now()
     WHERE sku = v_skus[i];
  END LOOP;
  IF v_skus IS NOT NULL AND p_to <> 'SOLD' THEN PERFORM emit_availability(v_skus); END IF;  -- I9: available changed
  RETURN v_skus;
END
$$;

-- Moves the live (HELD) holds of the given, already locked, orders back to available and announces the orders' status.
CREATE FUNCTION return_held_units(p_order_ids uuid[], p_state text, p_reason text) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_skus text[] := move_reserved_units(p_order_ids, 'HELD', p_state, p_reason);
BEGIN
  PERFORM emit_order_status(p_order_ids);  -- I9
  RETURN coalesce(array_length(v_skus, 1), 0);
END
$$;

-- releaseReservation in one round trip. Lock order everywhere: order row, its reservations, inventory in SKU order.
-- Returns {kind: released | noop | already_final | payment_in_flight | not_found, order}.
CREATE FUNCTION release_order(p_client_id text, p_order_id uuid, p_reason text) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_status text;
BEGIN
  SELECT status INTO v_status FROM orders WHERE id = p_order_id AND client_id = p_client_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('kind', 'not_found');
  END IF;
  IF v_status = 'RESERVED' THEN
    UPDATE orders SET status = 'CANCELLED', updated_at = now() WHERE id = p_order_id;
    PERFORM return_held_units(ARRAY[p_order_id], 'RELEASED', coalesce(p_reason, 'released by customer'));
    RETURN jsonb_build_object('kind', 'released', 'order', order_json(p_order_id));
  END IF;
  RETURN jsonb_build_object(
    'kind', CASE v_status WHEN 'CONFIRMED' THEN 'already_final'
                          WHEN 'AWAITING_PAYMENT' THEN 'payment_in_flight'
                          WHEN 'PROCESSING' THEN 'payment_in_flight'
                          ELSE 'noop' END,
    'order', order_json(p_order_id));
END
$$;

-- The sweeper's batch: orders whose holds are past expires_at, locked with SKIP LOCKED so many sweepers (and a racing
-- releaseReservation) never free a unit twice. Only HELD holds are candidates: AWAITING_PAYMENT is never swept (I7).
CREATE FUNCTION expire_due_holds(p_limit integer) RETURNS TABLE (order_id uuid, units integer)
LANGUAGE plpgsql AS $$
DECLARE
  v_ids uuid[];
BEGIN
  -- Candidates come from the due-holds index without locking; only order rows are locked, FOR UPDATE SKIP LOCKED
  -- with the LIMIT, so two sweepers take disjoint batches and neither waits for the other. Reservations are then
  -- locked by return_held_units after their order: the lock order every writer uses (no deadlock cycle).
  SELECT array_agg(o.id) INTO v_ids FROM (
    SELECT o.id FROM orders o
     WHERE o.status = 'RESERVED'
       AND o.id IN (SELECT r.order_id FROM reservations r WHERE r.state = 'HELD' AND r.expires_at <= now())
     LIMIT p_limit
     FOR UPDATE SKIP LOCKED) o;
  IF v_ids IS NULL THEN RETURN; END IF;
  UPDATE orders SET status = 'EXPIRED', updated_at = now() WHERE id = ANY (v_ids);
  PERFORM return_held_units(v_ids, 'EXPIRED', 'hold expired');
  RETURN QUERY SELECT r.order_id, sum(r.quantity)::integer FROM reservations r
                WHERE r.order_id = ANY (v_ids) GROUP BY r.order_id;
END
$$;

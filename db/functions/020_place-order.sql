-- placeOrder: the key row, the order and its claims in one round trip, for one order or a coalesced batch (I3, I4, I5).

-- placeOrder in one round trip (ARCHITECTURE.md section 2, steps 1-3), in two phases so that a transaction placing
-- several orders (place_orders below) can take every key row before any inventory row lock.
--
-- Phase 1, prepare_order: everything that takes no inventory lock. Validation reads, the key row (I4, I5), and the
-- order, lines, hold and order-status event, all written before the claim (step 3: the claim as late as it can be).
-- Returns a final answer {kind: unknown_sku | mixed_currency | total_too_large | reused | in_progress | replayed |
-- rejected (sold out at a glance: no hold taken, nothing to undo, no outbox row: `quiet`), ...}
-- or {kind: 'prepared', ...} carrying what phase 2 needs.
--   p_payment: a payment follows: the key row stays PROCESSING so a concurrent retry answers IN_PROGRESS while the
--              payment step runs; the payment step finishes the key (finish_key, 040_payments.sql).
--   p_recovery_seconds: a key PROCESSING for longer than this (its request died between the hold and the
--              authorization), or whose order is already final, is finished and replayed, never executed again.
--   p_buyer, p_max_holds: whom the hold counts against and how many active holds a buyer may have (I14, 0 = no limit).
--   p_token_hash: the SHA-256 of the order token this call hands out (orders/order-tokens.ts), written with the order,
--              so a new order costs no second statement; a replay writes nothing and the caller hands out no token.
--   p_counted_customer: whom the purchase counter counts (I12) when not p_customer_id (a public key's buyer by
--              address, orders/buyer.ts); written on the order, so every give-back counts the same customer.
-- The answer to a line the stock cannot cover (SOLD_OUT or INSUFFICIENT_STOCK): one definition for prepare_order,
-- place_orders (set-based) and claim_order; and the order document of an order prepare_order refused at a glance
-- (place_orders answers its refusals in short and its caller builds the same document).
-- STABLE, not IMMUTABLE: their bodies call format() and jsonb_build_object(), which are STABLE, and PostgreSQL inlines
-- a SQL function only when its body is no more volatile than it is declared; declared IMMUTABLE, each call ran as a
-- separate SQL-function execution (a plan per call, per refused order of a batch).
CREATE OR REPLACE FUNCTION stock_rejection(p_sku text, p_quantity integer, p_available integer) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'code', CASE WHEN p_available = 0 THEN 'SOLD_OUT' ELSE 'INSUFFICIENT_STOCK' END,
    'sku', p_sku,
    'message', CASE WHEN p_available = 0 THEN format('%s is sold out', p_sku)
                    ELSE format('not enough %s left for %s', p_sku, p_quantity) END)
$$;

CREATE OR REPLACE FUNCTION rejected_order_json(
  p_order_id uuid, p_customer_id text, p_total bigint, p_currency text, p_rejection jsonb, p_at timestamptz, p_lines jsonb
) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'id', p_order_id, 'status', 'REJECTED', 'customerId', p_customer_id, 'totalAmount', p_total, 'currency', p_currency,
    'rejection', p_rejection, 'createdAt', p_at, 'updatedAt', p_at, 'lines', p_lines, 'reservation', NULL)
$$;

DROP FUNCTION IF EXISTS prepare_order(text, text, text, text, jsonb, integer, integer, boolean, integer);
DROP FUNCTION IF EXISTS prepare_order(text, text, text, text, jsonb, integer, integer, boolean, integer, text, integer);
DROP FUNCTION IF EXISTS prepare_order(text, text, text, text, jsonb, integer, integer, boolean, integer, text, integer, text);
CREATE OR REPLACE FUNCTION prepare_order(
  p_client_id text, p_customer_id text, p_key text, p_request_hash text,
  p_lines jsonb, p_hold_ttl_seconds integer, p_retention_hours integer,
  p_payment boolean DEFAULT false, p_recovery_seconds integer DEFAULT NULL,
  p_buyer text DEFAULT NULL, p_max_holds integer DEFAULT 0, p_token_hash text DEFAULT NULL,
  p_counted_customer text DEFAULT NULL
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
  v_hold_buyer   text := CASE WHEN coalesce(p_max_holds, 0) > 0 THEN p_buyer END;
  v_has_bundle   boolean;  -- a line is a bundle: claim_order claims its components (091_bundles.sql)
  v_limited      boolean;  -- a line has a purchase limit (I12): claim_order claims it in a subtransaction
  v_short        record;   -- a line the stock cannot cover at a glance (the sold-out answer)
  v_rejection    jsonb;
BEGIN
  -- Unknown SKUs, mixed currencies and totals beyond integer range are bad input: answered before anything is
  -- written. Products are never deleted and prices are copied onto the order, so this read decides nothing about stock.
  SELECT min(l.sku) FILTER (WHERE p.sku IS NULL), count(DISTINCT p.currency), sum(p.price_amount::bigint * l.quantity), min(p.currency),
         jsonb_agg(jsonb_build_object('sku', l.sku, 'quantity', l.quantity, 'unitAmount', p.price_amount) ORDER BY l.sku),
         coalesce(bool_or(p.is_bundle), false), coalesce(bool_or(i.purchase_limit IS NOT NULL), false)
    INTO v_unknown, v_currencies, v_total, v_currency, v_lines, v_has_bundle, v_limited
    FROM jsonb_to_recordset(p_lines) AS l(sku text, quantity integer)
    LEFT JOIN products p ON p.sku = l.sku
    LEFT JOIN inventory i ON i.sku = l.sku;
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

  -- Sold out at a glance: a line whose SKU has fewer units available than it asks for (committed state, no lock) is
  -- refused now, as its conditional UPDATE would refuse it at this instant: the key row (above) and the order, REJECTED
  -- from the start, with its lines, so the same key replays the same answer; no hold, no reservation, no hold counter,
  -- no order-status event, nothing to undo. Bundles take the full path (their stock is their components').
  IF NOT v_has_bundle THEN
    SELECT l.sku, l.quantity, i.available INTO v_short
      FROM jsonb_to_recordset(v_lines) AS l(sku text, quantity integer) JOIN inventory i ON i.sku = l.sku
     WHERE i.available < l.quantity ORDER BY l.sku LIMIT 1;
    IF FOUND THEN
      v_rejection := stock_rejection(v_short.sku, v_short.quantity, v_short.available);
      INSERT INTO orders (id, client_id, customer_id, status, total_amount, currency, created_at, updated_at, rejection, token_hash)
      VALUES (v_order_id, p_client_id, p_customer_id, 'REJECTED', v_total, v_currency, v_now, v_now, v_rejection, p_token_hash);
      INSERT INTO order_lines (order_id, sku, quantity, unit_amount)
      SELECT v_order_id, l.sku, l.quantity, l."unitAmount" FROM jsonb_to_recordset(v_lines) AS l(sku text, quantity integer, "unitAmount" integer);
      -- No order-status event: the order is born final and its id is first known from this answer, so no subscriber can
      -- be waiting for it and no change of it can follow (an event would only cost the relay a read and a write).
      IF p_payment THEN  -- nothing to pay for: the key is final now
        UPDATE idempotency_keys SET state = 'DONE' WHERE client_id = p_client_id AND customer_id = p_customer_id AND key = p_key;
      END IF;
      RETURN jsonb_build_object('kind', 'rejected', 'quiet', true,
        'order', rejected_order_json(v_order_id, p_customer_id, v_total, v_currency, v_rejection, v_now, v_lines));
    END IF;
  END IF;

  INSERT INTO orders (id, client_id, customer_id, status, total_amount, currency, created_at, updated_at, hold_buyer, token_hash, counted_customer)
  VALUES (v_order_id, p_client_id, p_customer_id, 'RESERVED', v_total, v_currency, v_now, v_now, v_hold_buyer, p_token_hash, p_counted_customer);
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
    'now', v_now, 'expiresAt', v_expires, 'statusEvent', v_status_event, 'holdBuyer', v_hold_buyer, 'maxHolds', p_max_holds,
    'hasBundle', v_has_bundle, 'limited', v_limited, 'countedCustomer', coalesce(p_counted_customer, p_customer_id));
END
$$;

-- Phase 2, claim_order: the buyer's hold counter (I14, before any inventory row), the claims, then only one outbox
-- insert per line (built from the UPDATE's own RETURNING) and the commit hold the inventory row lock. A limited SKU's
-- units are counted for the customer right after its claim, under its row lock (I12). A rejected claim takes no lock;
-- the prepared order is then corrected to REJECTED (recorded, so a retry with the same key replays the rejection) and
-- its hold given back. p.holdTaken: place_orders took the hold already. Returns the order document order_json()
-- would build, from what it already knows (no re-read).
CREATE OR REPLACE FUNCTION claim_order(p jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_order_id   uuid := (p->>'orderId')::uuid;
  v_lines      jsonb := p->'lines';
  -- the units to claim: the lines themselves, or (a bundle among them) every component, summed per SKU, in SKU order
  v_claims     jsonb := CASE WHEN (p->>'hasBundle')::boolean THEN expand_bundle_lines(p->'lines') ELSE p->'lines' END;
  v_failed_sku text;
  v_failed_qty integer;
  v_limited    integer;  -- the purchase limit a line would exceed (I12)
  v_left       integer;
  v_rejection  jsonb;
  v_line       record;
  v_inv        record;
BEGIN
  -- I14: the buyer's active holds, by a conditional write, before any inventory row is locked.
  IF NOT coalesce((p->>'holdTaken')::boolean, take_hold(p->>'clientId', p->>'holdBuyer', (p->>'maxHolds')::integer)) THEN
    v_rejection := jsonb_build_object('code', 'HOLD_LIMIT', 'sku', NULL,
      'message', format('this buyer already has %s active holds: complete, release or let one expire first', p->>'maxHolds'));
  -- I3: every unit is claimed by one conditional UPDATE; lines in SKU order so all writers lock rows in one order (no deadlocks).
  -- The single-line fast path has no subtransaction: a line with a purchase limit (known from phase 1) takes the loop
  -- below, whose rollback also undoes what the claim's triggers wrote (listings, bundle events).
  ELSIF jsonb_array_length(v_claims) = 1 AND NOT coalesce((p->>'limited')::boolean, false) THEN
    SELECT l.sku, l.quantity INTO v_line FROM jsonb_to_recordset(v_claims) AS l(sku text, quantity integer);
    UPDATE inventory SET available = available - v_line.quantity, reserved = reserved + v_line.quantity, version = version + 1, updated_at = now()
     WHERE sku = v_line.sku AND available >= v_line.quantity
    RETURNING sku, available, version, updated_at, purchase_limit INTO v_inv;
    IF FOUND AND v_inv.purchase_limit IS NOT NULL
       AND NOT count_purchase(p->>'clientId', p->>'countedCustomer', v_line.sku, v_line.quantity, v_inv.purchase_limit) THEN
      -- I12 refused, for a limit set after phase 1 read none: undo this claim on the row still locked by this
      -- transaction (no availability event was written for it)
      UPDATE inventory SET available = available + v_line.quantity, reserved = reserved - v_line.quantity WHERE sku = v_line.sku;
      v_failed_sku := v_line.sku; v_limited := v_inv.purchase_limit;
    ELSIF FOUND THEN
      INSERT INTO outbox (topic, aggregate_key, payload)
      VALUES ('availability', v_inv.sku, jsonb_build_object('sku', v_inv.sku, 'available', v_inv.available,
              'soldOut', v_inv.available = 0, 'version', v_inv.version, 'updatedAt', v_inv.updated_at));
    ELSE
      v_failed_sku := v_line.sku; v_failed_qty := v_line.quantity;
    END IF;
  ELSE
    BEGIN  -- a subtransaction: a line that cannot be claimed rolls back the earlier claims, their events and their row locks
      FOR v_line IN SELECT l.sku, l.quantity FROM jsonb_to_recordset(v_claims) AS l(sku text, quantity integer) ORDER BY l.sku LOOP
        UPDATE inventory SET available = available - v_line.quantity, reserved = reserved + v_line.quantity, version = version + 1, updated_at = now()
         WHERE sku = v_line.sku AND available >= v_line.quantity
        RETURNING sku, available, version, updated_at, purchase_limit INTO v_inv;
        IF NOT FOUND THEN
          v_failed_sku := v_line.sku; v_failed_qty := v_line.quantity;
          RAISE EXCEPTION 'claim failed' USING ERRCODE = 'LU001';
        END IF;
        IF v_inv.purchase_limit IS NOT NULL  -- I12, under the row lock just taken
           AND NOT count_purchase(p->>'clientId', p->>'countedCustomer', v_line.sku, v_line.quantity, v_inv.purchase_limit) THEN
          v_failed_sku := v_line.sku; v_limited := v_inv.purchase_limit;
          RAISE EXCEPTION 'purchase limit' USING ERRCODE = 'LU001';
        END IF;
        INSERT INTO outbox (topic, aggregate_key, payload)
        VALUES ('availability', v_inv.sku, jsonb_build_object('sku', v_inv.sku, 'available', v_inv.available,
                'soldOut', v_inv.available = 0, 'version', v_inv.version, 'updatedAt', v_inv.updated_at));
      END LOOP;
    EXCEPTION WHEN SQLSTATE 'LU001' THEN
      NULL;  -- claims undone; v_failed_sku survives (plpgsql variables are not rolled back)
    END;
  END IF;

  IF v_limited IS NOT NULL THEN
    v_rejection := jsonb_build_object('code', 'PURCHASE_LIMIT', 'sku', v_failed_sku,
      'message', format('%s is limited to %s per customer', v_failed_sku, v_limited));
  ELSIF v_failed_sku IS NOT NULL THEN
    SELECT available INTO v_left FROM inventory WHERE sku = v_failed_sku;  -- for the message only: the decision was the UPDATE
    v_rejection := stock_rejection(v_failed_sku, v_failed_qty, v_left);
  END IF;

  IF v_rejection IS NOT NULL THEN
    -- the hold was counted (unless that is what refused it): this order holds nothing, so it no longer counts (I14)
    IF v_rejection->>'code' <> 'HOLD_LIMIT' THEN PERFORM give_holds_back(p->>'clientId', p->>'holdBuyer', 1); END IF;
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
DROP FUNCTION IF EXISTS place_order(text, text, text, text, jsonb, integer, integer, boolean, integer);
DROP FUNCTION IF EXISTS place_order(text, text, text, text, jsonb, integer, integer, boolean, integer, text, integer);
DROP FUNCTION IF EXISTS place_order(text, text, text, text, jsonb, integer, integer, boolean, integer, text, integer, text);
CREATE OR REPLACE FUNCTION place_order(
  p_client_id text, p_customer_id text, p_key text, p_request_hash text,
  p_lines jsonb, p_hold_ttl_seconds integer, p_retention_hours integer,
  p_payment boolean DEFAULT false, p_recovery_seconds integer DEFAULT NULL,
  p_buyer text DEFAULT NULL, p_max_holds integer DEFAULT 0, p_token_hash text DEFAULT NULL,
  p_counted_customer text DEFAULT NULL
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_prepared jsonb := prepare_order(p_client_id, p_customer_id, p_key, p_request_hash, p_lines,
                                    p_hold_ttl_seconds, p_retention_hours, p_payment, p_recovery_seconds, p_buyer, p_max_holds,
                                    p_token_hash, p_counted_customer);
BEGIN
  IF v_prepared->>'kind' <> 'prepared' THEN
    RETURN v_prepared;
  END IF;
  RETURN claim_order(v_prepared);
END
$$;

-- Coalesced claims (ARCHITECTURE.md section 5, "may coalesce concurrent claims for one SKU into one statement").
-- Several single-line orders for ONE SKU are placed in one transaction, so they share one commit and the hot row lock
-- is held for one WAL flush instead of one per order. Each request keeps its own key row (I4, I5) and its own order.
-- The common case is set-based, one statement per table for the whole batch:
--   1. sold out at a glance: key rows, REJECTED orders and their lines (prepare_order's quiet refusal);
--   2. plain sales: single-line requests for a plain SKU (no bundle, no purchase limit), each buyer once in the
--      batch: key rows, RESERVED orders, lines, holds and status events (prepare_order's writes), before any
--      inventory lock (a sale refused in step 5 is corrected to REJECTED, its status event with it);
--   3. every other request (a replay, a reused key, a twin, a bundle, a limited SKU, a buyer twice): prepare_order;
--   4. every buyer's hold counter (I14), in (client, buyer) order;
--   5. the claims in arrival order: a plain sale is granted under the SKU's row lock (taken once) while what is left
--      covers it (the decision its own conditional UPDATE would take); the units granted so far are taken by ONE
--      conditional UPDATE for their sum (I3: CHECK available >= 0 still guards it) with one availability event,
--      before any per-order claim_order that comes next in arrival order, and at the end.
-- Lock order: every key row and every hold counter before the inventory row, so this transaction never waits for a
-- key row or a hold counter while it holds the SKU; the callers batch only orders for the same single SKU, so a batch
-- locks exactly one inventory row and cannot deadlock with writers that lock in SKU order. Key rows are inserted in
-- two passes (steps 1-2 in one statement, then step 3), each in key order but not in one order across them: two batches
-- holding the same keys at once (another instance's retries) can deadlock on key rows, which PostgreSQL breaks (40P01,
-- the statement is repeated whole by its caller); no such cycle can include the inventory row.
-- p_requests: jsonb array of {clientId, customerId, key, hash, lines, buyer, tokenHash, countedCustomer}; returns the answers in the same order.
-- A refusal at a glance (step 1) and a plain sale (step 2) are answered in short: {kind: 'refused' | 'plain', id,
-- unitAmount, currency, at, ...}, a plain sale granted as step 2 wrote it (with `expiresAt`) or with the `rejection`
-- step 5 gave it, a refusal with its `rejection`: what the caller does not have already (it sent the customer, the SKU and the
-- quantity). The caller builds the order from both (db/orders-store.ts), the same document order_json would read
-- back. Each full document cost its building here (for a plain sale, while the batch holds the SKU's row) and its
-- parsing in the caller: about 9 us of PostgreSQL's CPU and 5 of the server's per refusal of a sold-out storm.
-- place_orders' plain sales: `p_units` units of `p_sku` granted to a batch, taken by ONE conditional write (I3) while
-- the caller holds the row lock, with one availability event (the count after the batch).
CREATE OR REPLACE FUNCTION take_batch_units(p_sku text, p_units integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_inv record;
BEGIN
  UPDATE inventory SET available = available - p_units, reserved = reserved + p_units, version = version + 1, updated_at = now()
   WHERE sku = p_sku AND available >= p_units
  RETURNING sku, available, version, updated_at INTO v_inv;
  IF NOT FOUND THEN  -- cannot happen under the caller's row lock; if it does, nothing of the batch stands
    RAISE EXCEPTION 'the batch claim of % found fewer units under its own row lock', p_sku USING ERRCODE = '40001';
  END IF;
  INSERT INTO outbox (topic, aggregate_key, payload)
  VALUES ('availability', v_inv.sku, jsonb_build_object('sku', v_inv.sku, 'available', v_inv.available,
          'soldOut', v_inv.available = 0, 'version', v_inv.version, 'updatedAt', v_inv.updated_at));
END
$$;

DROP FUNCTION IF EXISTS place_orders(jsonb, integer, integer);
CREATE OR REPLACE FUNCTION place_orders(p_requests jsonb, p_hold_ttl_seconds integer, p_retention_hours integer, p_max_holds integer DEFAULT 0)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_req      record;
  v_n        integer := jsonb_array_length(p_requests);
  v_answers  jsonb[] := array_fill(NULL::jsonb, ARRAY[jsonb_array_length(p_requests)]);
  v_answered integer := 0;
  v_now      timestamptz := now();
  v_expires  timestamptz := now() + make_interval(secs => p_hold_ttl_seconds);
  v_sku      text;     -- the SKU of the plain sales
  v_plain    boolean := false;
  v_left     integer;  -- units of v_sku not yet granted to this batch (under the row lock)
  v_total    integer := 0;
  v_inv      record;
  v_rejection jsonb;
  v_refused  uuid[] := '{}';   -- plain orders refused after step 2 wrote them, and why
  v_refusals jsonb[] := '{}';
  v_refused_events bigint[] := '{}';
BEGIN
  -- The batch's SKU (the callers batch one SKU) and whether it is plain: no bundle, no purchase limit.
  SELECT e.value->'lines'->0->>'sku' INTO v_sku
    FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS e(value, n)
   WHERE jsonb_array_length(e.value->'lines') = 1
   ORDER BY e.n LIMIT 1;
  IF v_sku IS NOT NULL THEN
    SELECT NOT p.is_bundle AND i.purchase_limit IS NULL INTO v_plain
      FROM products p JOIN inventory i ON i.sku = p.sku
     WHERE p.sku = v_sku;
    v_plain := coalesce(v_plain, false);
  END IF;

  -- Steps 1 and 2 in one statement per table, so every key row they take is taken in one key order:
  -- 1. refusals: a single-line request of a known, non-bundle SKU whose stock cannot cover it at a glance (committed
  --    state, no lock): its key row, its order REJECTED from the start and its lines; no hold, no event, nothing to
  --    undo (prepare_order's quiet refusal);
  -- 2. plain sales: a single-line request for the batch's SKU when that SKU is plain, whose buyer is alone in the batch
  --    (a buyer's hold counter is taken once per request below): its key row, its order RESERVED, its lines, its
  --    reservation HELD and its status event, before any inventory lock; claimed in step 5.
  -- A request whose key row exists already (a replay, a reused key, a twin in this batch or in flight elsewhere) is not
  -- inserted here (of twins in the batch the first to arrive wins) and goes through prepare_order below, which replays
  -- or refuses it against the row that won; so does every other request.
  FOR v_req IN
    WITH req AS (
      SELECT e.n, e.value->>'clientId' AS client_id, e.value->>'customerId' AS customer_id, e.value->>'key' AS key,
             e.value->>'hash' AS hash, e.value->>'tokenHash' AS token_hash, e.value->>'countedCustomer' AS counted_customer,
             e.value->'lines'->0->>'sku' AS sku, (e.value->'lines'->0->>'quantity')::integer AS quantity,
             CASE WHEN coalesce(p_max_holds, 0) > 0 THEN e.value->>'buyer' END AS buyer
        FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS e(value, n)
       WHERE jsonb_array_length(e.value->'lines') = 1
    ), chosen AS (
      SELECT c.* FROM (
        SELECT r.*, p.price_amount, p.currency, i.available, p.price_amount::bigint * r.quantity AS total,
               gen_random_uuid() AS order_id,
               CASE WHEN i.available < r.quantity THEN 'refused'
                    WHEN v_plain AND r.sku = v_sku
                         AND (r.buyer IS NULL OR NOT EXISTS (SELECT 1 FROM req o WHERE o.client_id = r.client_id AND o.buyer = r.buyer AND o.n <> r.n))
                    THEN 'plain' END AS path
          FROM req r JOIN products p ON p.sku = r.sku AND NOT p.is_bundle JOIN inventory i ON i.sku = r.sku
         WHERE p.price_amount::bigint * r.quantity <= 2147483647
      ) c WHERE c.path IS NOT NULL
    ), keys AS (
      INSERT INTO idempotency_keys (client_id, customer_id, key, request_hash, order_id, state, response, expires_at)
      SELECT c.client_id, c.customer_id, c.key, c.hash, c.order_id, 'DONE', jsonb_build_object('orderId', c.order_id),
             v_now + make_interval(hours => p_retention_hours)
        FROM chosen c ORDER BY c.client_id, c.customer_id, c.key, c.n
      ON CONFLICT DO NOTHING
      RETURNING order_id
    ), won AS (
      SELECT c.*, CASE WHEN c.path = 'refused' THEN stock_rejection(c.sku, c.quantity, c.available) END AS rejection
        FROM chosen c WHERE c.order_id IN (SELECT k.order_id FROM keys k)
    ), orders_in AS (
      INSERT INTO orders (id, client_id, customer_id, status, total_amount, currency, created_at, updated_at, rejection, hold_buyer, token_hash, counted_customer)
      SELECT w.order_id, w.client_id, w.customer_id, CASE WHEN w.path = 'refused' THEN 'REJECTED' ELSE 'RESERVED' END,
             w.total, w.currency, v_now, v_now, w.rejection, CASE WHEN w.path = 'plain' THEN w.buyer END, w.token_hash,
             CASE WHEN w.path = 'plain' THEN w.counted_customer END
        FROM won w
    ), lines_in AS (
      INSERT INTO order_lines (order_id, sku, quantity, unit_amount)
      SELECT w.order_id, w.sku, w.quantity, w.price_amount FROM won w
    ), holds_in AS (
      INSERT INTO reservations (order_id, sku, quantity, state, expires_at, updated_at)
      SELECT w.order_id, w.sku, w.quantity, 'HELD', v_expires, v_now FROM won w WHERE w.path = 'plain'
    ), events AS (  -- I9: a plain order's status event, written here, before the inventory lock (corrected if refused)
      INSERT INTO outbox (topic, aggregate_key, payload)
      SELECT 'order_status', w.order_id::text,
             jsonb_build_object('orderId', w.order_id, 'clientId', w.client_id, 'status', 'RESERVED', 'updatedAt', v_now)
        FROM won w WHERE w.path = 'plain' ORDER BY w.n
      RETURNING id, aggregate_key
    )
    SELECT w.n, CASE WHEN w.path = 'refused'
             THEN jsonb_build_object('kind', 'refused', 'id', w.order_id, 'rejection', w.rejection, 'unitAmount', w.price_amount,
                                     'currency', w.currency, 'at', v_now)
             ELSE jsonb_build_object('kind', 'plain', 'id', w.order_id, 'clientId', w.client_id, 'quantity', w.quantity,
                    'holdBuyer', w.buyer, 'statusEvent', e.id, 'unitAmount', w.price_amount, 'currency', w.currency,
                    'at', v_now, 'expiresAt', v_expires) END AS answer
      FROM won w LEFT JOIN events e ON e.aggregate_key = w.order_id::text
  LOOP
    v_answers[v_req.n] := v_req.answer;
    IF v_req.answer->>'kind' = 'refused' THEN
      v_answered := v_answered + 1;
    END IF;
  END LOOP;
  IF v_answered = v_n THEN  -- a sold-out storm: every request was answered above
    RETURN to_jsonb(v_answers);
  END IF;

  -- 3. Every other request: both phases per order. Twins of a refusal or a plain sale above replay it here.
  FOR v_req IN
    SELECT e.value AS r, e.n FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS e(value, n)
     WHERE v_answers[e.n] IS NULL
     ORDER BY e.value->>'clientId', e.value->>'customerId', e.value->>'key'
  LOOP
    v_answers[v_req.n] := prepare_order(v_req.r->>'clientId', v_req.r->>'customerId', v_req.r->>'key', v_req.r->>'hash',
                                        v_req.r->'lines', p_hold_ttl_seconds, p_retention_hours, false, NULL,
                                        v_req.r->>'buyer', p_max_holds, v_req.r->>'tokenHash', v_req.r->>'countedCustomer');
  END LOOP;

  -- 4. I14: every hold counter, in (client, buyer) order, before any inventory row.
  FOR v_req IN
    SELECT i AS n FROM generate_subscripts(v_answers, 1) AS i
     WHERE v_answers[i]->>'kind' IN ('prepared', 'plain') AND v_answers[i]->>'holdBuyer' IS NOT NULL
     ORDER BY v_answers[i]->>'clientId', v_answers[i]->>'holdBuyer', i
  LOOP
    v_answers[v_req.n] := v_answers[v_req.n] || jsonb_build_object('holdTaken',
      take_hold(v_answers[v_req.n]->>'clientId', v_answers[v_req.n]->>'holdBuyer', p_max_holds));
  END LOOP;

  -- 5. The claims, in arrival order. A plain sale is decided under the SKU's row lock (taken once, FOR NO KEY UPDATE
  -- as the UPDATE itself would) against what is left, and the units granted so far are written by ONE conditional
  -- UPDATE for their sum when a per-order claim comes next (it must find them taken: arrival order holds across both
  -- kinds) or at the end. A HOLD_LIMIT refusal needs no lock.
  FOR i IN 1 .. v_n LOOP
    IF v_answers[i]->>'kind' = 'plain' THEN
      IF NOT coalesce((v_answers[i]->>'holdTaken')::boolean, true) THEN
        v_rejection := jsonb_build_object('code', 'HOLD_LIMIT', 'sku', NULL,
          'message', format('this buyer already has %s active holds: complete, release or let one expire first', p_max_holds));
      ELSE
        IF v_left IS NULL THEN
          SELECT available, purchase_limit INTO v_inv FROM inventory WHERE sku = v_sku FOR NO KEY UPDATE;
          IF v_inv.purchase_limit IS NOT NULL THEN
            -- a limit set since step 2 read none (I12): the whole batch again, where these requests take claim_order's path
            RAISE EXCEPTION 'purchase limit of % set while its batch was prepared', v_sku USING ERRCODE = '40001';
          END IF;
          v_left := v_inv.available;
        END IF;
        IF (v_answers[i]->>'quantity')::integer <= v_left THEN
          v_left := v_left - (v_answers[i]->>'quantity')::integer;
          v_total := v_total + (v_answers[i]->>'quantity')::integer;
          CONTINUE;  -- granted: its answer stays as step 2 wrote it
        END IF;
        v_rejection := stock_rejection(v_sku, (v_answers[i]->>'quantity')::integer, v_left);
        PERFORM give_holds_back(v_answers[i]->>'clientId', v_answers[i]->>'holdBuyer', 1);  -- counted, holds nothing (I14)
      END IF;
      v_answers[i] := v_answers[i] || jsonb_build_object('rejection', v_rejection);
      v_refused := v_refused || (v_answers[i]->>'id')::uuid;
      v_refusals := v_refusals || v_rejection;
      v_refused_events := v_refused_events || (v_answers[i]->>'statusEvent')::bigint;
    ELSIF v_answers[i]->>'kind' = 'prepared' THEN
      IF v_total > 0 THEN
        PERFORM take_batch_units(v_sku, v_total);
        v_total := 0;
      END IF;
      v_answers[i] := claim_order(v_answers[i]);
      IF v_left IS NOT NULL THEN
        SELECT available INTO v_left FROM inventory WHERE sku = v_sku;  -- under the lock this transaction holds
      END IF;
    END IF;
  END LOOP;
  IF v_total > 0 THEN
    PERFORM take_batch_units(v_sku, v_total);
  END IF;
  IF cardinality(v_refused) > 0 THEN  -- plain sales refused after step 2 wrote them (the stock ran out, or the hold limit)
    UPDATE orders o SET status = 'REJECTED', rejection = r.rejection
      FROM unnest(v_refused, v_refusals) AS r(order_id, rejection)
     WHERE o.id = r.order_id;
    DELETE FROM reservations WHERE order_id = ANY (v_refused);
    -- their status events (written in step 2) carry the status they ended in
    UPDATE outbox SET payload = jsonb_set(payload, '{status}', '"REJECTED"') WHERE id = ANY (v_refused_events);
  END IF;
  RETURN to_jsonb(v_answers);
END
$$;

-- Returning and moving held units: release, expiry, and the shared move used by the payment outcomes (I2, I6, I7).

-- Moves the units of the given (already locked) orders' reservations in state p_from to p_to: SOLD moves them
-- reserved -> sold, anything else (RELEASED, EXPIRED) reserved -> available; from SOLD (a confirmed order cancelled with
-- its units restocked) they go sold -> available, reserved unchanged. Inventory rows are locked in SKU order,
-- as every writer does, so this cannot deadlock with placeOrder. Every path that gives units back or sells them comes
-- through here, so the fair-drop counters (I12, I14, 060_fair-drops.sql) move in the same transaction. Returns the
-- SKUs whose stock moved.
CREATE OR REPLACE FUNCTION move_reserved_units(p_order_ids uuid[], p_from text, p_to text, p_reason text) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
  v_skus  text[];
  v_qtys  integer[];
  v_moved jsonb;
BEGIN
  IF p_from = 'SOLD' AND p_to = 'SOLD' THEN RAISE EXCEPTION 'move_reserved_units: SOLD -> SOLD moves nothing'; END IF;
  -- I14 lock order: the buyers' hold counters before reservations and inventory, where placeOrder takes them
  IF p_from IN ('HELD', 'AWAITING_PAYMENT') THEN PERFORM lock_hold_counters(p_order_ids); END IF;
  -- I6: only reservations still in p_from move; a second caller finds none.
  WITH moved AS (
    UPDATE reservations SET state = p_to, released_reason = p_reason, updated_at = now()
     WHERE order_id = ANY (p_order_ids) AND state = p_from
    RETURNING order_id, sku, quantity),
  -- a bundle's reservation holds its components' units (091_bundles.sql): they are what moves
  units AS (SELECT m.order_id, coalesce(b.component_sku, m.sku) AS sku, (m.quantity * coalesce(b.quantity, 1))::integer AS quantity
              FROM moved m LEFT JOIN bundle_components b ON b.bundle_sku = m.sku),
  per_sku AS (SELECT sku, sum(quantity)::integer AS q FROM units GROUP BY sku)
  SELECT (SELECT array_agg(sku ORDER BY sku) FROM per_sku), (SELECT array_agg(q ORDER BY sku) FROM per_sku),
         (SELECT jsonb_agg(jsonb_build_object('o', order_id, 's', sku, 'q', quantity)) FROM units)
    INTO v_skus, v_qtys, v_moved;
  -- I2: the same units leave reserved (or sold) and enter sold or available, in this transaction.
  FOR i IN 1 .. coalesce(array_length(v_skus, 1), 0) LOOP
    UPDATE inventory
       SET reserved = reserved - CASE WHEN p_from = 'SOLD' THEN 0 ELSE v_qtys[i] END,
           sold = sold + CASE WHEN p_to = 'SOLD' THEN v_qtys[i] WHEN p_from = 'SOLD' THEN -v_qtys[i] ELSE 0 END,
           available = available + CASE WHEN p_to = 'SOLD' THEN 0 ELSE v_qtys[i] END,
           version = version + 1, updated_at = now()
     WHERE sku = v_skus[i];
  END LOOP;
  PERFORM give_back_counts(v_moved, p_from, p_to);  -- I12, I14: after the inventory rows they count are locked
  IF v_skus IS NOT NULL AND p_to <> 'SOLD' THEN PERFORM emit_availability(v_skus); END IF;  -- I9: available changed
  RETURN v_skus;
END
$$;

-- Moves the live (HELD) holds of the given, already locked, orders back to available and announces the orders' status.
CREATE OR REPLACE FUNCTION return_held_units(p_order_ids uuid[], p_state text, p_reason text) RETURNS integer
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
CREATE OR REPLACE FUNCTION release_order(p_client_id text, p_order_id uuid, p_reason text) RETURNS jsonb
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
CREATE OR REPLACE FUNCTION expire_due_holds(p_limit integer) RETURNS TABLE (order_id uuid, units integer)
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

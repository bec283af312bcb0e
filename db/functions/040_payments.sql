-- Payments (ARCHITECTURE.md section 2 step 4): hold first, then authorize outside any transaction; the outcome, a webhook
-- or the reconciler moves AWAITING_PAYMENT holds by guarded transitions (I6); only the processor's answer releases them (I7);
-- every webhook has its effect once (I8). Lock order everywhere: order row, its reservations, inventory in SKU order, payments.

-- place_order takes p_payment and p_recovery_seconds (020_place-order.sql): with a payment the key row stays PROCESSING
-- until the payment step finishes it (finish_key below).

-- Stores the latest answer on an order's key row; p_done finishes it (retries then replay instead of IN_PROGRESS).
CREATE OR REPLACE FUNCTION finish_key(p_order_id uuid, p_client_id text, p_customer_id text, p_key text, p_done boolean) RETURNS void
LANGUAGE sql AS $$
  UPDATE idempotency_keys
     SET state = CASE WHEN p_done THEN 'DONE' ELSE state END,
         response = jsonb_build_object('orderId', p_order_id, 'status', (SELECT status FROM orders WHERE id = p_order_id))
   WHERE client_id = p_client_id AND customer_id = p_customer_id AND key = p_key AND order_id = p_order_id
$$;

-- Moves the AWAITING_PAYMENT holds of one (already locked) order to p_state: SOLD moves units reserved -> sold,
-- RELEASED / EXPIRED move them reserved -> available. Inventory rows in SKU order, as everywhere.
CREATE OR REPLACE FUNCTION settle_awaiting_units(p_order_id uuid, p_state text, p_reason text) RETURNS integer
LANGUAGE sql AS $$
  SELECT coalesce(array_length(move_reserved_units(ARRAY[p_order_id], 'AWAITING_PAYMENT', p_state, p_reason), 1), 0)
$$;
-- The step between the hold and the authorization (one short transaction): HELD -> AWAITING_PAYMENT only while the
-- hold is still live, with a payment deadline and a PENDING payment row. Returns {kind: awaiting | not_held, order}.
CREATE OR REPLACE FUNCTION begin_payment(
  p_order_id uuid, p_client_id text, p_customer_id text, p_key text, p_provider text, p_deadline_seconds integer
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_status text;
  v_n      integer;
  v_deadline timestamptz := now() + make_interval(secs => p_deadline_seconds);
BEGIN
  SELECT status INTO v_status FROM orders WHERE id = p_order_id FOR UPDATE;  -- lock order: the order row first
  IF v_status IS DISTINCT FROM 'RESERVED' THEN
    PERFORM finish_key(p_order_id, p_client_id, p_customer_id, p_key, true);
    RETURN jsonb_build_object('kind', 'not_held', 'order', order_json(p_order_id));
  END IF;
  -- I6/I7: guarded; an expired hold is not moved (the sweeper, or the branch below, returns it).
  UPDATE reservations SET state = 'AWAITING_PAYMENT', payment_deadline = v_deadline, updated_at = now()
   WHERE order_id = p_order_id AND state = 'HELD' AND expires_at > now();
  GET DIAGNOSTICS v_n = ROW_COUNT;
  IF v_n = 0 THEN
    UPDATE orders SET status = 'EXPIRED', updated_at = now() WHERE id = p_order_id;
    PERFORM return_held_units(ARRAY[p_order_id], 'EXPIRED', 'hold expired before payment');  -- emits I9 events
    PERFORM finish_key(p_order_id, p_client_id, p_customer_id, p_key, true);
    RETURN jsonb_build_object('kind', 'not_held', 'order', order_json(p_order_id));
  END IF;
  UPDATE orders SET status = 'AWAITING_PAYMENT', updated_at = now() WHERE id = p_order_id;
  INSERT INTO payments (order_id, attempt, provider, state, amount, currency, deadline_at, next_check_at)
  SELECT id, 1, p_provider, 'PENDING', total_amount, currency, v_deadline, v_deadline FROM orders WHERE id = p_order_id;
  PERFORM emit_order_status(ARRAY[p_order_id]);  -- I9 (available did not change: the units were already held)
  PERFORM finish_key(p_order_id, p_client_id, p_customer_id, p_key, false);  -- still in flight: retries get IN_PROGRESS
  RETURN jsonb_build_object('kind', 'awaiting', 'order', order_json(p_order_id));
END
$$;

-- Applies a payment outcome to an order by guarded transitions (I6, I7). Used by placeOrder, webhooks and the reconciler.
-- p_outcome: approved | declined | unknown | not_found.
-- Returns {kind: confirmed | rejected | expired | unknown | compensate | noop, order}.
CREATE OR REPLACE FUNCTION apply_payment_outcome(p_order_id uuid, p_outcome text, p_provider_ref text, p_reason text) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_status text;
  v_kind   text;
  v_comp   integer;
BEGIN
  SELECT status INTO v_status FROM orders WHERE id = p_order_id FOR UPDATE;  -- lock order: the order row first
  IF NOT FOUND THEN
    RETURN jsonb_build_object('kind', 'noop');
  END IF;
  IF v_status <> 'AWAITING_PAYMENT' THEN
    -- The transition is lost. A success meeting a released order means money moved for units we gave back:
    -- record one compensation (UNIQUE per order; a repeated webhook adds nothing).
    IF p_outcome = 'approved' AND v_status IN ('REJECTED', 'CANCELLED', 'EXPIRED') AND EXISTS (SELECT 1 FROM payments WHERE order_id = p_order_id) THEN
      INSERT INTO compensations (order_id, provider, provider_ref)
      SELECT p_order_id, p.provider, coalesce(p_provider_ref, p.provider_ref) FROM payments p WHERE p.order_id = p_order_id AND p.attempt = 1
      ON CONFLICT (order_id) DO NOTHING;
      GET DIAGNOSTICS v_comp = ROW_COUNT;
      RETURN jsonb_build_object('kind', CASE WHEN v_comp > 0 THEN 'compensate' ELSE 'noop' END, 'order', order_json(p_order_id));
    END IF;
    RETURN jsonb_build_object('kind', 'noop', 'order', order_json(p_order_id));
  END IF;

  IF p_outcome = 'approved' THEN
    PERFORM settle_awaiting_units(p_order_id, 'SOLD', NULL);
    UPDATE orders SET status = 'CONFIRMED', updated_at = now() WHERE id = p_order_id;
    UPDATE payments SET state = 'AUTHORIZED', provider_ref = coalesce(p_provider_ref, provider_ref), outcome_at = now()
     WHERE order_id = p_order_id AND attempt = 1;
    v_kind := 'confirmed';
  ELSIF p_outcome = 'declined' THEN
    PERFORM settle_awaiting_units(p_order_id, 'RELEASED', 'payment declined');
    UPDATE orders SET status = 'REJECTED', updated_at = now(),
           rejection = jsonb_build_object('code', 'PAYMENT_DECLINED', 'sku', NULL,
                                          'message', 'the payment was declined' || coalesce(' (' || p_reason || ')', ''))
     WHERE id = p_order_id;
    UPDATE payments SET state = 'DECLINED', provider_ref = coalesce(p_provider_ref, provider_ref), reason = p_reason, outcome_at = now()
     WHERE order_id = p_order_id AND attempt = 1;
    v_kind := 'rejected';
  ELSIF p_outcome = 'not_found' THEN
    -- The reconciler asked after the deadline and the processor has no charge: nothing can succeed any more.
    PERFORM settle_awaiting_units(p_order_id, 'EXPIRED', coalesce(p_reason, 'no payment at the processor after the deadline'));
    UPDATE orders SET status = 'EXPIRED', updated_at = now() WHERE id = p_order_id;
    UPDATE payments SET state = 'NOT_FOUND', reason = p_reason, outcome_at = now() WHERE order_id = p_order_id AND attempt = 1;
    v_kind := 'expired';
  ELSE
    -- unknown: the hold stays (I7); the reconciler will ask after the deadline.
    UPDATE payments SET state = 'UNKNOWN', reason = p_reason WHERE order_id = p_order_id AND attempt = 1 AND state = 'PENDING';
    RETURN jsonb_build_object('kind', 'unknown', 'order', order_json(p_order_id));
  END IF;
  PERFORM emit_order_status(ARRAY[p_order_id]);  -- I9
  RETURN jsonb_build_object('kind', v_kind, 'order', order_json(p_order_id));
END
$$;

-- A webhook in one transaction: the event id and its effect commit together or not at all (I8).
-- Returns {kind: duplicate} or the result of apply_payment_outcome.
CREATE OR REPLACE FUNCTION apply_payment_event(p_source text, p_event_id text, p_order_id uuid, p_outcome text, p_provider_ref text, p_reason text)
RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO processed_events (source, event_id) VALUES (p_source, p_event_id) ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('kind', 'duplicate');
  END IF;
  RETURN apply_payment_outcome(p_order_id, p_outcome, p_provider_ref, p_reason);
END
$$;

-- placeOrder's last payment step (one transaction): the outcome by guarded transition, then the key row finished,
-- so a retry with the same key replays the current order and never authorizes again.
CREATE OR REPLACE FUNCTION complete_payment(
  p_order_id uuid, p_client_id text, p_customer_id text, p_key text, p_outcome text, p_provider_ref text, p_reason text
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_r jsonb := apply_payment_outcome(p_order_id, p_outcome, p_provider_ref, p_reason);
BEGIN
  PERFORM finish_key(p_order_id, p_client_id, p_customer_id, p_key, true);
  RETURN v_r;
END
$$;

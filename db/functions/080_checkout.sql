-- Checkout that collects the money (docs/payments.md): payOrder on a held order, confirmOrder for payments taken outside
-- lastunit, and the confirmation a processor's success gives a held or expired order. Each entry function is one short
-- transaction of guarded conditional writes; the processor is never called from here (I6, I7). Lock order as
-- everywhere: the order row, the buyers' hold counters, its reservations, inventory in SKU order, payments.

-- Re-claims the units of an expired or released order (the order row locked by the caller) straight to sold, by the
-- claim loop placeOrder uses (claim_units: I3, a bundle's components, I12 for the order's customer), and marks its
-- reservations SOLD. False when the units could not all be taken (nothing changed).
CREATE OR REPLACE FUNCTION reclaim_units(p_order_id uuid, p_client_id text, p_customer_id text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  IF claim_units((SELECT jsonb_agg(jsonb_build_object('sku', r.sku, 'quantity', r.quantity)) FROM reservations r
                   WHERE r.order_id = p_order_id AND r.state IN ('EXPIRED', 'RELEASED')),
                 true, p_client_id, p_customer_id, true, true) IS NOT NULL THEN
    RETURN false;
  END IF;
  UPDATE reservations SET state = 'SOLD', released_reason = NULL, updated_at = now()
   WHERE order_id = p_order_id AND state IN ('EXPIRED', 'RELEASED');
  RETURN true;
END
$$;

-- The payment that confirmed an order: the processor's attempt p_key recorded AUTHORIZED (capture follows), or a new
-- attempt row for a payment no attempt of ours knows (EXTERNAL: taken outside lastunit, nothing to capture).
CREATE OR REPLACE FUNCTION record_paid_attempt(
  p_order_id uuid, p_provider text, p_reference text, p_key text, p_external boolean
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_known boolean := EXISTS (SELECT 1 FROM payments WHERE idem_key = p_key);
BEGIN
  IF NOT p_external AND v_known THEN
    UPDATE payments SET state = 'AUTHORIZED', provider_ref = coalesce(p_reference, provider_ref), outcome_at = now(),
                        next_action = NULL, capture_state = 'PENDING'
     WHERE idem_key = p_key AND order_id = p_order_id;
    RETURN;
  END IF;
  INSERT INTO payments (order_id, attempt, provider, provider_ref, state, amount, currency, deadline_at, next_check_at,
                        outcome_at, idem_key, on_decline, capture_state)
  SELECT id, (SELECT coalesce(max(attempt), 0) + 1 FROM payments WHERE order_id = p_order_id), p_provider, p_reference,
         CASE WHEN p_external THEN 'EXTERNAL' ELSE 'AUTHORIZED' END, total_amount, currency, now(), now(), now(),
         CASE WHEN p_external OR v_known THEN NULL ELSE p_key END,
         'HOLD', CASE WHEN p_external THEN 'EXTERNAL' ELSE 'PENDING' END
    FROM orders WHERE id = p_order_id;
END
$$;

-- Sells a RESERVED order's held units, or re-claims an expired / released order's units (reclaim_units), then
-- CONFIRMED with its payment recorded (record_paid_attempt). The order row must already be locked by this transaction.
-- p_external: a payment taken outside lastunit. Returns 'confirmed', or 'gone' when the units could not be re-claimed
-- (nothing changed).
CREATE OR REPLACE FUNCTION confirm_paid_order(p_order_id uuid, p_provider text, p_reference text, p_key text, p_external boolean)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  v_order record;
BEGIN
  -- customer_id: whom the purchase counter counts (I12): the order's counted customer, else its customer
  SELECT status, client_id, coalesce(counted_customer, customer_id) AS customer_id INTO v_order
    FROM orders WHERE id = p_order_id;
  IF v_order.status = 'RESERVED' THEN
    -- I6: only HELD holds move; their counters stay counted as bought (I12) and the hold stops counting (I14).
    PERFORM move_reserved_units(ARRAY[p_order_id], 'HELD', 'SOLD', NULL);
  ELSIF v_order.status IN ('EXPIRED', 'CANCELLED', 'REJECTED')
        AND EXISTS (SELECT 1 FROM reservations WHERE order_id = p_order_id AND state IN ('EXPIRED', 'RELEASED'))
        -- never an order that was paid and then cancelled (cancelOrder): its money is already being given back
        AND NOT EXISTS (SELECT 1 FROM payments WHERE order_id = p_order_id AND state IN ('AUTHORIZED', 'EXTERNAL')) THEN
    IF NOT reclaim_units(p_order_id, v_order.client_id, v_order.customer_id) THEN
      RETURN 'gone';
    END IF;
  ELSE
    RETURN 'gone';
  END IF;
  UPDATE orders SET status = 'CONFIRMED', rejection = NULL, updated_at = now() WHERE id = p_order_id;
  PERFORM record_paid_attempt(p_order_id, p_provider, p_reference, p_key, p_external);
  PERFORM emit_order_status(ARRAY[p_order_id]);  -- I9
  RETURN 'confirmed';
END
$$;

-- payOrder's first step (one short transaction): a RESERVED order's live hold HELD -> AWAITING_PAYMENT with a new
-- payment attempt (its own processor key: the order id for attempt 1, '<order id>:<n>' after), or why not.
-- Returns {kind: awaiting (with key) | in_flight | confirmed | expired | final | not_found, order}.
CREATE OR REPLACE FUNCTION begin_order_payment(
  p_client_id text, p_order_id uuid, p_provider text, p_token text,
  p_deadline_seconds integer, p_max_pending_seconds integer, p_action_timeout_seconds integer
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_status   text;
  v_started  jsonb;
BEGIN
  SELECT status INTO v_status FROM orders WHERE id = p_order_id AND client_id = p_client_id FOR UPDATE;  -- the order row first
  IF NOT FOUND THEN
    RETURN jsonb_build_object('kind', 'not_found');
  END IF;
  IF v_status <> 'RESERVED' THEN
    RETURN jsonb_build_object('kind', CASE v_status WHEN 'AWAITING_PAYMENT' THEN 'in_flight' WHEN 'PROCESSING' THEN 'in_flight'
                                                    WHEN 'CONFIRMED' THEN 'confirmed' WHEN 'EXPIRED' THEN 'expired' ELSE 'final' END,
                              'order', order_json(p_order_id));
  END IF;
  -- I6/I7: one attempt at a time, only while the hold lasts; a second payOrder finds AWAITING_PAYMENT above. A decline
  -- puts the hold back to HELD (on_decline HOLD) so the shopper can try another card.
  v_started := start_payment_attempt(p_order_id, p_provider, p_token, p_deadline_seconds, p_max_pending_seconds,
                                     p_action_timeout_seconds, 'HOLD');
  IF v_started IS NULL THEN
    RETURN jsonb_build_object('kind', 'expired', 'order', order_json(p_order_id));
  END IF;
  RETURN jsonb_build_object('kind', 'awaiting', 'key', v_started->'key', 'attempt', v_started->'attempt', 'order', order_json(p_order_id));
END
$$;

-- confirmOrder (one short transaction): a payment taken outside lastunit confirms the order, RESERVED -> CONFIRMED,
-- re-claiming the units if the hold already ended. Idempotent on (order, reference): the same call answers the same.
-- p_client_id NULL: an admin, any client's order. Returns {kind: confirmed | replayed | refund_due | already_final | in_flight | not_found, order}.
CREATE OR REPLACE FUNCTION confirm_order(p_client_id text, p_order_id uuid, p_reference text) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_status text;
  v_r      text;
BEGIN
  SELECT status INTO v_status FROM orders WHERE id = p_order_id AND (p_client_id IS NULL OR client_id = p_client_id) FOR UPDATE;  -- the order row first
  IF NOT FOUND THEN
    RETURN jsonb_build_object('kind', 'not_found');
  END IF;
  IF EXISTS (SELECT 1 FROM caller_refunds WHERE order_id = p_order_id AND payment_reference = p_reference) THEN
    RETURN jsonb_build_object('kind', 'refund_due', 'order', order_json(p_order_id));
  END IF;
  IF v_status = 'CONFIRMED' THEN
    RETURN jsonb_build_object(
      'kind', CASE WHEN EXISTS (SELECT 1 FROM payments WHERE order_id = p_order_id AND state = 'EXTERNAL' AND provider_ref = p_reference)
                   THEN 'replayed' ELSE 'already_final' END,
      'order', order_json(p_order_id));
  END IF;
  IF v_status IN ('AWAITING_PAYMENT', 'PROCESSING') THEN
    RETURN jsonb_build_object('kind', 'in_flight', 'order', order_json(p_order_id));
  END IF;
  v_r := confirm_paid_order(p_order_id, 'external', p_reference, NULL, true);
  IF v_r = 'gone' THEN
    -- the caller holds money for units we cannot give: recorded once, answered RESERVATION_EXPIRED on every retry
    INSERT INTO caller_refunds (order_id, payment_reference, reason)
    VALUES (p_order_id, p_reference, 'the hold had ended and its units were no longer available')
    ON CONFLICT DO NOTHING;
    RETURN jsonb_build_object('kind', 'refund_due', 'order', order_json(p_order_id));
  END IF;
  RETURN jsonb_build_object('kind', 'confirmed', 'order', order_json(p_order_id));
END
$$;

-- cancelOrder (admin, one short transaction): CONFIRMED -> CANCELLED. The money goes back once: a compensation for a
-- payment through lastunit (UNIQUE per order; the worker voids it: a refund after capture, a cancel of the
-- authorization before; a capture not yet made is stopped here), a caller_refunds row for one taken elsewhere.
-- p_restock: the sold units go back on sale (sold -> available, the availability event, the customer's purchase count
-- given back); without it they stay sold (e.g. shipped and not returned). A marketplace order (no payment here: the
-- marketplace took the money) is cancelled at the marketplace too: a channel_incidents row ADMIN_CANCELLED, the same
-- outbox as an oversell's cancellation, asked once by the pusher outside any transaction.
-- Returns {kind: cancelled | already_cancelled | not_confirmed | not_found, order}.
CREATE OR REPLACE FUNCTION cancel_confirmed_order(p_order_id uuid, p_restock boolean, p_reason text) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_status   text;
  v_pay      payments%ROWTYPE;
  v_channel  text;
  v_external text;
BEGIN
  SELECT status, channel_id, external_order_id INTO v_status, v_channel, v_external FROM orders WHERE id = p_order_id FOR UPDATE;  -- the order row first
  IF NOT FOUND THEN
    RETURN jsonb_build_object('kind', 'not_found');
  END IF;
  IF v_status = 'CANCELLED' THEN
    RETURN jsonb_build_object('kind', 'already_cancelled', 'order', order_json(p_order_id));
  END IF;
  IF v_status <> 'CONFIRMED' THEN
    RETURN jsonb_build_object('kind', 'not_confirmed', 'order', order_json(p_order_id));
  END IF;
  IF p_restock THEN
    -- I6: only reservations still SOLD move, once; sold -> available (a bundle gives back its components), the
    -- availability events (I9) and the customer's purchase counts (I12), as every other give-back does
    PERFORM move_reserved_units(ARRAY[p_order_id], 'SOLD', 'RELEASED', coalesce(p_reason, 'cancelled'));
  END IF;
  SELECT * INTO v_pay FROM payments WHERE order_id = p_order_id AND state IN ('AUTHORIZED', 'EXTERNAL') ORDER BY attempt DESC LIMIT 1;
  IF v_pay.state = 'EXTERNAL' THEN
    INSERT INTO caller_refunds (order_id, payment_reference, reason)
    VALUES (p_order_id, v_pay.provider_ref, 'cancelled: ' || coalesce(p_reason, 'by an admin')) ON CONFLICT DO NOTHING;
  ELSIF v_pay.id IS NOT NULL THEN
    UPDATE payments SET capture_state = 'NONE', capture_lease_until = NULL WHERE id = v_pay.id AND capture_state = 'PENDING';
    INSERT INTO compensations (order_id, provider, provider_ref, payment_key, reason)
    VALUES (p_order_id, v_pay.provider, v_pay.provider_ref, coalesce(v_pay.idem_key, p_order_id::text), 'cancelled: ' || coalesce(p_reason, 'by an admin'))
    ON CONFLICT (order_id) DO NOTHING;
  END IF;
  IF v_channel IS NOT NULL THEN  -- once per marketplace order (the incident's unique key)
    INSERT INTO channel_incidents (channel_id, kind, external_order_id, order_id, sku, lines)
    SELECT v_channel, 'ADMIN_CANCELLED', v_external, p_order_id, min(l.sku),
           jsonb_agg(jsonb_build_object('sku', l.sku, 'quantity', l.quantity) ORDER BY l.sku)
      FROM order_lines l WHERE l.order_id = p_order_id
    ON CONFLICT (channel_id, external_order_id, kind) DO NOTHING;
  END IF;
  UPDATE orders SET status = 'CANCELLED', updated_at = now() WHERE id = p_order_id;
  PERFORM emit_order_status(ARRAY[p_order_id]);  -- I9
  RETURN jsonb_build_object('kind', 'cancelled', 'order', order_json(p_order_id));
END
$$;

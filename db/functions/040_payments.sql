-- Payments (docs/payments.md): the hold first, then the authorization outside any transaction; the outcome, a webhook
-- or the reconciler moves AWAITING_PAYMENT holds by guarded transitions (I6), one step per outcome; only the
-- processor's answer releases them (I7); every webhook has its effect once (I8). Lock order everywhere: the order row,
-- its reservations, inventory in SKU order, payments.

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
-- The move both payment starts share (placeOrder's begin_payment, payOrder's begin_order_payment), on an order row the
-- caller has locked and found RESERVED: its live hold HELD -> AWAITING_PAYMENT with a payment deadline, and a PENDING
-- payment attempt with its own processor key (the order id for attempt 1, '<order id>:<n>' after), stored with the
-- payment method so a timed-out authorization can be repeated by identity. I6/I7: guarded; an expired hold is not
-- moved: the order becomes EXPIRED and its units go back (I9 events, counters back). Returns {key, attempt}, or NULL
-- when the hold had already ended.
CREATE OR REPLACE FUNCTION start_payment_attempt(
  p_order_id uuid, p_provider text, p_token text, p_deadline_seconds integer,
  p_max_pending_seconds integer, p_action_timeout_seconds integer, p_on_decline text
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_n        integer;
  v_attempt  integer;
  v_key      text;
  v_deadline timestamptz := now() + make_interval(secs => p_deadline_seconds);
BEGIN
  UPDATE reservations SET state = 'AWAITING_PAYMENT', payment_deadline = v_deadline, updated_at = now()
   WHERE order_id = p_order_id AND state = 'HELD' AND expires_at > now();
  GET DIAGNOSTICS v_n = ROW_COUNT;
  IF v_n = 0 THEN
    UPDATE orders SET status = 'EXPIRED', updated_at = now() WHERE id = p_order_id;
    PERFORM return_held_units(ARRAY[p_order_id], 'EXPIRED', 'hold expired before payment');
    RETURN NULL;
  END IF;
  SELECT coalesce(max(attempt), 0) + 1 INTO v_attempt FROM payments WHERE order_id = p_order_id;
  v_key := CASE WHEN v_attempt = 1 THEN p_order_id::text ELSE p_order_id::text || ':' || v_attempt END;
  UPDATE orders SET status = 'AWAITING_PAYMENT', updated_at = now() WHERE id = p_order_id;
  INSERT INTO payments (order_id, attempt, provider, state, amount, currency, deadline_at, next_check_at, idem_key, token,
                        on_decline, give_up_at, action_give_up_at)
  SELECT id, v_attempt, p_provider, 'PENDING', total_amount, currency, v_deadline, v_deadline, v_key, p_token, p_on_decline,
         now() + make_interval(secs => p_max_pending_seconds), now() + make_interval(secs => p_action_timeout_seconds)
    FROM orders WHERE id = p_order_id;
  PERFORM emit_order_status(ARRAY[p_order_id]);  -- I9 (available did not change: the units were already held)
  RETURN jsonb_build_object('key', v_key, 'attempt', v_attempt);
END
$$;

-- The step between the hold and the authorization (one short transaction): HELD -> AWAITING_PAYMENT only while the
-- hold is still live, with a payment deadline and a PENDING payment row (attempt 1, processor key = the order id,
-- stored with the payment method so a timed-out authorization can be repeated by identity). p_max_pending_seconds /
-- p_action_timeout_seconds bound the AWAITING_PAYMENT state (080_checkout.sql). Returns {kind: awaiting | not_held, order}.
DROP FUNCTION IF EXISTS begin_payment(uuid, text, text, text, text, integer);
CREATE OR REPLACE FUNCTION begin_payment(
  p_order_id uuid, p_client_id text, p_customer_id text, p_key text, p_provider text, p_deadline_seconds integer,
  p_token text DEFAULT NULL, p_max_pending_seconds integer DEFAULT 3600, p_action_timeout_seconds integer DEFAULT 900
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_status text;
BEGIN
  SELECT status INTO v_status FROM orders WHERE id = p_order_id FOR UPDATE;  -- lock order: the order row first
  IF v_status IS DISTINCT FROM 'RESERVED' THEN
    PERFORM finish_key(p_order_id, p_client_id, p_customer_id, p_key, true);
    RETURN jsonb_build_object('kind', 'not_held', 'order', order_json(p_order_id));
  END IF;
  -- a decline rejects the order (units back at once): the shopper sent the card with placeOrder
  IF start_payment_attempt(p_order_id, p_provider, p_token, p_deadline_seconds, p_max_pending_seconds,
                           p_action_timeout_seconds, 'REJECT') IS NULL THEN
    PERFORM finish_key(p_order_id, p_client_id, p_customer_id, p_key, true);
    RETURN jsonb_build_object('kind', 'not_held', 'order', order_json(p_order_id));
  END IF;
  PERFORM finish_key(p_order_id, p_client_id, p_customer_id, p_key, false);  -- still in flight: retries get IN_PROGRESS
  RETURN jsonb_build_object('kind', 'awaiting', 'order', order_json(p_order_id));
END
$$;

-- The processor confirms money went back (Stripe charge.refunded): the order's pending compensation is done, once.
CREATE OR REPLACE FUNCTION record_refund(p_order_id uuid) RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE compensations SET state = 'DONE', done_at = now(), lease_until = NULL WHERE order_id = p_order_id AND state = 'PENDING';
  RETURN jsonb_build_object('kind', CASE WHEN FOUND THEN 'refunded' ELSE 'noop' END, 'order', order_json(p_order_id));
END
$$;

-- An outcome for anything but the open attempt (p_pay: the attempt it names, if any). Only a success is acted on, and
-- never dropped: a held order (or one that expired without ever being paid through us) is confirmed with it, as
-- confirmOrder would (confirm_paid_order, 080_checkout.sql, re-claiming units that went back); otherwise the money
-- moved for units we gave back: one compensation (UNIQUE per order; a repeated webhook adds nothing).
CREATE OR REPLACE FUNCTION apply_late_outcome(
  p_order_id uuid, p_status text, p_pay payments, p_outcome text, p_provider_ref text, p_key text, p_provider text
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_comp integer;
BEGIN
  IF p_outcome <> 'approved' THEN
    RETURN jsonb_build_object('kind', 'noop', 'order', order_json(p_order_id));
  END IF;
  IF p_status = 'RESERVED' OR (p_status = 'EXPIRED' AND p_pay.id IS NULL) THEN
    IF confirm_paid_order(p_order_id, coalesce(p_provider, p_pay.provider), p_provider_ref,
                          coalesce(p_key, p_pay.idem_key, p_order_id::text), false) = 'confirmed' THEN
      -- reclaimed: the units of an expired order were taken again (availability moved)
      RETURN jsonb_build_object('kind', 'confirmed', 'reclaimed', p_status = 'EXPIRED', 'order', order_json(p_order_id));
    END IF;
  END IF;
  IF p_status IN ('REJECTED', 'CANCELLED', 'EXPIRED') THEN
    INSERT INTO compensations (order_id, provider, provider_ref, payment_key, reason)
    VALUES (p_order_id, coalesce(p_pay.provider, p_provider, 'unknown'), coalesce(p_provider_ref, p_pay.provider_ref),
            coalesce(p_key, p_pay.idem_key, p_order_id::text), 'a payment succeeded for units already given back')
    ON CONFLICT (order_id) DO NOTHING;
    GET DIAGNOSTICS v_comp = ROW_COUNT;
    RETURN jsonb_build_object('kind', CASE WHEN v_comp > 0 THEN 'compensate' ELSE 'noop' END, 'order', order_json(p_order_id));
  END IF;
  RETURN jsonb_build_object('kind', 'noop', 'order', order_json(p_order_id));
END
$$;

-- The open attempt approved: its units sold (I2), the order CONFIRMED, the attempt AUTHORIZED (the capture step
-- takes it from here).
CREATE OR REPLACE FUNCTION approve_payment(p_order_id uuid, p_pay_id uuid, p_provider_ref text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM settle_awaiting_units(p_order_id, 'SOLD', NULL);
  UPDATE orders SET status = 'CONFIRMED', updated_at = now() WHERE id = p_order_id;
  UPDATE payments SET state = 'AUTHORIZED', provider_ref = coalesce(p_provider_ref, provider_ref), outcome_at = now(),
                      next_action = NULL, capture_state = 'PENDING'
   WHERE id = p_pay_id;
END
$$;

-- payOrder's attempt failed (declined, not found, cancelled at the processor): the hold goes back to HELD (units stay
-- held until expiresAt; the sweeper takes it after that) and the shopper may try another card. No unit moves, so no
-- counter moves (I12, I14: the hold is still active). Returns declined_held or held.
CREATE OR REPLACE FUNCTION return_to_hold(p_order_id uuid, p_pay_id uuid, p_outcome text, p_provider_ref text, p_reason text)
RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE reservations SET state = 'HELD', payment_deadline = NULL, updated_at = now()
   WHERE order_id = p_order_id AND state = 'AWAITING_PAYMENT';
  UPDATE orders SET status = 'RESERVED', updated_at = now() WHERE id = p_order_id;
  UPDATE payments SET state = CASE p_outcome WHEN 'declined' THEN 'DECLINED' WHEN 'cancelled' THEN 'CANCELLED' ELSE 'NOT_FOUND' END,
                      provider_ref = coalesce(p_provider_ref, provider_ref), reason = p_reason, outcome_at = now(),
                      next_action = NULL
   WHERE id = p_pay_id;
  RETURN CASE p_outcome WHEN 'declined' THEN 'declined_held' ELSE 'held' END;
END
$$;

-- placeOrder's payment declined: the units back at once (I2), the order REJECTED (PAYMENT_DECLINED).
CREATE OR REPLACE FUNCTION reject_declined(p_order_id uuid, p_pay_id uuid, p_provider_ref text, p_reason text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM settle_awaiting_units(p_order_id, 'RELEASED', 'payment declined');
  UPDATE orders SET status = 'REJECTED', updated_at = now(),
         rejection = jsonb_build_object('code', 'PAYMENT_DECLINED', 'sku', NULL,
                                        'message', 'the payment was declined' || coalesce(' (' || p_reason || ')', ''))
   WHERE id = p_order_id;
  UPDATE payments SET state = 'DECLINED', provider_ref = coalesce(p_provider_ref, provider_ref), reason = p_reason,
                      outcome_at = now(), next_action = NULL
   WHERE id = p_pay_id;
END
$$;

-- Nothing can succeed any more: not_found (the reconciler asked after the deadline and the processor has no charge,
-- nor can a repeat make one) or cancelled (the processor confirmed our cancel of a payment left pending too long).
-- The units go back (I7: only on the processor's answer), the order EXPIRED. Returns expired or cancelled.
CREATE OR REPLACE FUNCTION expire_unpaid(p_order_id uuid, p_pay_id uuid, p_outcome text, p_reason text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  v_reason text := coalesce(p_reason, CASE p_outcome WHEN 'cancelled' THEN 'payment not completed in time (cancelled at the processor)'
                                                     ELSE 'no payment at the processor after the deadline' END);
BEGIN
  PERFORM settle_awaiting_units(p_order_id, 'EXPIRED', v_reason);
  UPDATE orders SET status = 'EXPIRED', updated_at = now() WHERE id = p_order_id;
  UPDATE payments SET state = CASE p_outcome WHEN 'cancelled' THEN 'CANCELLED' ELSE 'NOT_FOUND' END,
                      reason = v_reason, outcome_at = now(), next_action = NULL
   WHERE id = p_pay_id;
  RETURN CASE p_outcome WHEN 'cancelled' THEN 'cancelled' ELSE 'expired' END;
END
$$;

-- No decision yet, the hold stays (I7): action_required (the shopper must act, 3-D Secure; past
-- PAYMENT_ACTION_TIMEOUT_SECONDS the reconciler cancels) or unknown (the reconciler asks after the deadline).
CREATE OR REPLACE FUNCTION record_pending_outcome(
  p_pay_id uuid, p_outcome text, p_provider_ref text, p_reason text, p_next_action jsonb
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF p_outcome = 'action_required' THEN
    UPDATE payments SET state = 'ACTION_REQUIRED', next_action = p_next_action,
                        provider_ref = coalesce(p_provider_ref, provider_ref), give_up_at = least(give_up_at, action_give_up_at)
     WHERE id = p_pay_id AND state <> 'ACTION_REQUIRED';
  ELSE
    UPDATE payments SET state = 'UNKNOWN', reason = p_reason, provider_ref = coalesce(p_provider_ref, provider_ref)
     WHERE id = p_pay_id AND state = 'PENDING';
  END IF;
END
$$;

-- Applies a payment outcome to an order by guarded transitions (I6, I7). Used by placeOrder, payOrder, webhooks and the
-- reconciler. p_outcome: approved | declined | unknown | not_found | action_required | cancelled (the processor
-- confirmed our cancel) | refunded (the processor confirms a refund: the order's pending compensation is done).
-- p_key: the attempt's processor key (NULL: the latest attempt); only the OPEN attempt of an AWAITING_PAYMENT order
-- moves it (apply_late_outcome answers the others). Returns {kind: confirmed | rejected | declined_held | held |
-- expired | cancelled | unknown | action_required | compensate | refunded | noop, order}.
DROP FUNCTION IF EXISTS apply_payment_outcome(uuid, text, text, text);
CREATE OR REPLACE FUNCTION apply_payment_outcome(
  p_order_id uuid, p_outcome text, p_provider_ref text, p_reason text,
  p_key text DEFAULT NULL, p_next_action jsonb DEFAULT NULL, p_provider text DEFAULT NULL
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_status text;
  v_kind   text;
  v_pay    payments%ROWTYPE;
  v_latest integer;
BEGIN
  SELECT status INTO v_status FROM orders WHERE id = p_order_id FOR UPDATE;  -- lock order: the order row first
  IF NOT FOUND THEN
    RETURN jsonb_build_object('kind', 'noop');
  ELSIF p_outcome = 'refunded' THEN
    RETURN record_refund(p_order_id);
  END IF;
  SELECT max(attempt) INTO v_latest FROM payments WHERE order_id = p_order_id;
  SELECT * INTO v_pay FROM payments
   WHERE order_id = p_order_id AND (CASE WHEN p_key IS NULL THEN attempt = v_latest ELSE idem_key = p_key END);
  IF NOT (v_status = 'AWAITING_PAYMENT' AND v_pay.id IS NOT NULL AND v_pay.attempt = v_latest
          AND v_pay.state IN ('PENDING', 'UNKNOWN', 'ACTION_REQUIRED')) THEN
    RETURN apply_late_outcome(p_order_id, v_status, v_pay, p_outcome, p_provider_ref, p_key, p_provider);
  END IF;
  IF p_outcome = 'approved' THEN
    PERFORM approve_payment(p_order_id, v_pay.id, p_provider_ref);
    v_kind := 'confirmed';
  ELSIF p_outcome IN ('declined', 'not_found', 'cancelled') AND v_pay.on_decline = 'HOLD' THEN
    v_kind := return_to_hold(p_order_id, v_pay.id, p_outcome, p_provider_ref, p_reason);
  ELSIF p_outcome = 'declined' THEN
    PERFORM reject_declined(p_order_id, v_pay.id, p_provider_ref, p_reason);
    v_kind := 'rejected';
  ELSIF p_outcome IN ('not_found', 'cancelled') THEN
    v_kind := expire_unpaid(p_order_id, v_pay.id, p_outcome, p_reason);
  ELSE
    PERFORM record_pending_outcome(v_pay.id, p_outcome, p_provider_ref, p_reason, p_next_action);
    RETURN jsonb_build_object('kind', CASE WHEN p_outcome = 'action_required' THEN 'action_required' ELSE 'unknown' END,
                              'order', order_json(p_order_id));
  END IF;
  PERFORM emit_order_status(ARRAY[p_order_id]);  -- I9
  RETURN jsonb_build_object('kind', v_kind, 'order', order_json(p_order_id));
END
$$;

-- A webhook in one transaction: the event id and its effect commit together or not at all (I8).
-- Returns {kind: duplicate} or the result of apply_payment_outcome.
DROP FUNCTION IF EXISTS apply_payment_event(text, text, uuid, text, text, text);
CREATE OR REPLACE FUNCTION apply_payment_event(p_source text, p_event_id text, p_order_id uuid, p_outcome text, p_provider_ref text, p_reason text,
                                               p_key text DEFAULT NULL, p_next_action jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO processed_events (source, event_id) VALUES (p_source, p_event_id) ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('kind', 'duplicate');
  END IF;
  RETURN apply_payment_outcome(p_order_id, p_outcome, p_provider_ref, p_reason, p_key, p_next_action, regexp_replace(p_source, '^payments:', ''));
END
$$;

-- placeOrder's last payment step (one transaction): the outcome by guarded transition, then the key row finished,
-- so a retry with the same key replays the current order and never authorizes again.
DROP FUNCTION IF EXISTS complete_payment(uuid, text, text, text, text, text, text);
CREATE OR REPLACE FUNCTION complete_payment(
  p_order_id uuid, p_client_id text, p_customer_id text, p_key text, p_outcome text, p_provider_ref text, p_reason text,
  p_next_action jsonb DEFAULT NULL
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_r jsonb := apply_payment_outcome(p_order_id, p_outcome, p_provider_ref, p_reason, p_order_id::text, p_next_action);
BEGIN
  PERFORM finish_key(p_order_id, p_client_id, p_customer_id, p_key, true);
  RETURN v_r;
END
$$;

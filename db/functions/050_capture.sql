-- The capture step's failures (orders/capture.ts): bounded, so a capture that cannot succeed stops and says so.

-- A capture attempt of payment p_id failed (the processor refused it or could not be reached; called outside the
-- processor call, in one short transaction). Below p_max_attempts it is tried again after a backoff that doubles per
-- attempt from p_retry_seconds, at most 6 h; at p_max_attempts its capture is FAILED, the order's updated_at moves and
-- its status event is written (I9: a storefront or admin listening hears that the money was not collected). Guarded
-- on PENDING: a capture recorded or cancelled meanwhile is left alone. Returns the capture state after it (NULL: no
-- PENDING capture of that payment).
CREATE OR REPLACE FUNCTION note_capture_failed(p_id uuid, p_error text, p_max_attempts integer, p_retry_seconds integer)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  v_state text;
  v_order uuid;
BEGIN
  UPDATE payments
     SET capture_error = left(p_error, 500),
         capture_state = CASE WHEN capture_attempts >= p_max_attempts THEN 'FAILED' ELSE capture_state END,
         capture_lease_until = CASE
           WHEN capture_attempts >= p_max_attempts THEN NULL
           ELSE now() + make_interval(secs => least(p_retry_seconds * 2 ^ least(capture_attempts - 1, 20), 21600)) END
   WHERE id = p_id AND capture_state = 'PENDING'
  RETURNING capture_state, order_id INTO v_state, v_order;
  IF v_state = 'FAILED' THEN
    UPDATE orders SET updated_at = now() WHERE id = v_order;
    PERFORM emit_order_status(ARRAY[v_order]);
  END IF;
  RETURN v_state;
END
$$;

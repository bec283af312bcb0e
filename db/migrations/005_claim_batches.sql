-- Coalesced claims (ARCHITECTURE.md section 5, "may coalesce concurrent claims for one SKU into one statement").
-- Several single-line orders for ONE SKU are placed in one transaction: each still goes through place_order (its own
-- key row, its own conditional UPDATE, I3/I4/I5 unchanged), but they share one commit, so the hot row lock is held for
-- one WAL flush instead of one per order. Callers batch only orders for the same single SKU, so a batch locks exactly
-- one inventory row and cannot deadlock with anything that locks in SKU order.
-- p_requests: jsonb array of {clientId, customerId, key, hash, lines}; returns place_order's answers in the same order.
CREATE FUNCTION place_orders(p_requests jsonb, p_hold_ttl_seconds integer, p_retention_hours integer) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_req jsonb;
  v_out jsonb := '[]'::jsonb;
BEGIN
  FOR v_req IN SELECT value FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS e(value, n) ORDER BY n LOOP
    v_out := v_out || jsonb_build_array(place_order(
      v_req->>'clientId', v_req->>'customerId', v_req->>'key', v_req->>'hash',
      v_req->'lines', p_hold_ttl_seconds, p_retention_hours));
  END LOOP;
  RETURN v_out;
END
$$;

-- Coalesced claims (ARCHITECTURE.md section 5, "may coalesce concurrent claims for one SKU into one statement").
-- Several single-line orders for ONE SKU are placed in one transaction. Each still goes through prepare_order and
-- claim_order (its own key row, its own conditional UPDATE: I3, I4, I5 unchanged), but they share one commit, so the
-- hot row lock is held for one WAL flush instead of one per order.
-- Lock order: phase 1 (key rows, in key order) for every request before any claim, so this transaction never waits for
-- a key row while it holds the inventory row; the callers batch only orders for the same single SKU, so a batch locks
-- exactly one inventory row and cannot deadlock with writers that lock in SKU order.
-- p_requests: jsonb array of {clientId, customerId, key, hash, lines}; returns the answers in the same order.
CREATE FUNCTION place_orders(p_requests jsonb, p_hold_ttl_seconds integer, p_retention_hours integer) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_req      record;
  v_n        integer := jsonb_array_length(p_requests);
  v_prepared jsonb[] := array_fill(NULL::jsonb, ARRAY[jsonb_array_length(p_requests)]);
  v_out      jsonb := '[]'::jsonb;
BEGIN
  FOR v_req IN
    SELECT e.value AS r, e.n FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS e(value, n)
     ORDER BY e.value->>'clientId', e.value->>'customerId', e.value->>'key'
  LOOP
    v_prepared[v_req.n] := prepare_order(v_req.r->>'clientId', v_req.r->>'customerId', v_req.r->>'key', v_req.r->>'hash',
                                         v_req.r->'lines', p_hold_ttl_seconds, p_retention_hours);
  END LOOP;
  FOR i IN 1 .. v_n LOOP
    v_out := v_out || jsonb_build_array(CASE WHEN v_prepared[i]->>'kind' = 'prepared' THEN claim_order(v_prepared[i]) ELSE v_prepared[i] END);
  END LOOP;
  RETURN v_out;
END
$$;

-- Claiming units: the one loop every path that takes units goes through (placeOrder's claim_order, the re-claim of a
-- paid order's units in confirm_paid_order, a marketplace order in apply_channel_event), and the refusals it answers.
-- A bundle takes its components, each limited SKU's units are counted for the customer (I12), every unit is taken by
-- one conditional write per SKU in SKU order (I3; the lock order every writer uses), a refused claim leaves nothing.

-- Order lines as the units to claim: a bundle line becomes its components times the line's quantity; the same SKU from
-- several lines (two bundles sharing a component, or a bundle and the component itself) is summed into one claim, so
-- every unit is taken by one conditional write per SKU, in SKU order. PL/pgSQL, so its plan is kept per session (a
-- LANGUAGE sql function with a FROM is not inlined, and would be planned again by every claim's transaction).
CREATE OR REPLACE FUNCTION expand_bundle_lines(p_lines jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (
    SELECT coalesce(jsonb_agg(jsonb_build_object('sku', x.sku, 'quantity', x.quantity) ORDER BY x.sku), '[]'::jsonb)
      FROM (SELECT coalesce(b.component_sku, l.sku) AS sku, sum(l.quantity * coalesce(b.quantity, 1))::integer AS quantity
              FROM jsonb_to_recordset(p_lines) AS l(sku text, quantity integer)
              LEFT JOIN bundle_components b ON b.bundle_sku = l.sku
             GROUP BY 1) x);
END
$$;

-- The rejection of a line the stock cannot cover: SOLD_OUT when nothing is left, INSUFFICIENT_STOCK otherwise.
-- STABLE (format() and jsonb_build_object() are), so PostgreSQL inlines a call into the statement that makes it.
CREATE OR REPLACE FUNCTION stock_rejection(p_sku text, p_quantity integer, p_available integer) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'code', CASE WHEN p_available = 0 THEN 'SOLD_OUT' ELSE 'INSUFFICIENT_STOCK' END,
    'sku', p_sku,
    'message', CASE WHEN p_available = 0 THEN format('%s is sold out', p_sku)
                    ELSE format('not enough %s left for %s', p_sku, p_quantity) END)
$$;

-- The rejection of a claim that would take the customer past the SKU's purchase limit (I12).
CREATE OR REPLACE FUNCTION purchase_limit_rejection(p_sku text, p_limit integer) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('code', 'PURCHASE_LIMIT', 'sku', p_sku,
                            'message', format('%s is limited to %s per customer', p_sku, p_limit))
$$;

-- The one conditional write that takes p_quantity units of p_sku (I3): to reserved, or straight to sold (p_sold: the
-- order is paid), with its availability event (I9). A limited SKU's units are counted for the customer under the row
-- lock this UPDATE took (I12), unless p_client_id is NULL (a marketplace order: the marketplace sold them already).
-- Returns NULL when taken, else why not: {sku, quantity} (the stock), with `limit` when the purchase limit refused
-- (the units are then taken but not announced, and the caller undoes the claim).
CREATE OR REPLACE FUNCTION claim_line(
  p_sku text, p_quantity integer, p_sold boolean, p_client_id text, p_customer_id text
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_inv record;
BEGIN
  UPDATE inventory
     SET available = available - p_quantity, version = version + 1, updated_at = now(),
         reserved = reserved + CASE WHEN p_sold THEN 0 ELSE p_quantity END,
         sold = sold + CASE WHEN p_sold THEN p_quantity ELSE 0 END
   WHERE sku = p_sku AND available >= p_quantity AND buckets = 1
  RETURNING sku, available, version, updated_at, purchase_limit INTO v_inv;
  IF NOT FOUND THEN  -- a bucketed SKU's units are in its buckets (120_stock-buckets.sql), its row is not written
    SELECT * INTO v_inv FROM claim_bucketed(p_sku, p_quantity, p_sold);
    IF NOT FOUND THEN
      RETURN jsonb_build_object('sku', p_sku, 'quantity', p_quantity);
    END IF;
  END IF;
  IF v_inv.purchase_limit IS NOT NULL AND p_client_id IS NOT NULL
     AND NOT count_purchase(p_client_id, p_customer_id, p_sku, p_quantity, v_inv.purchase_limit) THEN
    RETURN jsonb_build_object('sku', p_sku, 'quantity', p_quantity, 'limit', v_inv.purchase_limit);
  END IF;
  INSERT INTO outbox (topic, aggregate_key, payload)
  VALUES ('availability', v_inv.sku, jsonb_build_object('sku', v_inv.sku, 'available', v_inv.available,
          'soldOut', v_inv.available = 0, 'version', v_inv.version, 'updatedAt', v_inv.updated_at));
  RETURN NULL;
END
$$;

-- The claim loop: every unit of p_lines (order lines), one claim_line per SKU in SKU order, all or none; a bundle
-- takes its components (expand_bundle_lines), unless the caller knows no line is a bundle (NOT p_bundled). Returns
-- NULL when every line was taken, else the first refusal (claim_line's answer), with nothing of the claim left: the
-- claims, their events, what their triggers wrote (listings, bundle events) and their row locks roll back with a
-- subtransaction. One SKU the caller knows to have no purchase limit (NOT p_limited) needs none: its UPDATE takes all
-- or nothing, and a limit set since the caller read none is undone by hand on the row this transaction still locks.
CREATE OR REPLACE FUNCTION claim_units(
  p_lines jsonb, p_sold boolean, p_client_id text, p_customer_id text, p_limited boolean, p_bundled boolean
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_claims  jsonb := CASE WHEN p_bundled THEN expand_bundle_lines(p_lines) ELSE p_lines END;
  v_line    record;
  v_failure jsonb;
BEGIN
  IF jsonb_array_length(v_claims) = 1 AND NOT p_limited THEN
    SELECT l.sku, l.quantity INTO v_line FROM jsonb_to_recordset(v_claims) AS l(sku text, quantity integer);
    v_failure := claim_line(v_line.sku, v_line.quantity, p_sold, p_client_id, p_customer_id);
    IF v_failure ? 'limit' THEN
      UPDATE inventory SET available = available + v_line.quantity,
                           reserved = reserved - CASE WHEN p_sold THEN 0 ELSE v_line.quantity END,
                           sold = sold - CASE WHEN p_sold THEN v_line.quantity ELSE 0 END
       WHERE sku = v_line.sku;
    END IF;
    RETURN v_failure;
  END IF;
  BEGIN
    FOR v_line IN
      SELECT l.sku, l.quantity FROM jsonb_to_recordset(v_claims) AS l(sku text, quantity integer) ORDER BY l.sku
    LOOP
      v_failure := claim_line(v_line.sku, v_line.quantity, p_sold, p_client_id, p_customer_id);
      IF v_failure IS NOT NULL THEN
        RAISE EXCEPTION 'claim refused' USING ERRCODE = 'LU001';
      END IF;
    END LOOP;
  EXCEPTION WHEN SQLSTATE 'LU001' THEN
    NULL;  -- the claims are undone; v_failure survives (plpgsql variables are not rolled back)
  END;
  RETURN v_failure;
END
$$;

-- The rejection of a refused claim (claim_units' answer; NULL for NULL): PURCHASE_LIMIT, or the stock's answer with
-- the units left now (read for the message only: the decision was the conditional write). VOLATILE, so its read takes
-- a snapshot of its own: the claim it follows may have waited for a row lock, and what it waited for is now committed.
CREATE OR REPLACE FUNCTION claim_rejection(p_failure jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
  IF p_failure IS NULL THEN
    RETURN NULL;
  END IF;
  IF p_failure ? 'limit' THEN
    RETURN purchase_limit_rejection(p_failure->>'sku', (p_failure->>'limit')::integer);
  END IF;
  RETURN stock_rejection(p_failure->>'sku', (p_failure->>'quantity')::integer,
                         (SELECT t.available FROM inventory i
                           CROSS JOIN LATERAL sku_totals(i.sku, i.available, i.version, i.buckets) t
                           WHERE i.sku = p_failure->>'sku'));
END
$$;

-- What the purchase limit would answer to these lines now, read without a claim, for naming a refusal that another
-- rule decided (claim_order's HOLD_LIMIT): the first unit claim (SKU order, a bundle's components included) that would
-- take the customer past its SKU's limit, as claim_units answers it ({sku, quantity, limit}); NULL when none would.
-- It decides nothing: every unit counted is counted by count_purchase's conditional write (claim_line).
CREATE OR REPLACE FUNCTION purchase_refusal(p_client_id text, p_customer_id text, p_lines jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (
    SELECT jsonb_build_object('sku', l.sku, 'quantity', l.quantity, 'limit', i.purchase_limit)
      FROM jsonb_to_recordset(expand_bundle_lines(p_lines)) AS l(sku text, quantity integer)
      JOIN inventory i ON i.sku = l.sku
      LEFT JOIN customer_purchases c ON c.client_id = p_client_id AND c.customer_id = p_customer_id AND c.sku = l.sku
     WHERE coalesce(c.units, 0) + l.quantity > i.purchase_limit
     ORDER BY l.sku LIMIT 1);
END
$$;

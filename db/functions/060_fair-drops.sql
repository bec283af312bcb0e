-- Fair drops: the counters of I12 (units per customer and SKU, against the SKU's purchase limit) and I14 (active holds
-- per buyer, against MAX_ACTIVE_HOLDS). Taken by conditional writes in the claiming transaction (claim_line,
-- 015_claim-units.sql; claim_order, 020_place-order.sql) and given back by every path that moves held units, in
-- its transaction (move_reserved_units, 030_holds.sql). Lock order, so no two transactions wait for each other in a
-- cycle: a buyer's hold counter before any reservation or inventory row (buyers in (client, buyer) order when there
-- are several); a purchase counter only while its SKU's inventory row is already locked by the same transaction.

-- I14: one more active hold for the buyer, by a conditional write: false when it already has p_max. A buyer of NULL
-- (the limit is off) counts nothing.
CREATE OR REPLACE FUNCTION take_hold(p_client_id text, p_buyer text, p_max integer) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  IF p_buyer IS NULL OR coalesce(p_max, 0) <= 0 THEN
    RETURN true;
  END IF;
  INSERT INTO buyer_holds AS h (client_id, buyer, active, max_active) VALUES (p_client_id, p_buyer, 1, p_max)
  ON CONFLICT (client_id, buyer) DO UPDATE SET active = h.active + 1, max_active = p_max, updated_at = now()
   WHERE h.active < p_max;
  RETURN FOUND;
END
$$;

-- The rejection of an order whose buyer already has p_max active holds (I14).
CREATE OR REPLACE FUNCTION hold_limit_rejection(p_max integer) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('code', 'HOLD_LIMIT', 'sku', NULL,
    'message', format('this buyer already has %s active holds: complete, release or let one expire first', p_max))
$$;

-- I14: p_n holds of the buyer are no longer active. Never fails (a release must not): floored at zero, and a buyer
-- with no active hold left has no row.
CREATE OR REPLACE FUNCTION give_holds_back(p_client_id text, p_buyer text, p_n integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF p_buyer IS NULL OR p_n <= 0 THEN
    RETURN;
  END IF;
  DELETE FROM buyer_holds WHERE client_id = p_client_id AND buyer = p_buyer AND active <= p_n;
  IF NOT FOUND THEN
    UPDATE buyer_holds SET active = active - p_n, updated_at = now() WHERE client_id = p_client_id AND buyer = p_buyer;
  END IF;
END
$$;

-- I12: p_quantity more units of a limited SKU for the customer, by a conditional write under the SKU's current limit:
-- false when they would exceed it. Called only while the SKU's inventory row is locked by this transaction.
CREATE OR REPLACE FUNCTION count_purchase(p_client_id text, p_customer_id text, p_sku text, p_quantity integer, p_limit integer)
RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO customer_purchases AS c (client_id, customer_id, sku, units, max_units)
  SELECT p_client_id, p_customer_id, p_sku, p_quantity, p_limit WHERE p_quantity <= p_limit
  ON CONFLICT (client_id, customer_id, sku) DO UPDATE SET units = c.units + p_quantity, max_units = p_limit, updated_at = now()
   WHERE c.units + p_quantity <= p_limit;
  RETURN FOUND;
END
$$;

-- The hold counters of the buyers of these orders, locked in (client, buyer) order before a path that may end their
-- holds touches reservations or inventory (the lock order above; placeOrder takes them in the same place).
CREATE OR REPLACE FUNCTION lock_hold_counters(p_order_ids uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM buyer_holds h
    WHERE (h.client_id, h.buyer) IN (SELECT o.client_id, o.hold_buyer FROM orders o WHERE o.id = ANY (p_order_ids) AND o.hold_buyer IS NOT NULL)
    ORDER BY h.client_id, h.buyer
      FOR UPDATE OF h;
END
$$;

-- After move_reserved_units moved reservations p_from -> p_to (p_moved: [{o: order id, s: sku, q: quantity}], the
-- SKUs' inventory rows locked by it): units back on sale are no longer the customer's (I12), and an order with no
-- live hold left no longer counts against its buyer (I14). Same transaction, so the counts never drift from the holds.
CREATE OR REPLACE FUNCTION give_back_counts(p_moved jsonb, p_from text, p_to text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_buyer record;
BEGIN
  IF p_moved IS NULL THEN
    RETURN;
  END IF;
  IF p_to <> 'SOLD' THEN  -- released, expired, declined, cancelled: the units went back to available
    -- the customer each order was counted against: its counted customer (a public key's buyer), else its customer
    UPDATE customer_purchases c SET units = greatest(c.units - m.q, 0), updated_at = now()
      FROM (SELECT o.client_id, coalesce(o.counted_customer, o.customer_id) AS customer_id, x.s AS sku, sum(x.q)::integer AS q
              FROM jsonb_to_recordset(p_moved) AS x(o uuid, s text, q integer) JOIN orders o ON o.id = x.o
             GROUP BY 1, 2, 3) m
     WHERE c.client_id = m.client_id AND c.customer_id = m.customer_id AND c.sku = m.sku;
    DELETE FROM customer_purchases c
     USING (SELECT DISTINCT o.client_id, coalesce(o.counted_customer, o.customer_id) AS customer_id, x.s AS sku
              FROM jsonb_to_recordset(p_moved) AS x(o uuid, s text) JOIN orders o ON o.id = x.o) m
     WHERE c.client_id = m.client_id AND c.customer_id = m.customer_id AND c.sku = m.sku AND c.units = 0;
  END IF;
  IF p_from IN ('HELD', 'AWAITING_PAYMENT') THEN
    FOR v_buyer IN
      SELECT o.client_id, o.hold_buyer, count(*)::integer AS n
        FROM orders o
       WHERE o.id IN (SELECT DISTINCT x.o FROM jsonb_to_recordset(p_moved) AS x(o uuid))
         AND o.hold_buyer IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM reservations r WHERE r.order_id = o.id AND r.state IN ('HELD', 'AWAITING_PAYMENT'))
       GROUP BY o.client_id, o.hold_buyer
       ORDER BY o.client_id, o.hold_buyer
    LOOP
      PERFORM give_holds_back(v_buyer.client_id, v_buyer.hold_buyer, v_buyer.n);
    END LOOP;
  END IF;
END
$$;

-- setPurchaseLimit (I12). The SKU's inventory row is locked first, so claims in flight finish before and claims after
-- see the new limit. From no limit to one, the counters are rebuilt from what each customer holds or bought; to no
-- limit, they are dropped. A lowered limit leaves counts above it in place: new claims are refused, releases still
-- work. Returns false for an unknown SKU.
CREATE OR REPLACE FUNCTION set_purchase_limit(p_sku text, p_limit integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_old integer;
BEGIN
  SELECT purchase_limit INTO v_old FROM inventory WHERE sku = p_sku FOR UPDATE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  UPDATE inventory SET purchase_limit = p_limit WHERE sku = p_sku;
  IF p_limit IS NULL OR v_old IS NULL THEN
    DELETE FROM customer_purchases WHERE sku = p_sku;
  END IF;
  IF p_limit IS NOT NULL AND v_old IS NULL THEN
    -- the units each customer holds of the SKU: its own lines, and the SKU's units inside bundle lines (a bundle's
    -- reservation holds quantity x component quantity of each component, as the claim counted them; 091_bundles.sql)
    INSERT INTO customer_purchases (client_id, customer_id, sku, units, max_units)
    SELECT o.client_id, coalesce(o.counted_customer, o.customer_id), p_sku, sum(u.quantity)::integer, greatest(p_limit, sum(u.quantity)::integer)
      FROM (SELECT r.order_id, r.quantity
              FROM reservations r
             WHERE r.sku = p_sku AND r.state IN ('HELD', 'AWAITING_PAYMENT', 'SOLD')
            UNION ALL
            SELECT r.order_id, r.quantity * b.quantity
              FROM bundle_components b JOIN reservations r ON r.sku = b.bundle_sku
             WHERE b.component_sku = p_sku AND r.state IN ('HELD', 'AWAITING_PAYMENT', 'SOLD')) u
      JOIN orders o ON o.id = u.order_id
     GROUP BY o.client_id, coalesce(o.counted_customer, o.customer_id);
  END IF;
  RETURN true;
END
$$;

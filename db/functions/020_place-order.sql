-- placeOrder for one order in one round trip (place_order): the key row, the order and its claims (I3, I4, I5, I12,
-- I14), in two phases so that a transaction placing several orders (place_orders, 025_place-orders.sql) can take every
-- key row and hold counter before any inventory row lock:
--   prepare_order  everything that takes no inventory lock: the priced lines (bad input refused before any write), the
--                  key row (a replay answers from it), the sold-out-at-a-glance refusal, the order written RESERVED;
--   claim_order    the buyer's hold (I14), the claim of every line (claim_units, 015_claim-units.sql), and the
--                  refusal recorded when either refuses.
-- Every answer is {kind, ...}: unknown_sku | mixed_currency | total_too_large | reused | in_progress | replayed |
-- rejected | placed, with the order document (order_document, 010_events.sql) where there is an order.

-- The priced lines of an order request, read before anything is written: products are never deleted and prices are
-- copied onto the order, so this read decides nothing about stock. unknown_sku: the first SKU with no product;
-- has_bundle: a line is a bundle (its components are claimed); limited: a line's SKU has a purchase limit (I12).
CREATE OR REPLACE FUNCTION price_order_lines(p_lines jsonb)
RETURNS TABLE (unknown_sku text, currencies bigint, total bigint, currency text, lines jsonb, has_bundle boolean,
               limited boolean)
LANGUAGE sql STABLE AS $$
  SELECT min(l.sku) FILTER (WHERE p.sku IS NULL), count(DISTINCT p.currency),
         sum(p.price_amount::bigint * l.quantity)::bigint, min(p.currency)::text,
         jsonb_agg(jsonb_build_object('sku', l.sku, 'quantity', l.quantity, 'unitAmount', p.price_amount)
                   ORDER BY l.sku),
         coalesce(bool_or(p.is_bundle), false), coalesce(bool_or(i.purchase_limit IS NOT NULL), false)
    FROM jsonb_to_recordset(p_lines) AS l(sku text, quantity integer)
    LEFT JOIN products p ON p.sku = l.sku
    LEFT JOIN inventory i ON i.sku = l.sku
$$;

-- I4: the key row first, naming the order this request creates. A concurrent twin blocks here on the unique index until
-- this transaction ends, then replays. A key whose payment follows (p_payment) stays PROCESSING until the payment step
-- finishes it (finish_key, 040_payments.sql), so a concurrent retry answers in_progress. False: the key exists already.
CREATE OR REPLACE FUNCTION take_key_row(
  p_client_id text, p_customer_id text, p_key text, p_request_hash text, p_order_id uuid, p_payment boolean,
  p_retention_hours integer
) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO idempotency_keys (client_id, customer_id, key, request_hash, order_id, state, response, expires_at)
  VALUES (p_client_id, p_customer_id, p_key, p_request_hash, p_order_id,
          CASE WHEN p_payment THEN 'PROCESSING' ELSE 'DONE' END, jsonb_build_object('orderId', p_order_id),
          now() + make_interval(hours => p_retention_hours))
  ON CONFLICT DO NOTHING;
  RETURN FOUND;
END
$$;

-- A key that exists already: its request is answered from the order it made, never executed again. I5: the same key
-- with another request is refused (reused). A PROCESSING key answers in_progress while its request may still run; one
-- older than p_recovery_seconds (its request died between the hold and the authorization), or whose order is final,
-- is finished and replayed. Returns {kind: reused | in_progress | replayed, ...}.
CREATE OR REPLACE FUNCTION replay_key(
  p_client_id text, p_customer_id text, p_key text, p_request_hash text, p_recovery_seconds integer
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_key    idempotency_keys%ROWTYPE;
  v_status text;
BEGIN
  SELECT * INTO v_key FROM idempotency_keys
   WHERE client_id = p_client_id AND customer_id = p_customer_id AND key = p_key;
  IF NOT FOUND THEN
    -- the twin rolled back or the row was cleaned up between our insert and read: the caller retries the whole call
    RAISE EXCEPTION 'idempotency key vanished' USING ERRCODE = '40001';
  END IF;
  IF v_key.request_hash <> p_request_hash THEN
    RETURN jsonb_build_object('kind', 'reused', 'orderId', v_key.order_id);
  END IF;
  IF v_key.state = 'PROCESSING' THEN
    SELECT status INTO v_status FROM orders WHERE id = v_key.order_id;
    IF v_status IN ('RESERVED', 'AWAITING_PAYMENT') AND
       (p_recovery_seconds IS NULL OR v_key.created_at > now() - make_interval(secs => p_recovery_seconds)) THEN
      RETURN jsonb_build_object('kind', 'in_progress', 'orderId', v_key.order_id, 'order', order_json(v_key.order_id));
    END IF;
    UPDATE idempotency_keys SET state = 'DONE', response = jsonb_build_object('orderId', v_key.order_id)
     WHERE client_id = p_client_id AND customer_id = p_customer_id AND key = p_key AND state = 'PROCESSING';
  END IF;
  RETURN jsonb_build_object('kind', 'replayed', 'order', order_json(v_key.order_id), 'response', v_key.response);
END
$$;

-- A key whose payment was to follow, on an order refused before it held anything: nothing to pay for, final now.
CREATE OR REPLACE FUNCTION close_key(p_client_id text, p_customer_id text, p_key text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE idempotency_keys SET state = 'DONE'
   WHERE client_id = p_client_id AND customer_id = p_customer_id AND key = p_key;
END
$$;

-- An order and its lines, prices as priced (p_lines: [{sku, quantity, unitAmount}]).
CREATE OR REPLACE FUNCTION insert_order(
  p_order_id uuid, p_client_id text, p_customer_id text, p_status text, p_total bigint, p_currency text,
  p_lines jsonb, p_rejection jsonb, p_hold_buyer text, p_token_hash text, p_counted_customer text
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO orders (id, client_id, customer_id, status, total_amount, currency, created_at, updated_at, rejection,
                      hold_buyer, token_hash, counted_customer)
  VALUES (p_order_id, p_client_id, p_customer_id, p_status, p_total, p_currency, now(), now(), p_rejection,
          p_hold_buyer, p_token_hash, p_counted_customer);
  INSERT INTO order_lines (order_id, sku, quantity, unit_amount)
  SELECT p_order_id, l.sku, l.quantity, l."unitAmount"
    FROM jsonb_to_recordset(p_lines) AS l(sku text, quantity integer, "unitAmount" integer);
END
$$;

-- Sold out at a glance: a line whose SKU has fewer units available than it asks for (committed state, no lock) is
-- refused now, as its conditional UPDATE would refuse it at this instant. The order is written REJECTED from the start
-- with its lines, so its key (taken just before) replays the same answer; no hold, no hold counter, no claim, nothing
-- to undo, and no order-status event: the order is born final and its id is first known from this answer, so no
-- subscriber can be waiting for it (`quiet`: the relay has nothing to wake for). NULL when every line is covered.
CREATE OR REPLACE FUNCTION refuse_at_a_glance(
  p_order_id uuid, p_client_id text, p_customer_id text, p_key text, p_payment boolean, p_total bigint,
  p_currency text, p_lines jsonb, p_token_hash text
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_short     record;
  v_rejection jsonb;
BEGIN
  -- a bucketed SKU's available: with its buckets' sum (sku_totals, 012_sku-figures.sql, inlined here)
  SELECT l.sku, l.quantity, a.available INTO v_short
    FROM jsonb_to_recordset(p_lines) AS l(sku text, quantity integer) JOIN inventory i ON i.sku = l.sku
   CROSS JOIN LATERAL sku_totals(i.sku, i.available, i.version, i.buckets) a
   WHERE a.available < l.quantity ORDER BY l.sku LIMIT 1;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  v_rejection := stock_rejection(v_short.sku, v_short.quantity, v_short.available);
  PERFORM insert_order(p_order_id, p_client_id, p_customer_id, 'REJECTED', p_total, p_currency, p_lines, v_rejection,
                       NULL, p_token_hash, NULL);
  IF p_payment THEN
    PERFORM close_key(p_client_id, p_customer_id, p_key);
  END IF;
  RETURN jsonb_build_object('kind', 'rejected', 'quiet', true, 'order',
    order_document(p_order_id, 'REJECTED', p_customer_id, p_total, p_currency, v_rejection, now(), now(), p_lines,
                   NULL));
END
$$;

-- The order RESERVED before its claim (the claim as late as it can be): its lines and its holds HELD until p_expires.
-- No order-status event (I9 asks one of every change others must hear about): the order's id is new, first handed out
-- by its caller's answer (placeOrder's, or a waitlist entry's event), so no orderStatusChanged subscriber can be waiting
-- for its first status; its next change is relayed. Its event-log entry (100_event-log.sql) is written at commit as for
-- every order.
DROP FUNCTION IF EXISTS write_held_order(uuid, text, text, bigint, text, jsonb, text, text, timestamptz, text);
CREATE OR REPLACE FUNCTION write_held_order(
  p_order_id uuid, p_client_id text, p_customer_id text, p_total bigint, p_currency text, p_lines jsonb,
  p_hold_buyer text, p_token_hash text, p_expires timestamptz, p_counted_customer text
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM insert_order(p_order_id, p_client_id, p_customer_id, 'RESERVED', p_total, p_currency, p_lines, NULL,
                       p_hold_buyer, p_token_hash, p_counted_customer);
  INSERT INTO reservations (order_id, sku, quantity, state, expires_at, updated_at)
  SELECT p_order_id, l.sku, l.quantity, 'HELD', p_expires, now()
    FROM jsonb_to_recordset(p_lines) AS l(sku text, quantity integer);
END
$$;

-- Phase 1. Returns a final answer, or {kind: 'prepared', ...}: what claim_order needs.
--   p_payment: a payment follows (the key stays PROCESSING); p_recovery_seconds: see replay_key.
--   p_buyer, p_max_holds: whom the hold counts against and how many active holds a buyer may have (I14, 0 = no limit).
--   p_token_hash: the SHA-256 of the order token this call hands out (orders/order-tokens.ts), written with the order;
--              a replay writes nothing and the caller hands out no token.
--   p_counted_customer: whom the purchase counter counts (I12) when not p_customer_id (a public key's buyer by
--              address, orders/buyer.ts); written on the order, so every give-back counts the same customer.
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
  v_order_id   uuid := gen_random_uuid();
  v_expires    timestamptz := now() + make_interval(secs => p_hold_ttl_seconds);
  v_hold_buyer text := CASE WHEN coalesce(p_max_holds, 0) > 0 THEN p_buyer END;
  v_o          record;  -- the priced lines
  v_refused    jsonb;
BEGIN
  SELECT * INTO v_o FROM price_order_lines(p_lines);
  IF v_o.unknown_sku IS NOT NULL THEN
    RETURN jsonb_build_object('kind', 'unknown_sku', 'sku', v_o.unknown_sku);
  ELSIF v_o.currencies > 1 THEN
    RETURN jsonb_build_object('kind', 'mixed_currency');
  ELSIF v_o.total > 2147483647 THEN
    RETURN jsonb_build_object('kind', 'total_too_large');
  END IF;
  IF NOT take_key_row(p_client_id, p_customer_id, p_key, p_request_hash, v_order_id, p_payment, p_retention_hours) THEN
    RETURN replay_key(p_client_id, p_customer_id, p_key, p_request_hash, p_recovery_seconds);
  END IF;
  IF NOT v_o.has_bundle THEN  -- a bundle's stock is its components': it takes the claim
    v_refused := refuse_at_a_glance(v_order_id, p_client_id, p_customer_id, p_key, p_payment, v_o.total, v_o.currency,
                                    v_o.lines, p_token_hash);
    IF v_refused IS NOT NULL THEN
      RETURN v_refused;
    END IF;
  END IF;
  PERFORM write_held_order(v_order_id, p_client_id, p_customer_id, v_o.total, v_o.currency, v_o.lines, v_hold_buyer,
                           p_token_hash, v_expires, p_counted_customer);
  RETURN jsonb_build_object('kind', 'prepared', 'orderId', v_order_id, 'clientId', p_client_id,
    'customerId', p_customer_id, 'key', p_key, 'payment', p_payment, 'lines', v_o.lines, 'totalAmount', v_o.total,
    'currency', v_o.currency, 'now', now(), 'expiresAt', v_expires, 'holdBuyer', v_hold_buyer,
    'maxHolds', p_max_holds, 'hasBundle', v_o.has_bundle, 'limited', v_o.limited,
    'countedCustomer', coalesce(p_counted_customer, p_customer_id));
END
$$;

-- A request whose hold (I14) was refused. A refusal names the rule the request broke, the purchase limit first: it is
-- answered PURCHASE_LIMIT when its purchase limit refuses it too. Refused for a batch (place_orders counted the holds
-- of its whole batch before its claims: p.holdTaken), the hold is asked again here, after the refusals before it in
-- the batch gave theirs back; the batch has held the buyer's counter row since it asked (an upsert locks the row it
-- conflicts with, refused or not), so this waits for nothing and keeps the lock order. held: the hold is counted now;
-- rejection: why not.
CREATE OR REPLACE FUNCTION refused_hold(p jsonb, OUT held boolean, OUT rejection jsonb)
LANGUAGE plpgsql AS $$
BEGIN
  held := false;
  IF (p->>'limited')::boolean OR (p->>'hasBundle')::boolean THEN
    rejection := claim_rejection(purchase_refusal(p->>'clientId', p->>'countedCustomer', p->'lines'));
    IF rejection IS NOT NULL THEN
      RETURN;
    END IF;
  END IF;
  IF p ? 'holdTaken' THEN
    held := take_hold(p->>'clientId', p->>'holdBuyer', (p->>'maxHolds')::integer);
  END IF;
  IF NOT held THEN
    rejection := hold_limit_rejection((p->>'maxHolds')::integer);
  END IF;
END
$$;

-- A prepared order its claim refused: REJECTED with the rejection (recorded, so a retry with its key replays it), its
-- holds deleted; the hold it counted given back (I14: it holds nothing); its key final when a payment was to follow.
-- It is born final as far as anyone outside can tell (its id is first known from this answer): no status event.
CREATE OR REPLACE FUNCTION record_refusal(p jsonb, p_rejection jsonb, p_held boolean) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF p_held THEN
    PERFORM give_holds_back(p->>'clientId', p->>'holdBuyer', 1);
  END IF;
  UPDATE orders SET status = 'REJECTED', rejection = p_rejection WHERE id = (p->>'orderId')::uuid;
  DELETE FROM reservations WHERE order_id = (p->>'orderId')::uuid;
  IF (p->>'payment')::boolean THEN
    PERFORM close_key(p->>'clientId', p->>'customerId', p->>'key');
  END IF;
END
$$;

-- Phase 2 (p: prepare_order's answer): the buyer's hold, counted by a conditional write before any inventory row is
-- locked (I14; place_orders counted it for its batch already: p.holdTaken), the drop gate (I17), then the claim
-- (claim_units: I3, I12).
-- Only the claims, one outbox row per claimed SKU and the commit hold inventory row locks; a refused claim takes none.
-- Returns {kind: placed | rejected, order}, the document built from what p carries (no re-read).
CREATE OR REPLACE FUNCTION claim_order(p jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_held      boolean := coalesce((p->>'holdTaken')::boolean,
                                  take_hold(p->>'clientId', p->>'holdBuyer', (p->>'maxHolds')::integer));
  v_rejection jsonb;
  v_failure   jsonb;
BEGIN
  IF NOT v_held THEN
    SELECT h.held, h.rejection INTO v_held, v_rejection FROM refused_hold(p) AS h;
  END IF;
  IF v_rejection IS NULL THEN
    v_rejection := drop_gate(p);  -- a drop's SKU: only for an admitted entry (110_drops.sql)
  END IF;
  IF v_rejection IS NULL THEN
    v_failure := claim_units(p->'lines', false, p->>'clientId', p->>'countedCustomer',
                             coalesce((p->>'limited')::boolean, false), coalesce((p->>'hasBundle')::boolean, true));
    IF v_failure IS NOT NULL THEN
      v_rejection := claim_rejection(v_failure);
      PERFORM drop_ungate(p);  -- the entry the gate used is admitted again
    END IF;
  END IF;
  IF v_rejection IS NOT NULL THEN
    PERFORM record_refusal(p, v_rejection, v_held);
  END IF;
  RETURN jsonb_build_object('kind', CASE WHEN v_rejection IS NULL THEN 'placed' ELSE 'rejected' END, 'order',
    order_document((p->>'orderId')::uuid, CASE WHEN v_rejection IS NULL THEN 'RESERVED' ELSE 'REJECTED' END,
                   p->>'customerId', (p->>'totalAmount')::bigint, p->>'currency', v_rejection,
                   (p->>'now')::timestamptz, (p->>'now')::timestamptz, p->'lines',
                   CASE WHEN v_rejection IS NULL
                        THEN jsonb_build_object('state', 'HELD', 'expiresAt', p->'expiresAt') END));
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

DROP FUNCTION IF EXISTS rejected_order_json(uuid, text, bigint, text, jsonb, timestamptz, jsonb);

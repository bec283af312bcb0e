-- Coalesced claims (place_orders): several single-line orders for ONE SKU placed in one transaction, so they share one
-- commit and the SKU's row lock is held for one WAL flush instead of one per order. Each request keeps its own key row
-- (I4, I5) and its own order. The common case is set-based, one statement per table for the whole batch:
--   write_short_orders      refusals at a glance and plain sales, written before any inventory lock;
--   prepare_other_requests  every other request: prepare_order (020_place-order.sql);
--   take_hold_counters      every buyer's hold counter (I14), in (client, buyer) order;
--   claim_batch             the claims in arrival order: plain sales granted under the SKU's row lock and taken by ONE
--                           conditional write for their sum (take_batch_units), the others by claim_order.
-- Lock order: every key row and every hold counter before the inventory row, so this transaction never waits for a
-- key row or a hold counter while it holds the SKU; the callers batch only orders for the same single SKU, so a batch
-- locks exactly one inventory row and cannot deadlock with writers that lock in SKU order. Key rows are inserted in
-- two passes (write_short_orders, then prepare_other_requests), each in key order but not in one order across them:
-- two batches holding the same keys at once (another instance's retries) can deadlock on key rows, which PostgreSQL
-- breaks (40P01, the statement is repeated whole by its caller); no such cycle can include the inventory row.

-- The batch's SKU (the first single-line request's: the callers batch one SKU) and whether it is plain: no bundle, no
-- purchase limit, no drop governing it (its orders pass claim_order's drop gate). A SKU with stock buckets is plain too:
-- its plain sales are granted from one bucket at a time (lock_batch_bucket). No row when no request has a single line.
CREATE OR REPLACE FUNCTION batch_sku(p_requests jsonb) RETURNS TABLE (sku text, plain boolean)
LANGUAGE sql STABLE AS $$
  SELECT s.sku, coalesce((SELECT NOT p.is_bundle AND i.purchase_limit IS NULL
                                 AND NOT EXISTS (SELECT 1 FROM drops d WHERE d.sku = p.sku AND d.ended_at IS NULL)
                            FROM products p JOIN inventory i ON i.sku = p.sku WHERE p.sku = s.sku), false)
    FROM (SELECT e.value->'lines'->0->>'sku' AS sku
            FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS e(value, n)
           WHERE jsonb_array_length(e.value->'lines') = 1
           ORDER BY e.n LIMIT 1) s
$$;

-- The requests answered in short, each with its path:
--   refused  a single-line request of a known, non-bundle SKU whose stock cannot cover it at a glance (committed
--            state, no lock: prepare_order's quiet refusal);
--   plain    a single-line request for the batch's SKU when that SKU is plain, whose buyer is alone in the batch (a
--            buyer's hold counter is taken once per request in take_hold_counters).
-- Every other request is left to prepare_other_requests, as is a total beyond integer range (its answer is bad input).
-- STABLE SQL, so it is inlined into write_short_orders' statement: one plan, as if written there.
CREATE OR REPLACE FUNCTION short_paths(p_requests jsonb, p_sku text, p_plain boolean, p_max_holds integer)
RETURNS TABLE (n bigint, client_id text, customer_id text, key text, hash text, token_hash text, counted_customer text,
               sku text,
               quantity integer, buyer text, price_amount integer, currency text, available integer, total bigint,
               path text)
LANGUAGE sql STABLE AS $$
  WITH req AS (
    SELECT e.n, e.value->>'clientId' AS client_id, e.value->>'customerId' AS customer_id, e.value->>'key' AS key,
           e.value->>'hash' AS hash, e.value->>'tokenHash' AS token_hash, e.value->>'countedCustomer' AS counted_customer,
           e.value->'lines'->0->>'sku' AS sku, (e.value->'lines'->0->>'quantity')::integer AS quantity,
           CASE WHEN coalesce(p_max_holds, 0) > 0 THEN e.value->>'buyer' END AS buyer
      FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS e(value, n)
     WHERE jsonb_array_length(e.value->'lines') = 1
  )
  SELECT c.* FROM (
    SELECT r.*, p.price_amount, p.currency::text AS currency, a.available, p.price_amount::bigint * r.quantity AS total,
           CASE WHEN a.available < r.quantity THEN 'refused'
                WHEN p_plain AND r.sku = p_sku
                     AND (r.buyer IS NULL OR NOT EXISTS (
                            SELECT 1 FROM req o WHERE o.client_id = r.client_id AND o.buyer = r.buyer AND o.n <> r.n))
                THEN 'plain' END AS path
      FROM req r JOIN products p ON p.sku = r.sku AND NOT p.is_bundle JOIN inventory i ON i.sku = r.sku
     CROSS JOIN LATERAL sku_totals(i.sku, i.available, i.version, i.buckets) a  -- a bucketed SKU's: with its buckets' sum
     WHERE p.price_amount::bigint * r.quantity <= 2147483647
  ) c WHERE c.path IS NOT NULL
$$;

-- A short path's new order as order_json reads it once written: one line, held (p_hold_expires) or not, created now.
CREATE OR REPLACE FUNCTION new_order_document(
  p_order_id uuid, p_status text, p_customer_id text, p_total bigint, p_currency text, p_rejection jsonb, p_sku text,
  p_quantity integer, p_unit_amount integer, p_hold_expires timestamptz
) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT order_document(p_order_id, p_status, p_customer_id, p_total, p_currency, p_rejection, now(), now(),
           jsonb_build_array(jsonb_build_object('sku', p_sku, 'quantity', p_quantity, 'unitAmount', p_unit_amount)),
           CASE WHEN p_hold_expires IS NOT NULL THEN jsonb_build_object('state', 'HELD', 'expiresAt', p_hold_expires) END)
$$;

-- The short paths' writes, one statement per table so every key row is taken in one key order: key rows; orders,
-- REJECTED with their lines (refused) or RESERVED with their lines and holds (plain: corrected by
-- record_batch_refusals if refused under the lock); each order's event-log entry (100_event-log.sql: the trigger is
-- not queued for these rows while place_orders has lastunit.order_events set). No order-status event: an order's id is
-- first known from this answer, so no orderStatusChanged subscriber can be waiting for its first status (I9 asks one
-- of a change others must hear about; write_held_order, 020_place-order.sql). A request whose key row exists already
-- (a replay, a reused key, a twin in this batch or in flight elsewhere; of twins in the batch the first to arrive
-- wins) is not answered here.
-- The answers, by request position, are short: {kind: 'refused' | 'plain', id, unitAmount, currency, at, ...}, what
-- the caller does not have already (it sent the customer, the SKU and the quantity); it builds the order document
-- from both (db/orders-store.ts). refused: how many are refusals.
CREATE OR REPLACE FUNCTION write_short_orders(
  p_requests jsonb, p_sku text, p_plain boolean, p_hold_ttl_seconds integer, p_retention_hours integer,
  p_max_holds integer, OUT answers jsonb[], OUT refused integer
) LANGUAGE plpgsql AS $$
DECLARE
  v_expires timestamptz := now() + make_interval(secs => p_hold_ttl_seconds);
  v_short   record;
BEGIN
  answers := array_fill(NULL::jsonb, ARRAY[jsonb_array_length(p_requests)]); refused := 0;
  FOR v_short IN
    WITH chosen AS (
      SELECT s.*, gen_random_uuid() AS order_id FROM short_paths(p_requests, p_sku, p_plain, p_max_holds) s
    ), keys AS (
      INSERT INTO idempotency_keys (client_id, customer_id, key, request_hash, order_id, state, response, expires_at)
      SELECT c.client_id, c.customer_id, c.key, c.hash, c.order_id, 'DONE', jsonb_build_object('orderId', c.order_id),
             now() + make_interval(hours => p_retention_hours)
        FROM chosen c ORDER BY c.client_id, c.customer_id, c.key, c.n
      ON CONFLICT DO NOTHING RETURNING order_id
    ), won AS (
      SELECT c.*, CASE WHEN c.path = 'refused' THEN stock_rejection(c.sku, c.quantity, c.available) END AS rejection,
             CASE WHEN c.path = 'refused' THEN 'REJECTED' ELSE 'RESERVED' END AS status
        FROM chosen c WHERE c.order_id IN (SELECT k.order_id FROM keys k)
    ), orders_in AS (
      INSERT INTO orders (id, client_id, customer_id, status, total_amount, currency, created_at, updated_at, rejection,
                          hold_buyer, token_hash, counted_customer)
      SELECT w.order_id, w.client_id, w.customer_id, w.status, w.total, w.currency, now(), now(), w.rejection,
             CASE WHEN w.path = 'plain' THEN w.buyer END, w.token_hash, CASE WHEN w.path = 'plain' THEN w.counted_customer END
        FROM won w
    ), lines_in AS (
      INSERT INTO order_lines (order_id, sku, quantity, unit_amount)
      SELECT w.order_id, w.sku, w.quantity, w.price_amount FROM won w
    ), holds_in AS (
      INSERT INTO reservations (order_id, sku, quantity, state, expires_at, updated_at)
      SELECT w.order_id, w.sku, w.quantity, 'HELD', v_expires, now() FROM won w WHERE w.path = 'plain'
    ), logged AS (  -- each order's event, as the trigger logs one at commit (not queued here: place_orders)
      INSERT INTO events (id, type, order_id, client_id, sequence, data)
      SELECT new_event_id(), order_event_type(w.status, NULL, w.rejection->>'code'), w.order_id, w.client_id, 1,
             new_order_document(w.order_id, w.status, w.customer_id, w.total, w.currency, w.rejection, w.sku,
                                w.quantity, w.price_amount, CASE WHEN w.path = 'plain' THEN v_expires END)
        FROM won w ORDER BY w.n
    )
    SELECT w.n, CASE WHEN w.path = 'refused'
             THEN jsonb_build_object('kind', 'refused', 'id', w.order_id, 'rejection', w.rejection,
                                     'unitAmount', w.price_amount, 'currency', w.currency, 'at', now())
             ELSE jsonb_build_object('kind', 'plain', 'id', w.order_id, 'clientId', w.client_id, 'quantity', w.quantity,
                    'holdBuyer', w.buyer, 'unitAmount', w.price_amount, 'currency', w.currency,
                    'at', now(), 'expiresAt', v_expires) END AS answer
      FROM won w
  LOOP
    answers[v_short.n] := v_short.answer;
    refused := refused + (v_short.answer->>'kind' = 'refused')::integer;
  END LOOP;
END
$$;

-- Every request write_short_orders did not answer (a replay, a reused key, a twin, a bundle, a limited SKU, a buyer
-- twice) takes both phases' first, prepare_order, in key order; twins of a short answer replay it here.
CREATE OR REPLACE FUNCTION prepare_other_requests(
  p_requests jsonb, p_answers jsonb[], p_hold_ttl_seconds integer, p_retention_hours integer, p_max_holds integer
) RETURNS jsonb[]
LANGUAGE plpgsql AS $$
DECLARE
  v_req record;
BEGIN
  FOR v_req IN
    SELECT e.value AS r, e.n FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS e(value, n)
     WHERE p_answers[e.n] IS NULL
     ORDER BY e.value->>'clientId', e.value->>'customerId', e.value->>'key'
  LOOP
    p_answers[v_req.n] := prepare_order(v_req.r->>'clientId', v_req.r->>'customerId', v_req.r->>'key', v_req.r->>'hash',
                                        v_req.r->'lines', p_hold_ttl_seconds, p_retention_hours, false, NULL,
                                        v_req.r->>'buyer', p_max_holds, v_req.r->>'tokenHash',
                                        v_req.r->>'countedCustomer');
  END LOOP;
  RETURN p_answers;
END
$$;

-- I14: every buyer's hold counted, in (client, buyer) order, before any inventory row; each answer records whether
-- its hold was counted (holdTaken), for the claim to answer HOLD_LIMIT or give the hold back.
CREATE OR REPLACE FUNCTION take_hold_counters(p_answers jsonb[], p_max_holds integer) RETURNS jsonb[]
LANGUAGE plpgsql AS $$
DECLARE
  v_req record;
BEGIN
  FOR v_req IN
    SELECT i AS n FROM generate_subscripts(p_answers, 1) AS i
     WHERE p_answers[i]->>'kind' IN ('prepared', 'plain') AND p_answers[i]->>'holdBuyer' IS NOT NULL
     ORDER BY p_answers[i]->>'clientId', p_answers[i]->>'holdBuyer', i
  LOOP
    p_answers[v_req.n] := p_answers[v_req.n] || jsonb_build_object('holdTaken',
      take_hold(p_answers[v_req.n]->>'clientId', p_answers[v_req.n]->>'holdBuyer', p_max_holds));
  END LOOP;
  RETURN p_answers;
END
$$;

-- The batch's SKU row, locked once (FOR NO KEY UPDATE, as its UPDATE would lock it) before the plain sales are
-- granted against what it has available; returns that. A purchase limit (I12) or a drop set since batch_sku read none:
-- the whole batch is repeated (40001), and these requests then take claim_order's path.
CREATE OR REPLACE FUNCTION lock_batch_sku(p_sku text) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_inv record;
BEGIN
  SELECT available, purchase_limit, buckets INTO v_inv FROM inventory WHERE sku = p_sku FOR NO KEY UPDATE;
  IF v_inv.purchase_limit IS NOT NULL OR v_inv.buckets > 1
     OR EXISTS (SELECT 1 FROM drops d WHERE d.sku = p_sku AND d.ended_at IS NULL) THEN
    -- (stock buckets set meanwhile: the units are in the buckets now, not in the row this batch would grant from)
    RAISE EXCEPTION 'purchase limit, drop or buckets of % set while its batch was prepared', p_sku USING ERRCODE = '40001';
  END IF;
  RETURN v_inv.available;
END
$$;

-- The plain sales granted so far: p_units units of p_sku taken by ONE conditional write (I3: claim_line, or for a
-- bucketed SKU the same UPDATE of p_bucket; CHECK available >= 0 still guards it) under the row lock the batch holds,
-- with one availability event (the count after).
DROP FUNCTION IF EXISTS take_batch_units(text, integer);
CREATE OR REPLACE FUNCTION take_batch_units(p_sku text, p_units integer, p_bucket smallint DEFAULT NULL) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF p_bucket IS NULL THEN
    IF claim_line(p_sku, p_units, false, NULL, NULL) IS NULL THEN
      RETURN;
    END IF;
  ELSE
    UPDATE inventory_buckets b SET available = b.available - p_units, reserved = b.reserved + p_units,
           version = b.version + 1
     WHERE b.sku = p_sku AND b.bucket = p_bucket AND b.available >= p_units;
    IF FOUND THEN
      -- the SKU's sums, as the relay publishes a bucketed SKU's event (availability_now, 120_stock-buckets.sql)
      INSERT INTO outbox (topic, aggregate_key, payload)
      VALUES ('availability', p_sku, availability_now(p_sku, jsonb_build_object('sku', p_sku, 'updatedAt', now())));
      RETURN;
    END IF;
  END IF;
  -- cannot happen under the batch's row lock; if it does, nothing of the batch stands
  RAISE EXCEPTION 'the batch claim of % found fewer units under its own row lock', p_sku USING ERRCODE = '40001';
END
$$;

-- A bucketed SKU's bucket for a batch's plain sales, the first one (from the bucket this transaction hashes to, in
-- rotation) that covers p_quantity and no other transaction holds, locked (SKIP LOCKED: a batch never waits for a
-- bucket, so it cannot close a cycle of waits). No row when none is free and covers it. Like lock_batch_sku, a
-- purchase limit or a drop set while the batch was prepared, or a new bucket count, fails the batch (40001: it is
-- repeated): a new limit or count waits for every bucket before it commits, so once a bucket is locked here, what is
-- read is what holds for the claims.
CREATE OR REPLACE FUNCTION lock_batch_bucket(p_sku text, p_quantity integer, p_buckets smallint)
RETURNS TABLE (bucket smallint, available integer)
LANGUAGE plpgsql AS $$
DECLARE
  v_start integer := abs(hashtext(pg_current_xact_id()::text) % p_buckets);
  v_b     record;
  v_inv   record;
BEGIN
  SELECT f.bucket, f.available INTO v_b FROM inventory_buckets f
   WHERE f.sku = p_sku AND f.available >= p_quantity
   ORDER BY (f.bucket - v_start + p_buckets) % p_buckets LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED;
  SELECT i.buckets, i.purchase_limit INTO v_inv FROM inventory i WHERE i.sku = p_sku;
  IF v_inv.buckets IS DISTINCT FROM p_buckets OR v_inv.purchase_limit IS NOT NULL
     OR EXISTS (SELECT 1 FROM drops d WHERE d.sku = p_sku AND d.ended_at IS NULL) THEN
    RAISE EXCEPTION 'buckets, purchase limit or drop of % changed while its batch was prepared', p_sku
      USING ERRCODE = '40001';
  END IF;
  IF v_b.bucket IS NOT NULL THEN
    RETURN QUERY SELECT v_b.bucket::smallint, v_b.available::integer;
  END IF;
END
$$;

-- The plain sales refused under the lock (the stock ran out within the batch, or HOLD_LIMIT): REJECTED with their
-- rejection, their holds deleted, their event-log entries carrying the status they ended in.
CREATE OR REPLACE FUNCTION record_batch_refusals(p_answers jsonb[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_ids uuid[];
BEGIN
  PERFORM set_config('lastunit.order_events', 'written', true);  -- their one event is rewritten below
  WITH refused AS (
    SELECT (a->>'id')::uuid AS id, a->'rejection' AS rejection
      FROM unnest(p_answers) AS a WHERE a->>'kind' = 'plain' AND a ? 'rejection'
  ), rejected AS (
    UPDATE orders o SET status = 'REJECTED', rejection = r.rejection FROM refused r WHERE o.id = r.id RETURNING o.id
  ), unheld AS (
    DELETE FROM reservations WHERE order_id IN (SELECT r.id FROM refused r)
  )
  SELECT array_agg(x.id) INTO v_ids FROM rejected x;
  PERFORM set_config('lastunit.order_events', '', true);
  -- the order.reserved write_short_orders logged becomes the one order.rejected the order ends this transaction in
  -- (as the trigger writes it at commit for any other order: one event per order per transaction)
  UPDATE events e SET type = order_event_type('REJECTED', NULL, o.rejection->>'code'), data = order_json(e.order_id)
    FROM orders o WHERE o.id = e.order_id AND e.order_id = ANY (v_ids) AND e.sequence = 1;
END
$$;

-- A bucketed SKU's next bucket for a batch's plain sale of p_quantity, when the bucket it holds (p_bucket, NULL: none
-- yet) cannot cover it: what that bucket granted (p_granted) is taken, then another is locked (lock_batch_bucket).
-- When no bucket no one holds covers the sale, it is refused if the SKU as a whole cannot cover it (the buckets' sum:
-- no false sold out), and the answer is no bucket with that sum; else the batch raises LU003 and its caller claims its
-- orders one at a time, as claim_bucketed's batch claims do: a batch never waits for a bucket.
CREATE OR REPLACE FUNCTION next_batch_bucket(p_sku text, p_quantity integer, p_buckets smallint, p_bucket smallint,
                                             p_granted integer)
RETURNS TABLE (bucket smallint, available integer)
LANGUAGE plpgsql AS $$
DECLARE
  v_b record;
BEGIN
  IF p_granted > 0 THEN
    PERFORM take_batch_units(p_sku, p_granted, p_bucket);
  END IF;
  SELECT f.bucket, f.available INTO v_b FROM lock_batch_bucket(p_sku, p_quantity, p_buckets) f;
  IF v_b.bucket IS NOT NULL THEN
    RETURN QUERY SELECT v_b.bucket, v_b.available;
    RETURN;
  END IF;
  SELECT s.available INTO v_b FROM bucket_sums(p_sku) s;
  IF v_b.available >= p_quantity THEN
    RAISE EXCEPTION 'the buckets of % that could cover % are held: claim the batch one at a time', p_sku, p_quantity
      USING ERRCODE = 'LU003';
  END IF;
  RETURN QUERY SELECT NULL::smallint, v_b.available;
END
$$;

-- The claims, in arrival order. A plain sale is granted while what is left of the locked SKU covers it (the decision
-- its own conditional UPDATE would take); the units granted so far are taken by take_batch_units when a per-order
-- claim comes next (it must find them taken: arrival order holds across both kinds) and at the end. A plain sale's
-- HOLD_LIMIT needs no lock. A bucketed SKU's plain sales are granted the same way from one bucket the batch locked
-- instead of the SKU row, the next one when it runs short (next_batch_bucket). Returns the answers, a refused plain
-- sale's with its rejection.
CREATE OR REPLACE FUNCTION claim_batch(p_answers jsonb[], p_sku text, p_max_holds integer) RETURNS jsonb[]
LANGUAGE plpgsql AS $$
DECLARE
  v_left     integer;           -- units of p_sku (of v_bucket) not yet granted (known once its row is locked)
  v_granted  integer := 0;      -- units granted to plain sales, not yet taken
  v_quantity integer;
  v_refused  boolean := false;  -- a plain sale was refused
  v_buckets  smallint;          -- the SKU's bucket count: 1, its row
  v_bucket   smallint;          -- a bucketed SKU's bucket this batch grants from, locked by it
BEGIN
  SELECT i.buckets INTO v_buckets FROM inventory i WHERE i.sku = p_sku;
  FOR i IN 1 .. coalesce(array_length(p_answers, 1), 0) LOOP
    IF p_answers[i]->>'kind' = 'prepared' THEN
      IF v_granted > 0 THEN
        PERFORM take_batch_units(p_sku, v_granted, v_bucket);
        v_granted := 0;
      END IF;
      p_answers[i] := claim_order(p_answers[i]);
      IF v_bucket IS NOT NULL THEN  -- under the locks this transaction holds
        SELECT b.available INTO v_left FROM inventory_buckets b WHERE b.sku = p_sku AND b.bucket = v_bucket;
      ELSIF v_buckets = 1 AND v_left IS NOT NULL THEN
        SELECT available INTO v_left FROM inventory WHERE sku = p_sku;
      END IF;
    ELSIF p_answers[i]->>'kind' = 'plain' THEN
      v_quantity := (p_answers[i]->>'quantity')::integer;
      IF NOT coalesce((p_answers[i]->>'holdTaken')::boolean, true) THEN
        p_answers[i] := p_answers[i] || jsonb_build_object('rejection', hold_limit_rejection(p_max_holds));
        v_refused := true;
        CONTINUE;
      END IF;
      IF v_buckets > 1 AND (v_bucket IS NULL OR v_quantity > v_left) THEN
        -- no bucket: v_left is the SKU's sum, short of this sale, which is refused below
        SELECT f.bucket, f.available INTO v_bucket, v_left
          FROM next_batch_bucket(p_sku, v_quantity, v_buckets, v_bucket, v_granted) f;
        v_granted := 0;
      ELSIF v_left IS NULL THEN
        v_left := lock_batch_sku(p_sku);
      END IF;
      IF v_quantity <= v_left THEN
        v_left := v_left - v_quantity;
        v_granted := v_granted + v_quantity;
        CONTINUE;  -- granted: its answer stays as write_short_orders wrote it
      END IF;
      p_answers[i] := p_answers[i] || jsonb_build_object('rejection', stock_rejection(p_sku, v_quantity, v_left));
      v_refused := true;
      PERFORM give_holds_back(p_answers[i]->>'clientId', p_answers[i]->>'holdBuyer', 1);  -- it holds nothing (I14)
    END IF;
  END LOOP;
  IF v_granted > 0 THEN
    PERFORM take_batch_units(p_sku, v_granted, v_bucket);
  END IF;
  IF v_refused THEN
    PERFORM record_batch_refusals(p_answers);
  END IF;
  RETURN p_answers;
END
$$;

-- p_requests: jsonb array of {clientId, customerId, key, hash, lines, buyer, tokenHash, countedCustomer}; returns the answers in the
-- same order: write_short_orders' short ones (a plain sale with `rejection` when claim_batch refused it), the others
-- as place_order answers.
DROP FUNCTION IF EXISTS place_orders(jsonb, integer, integer);
CREATE OR REPLACE FUNCTION place_orders(p_requests jsonb, p_hold_ttl_seconds integer, p_retention_hours integer,
                                        p_max_holds integer DEFAULT 0)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_answers jsonb[];
  v_refused integer;  -- requests refused at a glance
  v_sku     text;
  v_plain   boolean;
BEGIN
  SELECT b.sku, b.plain INTO v_sku, v_plain FROM batch_sku(p_requests) AS b;
  -- write_short_orders logs its orders' events itself, set-based: the event log's trigger is not queued for them
  PERFORM set_config('lastunit.order_events', 'written', true);
  SELECT w.answers, w.refused INTO v_answers, v_refused
    FROM write_short_orders(p_requests, v_sku, coalesce(v_plain, false), p_hold_ttl_seconds, p_retention_hours,
                            p_max_holds) AS w;
  PERFORM set_config('lastunit.order_events', '', true);
  IF v_refused = cardinality(v_answers) THEN  -- a sold-out storm: every request is answered
    RETURN to_jsonb(v_answers);
  END IF;
  v_answers := prepare_other_requests(p_requests, v_answers, p_hold_ttl_seconds, p_retention_hours, p_max_holds);
  v_answers := take_hold_counters(v_answers, p_max_holds);
  -- a bucketed SKU's claims in a batch never wait for a bucket (claim_bucketed, 120_stock-buckets.sql): on for the
  -- claims only, and off again before anything else this transaction may run
  PERFORM set_config('lastunit.claim_batch', 'on', true);
  v_answers := claim_batch(v_answers, v_sku, p_max_holds);
  PERFORM set_config('lastunit.claim_batch', 'off', true);
  RETURN to_jsonb(v_answers);
END
$$;

-- Entering a drop and moving down its line: the fair start (shuffle_drop), enterDrop (enter_drop), admissions
-- (admit_drop: I17) and their lapse. Lock order as in 110_drops.sql: the drop row first, then entries.

-- QUEUE, at opens_at (the first drop path to run after it, under the drop row lock): every entry taken before it gets
-- a random place; the random() each one drew is recorded on it (shuffle_key). A conditional write on shuffled_at, so
-- the shuffle happens once. Later entries take next_place in arrival order. Returns whether it shuffled now.
CREATE OR REPLACE FUNCTION shuffle_drop(p_drop_id uuid) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_ids uuid[];
BEGIN
  UPDATE drops SET shuffled_at = clock_timestamp()
   WHERE id = p_drop_id AND mode = 'QUEUE' AND shuffled_at IS NULL AND opens_at <= clock_timestamp();
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  WITH drawn AS (SELECT e.id, random() AS k FROM drop_entries e WHERE e.drop_id = p_drop_id AND e.early),
  placed AS (
    UPDATE drop_entries e SET shuffle_key = d.k, place = d.n, updated_at = now()
      FROM (SELECT id, k, row_number() OVER (ORDER BY k, id) AS n FROM drawn) d
     WHERE e.id = d.id
    RETURNING e.id)
  SELECT array_agg(id) INTO v_ids FROM placed;
  UPDATE drops SET next_place = coalesce(array_length(v_ids, 1), 0) + 1 WHERE id = p_drop_id;
  IF v_ids IS NOT NULL THEN
    PERFORM emit_drop_entries(v_ids);
  END IF;
  RETURN true;
END
$$;

-- I17: admissions of the drop's next entries in line (QUEUE once shuffled, DRAW once drawn), while the SKU can sell
-- to every admission outstanding: admitted x maxPerCustomer <= available (at least one admission while a unit is
-- left). Expired admissions lapse first (their entries are used up: LAPSED). The drop row is locked first, as by
-- every admission path (drop_gate holds it through the claim), so `available` read after the lock is what the
-- claims before left. The counter moves by a conditional write that re-checks the bound. Returns admissions made.
CREATE OR REPLACE FUNCTION admit_drop(p_drop_id uuid) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_d     drops%ROWTYPE;
  v_avail integer;
  v_ids   uuid[];
  v_room  integer;
BEGIN
  SELECT * INTO v_d FROM drops WHERE id = p_drop_id AND ended_at IS NULL FOR UPDATE;
  IF NOT FOUND OR (v_d.mode = 'QUEUE' AND v_d.shuffled_at IS NULL) OR (v_d.mode = 'DRAW' AND v_d.drawn_at IS NULL) THEN
    RETURN 0;
  END IF;
  WITH lapsed AS (
    UPDATE drop_entries SET state = 'LAPSED', updated_at = now()
     WHERE drop_id = p_drop_id AND state = 'ADMITTED' AND admission_expires_at <= now() RETURNING id)
  SELECT array_agg(id) INTO v_ids FROM lapsed;
  IF v_ids IS NOT NULL THEN
    UPDATE drops SET admitted = admitted - array_length(v_ids, 1) WHERE id = p_drop_id RETURNING admitted INTO v_d.admitted;
    PERFORM emit_drop_entries(v_ids);
  END IF;
  SELECT available INTO v_avail FROM inventory WHERE sku = v_d.sku;
  v_room := greatest(v_avail / v_d.max_per_customer, least(v_avail, 1)) - v_d.admitted;
  IF v_room <= 0 THEN
    RETURN 0;
  END IF;
  WITH next AS (
    SELECT e.id FROM drop_entries e WHERE e.drop_id = p_drop_id AND e.state = 'WAITING' AND e.place IS NOT NULL
     ORDER BY e.place LIMIT v_room FOR UPDATE),
  admitted AS (
    UPDATE drop_entries e SET state = 'ADMITTED', admitted_at = now(), updated_at = now(),
           admission_expires_at = now() + make_interval(secs => v_d.claim_seconds)
     WHERE e.id IN (SELECT id FROM next) AND e.state = 'WAITING' RETURNING e.id)
  SELECT array_agg(id) INTO v_ids FROM admitted;
  IF v_ids IS NULL THEN
    RETURN 0;
  END IF;
  UPDATE drops SET admitted = admitted + array_length(v_ids, 1)
   WHERE id = p_drop_id AND admitted + array_length(v_ids, 1) <= greatest(v_avail / max_per_customer, least(v_avail, 1));
  IF NOT FOUND THEN
    RAISE EXCEPTION 'admit_drop: admissions beyond what % can sell', v_d.sku USING ERRCODE = '40001';
  END IF;
  PERFORM emit_drop_entries(v_ids);
  RETURN array_length(v_ids, 1);
END
$$;

-- The answer of enter_drop for an entry that exists (replayed, or another key: already_entered).
CREATE OR REPLACE FUNCTION entry_answer(p_kind text, p_entry_id uuid) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('kind', p_kind, 'entry', drop_entry_json(p_entry_id))
$$;

-- The lock an entry takes on its drop row: FOR SHARE while entries need no place (QUEUE before the fair start, DRAW),
-- so a crowd arriving before opensAt enters side by side; FOR UPDATE once an entry takes a place in arrival order
-- (next_place) or may run the shuffle. The shuffle and the draw update the row, so they wait for the entries in
-- flight and every later entry sees them. A share lock found stale (the shuffle came between the read and the lock)
-- is a serialization failure: the caller repeats the whole call (40001). Returns the row as locked.
CREATE OR REPLACE FUNCTION lock_drop_for_entry(p_drop_id uuid) RETURNS drops
LANGUAGE plpgsql AS $$
DECLARE
  v_d drops%ROWTYPE;
BEGIN
  SELECT * INTO v_d FROM drops WHERE id = p_drop_id;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  IF v_d.mode = 'QUEUE' AND (v_d.shuffled_at IS NOT NULL OR v_d.opens_at <= clock_timestamp()) THEN
    SELECT * INTO v_d FROM drops WHERE id = p_drop_id FOR UPDATE;
  ELSE
    SELECT * INTO v_d FROM drops WHERE id = p_drop_id FOR SHARE;
    IF v_d.mode = 'QUEUE' AND (v_d.shuffled_at IS NOT NULL OR v_d.opens_at <= clock_timestamp()) THEN
      RAISE EXCEPTION 'drop % reached its fair start while entering', p_drop_id USING ERRCODE = '40001';
    END IF;
  END IF;
  RETURN v_d;
END
$$;

-- enterDrop: one entry per customer per drop (the unique key decides; the same idempotency key replays it, another is
-- already_entered). p_customer_id is the buyer as counted (a public key's address unless a buyer token vouched);
-- p_address, on public keys, bounds entries per address and drop to p_max_per_address (counted under a lock of that
-- address's own). QUEUE entries are taken until closes_at (before opens_at they are early: shuffled at opens_at;
-- after it they queue in arrival order); DRAW entries between opens_at and closes_at. Returns {kind: entered |
-- replayed | already_entered | not_found | closed | not_open | address_limit, entry}.
CREATE OR REPLACE FUNCTION enter_drop(
  p_drop_id uuid, p_client_id text, p_customer_id text, p_key text, p_token_hash text, p_address text,
  p_max_per_address integer
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_d     drops%ROWTYPE;
  v_old   drop_entries%ROWTYPE;
  v_id    uuid := gen_random_uuid();
  v_place integer;
BEGIN
  SELECT * INTO v_old FROM drop_entries WHERE drop_id = p_drop_id AND client_id = p_client_id AND customer_id = p_customer_id;
  IF FOUND THEN  -- a replay or a second entry needs no lock
    RETURN entry_answer(CASE WHEN v_old.idempotency_key = p_key THEN 'replayed' ELSE 'already_entered' END, v_old.id);
  END IF;
  v_d := lock_drop_for_entry(p_drop_id);
  IF v_d.id IS NULL THEN
    RETURN jsonb_build_object('kind', 'not_found');
  ELSIF v_d.ended_at IS NOT NULL OR clock_timestamp() >= v_d.closes_at THEN
    RETURN jsonb_build_object('kind', 'closed');
  ELSIF v_d.mode = 'DRAW' AND clock_timestamp() < v_d.opens_at THEN
    RETURN jsonb_build_object('kind', 'not_open');
  END IF;
  IF p_address IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_drop_id::text || p_address, 0));
    IF (SELECT count(*) FROM drop_entries WHERE drop_id = p_drop_id AND client_address = p_address) >= p_max_per_address THEN
      RETURN jsonb_build_object('kind', 'address_limit');
    END IF;
  END IF;
  IF v_d.mode = 'QUEUE' AND (v_d.shuffled_at IS NOT NULL OR shuffle_drop(p_drop_id)) THEN  -- arrival order
    UPDATE drops SET next_place = next_place + 1 WHERE id = p_drop_id RETURNING next_place - 1 INTO v_place;
  END IF;
  INSERT INTO drop_entries (id, drop_id, client_id, customer_id, idempotency_key, client_address, token_hash, state,
                            early, place)
  VALUES (v_id, p_drop_id, p_client_id, p_customer_id, p_key, p_address, p_token_hash, 'WAITING',
          v_d.mode = 'QUEUE' AND v_place IS NULL, v_place)
  ON CONFLICT (drop_id, client_id, customer_id) DO NOTHING;
  IF NOT FOUND THEN  -- a twin entered meanwhile
    SELECT * INTO v_old FROM drop_entries WHERE drop_id = p_drop_id AND client_id = p_client_id AND customer_id = p_customer_id;
    RETURN entry_answer(CASE WHEN v_old.idempotency_key = p_key THEN 'replayed' ELSE 'already_entered' END, v_old.id);
  END IF;
  PERFORM emit_drop_entries(ARRAY[v_id]);
  IF v_place IS NOT NULL THEN
    PERFORM admit_drop(p_drop_id);  -- holds the row FOR UPDATE already
  END IF;
  RETURN entry_answer('entered', v_id);
END
$$;

-- placeOrder's gate (called by claim_order before its claim, 020_place-order.sql): an order for a SKU a drop governs
-- uses the customer's admitted entry, by a conditional write (ADMITTED -> ORDERED, once: I17), so the claim that
-- follows takes units only for it. The drop row stays locked to the commit (admit_drop reads `available` after it).
-- NULL when every line may be claimed; else the rejection (DROP_NOT_ADMITTED, or PURCHASE_LIMIT past the drop's
-- maxPerCustomer), with every entry this call used given back (drop_ungate).
CREATE OR REPLACE FUNCTION drop_gate(p jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_d     record;
  v_entry uuid;
BEGIN
  FOR v_d IN
    SELECT d.id, d.sku, d.max_per_customer, l.quantity
      FROM drops d JOIN jsonb_to_recordset(p->'lines') AS l(sku text, quantity integer) ON l.sku = d.sku
     WHERE d.ended_at IS NULL ORDER BY d.id FOR UPDATE OF d
  LOOP
    IF v_d.quantity > v_d.max_per_customer THEN
      PERFORM drop_ungate(p);
      RETURN purchase_limit_rejection(v_d.sku, v_d.max_per_customer);
    END IF;
    UPDATE drop_entries SET state = 'ORDERED', order_id = (p->>'orderId')::uuid, updated_at = now()
     WHERE drop_id = v_d.id AND client_id = p->>'clientId' AND customer_id = p->>'countedCustomer'
       AND state = 'ADMITTED' AND admission_expires_at > now()
    RETURNING id INTO v_entry;
    IF NOT FOUND THEN
      PERFORM drop_ungate(p);
      RETURN jsonb_build_object('code', 'DROP_NOT_ADMITTED', 'sku', v_d.sku, 'message',
        format('%s is sold through a drop: enter it (enterDrop) and order once your entry is admitted', v_d.sku));
    END IF;
    UPDATE drops SET admitted = admitted - 1 WHERE id = v_d.id;
    PERFORM emit_drop_entries(ARRAY[v_entry]);
  END LOOP;
  RETURN NULL;
END
$$;

-- The entries an order used, admitted again (its claim was refused after the gate): the drop rows are locked already.
CREATE OR REPLACE FUNCTION drop_ungate(p jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_e record;
BEGIN
  FOR v_e IN
    UPDATE drop_entries SET state = 'ADMITTED', order_id = NULL, updated_at = now()
     WHERE order_id = (p->>'orderId')::uuid AND state = 'ORDERED' RETURNING id, drop_id
  LOOP
    UPDATE drops SET admitted = admitted + 1 WHERE id = v_e.drop_id;
    PERFORM emit_drop_entries(ARRAY[v_e.id]);
  END LOOP;
END
$$;

-- The sweeper's step for one drop that has not ended (its own transaction): the fair start when due, the draw when
-- due (draw_drop, 111_drop-draw.sql), lapses and admissions, and the end: a drop past closes_at with no admission
-- outstanding ends once no entry waits, or nothing is left to sell and no order of its entries can give units back;
-- its waiting entries are then NOT_DRAWN and the SKU is on plain sale again. Returns admissions made.
CREATE OR REPLACE FUNCTION advance_drop(p_drop_id uuid) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_d    drops%ROWTYPE;
  v_n    integer;
  v_ids  uuid[];
BEGIN
  SELECT * INTO v_d FROM drops WHERE id = p_drop_id AND ended_at IS NULL FOR UPDATE;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  PERFORM shuffle_drop(p_drop_id);
  PERFORM draw_drop(p_drop_id);
  v_n := admit_drop(p_drop_id);
  SELECT * INTO v_d FROM drops WHERE id = p_drop_id;
  IF v_d.closes_at <= now() AND v_d.admitted = 0 AND (v_d.mode = 'QUEUE' OR v_d.drawn_at IS NOT NULL)
     AND (NOT EXISTS (SELECT 1 FROM drop_entries WHERE drop_id = p_drop_id AND state = 'WAITING')
          OR ((SELECT available FROM inventory WHERE sku = v_d.sku) = 0
              AND NOT EXISTS (SELECT 1 FROM drop_entries e JOIN orders o ON o.id = e.order_id
                               WHERE e.drop_id = p_drop_id AND o.status IN ('RESERVED', 'AWAITING_PAYMENT', 'PROCESSING'))))
  THEN
    WITH out AS (UPDATE drop_entries SET state = 'NOT_DRAWN', updated_at = now()
                  WHERE drop_id = p_drop_id AND state = 'WAITING' RETURNING id)
    SELECT array_agg(id) INTO v_ids FROM out;
    UPDATE drops SET ended_at = now() WHERE id = p_drop_id;
    IF v_ids IS NOT NULL THEN
      PERFORM emit_drop_entries(v_ids);
    END IF;
  END IF;
  RETURN v_n;
END
$$;

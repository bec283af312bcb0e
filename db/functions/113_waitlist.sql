-- Waitlists (docs/drops.md, "Waitlist"): joinWaitlist, and the hand-off of returned units to the head of the list in
-- the transaction that returns them (a trigger on inventory, so every return path is covered: move_reserved_units'
-- release, expiry, decline and cancellation with restock; restock and setStock). Lock order: the SKU's inventory
-- row, then its waitlist entries (join takes the row first by its conditional write, the trigger runs under it).

-- A waitlist entry's events (I9), on topic 'waitlist_entry'; the one place waitlist code writes events.
CREATE OR REPLACE FUNCTION emit_waitlist_entries(p_entry_ids uuid[]) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO outbox (topic, aggregate_key, payload)
  SELECT 'waitlist_entry', w.id::text,
         jsonb_build_object('entryId', w.id, 'sku', w.sku, 'clientId', w.client_id, 'state', w.state,
                            'orderId', w.order_id, 'updatedAt', w.updated_at)
    FROM waitlist_entries w WHERE w.id = ANY (p_entry_ids) ORDER BY w.id
$$;

-- A waitlist entry as its shopper sees it: place = waiting entries ahead of it plus one.
CREATE OR REPLACE FUNCTION waitlist_entry_json(p_entry_id uuid) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', w.id, 'sku', w.sku, 'customerId', w.customer_id, 'quantity', w.quantity,
    'state', w.state, 'orderId', w.order_id, 'createdAt', w.created_at, 'updatedAt', w.updated_at,
    'place', CASE WHEN w.state = 'WAITING' THEN (SELECT count(*) + 1 FROM waitlist_entries a
                   WHERE a.sku = w.sku AND a.state = 'WAITING' AND a.place < w.place) END)
  FROM waitlist_entries w WHERE w.id = p_entry_id
$$;

-- joinWaitlist: the key replays its entry; a second waiting entry for the customer and SKU is already_entered (the
-- partial unique index decides). The SKU must not cover the quantity now, decided by a conditional write on its
-- inventory row that also flags it `waitlisted` (so returns serve the list): else `available` (the client can buy).
-- Returns {kind: joined | replayed | already_entered | unknown_sku | available | drop | bucketed, entry}.
CREATE OR REPLACE FUNCTION join_waitlist(
  p_client_id text, p_customer_id text, p_counted_customer text, p_sku text, p_quantity integer, p_key text,
  p_token_hash text, p_claim_seconds integer
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_id  uuid;
BEGIN
  SELECT id INTO v_id FROM waitlist_entries
   WHERE client_id = p_client_id AND counted_customer = p_counted_customer AND sku = p_sku AND idempotency_key = p_key;
  IF FOUND THEN
    RETURN jsonb_build_object('kind', 'replayed', 'entry', waitlist_entry_json(v_id));
  END IF;
  IF NOT EXISTS (SELECT 1 FROM inventory WHERE sku = p_sku) THEN
    RETURN jsonb_build_object('kind', 'unknown_sku');
  ELSIF EXISTS (SELECT 1 FROM drops WHERE sku = p_sku AND ended_at IS NULL) THEN
    RETURN jsonb_build_object('kind', 'drop');  -- a drop's line is the drop itself
  ELSIF EXISTS (SELECT 1 FROM inventory WHERE sku = p_sku AND buckets > 1) THEN
    RETURN jsonb_build_object('kind', 'bucketed');  -- returns are watched on the SKU row (docs/drops.md)
  END IF;
  UPDATE inventory SET waitlisted = true WHERE sku = p_sku AND available < p_quantity;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('kind', 'available');
  END IF;
  v_id := gen_random_uuid();
  INSERT INTO waitlist_entries (id, client_id, customer_id, counted_customer, sku, quantity, idempotency_key,
                                token_hash, claim_seconds, state)
  VALUES (v_id, p_client_id, p_customer_id, p_counted_customer, p_sku, p_quantity, p_key, p_token_hash,
          p_claim_seconds, 'WAITING')
  ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('kind', 'already_entered');
  END IF;
  PERFORM emit_waitlist_entries(ARRAY[v_id]);
  RETURN jsonb_build_object('kind', 'joined', 'entry', waitlist_entry_json(v_id));
END
$$;

-- One waitlist entry served: an order RESERVED for it until now() + its claim_seconds, its units taken by the one
-- claim loop (claim_units: I3, I12), the entry OFFERED with it (I18, a conditional write: WAITING only). A claim the
-- purchase limit refuses skips the entry (SKIPPED, its order REJECTED). Returns whether the entry was offered.
CREATE OR REPLACE FUNCTION offer_to_waitlist_entry(p_entry waitlist_entries) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_order uuid := gen_random_uuid();
  v_o     record;
  v_fail  jsonb;
BEGIN
  SELECT * INTO v_o FROM price_order_lines(jsonb_build_array(jsonb_build_object('sku', p_entry.sku, 'quantity', p_entry.quantity)));
  PERFORM write_held_order(v_order, p_entry.client_id, p_entry.customer_id, v_o.total, v_o.currency, v_o.lines, NULL,
                           p_entry.token_hash, now() + make_interval(secs => p_entry.claim_seconds),
                           nullif(p_entry.counted_customer, p_entry.customer_id));
  v_fail := claim_units(v_o.lines, false, p_entry.client_id, p_entry.counted_customer, v_o.limited, v_o.has_bundle);
  IF v_fail IS NOT NULL THEN
    UPDATE orders SET status = 'REJECTED', rejection = claim_rejection(v_fail) WHERE id = v_order;
    DELETE FROM reservations WHERE order_id = v_order;
    PERFORM emit_order_status(ARRAY[v_order]);
  END IF;
  UPDATE waitlist_entries SET state = CASE WHEN v_fail IS NULL THEN 'OFFERED' ELSE 'SKIPPED' END,
         order_id = CASE WHEN v_fail IS NULL THEN v_order END, updated_at = now()
   WHERE id = p_entry.id AND state = 'WAITING';
  PERFORM emit_waitlist_entries(ARRAY[p_entry.id]);
  RETURN v_fail IS NULL;
END
$$;

-- The trigger: units of a waitlisted SKU came back (available grew). While the head's quantity is covered, the head
-- is served, in list order (a head the stock cannot cover yet keeps its place: nobody behind it jumps it). An empty
-- list clears the flag: the units are on plain sale. Runs under the row lock of the write that returned the units.
CREATE OR REPLACE FUNCTION serve_waitlist() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_head waitlist_entries%ROWTYPE;
BEGIN
  LOOP
    SELECT * INTO v_head FROM waitlist_entries WHERE sku = NEW.sku AND state = 'WAITING' ORDER BY place LIMIT 1 FOR UPDATE;
    IF NOT FOUND THEN
      UPDATE inventory SET waitlisted = false WHERE sku = NEW.sku;
      RETURN NULL;
    END IF;
    EXIT WHEN (SELECT available FROM inventory WHERE sku = NEW.sku) < v_head.quantity;
    PERFORM offer_to_waitlist_entry(v_head);
  END LOOP;
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER inventory_serve_waitlist AFTER UPDATE OF available ON inventory
  FOR EACH ROW WHEN (NEW.waitlisted AND NEW.available > OLD.available) EXECUTE FUNCTION serve_waitlist();

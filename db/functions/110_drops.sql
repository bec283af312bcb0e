-- Drops (docs/drops.md): a SKU's sale under a rule (QUEUE or DRAW), decided here by conditional writes. Lock order,
-- the one every drop path keeps so none waits for another in a cycle: the drop row, then its entry rows, then (in
-- placeOrder's claim) the SKU's inventory row. Every path that changes an entry announces it (emit_drop_entries).
-- The draw's pick lives in 111_drop-draw.sql.

-- The drop-entry events (I9) of these entries, as they are now: one outbox row each on topic 'drop_entry'. The one
-- place drop code writes events, so a general event log can take them over by changing this function alone.
CREATE OR REPLACE FUNCTION emit_drop_entries(p_entry_ids uuid[]) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO outbox (topic, aggregate_key, payload)
  SELECT 'drop_entry', e.id::text,
         jsonb_build_object('entryId', e.id, 'dropId', e.drop_id, 'clientId', e.client_id, 'state', e.state,
                            'updatedAt', e.updated_at)
    FROM drop_entries e WHERE e.id = ANY (p_entry_ids) ORDER BY e.id
$$;

-- A drop as the API shows it: its rule, its published values (the seed only once drawn), and its counts.
CREATE OR REPLACE FUNCTION drop_json(p_drop_id uuid) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'id', d.id, 'sku', d.sku, 'mode', d.mode, 'opensAt', d.opens_at, 'closesAt', d.closes_at,
    'claimSeconds', d.claim_seconds, 'maxPerCustomer', d.max_per_customer, 'seedCommitment', d.seed_commitment,
    'seed', CASE WHEN d.drawn_at IS NOT NULL THEN encode(d.seed, 'hex') END, 'entriesDigest', d.entries_digest,
    'drawnAt', d.drawn_at, 'shuffledAt', d.shuffled_at, 'endedAt', d.ended_at, 'createdAt', d.created_at,
    'state', CASE WHEN d.ended_at IS NOT NULL THEN 'ENDED' WHEN now() < d.opens_at THEN 'SCHEDULED'
                  WHEN now() < d.closes_at THEN 'OPEN' ELSE 'CLOSED' END,
    'counts', (SELECT jsonb_build_object('entries', count(*), 'admitted', d.admitted,
                 'waiting', count(*) FILTER (WHERE e.state = 'WAITING'),
                 'ordered', count(*) FILTER (WHERE e.state = 'ORDERED'),
                 'lapsed', count(*) FILTER (WHERE e.state = 'LAPSED'),
                 'notDrawn', count(*) FILTER (WHERE e.state = 'NOT_DRAWN'))
                 FROM drop_entries e WHERE e.drop_id = d.id))
  FROM drops d WHERE d.id = p_drop_id
$$;

-- createDrop: the drop with a fresh secret seed and its published commitment (SHA-256 of the seed, hex). The key
-- (optional) replays the same answer; another request under it is `reused`. unknown_sku; bucketed: the SKU's stock is
-- split into buckets (not for drops); governed: the SKU already has a drop that has not ended (I17, the unique index
-- decides). Returns {kind, drop}.
CREATE OR REPLACE FUNCTION create_drop(
  p_client_id text, p_key text, p_request_hash text, p_sku text, p_mode text, p_opens_at timestamptz,
  p_closes_at timestamptz, p_claim_seconds integer, p_max_per_customer integer
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_id   uuid := gen_random_uuid();
  v_seed bytea := sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()));
  v_old  drops%ROWTYPE;
BEGIN
  IF p_key IS NOT NULL THEN
    SELECT * INTO v_old FROM drops WHERE client_id = p_client_id AND create_key = p_key;
    IF FOUND THEN
      RETURN jsonb_build_object('kind', CASE WHEN v_old.request_hash = p_request_hash THEN 'replayed' ELSE 'reused' END,
                                'drop', drop_json(v_old.id));
    END IF;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM products WHERE sku = p_sku) THEN
    RETURN jsonb_build_object('kind', 'unknown_sku');
  ELSIF EXISTS (SELECT 1 FROM inventory WHERE sku = p_sku AND buckets > 1) THEN
    RETURN jsonb_build_object('kind', 'bucketed');  -- admissions count the SKU row's units (docs/drops.md)
  END IF;
  INSERT INTO drops (id, client_id, create_key, request_hash, sku, mode, opens_at, closes_at, claim_seconds,
                     max_per_customer, seed, seed_commitment)
  VALUES (v_id, p_client_id, p_key, p_request_hash, p_sku, p_mode, p_opens_at, p_closes_at, p_claim_seconds,
          p_max_per_customer, v_seed, encode(sha256(v_seed), 'hex'))
  ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN  -- the SKU's drop (I17), or a twin with the same key that committed first
    IF p_key IS NOT NULL AND EXISTS (SELECT 1 FROM drops WHERE client_id = p_client_id AND create_key = p_key) THEN
      RAISE EXCEPTION 'create_drop key taken by a twin' USING ERRCODE = '40001';
    END IF;
    RETURN jsonb_build_object('kind', 'governed');
  END IF;
  RETURN jsonb_build_object('kind', 'created', 'drop', drop_json(v_id));
END
$$;

-- An entry as its shopper sees it. place: entries ahead of it still waiting, plus one (QUEUE, or DRAW once drawn);
-- estimatedWaitSeconds: a rough figure, not a promise (docs/drops.md): no wait once admitted; null while no place
-- is known or no unit is in sight; else claimSeconds per round of admissions ahead of it.
CREATE OR REPLACE FUNCTION drop_entry_json(p_entry_id uuid) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', e.id, 'dropId', e.drop_id, 'customerId', e.customer_id, 'state', e.state,
    'place', w.ahead + 1, 'estimatedWaitSeconds',
    CASE WHEN e.state = 'ADMITTED' THEN 0
         WHEN e.state <> 'WAITING' OR w.ahead IS NULL OR (i.available = 0 AND d.admitted = 0) THEN NULL
         ELSE (ceil((w.ahead + 1)::numeric / greatest(d.admitted + i.available, 1)) * d.claim_seconds)::integer END,
    'admittedUntil', e.admission_expires_at, 'orderId', e.order_id, 'createdAt', e.created_at,
    'updatedAt', e.updated_at)
  FROM drop_entries e JOIN drops d ON d.id = e.drop_id JOIN inventory i ON i.sku = d.sku
  LEFT JOIN LATERAL (SELECT count(*) AS ahead FROM drop_entries a
                      WHERE a.drop_id = e.drop_id AND a.state = 'WAITING' AND a.place < e.place) w
         ON e.state = 'WAITING' AND e.place IS NOT NULL
  WHERE e.id = p_entry_id
$$;

-- Marketplaces as sales channels (docs/channels.md): listed quantities that follow every availability change in the
-- same transaction (I13), and marketplace order events applied once (I8) by conditional writes (I1, I3).

-- The quantity a channel lists for a SKU with `available` units (docs/channels.md, "Listed quantity"):
--   available <= zeroAtOrBelow ? 0 : min(maxListed, max(0, floor(available * percent / 100) - buffer))
CREATE OR REPLACE FUNCTION listed_quantity(p_available integer, p_buffer integer, p_max_listed integer, p_percent integer, p_zero_at_or_below integer)
RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_available <= p_zero_at_or_below THEN 0
              ELSE least(coalesce(p_max_listed, 2147483647),
                         greatest(0, (p_available::bigint * p_percent / 100)::integer - p_buffer)) END
$$;

-- I13: the push outbox follows the inventory row. Fired by every write that changes `available` (claim, release,
-- expiry, restock, stock-take, payment outcome, marketplace order), in that write's transaction and under its row
-- lock, so the newest desired quantity per (channel, SKU) is always the one of the newest committed change. Only a
-- changed desired quantity is written (coalesced: one row per channel and SKU, the pusher sends the newest only).
-- The row lock orders these writes (and recompute_channel_listings reads the rows FOR SHARE), so the newest write is
-- the newest figure: no version guard here. The version only grows: a rule change (recompute_channel_listings) may have
-- set it past the inventory row's, and the next change of the SKU must still be written (and sent) after it.
-- It fires only for rows flagged `listed` (db/migrations/0032): with no channel, a storefront claim pays nothing here.
CREATE OR REPLACE FUNCTION channel_listings_follow() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO channel_listings AS l (channel_id, sku, desired_quantity, desired_version, desired_at)
  SELECT c.id, NEW.sku, q.quantity, f.version, clock_timestamp()
    -- the SKU's figures: its row's, with its buckets' sums when it has some (setStockBuckets moving its units in or
    -- out of them); read once, not per channel
    FROM sku_totals(NEW.sku, NEW.available, NEW.version, NEW.buckets) f CROSS JOIN channels c
   CROSS JOIN LATERAL (SELECT listed_quantity(f.available, c.buffer, c.max_listed, c.percent, c.zero_at_or_below) AS quantity) q
   -- a listing whose figure does not move is skipped by a plain read: ON CONFLICT DO UPDATE would lock its row even when
   -- its WHERE is false, and the claim holding the inventory row lock would wait behind the pusher's lease of it
   WHERE NOT EXISTS (SELECT 1 FROM channel_listings x WHERE x.channel_id = c.id AND x.sku = NEW.sku AND x.desired_quantity = q.quantity)
  ON CONFLICT (channel_id, sku) DO UPDATE
     SET desired_quantity = excluded.desired_quantity, desired_version = greatest(l.desired_version + 1, excluded.desired_version),
         desired_at = CASE WHEN l.desired_version > l.pushed_version THEN l.desired_at ELSE excluded.desired_at END,  -- lag: since the oldest unsent change
         next_attempt_at = CASE WHEN l.desired_version > l.pushed_version THEN l.next_attempt_at ELSE excluded.desired_at END
   WHERE l.desired_quantity IS DISTINCT FROM excluded.desired_quantity;
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER inventory_channel_listings_update AFTER UPDATE OF available ON inventory
  FOR EACH ROW WHEN (NEW.listed AND OLD.available IS DISTINCT FROM NEW.available) EXECUTE FUNCTION channel_listings_follow();
CREATE OR REPLACE TRIGGER inventory_channel_listings_insert AFTER INSERT ON inventory
  FOR EACH ROW WHEN (NEW.listed) EXECUTE FUNCTION channel_listings_follow();

-- A new inventory row is listed when a channel exists (the first createChannel flags the rows that existed before it).
CREATE OR REPLACE FUNCTION inventory_listed_flag() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.listed := EXISTS (SELECT 1 FROM channels);
  RETURN NEW;
END
$$;
CREATE OR REPLACE TRIGGER inventory_listed_on_insert BEFORE INSERT ON inventory
  FOR EACH ROW EXECUTE FUNCTION inventory_listed_flag();

-- createChannel's first step: with the first channel every inventory row becomes listed. The SHARE lock waits for
-- writers in flight and holds new ones until this transaction commits, so no row is inserted unflagged or changes
-- `available` unseen between the flagging and the listings computed next (recompute_channel_listings). Once every row
-- is listed (any later channel), no lock is taken.
-- createChannel's step before its transaction: the buckets of every bucketed SKU not listed yet become followed
-- (bucket_followers, 120_stock-buckets.sql), in a transaction of their own. Flipping a bucket's flag waits for the
-- claim that holds the bucket; done inside flag_inventory_listed (route_to_buckets on the `listed` write) that wait
-- happened under the table's SHARE lock, and a batch holding a bucket whose next claim writes an inventory row waits
-- for that lock: a deadlock. Here nothing is held while waiting but buckets, locked in (SKU, bucket) order, the order
-- every waiting writer takes them in; route_to_buckets then finds the flags right and takes no bucket lock. A SKU
-- bucketed in between still has its flags flipped under the table lock (a rare deadlock, retried like any other).
-- A bucketed SKU's claim that commits while createChannel's transaction is open marks nothing (the channel is not
-- committed yet); the listings recompute_channel_listings computed for it are marked for the pusher instead.
CREATE OR REPLACE FUNCTION follow_unlisted_buckets() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_n integer;
BEGIN
  PERFORM 1 FROM inventory_buckets b JOIN inventory i ON i.sku = b.sku
    WHERE NOT i.listed AND i.buckets > 1 AND NOT b.followed ORDER BY b.sku, b.bucket FOR NO KEY UPDATE OF b;
  UPDATE inventory_buckets b SET followed = true FROM inventory i
   WHERE i.sku = b.sku AND NOT i.listed AND i.buckets > 1 AND NOT b.followed;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  RETURN v_n;
END
$$;

CREATE OR REPLACE FUNCTION flag_inventory_listed() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM inventory WHERE NOT listed) THEN
    LOCK TABLE inventory IN SHARE MODE;
    UPDATE inventory SET listed = true WHERE NOT listed;
  END IF;
END
$$;

-- A channel's listings recomputed for every SKU (createChannel, updateChannel): inventory rows are read FOR SHARE, so a
-- change in flight commits first (and its trigger wrote the old rules' figure, overwritten here), and a change after
-- this waits for this commit and then sees the new rules. Every row gets a new version: the rules changed.
CREATE OR REPLACE FUNCTION recompute_channel_listings(p_channel text) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_n integer;
BEGIN
  -- The figures are the locked rows' (what FOR SHARE returns: the version a change in flight committed, which this
  -- waited for), handed to listing_figures, never read again from the table (the statement's snapshot would show the
  -- row as it was before that change, and list units the change took). A bundle's figure is derived from its
  -- components, a bucketed SKU's from its buckets (their claims take no lock this waits for; see the marks below).
  WITH inv AS (SELECT i.sku, i.available, i.version, i.buckets FROM inventory i ORDER BY i.sku FOR SHARE),
  fig AS (
    SELECT inv.sku, f.available, f.version
      FROM inv JOIN products p ON p.sku = inv.sku
     CROSS JOIN LATERAL listing_figures(inv.sku, inv.available, inv.version, inv.buckets, p.is_bundle) f)
  INSERT INTO channel_listings AS l (channel_id, sku, desired_quantity, desired_version, desired_at)
  SELECT c.id, fig.sku, listed_quantity(fig.available, c.buffer, c.max_listed, c.percent, c.zero_at_or_below), fig.version, clock_timestamp()
    FROM fig CROSS JOIN channels c WHERE c.id = p_channel ORDER BY fig.sku
  ON CONFLICT (channel_id, sku) DO UPDATE
     SET desired_quantity = excluded.desired_quantity,
         desired_version = greatest(l.desired_version + 1, excluded.desired_version),
         desired_at = excluded.desired_at, next_attempt_at = excluded.desired_at
   WHERE l.desired_quantity IS DISTINCT FROM excluded.desired_quantity;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  -- Listings derived from rows this did not lock (a bundle's components, a bucketed SKU's buckets: their claims take
  -- no lock it waits for) are marked for the pusher (recompute_bundle_listings, 091_bundles.sql), which recomputes them
  -- from the committed figures under the committed rules once this commits: a claim that committed meanwhile, whose
  -- own mark the pusher took before this commit (so under the old rules, or before this statement's older figure
  -- overwrote it), is not left listed wrong until the SKU next changes.
  INSERT INTO bundle_changes (bundle_sku)
  SELECT i.sku FROM inventory i JOIN products p ON p.sku = i.sku WHERE p.is_bundle OR i.buckets > 1 ORDER BY i.sku;
  RETURN v_n;
END
$$;

-- A marketplace order the stock could not cover (p_failure: claim_units' answer; nothing moved): REJECTED
-- (CHANNEL_OVERSOLD) with an incident, whose row is the outbox of the cancellation asked of the marketplace (sent once,
-- outside any transaction); the marketplace listed what was gone, so its listings of these SKUs are sent again,
-- whatever it was last sent.
CREATE OR REPLACE FUNCTION record_channel_oversold(
  p_channel text, p_external text, p_order_id uuid, p_failure jsonb, p_lines jsonb
) RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE orders SET status = 'REJECTED', rejection = jsonb_build_object('code', 'CHANNEL_OVERSOLD', 'sku', p_failure->>'sku',
         'message', format('the marketplace sold %s of %s, more than was available; a cancellation was asked of it',
                           p_failure->>'quantity', p_failure->>'sku'))
   WHERE id = p_order_id;
  INSERT INTO channel_incidents (channel_id, kind, external_order_id, order_id, sku, lines)
  VALUES (p_channel, 'CHANNEL_OVERSOLD', p_external, p_order_id, p_failure->>'sku', p_lines);
  UPDATE channel_listings SET pushed_version = 0, next_attempt_at = now(), desired_at = clock_timestamp()
   WHERE channel_id = p_channel AND sku IN (SELECT l.sku FROM jsonb_to_recordset(p_lines) AS l(sku text)
                                            UNION SELECT l.sku FROM jsonb_to_recordset(expand_bundle_lines(p_lines)) AS l(sku text));
  PERFORM emit_order_status(ARRAY[p_order_id]);
  RETURN jsonb_build_object('kind', 'oversold', 'sku', p_failure->>'sku', 'order', order_json(p_order_id));
END
$$;

-- order.created: one order per marketplace order (the unique (channel, external order id): a twin under another event
-- id waits on it, then finds it), CONFIRMED at once: the marketplace already sold the units, so the claim loop takes
-- them straight to sold (claim_units: I1, I3; a bundle its components; no purchase limit, the marketplace's sale
-- stands or is an incident). p_lines, p_total, p_currency: as price_order_lines (020_place-order.sql) priced them.
CREATE OR REPLACE FUNCTION place_channel_order(
  p_channel text, p_external text, p_customer text, p_lines jsonb, p_total bigint, p_currency text
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_order_id uuid := gen_random_uuid();
  v_failure  jsonb;
BEGIN
  INSERT INTO orders (id, client_id, customer_id, status, total_amount, currency, channel_id, external_order_id)
  VALUES (v_order_id, 'channel:' || p_channel, p_customer, 'CONFIRMED', p_total, p_currency, p_channel, p_external)
  ON CONFLICT (channel_id, external_order_id) WHERE channel_id IS NOT NULL DO NOTHING;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('kind', 'duplicate_order');
  END IF;
  INSERT INTO order_lines (order_id, sku, quantity, unit_amount)
  SELECT v_order_id, l.sku, l.quantity, l."unitAmount"
    FROM jsonb_to_recordset(p_lines) AS l(sku text, quantity integer, "unitAmount" integer);
  v_failure := claim_units(p_lines, true, NULL, NULL, false, true);
  IF v_failure IS NOT NULL THEN
    RETURN record_channel_oversold(p_channel, p_external, v_order_id, v_failure, p_lines);
  END IF;
  INSERT INTO reservations (order_id, sku, quantity, state, expires_at, updated_at)
  SELECT v_order_id, l.sku, l.quantity, 'SOLD', now(), now() FROM jsonb_to_recordset(p_lines) AS l(sku text, quantity integer);
  PERFORM emit_order_status(ARRAY[v_order_id]);
  RETURN jsonb_build_object('kind', 'confirmed', 'order', order_json(v_order_id));
END
$$;

-- order.cancelled. Lock order: the order row, its reservations, inventory in SKU order. A cancellation that comes
-- before its creation (deliveries are reordered) leaves a cancelled stand-in, so the late creation is a duplicate.
-- I6: the sold units go back on sale once (only reservations still SOLD move; a bundle gives back its components),
-- with the availability events (I9).
CREATE OR REPLACE FUNCTION cancel_channel_order(p_channel text, p_external text, p_customer text) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_order record;
BEGIN
  SELECT id, status INTO v_order FROM orders WHERE channel_id = p_channel AND external_order_id = p_external FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO orders (id, client_id, customer_id, status, total_amount, currency, channel_id, external_order_id)
    VALUES (gen_random_uuid(), 'channel:' || p_channel, p_customer, 'CANCELLED', 0, 'XXX', p_channel, p_external)
    ON CONFLICT (channel_id, external_order_id) WHERE channel_id IS NOT NULL DO NOTHING;
    IF FOUND THEN
      RETURN jsonb_build_object('kind', 'cancelled_before_created');
    END IF;
    SELECT id, status INTO v_order FROM orders WHERE channel_id = p_channel AND external_order_id = p_external FOR UPDATE;
  END IF;
  IF v_order.status <> 'CONFIRMED' THEN
    RETURN jsonb_build_object('kind', 'noop', 'order', order_json(v_order.id));
  END IF;
  PERFORM move_reserved_units(ARRAY[v_order.id], 'SOLD', 'RELEASED', 'cancelled by the marketplace');
  UPDATE orders SET status = 'CANCELLED', updated_at = now() WHERE id = v_order.id;
  PERFORM emit_order_status(ARRAY[v_order.id]);
  RETURN jsonb_build_object('kind', 'cancelled', 'order', order_json(v_order.id));
END
$$;

-- A marketplace order event in ONE transaction (I8, I11): bad input answered before anything is written, then the
-- event id under processed_events' unique key (a concurrent twin waits on it until this transaction ends), then its
-- effect (place_channel_order, cancel_channel_order). p_type: order.created | order.cancelled. p_lines: [{sku,
-- quantity}] (created only; the same SKU twice is one line). Returns {kind: duplicate | duplicate_order | unknown_sku |
-- mixed_currency | confirmed | oversold | cancelled | cancelled_before_created | noop, order?}
CREATE OR REPLACE FUNCTION apply_channel_event(p_channel text, p_event_id text, p_type text, p_external text, p_customer text, p_lines jsonb)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_lines jsonb;
  v_o     record;  -- the priced lines
BEGIN
  IF p_type = 'order.created' THEN
    SELECT jsonb_agg(jsonb_build_object('sku', x.sku, 'quantity', x.quantity)) INTO v_lines
      FROM (SELECT l.sku, sum(l.quantity)::integer AS quantity
              FROM jsonb_to_recordset(p_lines) AS l(sku text, quantity integer) GROUP BY l.sku) x;
    SELECT * INTO v_o FROM price_order_lines(v_lines);
    IF v_o.unknown_sku IS NOT NULL THEN
      RETURN jsonb_build_object('kind', 'unknown_sku', 'sku', v_o.unknown_sku);
    END IF;
    IF v_o.currencies > 1 OR v_o.total > 2147483647 THEN
      RETURN jsonb_build_object('kind', 'mixed_currency');
    END IF;
  ELSIF p_type <> 'order.cancelled' THEN
    RAISE EXCEPTION 'unknown channel event type %', p_type;
  END IF;
  INSERT INTO processed_events (source, event_id) VALUES ('channel:' || p_channel, p_event_id) ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('kind', 'duplicate');
  END IF;
  IF p_type = 'order.created' THEN
    RETURN place_channel_order(p_channel, p_external, p_customer, v_o.lines, v_o.total, v_o.currency);
  END IF;
  RETURN cancel_channel_order(p_channel, p_external, p_customer);
END
$$;

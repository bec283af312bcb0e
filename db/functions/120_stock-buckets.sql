-- Stock buckets (db/migrations/0100_stock-buckets.sql, docs/capacity.md): a SKU's units split across N rows so its
-- claims stop queueing on one row lock. A claim takes from one bucket (claim_bucketed; a batch's plain sales from one
-- bucket the batch locks: lock_batch_bucket and next_batch_bucket, 025_place-orders.sql), the SKU's figures are the
-- buckets' sums (012_sku-figures.sql; an event's at publishing: availability_now), every other writer goes through the
-- SKU row and is routed into the buckets under its lock (route_to_buckets: SKU, then bucket), a bucket's change tells
-- the SKU's bundles and channel listings without writing a row another bucket's claim writes (bucket_followers), and
-- the sweeper evens buckets out without waiting for any (rebalance_stock_buckets).

-- An availability event's payload as the relay publishes it: a bucketed SKU's figures are read again at publishing
-- (committed sums), so the event after the last claim's commit shows the SKU's final count, whichever bucket took it;
-- so are a bundle's when one of its components is bucketed (bundle_available adds up the buckets), or when its event
-- was written without figures (tell_bundles for a bucketed component, whose buckets may have been gathered back into
-- one row since). Any other payload (a single-row SKU, a bundle of single-row components) is published as written.
CREATE OR REPLACE FUNCTION availability_now(p_sku text, p_payload jsonb) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT coalesce(
    (SELECT p_payload || jsonb_build_object('available', t.available, 'soldOut', t.available = 0, 'version', t.version)
       FROM inventory i CROSS JOIN LATERAL sku_totals(i.sku, i.available, i.version, i.buckets) t
      WHERE i.sku = p_sku AND i.buckets > 1),
    (SELECT p_payload || jsonb_build_object('available', a.available, 'soldOut', a.available = 0, 'version', a.version)
       FROM bundle_available(p_sku) a
      WHERE EXISTS (SELECT 1 FROM bundle_components b JOIN inventory c ON c.sku = b.component_sku
                     WHERE b.bundle_sku = p_sku AND (c.buckets > 1 OR NOT (p_payload ? 'available')))),
    p_payload)
$$;

-- A bucketed SKU that is a bundle component or listed on a channel changed its available units in a bucket (a claim,
-- a release routed into the buckets; not the sweeper's evening out, which keeps the sum): an availability event for
-- every bundle containing it (published with the committed figures: availability_now), and, when there are channels,
-- marks for the pusher to recompute the listings of the SKU and of those bundles from the committed figures
-- (tell_bundles, recompute_bundle_listings). Insert-only, as for a single-row bundle component: the claim takes no
-- lock on anything another claim of another bucket needs, so the buckets keep their claims apart.
CREATE OR REPLACE FUNCTION bucket_followers() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM tell_bundles(p_component => NEW.sku, p_at => now(), p_bucketed => true);
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER inventory_buckets_followers AFTER UPDATE OF available ON inventory_buckets
  FOR EACH ROW WHEN (NEW.followed AND OLD.available IS DISTINCT FROM NEW.available
                     AND current_setting('lastunit.bucket_moves', true) IS DISTINCT FROM 'even')
  EXECUTE FUNCTION bucket_followers();

-- Takes p_quantity units of a bucketed SKU (the claim of claim_line, 015_claim-units.sql). No row: the SKU is not
-- bucketed, or its buckets together cannot cover the line. The SKU row is never locked here; its purchase limit is read
-- after the bucket is (route_to_buckets waits for every bucket before a new limit commits, so a claim that got its
-- bucket after that reads the new limit). Two ways, so that no wait for a bucket can close a cycle:
--   first, without waiting: the bucket this transaction hashes to, or the next in rotation that can cover the line and
--   no other transaction holds (SKIP LOCKED: a claim never queues behind another while a bucket is free; every claim
--   of one batch starts at the same bucket, so a batch mostly holds one). Such a pick can leave a bucket locked that it
--   did not take (a row changed since the statement began and no longer covers the line is locked, then passed over);
--   then, when no bucket was free: waiting for the buckets in bucket order (take_bucket_fragments). A lone claim
--   waits there, after its first try was rolled back with a subtransaction (so the stray locks are gone and every
--   waiter holds buckets only below the one it waits for); a batch (place_orders sets lastunit.claim_batch) holds its
--   earlier orders' buckets and never waits for one: it takes pieces from buckets no one holds, or raises LU003 when
--   only held buckets could cover the line, and its caller repeats the batch's claims one at a time
--   (orders/claim-batcher.ts).
DROP FUNCTION IF EXISTS claim_bucketed(text, integer, boolean, text);
CREATE OR REPLACE FUNCTION claim_bucketed(p_sku text, p_quantity integer, p_sold boolean)
RETURNS TABLE (sku text, available integer, version bigint, updated_at timestamptz, purchase_limit integer)
LANGUAGE plpgsql AS $$
DECLARE
  v_n integer;
BEGIN
  SELECT i.buckets INTO v_n FROM inventory i WHERE i.sku = p_sku;
  IF coalesce(v_n, 1) = 1 THEN
    RETURN;
  END IF;
  IF coalesce(current_setting('lastunit.claim_batch', true), '') = 'on' THEN
    IF NOT take_free_bucket(p_sku, p_quantity, p_sold, v_n) THEN
      IF (SELECT s.available FROM bucket_sums(p_sku) s) < p_quantity THEN
        RETURN;  -- the SKU cannot cover the line: a refusal without a lock
      END IF;
      IF NOT take_bucket_fragments(p_sku, p_quantity, p_sold, true) THEN
        RAISE EXCEPTION 'the buckets of % that could cover % are held: claim it alone', p_sku, p_quantity
          USING ERRCODE = 'LU003';
      END IF;
    END IF;
  ELSE
    BEGIN
      IF NOT take_free_bucket(p_sku, p_quantity, p_sold, v_n) THEN
        RAISE EXCEPTION 'no free bucket' USING ERRCODE = 'LU003';
      END IF;
    EXCEPTION WHEN SQLSTATE 'LU003' THEN  -- stray locks released: wait in bucket order
      IF (SELECT s.available FROM bucket_sums(p_sku) s) < p_quantity THEN
        RETURN;  -- the SKU cannot cover the line: a refusal without a lock
      END IF;
      IF NOT take_bucket_fragments(p_sku, p_quantity, p_sold, false) THEN
        RETURN;
      END IF;
    END;
  END IF;
  RETURN QUERY SELECT i.sku, t.available, t.version, now(), i.purchase_limit
                 FROM inventory i CROSS JOIN LATERAL sku_totals(i.sku, i.available, i.version, i.buckets) t
                WHERE i.sku = p_sku;
END
$$;

-- The first way of claim_bucketed: the whole line from one bucket no other transaction holds, starting at the bucket
-- this transaction hashes to. False when none could: every bucket that covers it is held, or none covers it.
-- The bucket is picked once, by an uncorrelated subquery (an InitPlan: run once per statement, whatever the plan),
-- never as a join: were the locking pick (LIMIT 1 ... SKIP LOCKED) the inner side of a nested loop over the SKU's
-- buckets, it would run again for every bucket, pass over the one the statement had just taken (a row the statement
-- changed is skipped) and take the line again from the next (seen: one order of 3 reserved 3 in each of 2 buckets
-- when the planner estimated one bucket row per SKU; test/stock-buckets.test.ts, 'one bucket whatever the plan').
CREATE OR REPLACE FUNCTION take_free_bucket(p_sku text, p_quantity integer, p_sold boolean, p_buckets integer)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_start integer := abs(hashtext(pg_current_xact_id()::text) % p_buckets);
BEGIN
  UPDATE inventory_buckets b SET available = b.available - p_quantity, version = b.version + 1,
         reserved = b.reserved + CASE WHEN p_sold THEN 0 ELSE p_quantity END,
         sold = b.sold + CASE WHEN p_sold THEN p_quantity ELSE 0 END
   WHERE b.sku = p_sku AND b.available >= p_quantity
     AND b.bucket = (SELECT f.bucket FROM inventory_buckets f WHERE f.sku = p_sku AND f.available >= p_quantity
                      ORDER BY (f.bucket - v_start + p_buckets) % p_buckets LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED);
  RETURN FOUND;
END
$$;

-- A line taken in pieces from the buckets in bucket order (the one order every waiting multi-bucket writer locks them
-- in), all or none: false, with nothing taken, when the buckets it locked cannot cover it (taken by others since the
-- caller read their sum, which it did before calling: bucket_sums), or (p_skip_locked, a batch: it never waits) the
-- buckets no other transaction holds cannot.
DROP FUNCTION IF EXISTS take_bucket_fragments(text, integer, boolean);
CREATE OR REPLACE FUNCTION take_bucket_fragments(p_sku text, p_quantity integer, p_sold boolean, p_skip_locked boolean)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_left integer := p_quantity;
  v_take integer;
  v_b    record;
BEGIN
  BEGIN
    FOR v_b IN EXECUTE 'SELECT b.bucket, b.available FROM inventory_buckets b WHERE b.sku = $1 ORDER BY b.bucket '
                       || 'FOR NO KEY UPDATE' || CASE WHEN p_skip_locked THEN ' SKIP LOCKED' ELSE '' END USING p_sku LOOP
      v_take := least(v_b.available, v_left);
      CONTINUE WHEN v_take = 0;
      UPDATE inventory_buckets b SET available = b.available - v_take, version = b.version + 1,
             reserved = b.reserved + CASE WHEN p_sold THEN 0 ELSE v_take END,
             sold = b.sold + CASE WHEN p_sold THEN v_take ELSE 0 END
       WHERE b.sku = p_sku AND b.bucket = v_b.bucket;
      v_left := v_left - v_take;
      EXIT WHEN v_left = 0;
    END LOOP;
    IF v_left > 0 THEN  -- taken by others since the sum was read, or held: undo the pieces
      RAISE EXCEPTION 'buckets short' USING ERRCODE = 'LU002';
    END IF;
  EXCEPTION WHEN SQLSTATE 'LU002' THEN
    RETURN false;
  END;
  RETURN true;
END
$$;

-- Moves p_quantity units of a bucketed SKU between its figures (p_from, p_to: 'available', 'reserved', 'sold', or NULL
-- for units entering or leaving the SKU), bucket by bucket in bucket order, each bucket locked: units leave the buckets
-- that have them and enter the same buckets (returned units go back to a bucket); units that only enter go to the
-- bucket with the fewest available. Called under the SKU row's lock (route_to_buckets).
CREATE OR REPLACE FUNCTION move_bucket_units(p_sku text, p_from text, p_to text, p_quantity integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_left integer := p_quantity;
  v_take integer;
  v_b    record;
BEGIN
  IF p_from IS NULL THEN
    -- units that only enter pick the bucket by its figures: every bucket locked first, in bucket order (the order a
    -- waiting claim takes them in, take_bucket_fragments), so the pick below waits for none out of that order
    PERFORM 1 FROM inventory_buckets b WHERE b.sku = p_sku ORDER BY b.bucket FOR NO KEY UPDATE;
  END IF;
  FOR v_b IN SELECT b.* FROM inventory_buckets b WHERE b.sku = p_sku
              ORDER BY CASE WHEN p_from IS NULL THEN b.available END, b.bucket FOR NO KEY UPDATE LOOP
    v_take := least(v_left, CASE p_from WHEN 'available' THEN v_b.available WHEN 'reserved' THEN v_b.reserved
                                        WHEN 'sold' THEN v_b.sold ELSE v_left END);
    CONTINUE WHEN v_take = 0;
    UPDATE inventory_buckets b
       SET available = b.available + v_take * ((p_to IS NOT DISTINCT FROM 'available')::integer - (p_from IS NOT DISTINCT FROM 'available')::integer),
           reserved = b.reserved + v_take * ((p_to IS NOT DISTINCT FROM 'reserved')::integer - (p_from IS NOT DISTINCT FROM 'reserved')::integer),
           sold = b.sold + v_take * ((p_to IS NOT DISTINCT FROM 'sold')::integer - (p_from IS NOT DISTINCT FROM 'sold')::integer),
           version = b.version + 1
     WHERE b.sku = p_sku AND b.bucket = v_b.bucket;
    v_left := v_left - v_take;
    EXIT WHEN v_left = 0;
  END LOOP;
  IF v_left > 0 THEN
    RAISE EXCEPTION 'bucketed SKU % has fewer than % % units', p_sku, p_quantity, p_from USING ERRCODE = '23514';
  END IF;
END
$$;

-- A write to a bucketed SKU's row (its lock is held: the SKU first): the change of available, reserved and sold moves
-- into the buckets (move_bucket_units, in pairs: what leaves one figure enters another), the row keeps 0s and its
-- version grows. A new purchase limit waits for every bucket (a claim in flight commits first; a later one reads the
-- new limit), and so does a change of whether the SKU is followed (a bundle component or listed on a channel).
CREATE OR REPLACE FUNCTION route_to_buckets() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_d     integer[] := ARRAY[NEW.available - OLD.available, NEW.reserved - OLD.reserved, NEW.sold - OLD.sold];
  v_names text[] := ARRAY['available', 'reserved', 'sold'];
  v_q     integer;
BEGIN
  -- (a change of whether it is followed whose buckets are flagged so already, committed before this statement, waits
  -- for none: every claim since reads the flag; follow_unlisted_buckets, 090_channels.sql, flags them so beforehand)
  IF NEW.purchase_limit IS DISTINCT FROM OLD.purchase_limit
     OR ((NEW.listed OR NEW.bundles > 0) IS DISTINCT FROM (OLD.listed OR OLD.bundles > 0)
         AND EXISTS (SELECT 1 FROM inventory_buckets b
                      WHERE b.sku = NEW.sku AND b.followed IS DISTINCT FROM (NEW.listed OR NEW.bundles > 0))) THEN
    PERFORM 1 FROM inventory_buckets b WHERE b.sku = NEW.sku ORDER BY b.bucket FOR NO KEY UPDATE;
    -- became (or stopped being) a bundle component or listed: its buckets' writes tell the followers from now on (a
    -- claim in flight held its bucket, so it committed before this; the next one reads the new flag)
    UPDATE inventory_buckets b SET followed = (NEW.listed OR NEW.bundles > 0)
     WHERE b.sku = NEW.sku AND b.followed IS DISTINCT FROM (NEW.listed OR NEW.bundles > 0);
  END IF;
  FOR i IN 1 .. 3 LOOP
    FOR j IN 1 .. 3 LOOP
      CONTINUE WHEN v_d[i] >= 0 OR v_d[j] <= 0;
      v_q := least(-v_d[i], v_d[j]);
      PERFORM move_bucket_units(NEW.sku, v_names[i], v_names[j], v_q);
      v_d[i] := v_d[i] + v_q;
      v_d[j] := v_d[j] - v_q;
    END LOOP;
  END LOOP;
  FOR i IN 1 .. 3 LOOP
    CONTINUE WHEN v_d[i] = 0;
    PERFORM move_bucket_units(NEW.sku, CASE WHEN v_d[i] < 0 THEN v_names[i] END,
                              CASE WHEN v_d[i] > 0 THEN v_names[i] END, abs(v_d[i]));
  END LOOP;
  NEW.available := OLD.available;
  NEW.reserved := OLD.reserved;
  NEW.sold := OLD.sold;
  RETURN NEW;
END
$$;

CREATE OR REPLACE TRIGGER inventory_route_to_buckets BEFORE UPDATE ON inventory
  FOR EACH ROW WHEN (OLD.buckets > 1 AND NEW.buckets = OLD.buckets) EXECUTE FUNCTION route_to_buckets();

-- setStockBuckets: the SKU's units (available, reserved, sold) split evenly across p_buckets rows, or gathered back
-- into its row (1). Locks the SKU row, then every bucket in bucket order; the SKU's figures do not change, its
-- version grows (with an availability event). Answers {buckets, available} or {code, message} (nothing written).
CREATE OR REPLACE FUNCTION set_stock_buckets(p_sku text, p_buckets integer) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_inv record;
  v_t   record;
BEGIN
  IF p_buckets IS NULL OR p_buckets NOT BETWEEN 1 AND 64 THEN
    RETURN jsonb_build_object('code', 'INVALID_BUCKETS', 'message', 'buckets must be between 1 and 64');
  END IF;
  SELECT i.*, p.is_bundle INTO v_inv FROM inventory i JOIN products p ON p.sku = i.sku WHERE i.sku = p_sku
     FOR UPDATE OF i;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('code', 'UNKNOWN_SKU', 'message', format('no product %s', p_sku));
  END IF;
  IF p_buckets > 1 AND v_inv.is_bundle THEN
    RETURN jsonb_build_object('code', 'BUCKETS_UNSUPPORTED', 'message',
      format('%s is a bundle: it has no stock of its own (its components may have buckets)', p_sku));
  END IF;
  SELECT v_inv.available + coalesce(sum(b.available), 0) AS available, v_inv.reserved + coalesce(sum(b.reserved), 0)
         AS reserved, v_inv.sold + coalesce(sum(b.sold), 0) AS sold, coalesce(sum(b.version), 0) AS version INTO v_t
    FROM (SELECT * FROM inventory_buckets b WHERE b.sku = p_sku ORDER BY b.bucket FOR UPDATE) b;
  DELETE FROM inventory_buckets b WHERE b.sku = p_sku;
  -- two writes, each changing the bucket count, so route_to_buckets (for writes that keep the count) is not called
  UPDATE inventory SET buckets = 1, available = v_t.available, reserved = v_t.reserved, sold = v_t.sold,
                       version = version + v_t.version + 1, updated_at = now() WHERE sku = p_sku;
  IF p_buckets > 1 THEN
    INSERT INTO inventory_buckets (sku, bucket, available, reserved, sold, followed)
    SELECT p_sku, g, v_t.available / p_buckets + (g < v_t.available % p_buckets)::integer,
           v_t.reserved / p_buckets + (g < v_t.reserved % p_buckets)::integer,
           v_t.sold / p_buckets + (g < v_t.sold % p_buckets)::integer, v_inv.listed OR v_inv.bundles > 0
      FROM generate_series(0, p_buckets - 1) g;
    UPDATE inventory SET buckets = p_buckets, available = 0, reserved = 0, sold = 0 WHERE sku = p_sku;
  END IF;
  PERFORM emit_availability(ARRAY[p_sku]);  -- the relay publishes the sums (availability_now)
  RETURN jsonb_build_object('buckets', p_buckets, 'available', v_t.available);
END
$$;

-- The sweeper's pass: every bucketed SKU's buckets that no transaction holds right now (SKIP LOCKED: it never waits
-- for a claim, nor makes one wait longer than its own short statement) get even shares of their available units.
-- Reserved and sold units stay where they are (a release returns them to a bucket that has them). Returns how many
-- buckets changed.
CREATE OR REPLACE FUNCTION rebalance_stock_buckets() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_sku  text;
  v_rows integer;
  v_n    integer := 0;
BEGIN
  -- evening out keeps every SKU's sum: nothing for its bundles and listings to hear (bucket_followers)
  PERFORM set_config('lastunit.bucket_moves', 'even', true);
  FOR v_sku IN SELECT i.sku FROM inventory i WHERE i.buckets > 1 ORDER BY i.sku LOOP
    WITH free AS (
      SELECT b.bucket, b.available FROM inventory_buckets b WHERE b.sku = v_sku ORDER BY b.bucket
         FOR NO KEY UPDATE SKIP LOCKED),
    tot AS (SELECT sum(f.available)::integer AS a, count(*)::integer AS c FROM free f),
    even AS (SELECT f.bucket, f.available,
                    t.a / t.c + (row_number() OVER (ORDER BY f.bucket) <= t.a % t.c)::integer AS target
               FROM free f CROSS JOIN tot t)
    -- which buckets change is decided on the locked rows' figures (e.available), never on b's: b is read as of the
    -- statement's start, and a claim that committed since then would leave b.available stale; were a stale figure
    -- equal to its target, that bucket would be skipped while the others took targets summed with its new figure
    UPDATE inventory_buckets b SET available = e.target, version = b.version + 1
      FROM even e WHERE b.sku = v_sku AND b.bucket = e.bucket AND e.available <> e.target;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    v_n := v_n + v_rows;
  END LOOP;
  PERFORM set_config('lastunit.bucket_moves', '', true);
  RETURN v_n;
END
$$;

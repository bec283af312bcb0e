-- Bundles (db/migrations/0031_bundles.sql, docs/channels.md "Bundles"): availability derived from the components,
-- component changes announced for every bundle that contains them, and bundles created. A bundle's claim takes its
-- components (expand_bundle_lines, 015_claim-units.sql).

-- A bundle's availability: the minimum over its components of floor(available / quantity); its version the sum of the
-- components' versions (each only grows, so the sum grows with every component change). A bucketed component's figures
-- are its buckets' sums (012_sku-figures.sql).
CREATE OR REPLACE FUNCTION bundle_available(p_bundle text) RETURNS TABLE (available integer, version bigint)
LANGUAGE sql STABLE AS $$
  SELECT coalesce(min(t.available / b.quantity), 0)::integer, coalesce(sum(t.version), 0)::bigint
    FROM bundle_components b JOIN inventory i ON i.sku = b.component_sku
   CROSS JOIN LATERAL sku_totals(i.sku, i.available, i.version, i.buckets) t
   WHERE b.bundle_sku = p_bundle
$$;

-- What a channel lists a SKU from, given its inventory row's figures (as the caller read or locked them): a bundle's
-- figures (bundle_available), any other SKU's available units and version (its buckets' sums when it has some).
DROP FUNCTION IF EXISTS listing_figures(text);
CREATE OR REPLACE FUNCTION listing_figures(
  p_sku text, p_available integer, p_version bigint, p_buckets smallint, p_is_bundle boolean
) RETURNS TABLE (available integer, version bigint)
LANGUAGE sql STABLE AS $$
  SELECT a.available, a.version FROM bundle_available(p_sku) a WHERE p_is_bundle
  UNION ALL
  SELECT t.available, t.version FROM sku_totals(p_sku, p_available, p_version, p_buckets) t WHERE NOT p_is_bundle
$$;

-- A component changed: an availability event for every bundle containing it (I9, insert-only), and, when there are
-- channels, a mark per bundle that the pusher turns into its recomputed listings. Insert-only: no lock on anything
-- another claim needs. Called by the component's row trigger (bundles_follow) and by its buckets' (p_bucketed,
-- bucket_followers): then the component's own listing is marked too (the pusher recomputes it from the buckets' sums),
-- and the events carry no figures, since the relay reads a bundle of a bucketed component again when it publishes
-- (availability_now): the claim that holds a bucket does not add up the bundles' components for nothing.
CREATE OR REPLACE FUNCTION tell_bundles(p_component text, p_at timestamptz, p_bucketed boolean) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF p_bucketed THEN
    INSERT INTO outbox (topic, aggregate_key, payload)
    SELECT 'availability', b.bundle_sku, jsonb_build_object('sku', b.bundle_sku, 'updatedAt', p_at)
      FROM bundle_components b WHERE b.component_sku = p_component ORDER BY b.bundle_sku;
  ELSE
    INSERT INTO outbox (topic, aggregate_key, payload)
    SELECT 'availability', b.bundle_sku, jsonb_build_object('sku', b.bundle_sku, 'available', a.available,
                                                           'soldOut', a.available = 0, 'version', a.version, 'updatedAt', p_at)
      FROM bundle_components b CROSS JOIN LATERAL bundle_available(b.bundle_sku) a
     WHERE b.component_sku = p_component ORDER BY b.bundle_sku;
  END IF;
  IF EXISTS (SELECT 1 FROM channels) THEN
    INSERT INTO bundle_changes (bundle_sku)
    SELECT p_component WHERE p_bucketed
    UNION ALL SELECT b.bundle_sku FROM bundle_components b WHERE b.component_sku = p_component;
  END IF;
END
$$;

-- A component's available changed (fired only for SKUs in a bundle: the trigger's WHEN reads inventory.bundles).
CREATE OR REPLACE FUNCTION bundles_follow() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM tell_bundles(p_component => NEW.sku, p_at => NEW.updated_at, p_bucketed => false);
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER inventory_bundles AFTER UPDATE OF available ON inventory
  FOR EACH ROW WHEN (NEW.bundles > 0 AND OLD.available IS DISTINCT FROM NEW.available) EXECUTE FUNCTION bundles_follow();

-- The pusher's step before sending: the marked SKUs' listings recomputed from the committed figures for every channel
-- (listing rows locked in (channel, SKU) order; versions only grow): bundles whose components changed, and bucketed
-- SKUs whose buckets did (bucket_followers, 120_stock-buckets.sql). Returns how many listings changed.
CREATE OR REPLACE FUNCTION recompute_bundle_listings() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_n integer;
BEGIN
  WITH taken AS (DELETE FROM bundle_changes RETURNING bundle_sku, changed_at),
  marked AS (SELECT bundle_sku, min(changed_at) AS at FROM taken GROUP BY bundle_sku)
  INSERT INTO channel_listings AS l (channel_id, sku, desired_quantity, desired_version, desired_at)
  SELECT c.id, m.bundle_sku, listed_quantity(a.available, c.buffer, c.max_listed, c.percent, c.zero_at_or_below), a.version, m.at
    FROM marked m JOIN products p ON p.sku = m.bundle_sku JOIN inventory i ON i.sku = m.bundle_sku
   CROSS JOIN LATERAL listing_figures(i.sku, i.available, i.version, i.buckets, p.is_bundle) a CROSS JOIN channels c
   ORDER BY c.id, m.bundle_sku
  ON CONFLICT (channel_id, sku) DO UPDATE
     SET desired_quantity = excluded.desired_quantity,
         desired_version = greatest(l.desired_version + 1, excluded.desired_version),
         desired_at = CASE WHEN l.desired_version > l.pushed_version THEN l.desired_at ELSE excluded.desired_at END,
         next_attempt_at = CASE WHEN l.desired_version > l.pushed_version THEN l.next_attempt_at ELSE now() END
   WHERE l.desired_quantity IS DISTINCT FROM excluded.desired_quantity;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  RETURN v_n;
END
$$;

-- createProduct with components: the bundle, its (always empty) inventory row, its components, and each component's
-- bundle count, in one statement's transaction. Components must exist and not be bundles themselves.
-- Returns {kind: created | duplicate | unknown_component | nested, sku?}.
CREATE OR REPLACE FUNCTION create_bundle(p_sku text, p_name text, p_price integer, p_currency text, p_components jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_bad text;
BEGIN
  SELECT min(c.sku) FILTER (WHERE p.sku IS NULL) INTO v_bad
    FROM jsonb_to_recordset(p_components) AS c(sku text, quantity integer) LEFT JOIN products p ON p.sku = c.sku;
  IF v_bad IS NOT NULL THEN RETURN jsonb_build_object('kind', 'unknown_component', 'sku', v_bad); END IF;
  SELECT min(p.sku) INTO v_bad FROM jsonb_to_recordset(p_components) AS c(sku text, quantity integer) JOIN products p ON p.sku = c.sku WHERE p.is_bundle;
  IF v_bad IS NOT NULL THEN RETURN jsonb_build_object('kind', 'nested', 'sku', v_bad); END IF;
  INSERT INTO products (sku, name, price_amount, currency, is_bundle) VALUES (p_sku, p_name, p_price, p_currency, true) ON CONFLICT (sku) DO NOTHING;
  IF NOT FOUND THEN RETURN jsonb_build_object('kind', 'duplicate'); END IF;
  INSERT INTO inventory (sku, available) VALUES (p_sku, 0);
  INSERT INTO bundle_components (bundle_sku, component_sku, quantity)
  SELECT p_sku, c.sku, c.quantity FROM jsonb_to_recordset(p_components) AS c(sku text, quantity integer);
  -- the component rows in SKU order, as every writer locks them
  UPDATE inventory i SET bundles = i.bundles + 1
    FROM (SELECT c.sku FROM jsonb_to_recordset(p_components) AS c(sku text) ORDER BY c.sku) c WHERE i.sku = c.sku;
  INSERT INTO bundle_changes (bundle_sku) VALUES (p_sku);
  RETURN jsonb_build_object('kind', 'created');
END
$$;

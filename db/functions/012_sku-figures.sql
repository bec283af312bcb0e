-- A SKU's figures, for every reader and writer that needs them whatever its stock layout: a SKU with stock buckets
-- (db/migrations/0100_stock-buckets.sql, 120_stock-buckets.sql) keeps 0s in its row and its units in its buckets, so
-- its figures are its row's plus its buckets' sums. Early in the order, so that any later SQL function may call them.

-- A SKU's available units and version as a reader shows them, from its row's figures: the row's, plus its buckets'
-- sums when it has some (each version only grows, so the sum grows with every change of any of them). A table
-- function of one SELECT, so PostgreSQL inlines it where it is joined (CROSS JOIN LATERAL sku_totals(i.sku,
-- i.available, i.version, i.buckets)): the buckets are read once per row, and not at all for a single-row SKU (the
-- buckets > 1 test gates the scan).
CREATE OR REPLACE FUNCTION sku_totals(p_sku text, p_available integer, p_version bigint, p_buckets smallint)
RETURNS TABLE (available integer, version bigint)
LANGUAGE sql STABLE AS $$
  SELECT p_available + coalesce(sum(b.available), 0)::integer, p_version + coalesce(sum(b.version), 0)::bigint
    FROM inventory_buckets b WHERE b.sku = p_sku AND p_buckets > 1
$$;

-- The same figures one at a time, for a caller that wants a value, not a row (db/catalog-store.ts, console-store.ts).
CREATE OR REPLACE FUNCTION sku_available(p_sku text, p_available integer, p_buckets smallint) RETURNS integer
LANGUAGE sql STABLE AS $$
  SELECT t.available FROM sku_totals(p_sku, p_available, 0, p_buckets) t
$$;
CREATE OR REPLACE FUNCTION sku_version(p_sku text, p_version bigint, p_buckets smallint) RETURNS bigint
LANGUAGE sql STABLE AS $$
  SELECT t.version FROM sku_totals(p_sku, 0, p_version, p_buckets) t
$$;

-- A bucketed SKU's buckets' sums of available units and of versions, in one scan of its buckets.
CREATE OR REPLACE FUNCTION bucket_sums(p_sku text) RETURNS TABLE (available integer, version bigint)
LANGUAGE sql STABLE AS $$
  SELECT coalesce(sum(b.available), 0)::integer, coalesce(sum(b.version), 0)::bigint
    FROM inventory_buckets b WHERE b.sku = p_sku
$$;

-- All of a SKU's figures as one row: its row's plus its buckets' (the SKU's whole stock, e.g. for an audit).
CREATE OR REPLACE FUNCTION sku_figures(p_sku text)
RETURNS TABLE (available integer, reserved integer, sold integer, version bigint)
LANGUAGE sql STABLE AS $$
  SELECT i.available + coalesce(sum(b.available), 0)::integer, i.reserved + coalesce(sum(b.reserved), 0)::integer,
         i.sold + coalesce(sum(b.sold), 0)::integer, i.version + coalesce(sum(b.version), 0)::bigint
    FROM inventory i LEFT JOIN inventory_buckets b ON b.sku = i.sku AND i.buckets > 1
   WHERE i.sku = p_sku GROUP BY i.sku
$$;

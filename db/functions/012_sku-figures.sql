-- A SKU's figures, for every reader and writer that needs them whatever its stock layout: a SKU with stock buckets
-- (db/migrations/0100_stock-buckets.sql, 120_stock-buckets.sql) keeps 0s in its row and its units in its buckets, so
-- its figures are its row's plus its buckets' sums. Early in the order, so that any later SQL function may call them.

-- What a reader shows as the SKU's available units: its row's, plus its buckets' when it has some. Not inlined into its
-- caller's plan (PostgreSQL inlines no SQL function whose body holds a subquery): a call per row, so the per-request
-- paths of placeOrder (020_place-order.sql's quiet refusal, 025_place-orders.sql's short_paths) write the CASE out.
CREATE OR REPLACE FUNCTION sku_available(p_sku text, p_available integer, p_buckets smallint) RETURNS integer
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN p_buckets = 1 THEN p_available
              ELSE p_available + (SELECT coalesce(sum(b.available), 0)::integer FROM inventory_buckets b
                                   WHERE b.sku = p_sku) END
$$;

-- The SKU's version: its row's plus its buckets' (each only grows, so the sum grows with every change of any of them).
CREATE OR REPLACE FUNCTION sku_version(p_sku text, p_version bigint, p_buckets smallint) RETURNS bigint
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN p_buckets = 1 THEN p_version
              ELSE p_version + (SELECT coalesce(sum(b.version), 0)::bigint FROM inventory_buckets b
                                 WHERE b.sku = p_sku) END
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

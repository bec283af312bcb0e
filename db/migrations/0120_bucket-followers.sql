-- A bucketed SKU may be listed on a channel or be a bundle component (db/functions/120_stock-buckets.sql): its buckets
-- carry `followed`, true when the SKU is either, so the trigger that tells its bundles and channel listings of a change
-- fires on a bucket's write only for such SKUs (a trigger's WHEN cannot read the SKU row). Kept by route_to_buckets
-- and set_stock_buckets, under the SKU row's lock and every bucket's.
ALTER TABLE inventory_buckets ADD COLUMN followed boolean NOT NULL DEFAULT false;

-- Stock buckets (docs/capacity.md): a hot SKU's units split across N rows, so claims of one SKU stop serializing on its
-- one inventory row. inventory.buckets = 1 is the single row (every SKU until setStockBuckets). With N > 1 every unit
-- of the SKU lives in a bucket (the SKU row's available, reserved and sold are 0) and the SKU's figures are the
-- buckets' sums; each bucket keeps the same CHECKs as the SKU row, so no bucket, and no SKU, can go below zero.
ALTER TABLE inventory ADD COLUMN buckets smallint NOT NULL DEFAULT 1 CHECK (buckets BETWEEN 1 AND 64);

CREATE TABLE inventory_buckets (
  sku        text NOT NULL REFERENCES inventory (sku),
  bucket     smallint NOT NULL CHECK (bucket >= 0),
  available  integer NOT NULL DEFAULT 0 CHECK (available >= 0),
  reserved   integer NOT NULL DEFAULT 0 CHECK (reserved >= 0),
  sold       integer NOT NULL DEFAULT 0 CHECK (sold >= 0),
  version    bigint NOT NULL DEFAULT 0,  -- grows on every change; the SKU's version is its row's plus its buckets'
  PRIMARY KEY (sku, bucket)
);
-- The sweeper's rebalance visits only bucketed SKUs.
CREATE INDEX inventory_bucketed_idx ON inventory (sku) WHERE buckets > 1;

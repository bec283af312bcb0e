-- Bundles (docs/channels.md, "Bundles"): a product sold as a set of components. A bundle has no stock of its own: its
-- availability is the minimum over its components of floor(component available / quantity), and claiming it claims
-- every component, in SKU order with the rest of the order, by the same conditional writes (I1, I3).

ALTER TABLE products ADD COLUMN is_bundle boolean NOT NULL DEFAULT false;

CREATE TABLE bundle_components (
  bundle_sku     text NOT NULL REFERENCES products (sku),
  component_sku  text NOT NULL REFERENCES products (sku),
  quantity       integer NOT NULL CHECK (quantity BETWEEN 1 AND 1000),
  PRIMARY KEY (bundle_sku, component_sku),
  CHECK (bundle_sku <> component_sku)
);
CREATE INDEX bundle_components_component_idx ON bundle_components (component_sku);

-- How many bundles contain this SKU: lets the inventory trigger that announces bundle availability skip every other
-- SKU in its WHEN clause, so a plain storefront claim pays nothing for bundles.
ALTER TABLE inventory ADD COLUMN bundles integer NOT NULL DEFAULT 0 CHECK (bundles >= 0);

-- Bundles whose listed quantities must be recomputed (a component's stock changed): insert-only, written in the
-- component's transaction (no lock taken on anything shared), drained by the pusher, which recomputes the bundles'
-- channel_listings from the committed components.
CREATE TABLE bundle_changes (
  id          bigserial PRIMARY KEY,
  bundle_sku  text NOT NULL,
  changed_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Idempotent stock operations (issue 9, hygiene): `restock` and `setStock` take an optional idempotencyKey, so an admin
-- client's retry does not add units twice. The key row and the stock write commit in one transaction: a key row exists
-- only for an applied operation, and carries its answer for replays. A different request under the same key is refused.
CREATE TABLE stock_operation_keys (
  client_id     text NOT NULL,
  key           text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
  operation     text NOT NULL CHECK (operation IN ('restock', 'setStock')),
  request_hash  text NOT NULL,
  response      jsonb NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  PRIMARY KEY (client_id, key)
);
CREATE INDEX stock_operation_keys_expiry_idx ON stock_operation_keys (expires_at);

-- Order tokens (issue 9, key kinds): a `public` key lives in browsers, so every browser shares its client; such a
-- caller sees an order only with the order's own secret token, handed out once, in the answer that created the order.
-- Only its SHA-256 (hex) is kept: a database dump reveals no token. NULL: no token was issued (an order placed before
-- this migration, or a crash between the claim and the issue): a public key cannot reach it, a server-side key can.
ALTER TABLE orders ADD COLUMN token_hash text CHECK (token_hash IS NULL OR token_hash ~ '^[0-9a-f]{64}$');

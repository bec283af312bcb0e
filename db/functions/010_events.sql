-- The outbox writers (I9) and the Order document every path answers with. db/functions/ holds every SQL function, one
-- named step each; docs/architecture.md#where-the-rules-live says which file decides what.
--
-- How this folder works: migrate re-applies EVERY file here, in file-name order, after the table migrations
-- (db/migrations/), on every run, so a function change is an edit of its file, no new migration. Each file is
-- plain `CREATE OR REPLACE FUNCTION` statements. A LANGUAGE sql function is checked when it is created, so what it calls
-- must come earlier (an earlier file, or higher in its file); plpgsql bodies are resolved when they run.
-- CREATE OR REPLACE cannot change a function's argument types (that makes a second overload), its return type (nor the
-- columns of RETURNS TABLE), the names of its parameters, nor remove a default: a change of signature must drop the old
-- one first, in the same file, just above the new definition:  DROP FUNCTION IF EXISTS name(old arg types);
-- (after the first run the old signature is gone, so the line is a no-op; it stays for databases not yet migrated).
-- Never put CREATE TABLE / ALTER TABLE here (test/migrations.test.ts checks both folders).

-- Availability events for SKUs this transaction changed (their rows are already locked by it, so this reads its own write).
CREATE OR REPLACE FUNCTION emit_availability(p_skus text[]) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO outbox (topic, aggregate_key, payload)
  SELECT 'availability', i.sku,
         jsonb_build_object('sku', i.sku, 'available', i.available, 'soldOut', i.available = 0,
                            'version', i.version, 'updatedAt', i.updated_at)
    FROM inventory i WHERE i.sku = ANY (p_skus) ORDER BY i.sku
$$;

-- An order-status event (the owner's client id rides along so subscriptions deliver it only to that client).
CREATE OR REPLACE FUNCTION emit_order_status(p_order_ids uuid[]) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO outbox (topic, aggregate_key, payload)
  SELECT 'order_status', o.id::text,
         jsonb_build_object('orderId', o.id, 'clientId', o.client_id, 'status', o.status, 'updatedAt', o.updated_at)
    FROM orders o WHERE o.id = ANY (p_order_ids)
$$;

-- The Order document, the one shape every path answers with (db/orders-store.ts reads it as an OrderRecord): built
-- here only, from the order's values. order_json reads them from the tables; a path that has just written an order
-- (prepare_order, claim_order) passes what it wrote. p_reservation: {state, expiresAt} of the order's holds, or NULL.
-- STABLE (as jsonb_build_object is), so a call from SQL or a PL/pgSQL expression is inlined into it, not run apart.
CREATE OR REPLACE FUNCTION order_document(
  p_id uuid, p_status text, p_customer_id text, p_total bigint, p_currency text, p_rejection jsonb,
  p_created_at timestamptz, p_updated_at timestamptz, p_lines jsonb, p_reservation jsonb, p_channel text DEFAULT NULL
) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'id', p_id, 'status', p_status, 'customerId', p_customer_id, 'totalAmount', p_total, 'currency', p_currency,
    'rejection', p_rejection, 'createdAt', p_created_at, 'updatedAt', p_updated_at, 'channel', p_channel,
    'lines', p_lines, 'reservation', p_reservation)
$$;

-- The stored order as the API shows it: its lines in SKU order, and its holds summed up as one reservation (the live
-- state when any hold is live, the earliest expiry). PL/pgSQL so its plan is kept per session: the event log's
-- trigger calls it once per order in every claim's transaction, and a LANGUAGE sql function with a FROM is planned
-- again on every such call (hot-SKU bench: 0.72 of the bare claim so, against 1.21 with no event written at all).
CREATE OR REPLACE FUNCTION order_json(p_order_id uuid) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT order_document(
    o.id, o.status, o.customer_id, o.total_amount, o.currency, o.rejection, o.created_at, o.updated_at,
    COALESCE((SELECT jsonb_agg(jsonb_build_object('sku', l.sku, 'quantity', l.quantity, 'unitAmount', l.unit_amount)
                               ORDER BY l.sku)
                FROM order_lines l WHERE l.order_id = o.id), '[]'::jsonb),
    (SELECT jsonb_build_object(
              'state', CASE WHEN bool_or(r.state = 'HELD') THEN 'HELD'
                            WHEN bool_or(r.state = 'AWAITING_PAYMENT') THEN 'AWAITING_PAYMENT'
                            ELSE min(r.state) END,
              'expiresAt', min(r.expires_at))
       FROM reservations r WHERE r.order_id = o.id HAVING count(*) > 0),
    o.channel_id)
  FROM orders o WHERE o.id = p_order_id);
END
$$;

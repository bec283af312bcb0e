-- The event log (docs/events.md, table in db/migrations/0060_event-log.sql): who writes an event, and the sequencer
-- that gives committed events their feed position. Every writer is a trigger, so every path that changes an order,
-- a payment or stock (today's and tomorrow's) writes its event in its own transaction (I9), one row per change.

-- A new event id: the webhook-id a consumer dedupes on.
CREATE OR REPLACE FUNCTION new_event_id() RETURNS text
LANGUAGE sql VOLATILE AS $$
  SELECT 'evt_' || replace(gen_random_uuid()::text, '-', '')
$$;

-- The event of an order entering p_status after p_previous (the status of its last order event; NULL: none).
-- CANCELLED is order.cancelled after a confirmation, order.released before one (its hold was given back); a
-- marketplace order the stock could not cover is channel.oversold. NULL: no event (PROCESSING).
CREATE OR REPLACE FUNCTION order_event_type(p_status text, p_previous text, p_rejection_code text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE p_status
    WHEN 'RESERVED' THEN 'order.reserved'
    WHEN 'AWAITING_PAYMENT' THEN 'order.awaiting_payment'
    WHEN 'CONFIRMED' THEN 'order.confirmed'
    WHEN 'REJECTED' THEN CASE WHEN p_rejection_code = 'CHANNEL_OVERSOLD' THEN 'channel.oversold' ELSE 'order.rejected' END
    WHEN 'EXPIRED' THEN 'order.expired'
    WHEN 'CANCELLED' THEN CASE WHEN p_previous = 'CONFIRMED' THEN 'order.cancelled' ELSE 'order.released' END
  END
$$;

-- An order event with the order's next sequence number and its document now (order_json, 010_events.sql).
-- PL/pgSQL, as order_json is, so its plan is kept per session (a LANGUAGE sql function is planned again on every
-- call from a trigger): every claim's transaction runs this once per order.
CREATE OR REPLACE FUNCTION append_order_event(p_order_id uuid, p_client_id text, p_type text, p_sequence bigint)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO events (id, type, order_id, client_id, sequence, data)
  VALUES (new_event_id(), p_type, p_order_id, p_client_id, p_sequence, order_json(p_order_id));
END
$$;

-- Deferred to commit (constraint trigger below), so the event carries the order as the transaction leaves it: an
-- order written RESERVED and refused in the same transaction is one order.rejected, not two events. Every queued call
-- after the first finds its status already recorded and writes nothing: one insert per order per transaction.
CREATE OR REPLACE FUNCTION record_order_event() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_status    text;
  v_code      text;
  v_last      record;
BEGIN
  SELECT o.status, o.rejection->>'code' INTO v_status, v_code FROM orders o WHERE o.id = NEW.id;
  SELECT coalesce(max(e.sequence), 0) AS seq,
         (array_agg(e.data->>'status' ORDER BY e.sequence DESC) FILTER (WHERE e.type NOT LIKE 'payment.%'))[1] AS status
    INTO v_last FROM events e WHERE e.order_id = NEW.id;
  IF v_status IS NOT DISTINCT FROM v_last.status OR order_event_type(v_status, v_last.status, v_code) IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM append_order_event(NEW.id, NEW.client_id, order_event_type(v_status, v_last.status, v_code), v_last.seq + 1);
  RETURN NULL;
END
$$;

-- Not queued while lastunit.order_events is 'written' (set local to one statement's run, then cleared): a statement
-- that logs its orders' events itself, set-based (write_short_orders and record_batch_refusals, 025_place-orders.sql:
-- a batch's orders cost one INSERT, not a trigger call, two lookups and order_json each at commit). A constraint
-- trigger's WHEN is evaluated when the row is written, not at commit.
DROP TRIGGER IF EXISTS orders_event_on_insert ON orders;
CREATE CONSTRAINT TRIGGER orders_event_on_insert AFTER INSERT ON orders DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (current_setting('lastunit.order_events', true) IS DISTINCT FROM 'written')
  EXECUTE FUNCTION record_order_event();
DROP TRIGGER IF EXISTS orders_event_on_status ON orders;
CREATE CONSTRAINT TRIGGER orders_event_on_status AFTER UPDATE OF status ON orders DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status
                     AND current_setting('lastunit.order_events', true) IS DISTINCT FROM 'written')
  EXECUTE FUNCTION record_order_event();

-- payment.captured (the capture step recorded the money taken) and payment.refunded (a compensation done: the money
-- went back), on the order's sequence, with its document. The order row is locked first, so a status change of the
-- same order committing meanwhile cannot take the same sequence number.
CREATE OR REPLACE FUNCTION record_payment_event() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_client text;
BEGIN
  SELECT o.client_id INTO v_client FROM orders o WHERE o.id = NEW.order_id FOR NO KEY UPDATE;
  PERFORM append_order_event(NEW.order_id, v_client, TG_ARGV[0],
                             (SELECT coalesce(max(e.sequence), 0) + 1 FROM events e WHERE e.order_id = NEW.order_id));
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER payments_captured_event AFTER UPDATE OF capture_state ON payments
  FOR EACH ROW WHEN (NEW.capture_state = 'CAPTURED' AND OLD.capture_state IS DISTINCT FROM 'CAPTURED')
  EXECUTE FUNCTION record_payment_event('payment.captured');
CREATE OR REPLACE TRIGGER compensations_refunded_event AFTER UPDATE OF state ON compensations
  FOR EACH ROW WHEN (NEW.state = 'DONE' AND OLD.state IS DISTINCT FROM 'DONE')
  EXECUTE FUNCTION record_payment_event('payment.refunded');

-- stock.changed: available moved while reserved and sold did not (restock, setStock); a claim or a release moves
-- reserved too and writes none. Per-SKU sequence (the inventory row is locked by the writer).
CREATE OR REPLACE FUNCTION record_stock_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO events (id, type, sku, sequence, data)
  SELECT new_event_id(), 'stock.changed', NEW.sku, coalesce(max(e.sequence), 0) + 1,
         jsonb_build_object('sku', NEW.sku, 'available', NEW.available, 'reserved', NEW.reserved, 'sold', NEW.sold,
                            'version', NEW.version, 'updatedAt', NEW.updated_at)
    FROM events e WHERE e.sku = NEW.sku AND e.order_id IS NULL;
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER inventory_stock_event AFTER UPDATE OF available ON inventory
  FOR EACH ROW WHEN (NEW.available IS DISTINCT FROM OLD.available AND NEW.reserved = OLD.reserved AND NEW.sold = OLD.sold)
  EXECUTE FUNCTION record_stock_event();

-- Every new event waits for its feed position as one narrow row of events_pending (the sequencer's queue, db/migrations/
-- 0130_event-positions.sql), written by its statement: one INSERT per statement, however many events it wrote.
CREATE OR REPLACE FUNCTION queue_new_events() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO events_pending (n) SELECT e.n FROM new_events e;
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER events_queue AFTER INSERT ON events REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION queue_new_events();

-- The sequencer, one step: committed events without a position get the next ones, in write order (an order's events
-- are written by transactions that follow each other, so write order keeps its sequence order), and one delivery per
-- endpoint subscribed (that existed when the event was written). One at a time: the head row's lock (a second caller
-- skips, its events come next time). The statement's snapshot is taken after the lock, so it sees every commit before
-- the last step's and gives them positions above that step's. A position is a row of event_positions and the event
-- leaves events_pending in the same statement; the event row itself is never written again. Returns how many events
-- got one.
CREATE OR REPLACE FUNCTION sequence_events(p_limit integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_last  bigint;
  v_count integer;
BEGIN
  SELECT h.last_position INTO v_last FROM event_feed_head h FOR UPDATE SKIP LOCKED;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  WITH pending AS (
    SELECT e.n, e.id, e.type, e.order_id, e.sku, e.client_id, e.created_at, v_last + row_number() OVER (ORDER BY e.n) AS pos
      FROM (SELECT q.n FROM events_pending q ORDER BY q.n LIMIT p_limit) q JOIN events e ON e.n = q.n),
  dequeued AS (
    DELETE FROM events_pending q WHERE q.n IN (SELECT p.n FROM pending p)),
  placed AS (
    INSERT INTO event_positions (position, n, client_id) SELECT p.pos, p.n, p.client_id FROM pending p),
  fan AS (
    INSERT INTO webhook_deliveries (endpoint_id, event_id, position, order_key)
    SELECT w.id, p.id, p.pos, coalesce(p.order_id::text, 'sku:' || p.sku, p.id)
      FROM pending p JOIN webhook_endpoints w ON w.enabled AND p.type = ANY (w.event_types) AND w.created_at <= p.created_at)
  SELECT count(*) INTO v_count FROM pending;
  IF v_count > 0 THEN
    UPDATE event_feed_head SET last_position = v_last + v_count;
  END IF;
  RETURN v_count;
END
$$;

-- Retention: sequenced events older than p_days, their positions and their deliveries with them, in one batch.
CREATE OR REPLACE FUNCTION prune_events(p_days integer, p_limit integer) RETURNS integer
LANGUAGE sql AS $$
  WITH gone AS (
    -- picked once (an InitPlan): the batch is p_limit rows whatever the plan (claim_outbox_batch, 140_outbox-relay.sql)
    DELETE FROM events WHERE n = ANY (ARRAY(
      SELECT e.n FROM events e JOIN event_positions p ON p.n = e.n
       WHERE e.created_at < now() - make_interval(days => p_days)
       ORDER BY e.created_at LIMIT p_limit FOR UPDATE OF e SKIP LOCKED))
    RETURNING n),
  unplaced AS (
    DELETE FROM event_positions p WHERE p.n IN (SELECT g.n FROM gone g))
  SELECT count(*)::integer FROM gone
$$;

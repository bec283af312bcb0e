-- The outbox relay's steps (subscriptions/relay.ts, docs/live.md), each one short transaction of its own, so that no
-- transaction is open while the relay publishes (Redis is a network service):
--   claim_outbox_batch     leases the oldest unpublished rows no live lease holds (SKIP LOCKED: relays never wait for
--                          one another) and returns them as they are published;
--   end_outbox_lease       ends the lease: marks the rows published once the pubsub has taken them, or gives them
--                          back at once when publishing failed (a dead relay's lease simply runs out).
-- At least once: a batch leased and never marked is claimed again when its lease ends. These transactions commit
-- without waiting for their WAL flush (synchronous_commit off, for them only): a lease or a mark a database crash
-- loses means rows published again, which at least once already allows (subscribers keep the highest version).

-- p_lease_ms: how long the rows are this relay's (RELAY_LEASE_MS). A bucketed SKU's availability is read again now
-- (availability_now): the last event shows the final sum. age_seconds: the row's age when claimed (database clock).
CREATE OR REPLACE FUNCTION claim_outbox_batch(p_limit integer, p_lease_ms integer)
RETURNS TABLE (id bigint, topic text, aggregate_key text, payload jsonb, age_seconds float8, "order" jsonb, entry jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  RETURN QUERY
  WITH claimed AS (
    -- the rows are picked once (an uncorrelated ARRAY subquery is an InitPlan, run once whatever the plan): a locking
    -- LIMIT joined as the inner side of a nested loop would run again per row, skip the rows it had just leased and
    -- lease more than p_limit (take_free_bucket, 120_stock-buckets.sql, took a line twice so)
    UPDATE outbox o SET lease_until = clock_timestamp() + make_interval(secs => p_lease_ms / 1000.0)
     WHERE o.id = ANY (ARRAY(
             SELECT u.id FROM outbox u
              WHERE u.published_at IS NULL AND (u.lease_until IS NULL OR u.lease_until <= clock_timestamp())
              ORDER BY u.id LIMIT p_limit FOR UPDATE SKIP LOCKED))
    RETURNING o.id, o.topic, o.aggregate_key, o.payload, o.created_at
  )
  SELECT c.id, c.topic, c.aggregate_key,
         CASE WHEN c.topic = 'availability' THEN availability_now(p_sku => c.aggregate_key, p_payload => c.payload)
              ELSE c.payload END,
         extract(epoch FROM clock_timestamp() - c.created_at)::float8,
         CASE WHEN c.topic = 'order_status' THEN order_json(p_order_id => (c.payload->>'orderId')::uuid) END,
         CASE WHEN c.topic = 'drop_entry' THEN drop_entry_json(p_entry_id => (c.payload->>'entryId')::uuid) END
    FROM claimed c ORDER BY c.id;
END
$$;

DROP FUNCTION IF EXISTS mark_outbox_published(bigint[]);
DROP FUNCTION IF EXISTS release_outbox_lease(bigint[]);
CREATE OR REPLACE FUNCTION end_outbox_lease(p_ids bigint[], p_published boolean) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  UPDATE outbox SET published_at = CASE WHEN p_published THEN now() END, lease_until = NULL
   WHERE id = ANY (p_ids) AND published_at IS NULL;
END
$$;

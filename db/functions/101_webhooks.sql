-- Webhook delivery (docs/events.md): the claim of due deliveries and the record of an attempt, each one short
-- transaction; the HTTP call happens between them, outside any transaction (orders/webhook-delivery.ts).

-- Up to p_limit due deliveries, leased for p_lease_seconds. Due: PENDING, its time come, not leased, and no earlier
-- delivery of the same order to the same endpoint still PENDING (in order per order: the next waits until the previous
-- is delivered or has finally failed). At most p_per_endpoint in flight per endpoint: the endpoint rows are locked
-- (SKIP LOCKED) while their deliveries are counted and claimed, so racing workers cannot both fill the same slots.
CREATE OR REPLACE FUNCTION claim_webhook_deliveries(p_limit integer, p_per_endpoint integer, p_lease_seconds integer)
RETURNS TABLE (delivery_id bigint, endpoint_id uuid, attempt integer, event_id text)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY
  WITH ep AS (
    SELECT w.id, p_per_endpoint - (SELECT count(*) FROM webhook_deliveries f
                                    WHERE f.endpoint_id = w.id AND f.status = 'PENDING' AND f.lease_until > now()) AS free
      FROM webhook_endpoints w WHERE w.enabled FOR NO KEY UPDATE SKIP LOCKED),
  due AS (
    SELECT d.id, d.endpoint_id, row_number() OVER (PARTITION BY d.endpoint_id ORDER BY d.position) AS rn, ep.free
      FROM ep JOIN LATERAL (
        SELECT c.id, c.endpoint_id, c.position FROM webhook_deliveries c
         WHERE c.endpoint_id = ep.id AND c.status = 'PENDING' AND c.next_attempt_at <= now()
           AND (c.lease_until IS NULL OR c.lease_until <= now())
           AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p
                            WHERE p.endpoint_id = c.endpoint_id AND p.order_key = c.order_key AND p.status = 'PENDING'
                              AND p.position < c.position)
         ORDER BY c.position LIMIT greatest(ep.free, 0)) d ON true),
  picked AS (SELECT due.id FROM due WHERE due.rn <= due.free ORDER BY due.id LIMIT p_limit)
  UPDATE webhook_deliveries d
     SET attempt = d.attempt + 1, lease_until = now() + make_interval(secs => p_lease_seconds)
    FROM picked WHERE d.id = picked.id
  RETURNING d.id, d.endpoint_id, d.attempt, d.event_id;
END
$$;

-- One attempt's outcome, guarded on the lease it was claimed with (a lease that ran out and was claimed again by
-- another worker is that worker's to record). p_retry_seconds: when to try again; NULL: the schedule is spent, FAILED.
-- The endpoint's failing_since starts at its first failure and clears on a success; an endpoint failing for longer
-- than p_disable_after_hours is disabled, with a webhook_endpoint.disabled event. Returns the delivery's status.
CREATE OR REPLACE FUNCTION record_webhook_attempt(
  p_id bigint, p_attempt integer, p_ok boolean, p_http_status integer, p_duration_ms integer, p_error text,
  p_retry_seconds double precision, p_disable_after_hours double precision
) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  v_status   text;
  v_endpoint uuid;
BEGIN
  UPDATE webhook_deliveries
     SET status = CASE WHEN p_ok THEN 'DELIVERED' WHEN p_retry_seconds IS NULL THEN 'FAILED' ELSE 'PENDING' END,
         http_status = p_http_status, duration_ms = p_duration_ms, last_error = left(p_error, 500), lease_until = NULL,
         delivered_at = CASE WHEN p_ok THEN clock_timestamp() END,
         next_attempt_at = CASE WHEN p_ok OR p_retry_seconds IS NULL THEN next_attempt_at
                                ELSE now() + make_interval(secs => p_retry_seconds) END
   WHERE id = p_id AND attempt = p_attempt AND status = 'PENDING'
  RETURNING status, endpoint_id INTO v_status, v_endpoint;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  IF p_ok THEN
    UPDATE webhook_endpoints SET failing_since = NULL WHERE id = v_endpoint AND failing_since IS NOT NULL;
    RETURN v_status;
  END IF;
  UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, now())
   WHERE id = v_endpoint AND (failing_since IS NULL OR failing_since > now() - make_interval(secs => p_disable_after_hours * 3600));
  IF NOT FOUND THEN
    PERFORM disable_webhook_endpoint(v_endpoint);
  END IF;
  RETURN v_status;
END
$$;

-- An endpoint that kept failing: disabled (its deliveries stay PENDING, sent again if an admin enables it), and an
-- event saying so.
CREATE OR REPLACE FUNCTION disable_webhook_endpoint(p_id uuid) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE webhook_endpoints SET enabled = false, disabled_at = now(), updated_at = now() WHERE id = p_id AND enabled;
  IF FOUND THEN
    INSERT INTO events (id, type, sequence, data)
    SELECT new_event_id(), 'webhook_endpoint.disabled', 1,
           jsonb_build_object('endpointId', w.id, 'url', w.url, 'failingSince', w.failing_since, 'disabledAt', w.disabled_at)
      FROM webhook_endpoints w WHERE w.id = p_id;
  END IF;
END
$$;

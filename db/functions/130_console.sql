-- The shop's console (docs/console.md): the one write it adds. Retrying a marketplace push moves a pending listing's
-- next attempt to now and forgets its backoff; the pusher then sends the newest desired quantity as it always does
-- (a push carries desired_version, so a retry can never list an older quantity, I13). Nothing else changes.

CREATE OR REPLACE FUNCTION retry_channel_push(p_channel_id text, p_sku text)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_pending boolean;
BEGIN
  SELECT l.desired_version > l.pushed_version INTO v_pending
    FROM channel_listings l WHERE l.channel_id = p_channel_id AND l.sku = p_sku;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('kind', 'not_found');
  END IF;
  IF NOT v_pending THEN
    RETURN jsonb_build_object('kind', 'up_to_date');
  END IF;
  -- conditional: only while still pending (a push that landed meanwhile leaves the row as the pusher wrote it)
  UPDATE channel_listings
     SET next_attempt_at = now(), attempts = 0
   WHERE channel_id = p_channel_id AND sku = p_sku AND desired_version > pushed_version;
  RETURN jsonb_build_object('kind', CASE WHEN FOUND THEN 'retried' ELSE 'up_to_date' END);
END $$;

-- An admin's releaseReservation (the console's "Release"): the hold of any client's order, by the same guarded
-- transition as the customer's own release (release_order locks the order row and returns the units once, I6).
CREATE OR REPLACE FUNCTION release_order_of_any_client(p_order_id uuid, p_reason text) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_client text;
BEGIN
  SELECT client_id INTO v_client FROM orders WHERE id = p_order_id;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('kind', 'not_found');
  END IF;
  RETURN release_order(p_client_id => v_client, p_order_id => p_order_id, p_reason => coalesce(p_reason, 'released by an admin'));
END
$$;

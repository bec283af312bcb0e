-- The DRAW pick (docs/drops.md, "Checking a draw"): published so anyone can recompute it. At creation the drop shows
-- seedCommitment = hex(SHA-256(seed)); at closes_at it reveals the seed and entriesDigest, and the draw order is the
-- entries sorted by HMAC-SHA256(key = seed, message = the entry id as lowercase text), ties by id.
-- common/drop-verify.ts computes the same from the published values alone.

-- HMAC-SHA256 (RFC 2104) from PostgreSQL's built-in sha256(), so the draw needs no extension.
CREATE OR REPLACE FUNCTION hmac_sha256(p_key bytea, p_message bytea) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  v_key  bytea := CASE WHEN length(p_key) > 64 THEN sha256(p_key) ELSE p_key END;
  v_ipad bytea;
  v_opad bytea;
BEGIN
  v_key := v_key || decode(repeat('00', 64 - length(v_key)), 'hex');
  v_ipad := v_key;
  v_opad := v_key;
  FOR i IN 0 .. 63 LOOP
    v_ipad := set_byte(v_ipad, i, get_byte(v_key, i) # 54);  -- 0x36
    v_opad := set_byte(v_opad, i, get_byte(v_key, i) # 92);  -- 0x5c
  END LOOP;
  RETURN sha256(v_opad || sha256(v_ipad || p_message));
END
$$;

-- entriesDigest: hex(SHA-256 of the drop's entry ids as lowercase text, sorted ascending, joined by one newline, no
-- trailing newline). uuid order is byte order, which is the order of their lowercase text.
CREATE OR REPLACE FUNCTION drop_entries_digest(p_drop_id uuid) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT encode(sha256(convert_to(coalesce(string_agg(e.id::text, E'\n' ORDER BY e.id), ''), 'UTF8')), 'hex')
    FROM drop_entries e WHERE e.drop_id = p_drop_id
$$;

-- The draw, once (a conditional write on drawn_at), at or after closes_at, under the drop row lock (no entry can be
-- taken any more): the digest and the reveal are written with the places every entry gets in draw order. admit_drop
-- then admits the winners (the first entries in draw order, as many as can buy) for claimSeconds; a lapsed winner's
-- unit passes to the next in draw order. Returns whether it drew now.
CREATE OR REPLACE FUNCTION draw_drop(p_drop_id uuid) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_ids uuid[];
BEGIN
  UPDATE drops SET drawn_at = now(), entries_digest = drop_entries_digest(p_drop_id)
   WHERE id = p_drop_id AND mode = 'DRAW' AND drawn_at IS NULL AND closes_at <= clock_timestamp();
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  WITH ranked AS (
    SELECT e.id, row_number() OVER (ORDER BY hmac_sha256(d.seed, convert_to(e.id::text, 'UTF8')), e.id) AS n
      FROM drop_entries e JOIN drops d ON d.id = e.drop_id WHERE e.drop_id = p_drop_id),
  placed AS (
    UPDATE drop_entries e SET place = r.n, updated_at = now() FROM ranked r WHERE e.id = r.id RETURNING e.id)
  SELECT array_agg(id) INTO v_ids FROM placed;
  IF v_ids IS NOT NULL THEN
    PERFORM emit_drop_entries(v_ids);
  END IF;
  RETURN true;
END
$$;

-- The published entry list of a drawn drop, in draw order (entry ids only: they name no customer).
CREATE OR REPLACE FUNCTION drop_draw_order(p_drop_id uuid) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT coalesce(jsonb_agg(e.id::text ORDER BY e.place), '[]'::jsonb)
    FROM drop_entries e JOIN drops d ON d.id = e.drop_id
   WHERE e.drop_id = p_drop_id AND d.drawn_at IS NOT NULL
$$;

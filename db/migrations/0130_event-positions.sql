-- The feed's positions in a narrow table of their own (docs/events.md). The sequencer gave an event its position by an
-- UPDATE of the event row, which rewrote the whole row with its order document and, `position` being indexed, put a
-- new entry in every index of `events` again: about 1.4 KB of WAL per claim (docs/capacity.md). Now an event waits for
-- its position as one narrow row of events_pending, written with it (a statement trigger, 100_event-log.sql), and the
-- sequencer moves it into event_positions; the event row is written once and never again. No foreign keys: the two
-- functions that write these tables keep them in step with `events` (sequence_events moves a pending event's row,
-- prune_events deletes an event's position with it), and a key would cost a check per row on the way.
-- No event is written or positioned while this runs (hosts of before it keep writing events and sequencing them until
-- it commits): what the moves below read stays what is there. Their feed reads fail from the commit until they are
-- replaced, since they read events.position.
LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE event_positions (
  position      bigint PRIMARY KEY,
  n             bigint NOT NULL UNIQUE,  -- the event's (events.n)
  client_id     text,                  -- the event's: a partner key's feed shows only its own
  sequenced_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX event_positions_client_idx ON event_positions (client_id, position) WHERE client_id IS NOT NULL;

-- Committed events without a position yet, by write order (n): the sequencer's queue.
CREATE TABLE events_pending (
  n  bigint PRIMARY KEY
);

INSERT INTO event_positions (position, n, client_id, sequenced_at)
SELECT position, n, client_id, coalesce(sequenced_at, created_at) FROM events WHERE position IS NOT NULL;
INSERT INTO events_pending (n) SELECT n FROM events WHERE position IS NULL;

DROP INDEX events_unsequenced_idx;
DROP INDEX events_client_position_idx;
ALTER TABLE events DROP COLUMN position, DROP COLUMN sequenced_at;

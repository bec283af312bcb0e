-- The relay's claim of outbox rows is a lease, not a row lock held while it publishes (db/functions/140_outbox-relay.sql,
-- docs/live.md): a relay leases a batch (lease_until) in one short transaction, publishes it with no transaction open,
-- then marks it published in another. A relay that dies in between leaves its rows to any relay once the lease ends.
ALTER TABLE outbox ADD COLUMN lease_until timestamptz;

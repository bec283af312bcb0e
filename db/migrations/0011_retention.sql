-- Retention (issue 9, hygiene): the sweeper prunes published outbox rows and old processed events in batches; these
-- indexes let each batch find its rows without scanning the table.
CREATE INDEX outbox_published_idx ON outbox (published_at) WHERE published_at IS NOT NULL;
CREATE INDEX processed_events_age_idx ON processed_events (processed_at);

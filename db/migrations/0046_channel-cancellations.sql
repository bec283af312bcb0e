-- An admin's cancelOrder of a marketplace order asks the marketplace to cancel it too, once, through the same outbox
-- as an oversell's cancellation: a channel_incidents row of kind ADMIN_CANCELLED, written in the cancelling
-- transaction, sent by the pusher outside any transaction (docs/channels.md).
ALTER TABLE channel_incidents DROP CONSTRAINT channel_incidents_kind_check;
ALTER TABLE channel_incidents ADD CONSTRAINT channel_incidents_kind_check
  CHECK (kind IN ('CHANNEL_OVERSOLD', 'ADMIN_CANCELLED'));

-- The listing trigger (db/functions/090_channels.sql) fires only for inventory rows flagged `listed`: a row is listed
-- once any channel exists (new rows are flagged at insert; the first createChannel flags every row under a SHARE lock
-- on inventory, so no row is created or changed unseen meanwhile). Until then a storefront claim pays nothing for
-- channels: the trigger's WHEN reads this column of the row being written.
ALTER TABLE inventory ADD COLUMN listed boolean NOT NULL DEFAULT false;
UPDATE inventory SET listed = true WHERE EXISTS (SELECT 1 FROM channels);

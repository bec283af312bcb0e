-- A capture that cannot succeed stops (issue: it was retried forever): each lease of a capture counts an attempt;
-- after the capture worker's bound (orders/capture.ts) the payment's capture is FAILED, for an admin to look at
-- (Order.payment.captureState) and retry by hand with captureOrder. capture_error keeps the last failure, in our words
-- and the processor's, for that admin.
ALTER TABLE payments ADD COLUMN capture_attempts integer NOT NULL DEFAULT 0 CHECK (capture_attempts >= 0);
ALTER TABLE payments ADD COLUMN capture_error text;
ALTER TABLE payments DROP CONSTRAINT payments_capture_state_check;
ALTER TABLE payments ADD CONSTRAINT payments_capture_state_check
  CHECK (capture_state IN ('NONE', 'PENDING', 'CAPTURED', 'EXTERNAL', 'FAILED'));

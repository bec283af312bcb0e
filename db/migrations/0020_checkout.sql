-- Checkout that collects the money (issue 10): payOrder on a held order (several attempts, a decline goes back to
-- HELD), confirmOrder for payments taken outside lastunit, next actions (3-D Secure), a bound on AWAITING_PAYMENT that
-- cancels at the processor first, capture and refunds. db/functions/080_checkout.sql moves these rows.

-- Each attempt has its own processor idempotency key: attempt 1 keeps the order id (as before), attempt n is
-- '<order id>:<n>'. Stored as soon as the attempt begins, with the payment method, so a timed-out authorization is
-- repeated with the same key and the same method to learn its payment (reconcile by identity, never by search).
ALTER TABLE payments ADD COLUMN idem_key text;
ALTER TABLE payments ADD COLUMN token text;
-- What a decline does: REJECT (placeOrder: the order is REJECTED, units back at once) or HOLD (payOrder: the hold
-- goes back to HELD until its expiresAt so the shopper can try another card).
ALTER TABLE payments ADD COLUMN on_decline text NOT NULL DEFAULT 'REJECT' CHECK (on_decline IN ('REJECT', 'HOLD'));
-- The processor needs the shopper (3-D Secure, redirect): {type, clientSecret, redirectUrl}.
ALTER TABLE payments ADD COLUMN next_action jsonb;
-- Past this the reconciler cancels the payment at the processor and releases only once the cancel is confirmed
-- (PAYMENT_ACTION_TIMEOUT_SECONDS while an action waits, PAYMENT_MAX_PENDING_SECONDS otherwise).
ALTER TABLE payments ADD COLUMN give_up_at timestamptz;
ALTER TABLE payments ADD COLUMN action_give_up_at timestamptz;
-- Capture (PAYMENT_CAPTURE): NONE until the order is confirmed; PENDING: to be captured (the capture worker leases
-- it); CAPTURED once; EXTERNAL: a payment taken outside lastunit (confirmOrder), nothing to capture.
ALTER TABLE payments ADD COLUMN capture_state text NOT NULL DEFAULT 'NONE'
  CHECK (capture_state IN ('NONE', 'PENDING', 'CAPTURED', 'EXTERNAL'));
ALTER TABLE payments ADD COLUMN capture_lease_until timestamptz;
ALTER TABLE payments ADD COLUMN captured_at timestamptz;

ALTER TABLE payments DROP CONSTRAINT payments_state_check;
ALTER TABLE payments ADD CONSTRAINT payments_state_check
  CHECK (state IN ('PENDING', 'UNKNOWN', 'ACTION_REQUIRED', 'AUTHORIZED', 'DECLINED', 'NOT_FOUND', 'CANCELLED', 'EXTERNAL'));
UPDATE payments SET idem_key = order_id::text WHERE idem_key IS NULL;
CREATE UNIQUE INDEX payments_idem_key_idx ON payments (idem_key);
CREATE INDEX payments_provider_ref_idx ON payments (provider_ref) WHERE provider_ref IS NOT NULL;

-- The reconciler's scan now includes payments waiting for the shopper.
DROP INDEX payments_open_idx;
CREATE INDEX payments_open_idx ON payments (next_check_at) WHERE state IN ('PENDING', 'UNKNOWN', 'ACTION_REQUIRED');
-- The capture worker's scan.
CREATE INDEX payments_capture_idx ON payments (id) WHERE capture_state = 'PENDING';

-- Which attempt a compensation gives back (its processor key), and whether the money was captured (refund) or only
-- authorized (cancel); the processor decides the same way, this is what we knew when we recorded it.
ALTER TABLE compensations ADD COLUMN payment_key text;
ALTER TABLE compensations ADD COLUMN reason text;

-- confirmOrder for a payment taken outside lastunit whose units are gone: the caller holds the money and must give it
-- back. One row per (order, reference): a retry answers the same and records nothing more.
CREATE TABLE caller_refunds (
  order_id           uuid NOT NULL REFERENCES orders (id),
  payment_reference  text NOT NULL CHECK (length(payment_reference) BETWEEN 1 AND 255),
  reason             text NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (order_id, payment_reference)
);

-- orders(customerId, status, first, after): a client's orders newest first, by (created_at, id).
CREATE INDEX orders_client_customer_idx ON orders (client_id, customer_id, created_at DESC, id DESC);

-- Drops (issue 22): a SKU's sale under a rule. QUEUE: a waiting room whose early entrants get random places at
-- opens_at; DRAW: entries, then a pick anyone can verify. While a drop governs its SKU (ended_at IS NULL), placeOrder
-- for that SKU needs an admitted entry (drop_gate, db/functions/110_drops.sql). The constraints below are the drop
-- invariants of docs/architecture.md (I17); db/functions/110_drops.sql and 111_drop-draw.sql move the rows.
CREATE TABLE drops (
  id               uuid PRIMARY KEY,
  client_id        text NOT NULL,
  create_key       text CHECK (create_key IS NULL OR length(create_key) BETWEEN 1 AND 255),
  request_hash     text,
  sku              text NOT NULL REFERENCES products (sku),
  mode             text NOT NULL CHECK (mode IN ('QUEUE', 'DRAW')),
  opens_at         timestamptz NOT NULL,
  closes_at        timestamptz NOT NULL,
  claim_seconds    integer NOT NULL CHECK (claim_seconds BETWEEN 1 AND 86400),
  max_per_customer integer NOT NULL CHECK (max_per_customer BETWEEN 1 AND 100),
  -- I17: admissions outstanding (entries ADMITTED, not yet used or lapsed); moved only with the entries it counts
  admitted         integer NOT NULL DEFAULT 0 CHECK (admitted >= 0),
  next_place       integer NOT NULL DEFAULT 1 CHECK (next_place >= 1),  -- the place the next FIFO entry takes
  shuffled_at      timestamptz,   -- QUEUE: when the early entrants got their random places
  seed             bytea NOT NULL CHECK (length(seed) = 32),  -- DRAW: secret until drawn_at (never read before)
  seed_commitment  text NOT NULL CHECK (seed_commitment ~ '^[0-9a-f]{64}$'),
  entries_digest   text CHECK (entries_digest IS NULL OR entries_digest ~ '^[0-9a-f]{64}$'),
  drawn_at         timestamptz,   -- DRAW: when the seed and the entries digest were revealed
  ended_at         timestamptz,   -- no longer governs its SKU
  created_at       timestamptz NOT NULL DEFAULT now(),
  CHECK (closes_at > opens_at),
  CHECK ((drawn_at IS NULL) = (entries_digest IS NULL)),
  UNIQUE (client_id, create_key)
);
-- I17: one drop at a time governs a SKU.
CREATE UNIQUE INDEX drops_governing_sku_idx ON drops (sku) WHERE ended_at IS NULL;

CREATE TABLE drop_entries (
  id                 uuid PRIMARY KEY,
  drop_id            uuid NOT NULL REFERENCES drops (id),
  client_id          text NOT NULL,
  customer_id        text NOT NULL,   -- the buyer as counted: a public key's `ip:<address>` unless a buyer token vouched
  idempotency_key    text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
  client_address     text,            -- public keys: the address entries are bounded by
  token_hash         text NOT NULL CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  state              text NOT NULL CHECK (state IN ('WAITING', 'ADMITTED', 'ORDERED', 'LAPSED', 'NOT_DRAWN')),
  early              boolean NOT NULL,  -- entered before opens_at (QUEUE: shuffled at opens_at)
  shuffle_key        double precision,  -- QUEUE: the random() drawn for an early entrant, recorded
  place              integer CHECK (place IS NULL OR place >= 1),  -- QUEUE: place in line; DRAW: place in draw order
  admitted_at        timestamptz,
  admission_expires_at timestamptz,
  order_id           uuid REFERENCES orders (id),
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  -- I4 for entries: one entry per customer per drop (the same key replays it)
  UNIQUE (drop_id, client_id, customer_id),
  -- I17: a place is one entry's
  UNIQUE (drop_id, place),
  -- I17: an admitted entry has its deadline; an ordered one names its order (so no entry is used twice)
  CHECK (state <> 'ADMITTED' OR admission_expires_at IS NOT NULL),
  CHECK ((state = 'ORDERED') = (order_id IS NOT NULL))
);
CREATE INDEX drop_entries_waiting_idx ON drop_entries (drop_id, place) WHERE state = 'WAITING';
CREATE INDEX drop_entries_admitted_idx ON drop_entries (admission_expires_at) WHERE state = 'ADMITTED';
CREATE INDEX drop_entries_address_idx ON drop_entries (drop_id, client_address) WHERE client_address IS NOT NULL;

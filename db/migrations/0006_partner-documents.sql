-- Partner apps' own trusted documents (docs/partners.md): an app publishes a version of its documents once; a partner key
-- naming the app (`partner:<app>:<key>`) may then run any of them by id. Rows are only ever inserted, never updated:
-- a published version is immutable (the same version again must bring the same documents, by fingerprint).

CREATE TABLE partner_app_versions (
  app           text NOT NULL CHECK (app ~ '^[a-z0-9][a-z0-9.-]{0,62}$'),  -- the client name of API_KEYS' partner:<app>:<key>
  version       text NOT NULL CHECK (version ~ '^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$'),
  fingerprint   text NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),     -- sha256 of the sorted document ids
  documents     integer NOT NULL CHECK (documents > 0),
  published_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (app, version)
);

CREATE TABLE partner_documents (
  app             text NOT NULL,
  version         text NOT NULL,
  id              text NOT NULL,
  body            text NOT NULL,
  -- the id IS the sha256 of the body as the client printed it: a row can never run other text than its id names
  CONSTRAINT partner_documents_id_is_body_sha256 CHECK (id = encode(sha256(convert_to(body, 'UTF8')), 'hex')),
  operation_name  text,
  operation_type  text NOT NULL CHECK (operation_type IN ('query', 'mutation')),
  root_fields     text[] NOT NULL,
  PRIMARY KEY (app, version, id),
  FOREIGN KEY (app, version) REFERENCES partner_app_versions (app, version)
);
-- The call-time lookup: any published version of the caller's app that holds the id.
CREATE INDEX partner_documents_id_idx ON partner_documents (app, id);

// Privacy (issue 21, README "Privacy"): the rights of the people tracked —
// erase, export, suppress, Global Privacy Control, retention.
//
// - organisations.honor_gpc: a tracking request with `Sec-GPC: 1` stores no
//   contact and causes no notification (default true);
//   organisations.visitor_retention_days: visitors not seen for that long are
//   erased by the hourly maintenance (NULL: kept).
// - privacy_requests: one erase, export or unsuppress request of an
//   organisation. The subject is kept as a keyed hash (src/privacy/
//   src/privacy/subject-hash.crypto.ts) and, only while the request is queued or running, sealed
//   with the server's key (subject_enc, cleared when it finishes: the two
//   CHECKs below hold the runner to it). person_ids: the persons the subject
//   resolved to, so a runner that takes over after a crash goes on with the
//   same ones. attempts is the claim's fencing token (src/privacy/
//   requests.repository.ts). An export's result is kept until
//   result_expires_at.
// - privacy_suppressions: the organisation's suppression list, keyed hashes
//   only.
// - deliveries: kind `erased` (the notice to receivers), and
//   deliveries_contact, an index on the contact every notification body
//   carries: how an erasure finds the deliveries about a person without
//   reading the organisation's whole outbox (every `matched` and `event`
//   body names one contact of the person it is about). It costs each new
//   delivery one parse of its body; the ingest path is otherwise unchanged.
//   deliveries_erased_unredacted (usually empty) finds the `erased` notices
//   that are finished but still carry their contact. Like every migration
//   this runs in one transaction at start: on a large deliveries table the
//   check and the index build hold up new deliveries while they run.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE organisations
      ADD COLUMN honor_gpc boolean NOT NULL DEFAULT true,
      ADD COLUMN visitor_retention_days integer CHECK (visitor_retention_days BETWEEN 1 AND 3650);

    CREATE SEQUENCE privacy_requests_id_seq AS bigint;
    CREATE TABLE privacy_requests (
      org_id bigint NOT NULL,
      id bigint NOT NULL DEFAULT nextval('privacy_requests_id_seq'),
      type text NOT NULL CHECK (type IN ('erase', 'export', 'unsuppress')),
      status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'done', 'failed')),
      suppress boolean NOT NULL DEFAULT false,
      subject_type text NOT NULL CHECK (subject_type IN ('email', 'phone', 'core_id')),
      subject_hash bytea NOT NULL,
      subject_enc text,
      requested_by bigint,
      requested_via text NOT NULL CHECK (requested_via IN ('api', 'cli')),
      created_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      finished_at timestamptz,
      attempts integer NOT NULL DEFAULT 0,
      lease_until timestamptz,
      person_ids bigint[],
      counts jsonb,
      result text,
      result_expires_at timestamptz,
      error text,
      PRIMARY KEY (org_id, id),
      CONSTRAINT privacy_requests_finished CHECK ((status IN ('done', 'failed')) = (finished_at IS NOT NULL)),
      CONSTRAINT privacy_requests_sealed_while_open CHECK (subject_enc IS NULL OR status IN ('queued', 'running'))
    );
    ALTER SEQUENCE privacy_requests_id_seq OWNED BY privacy_requests.id;
    CREATE INDEX privacy_requests_open ON privacy_requests (lease_until NULLS FIRST) WHERE status IN ('queued', 'running');
    CREATE INDEX privacy_requests_subject ON privacy_requests (org_id, subject_hash);
    CREATE INDEX privacy_requests_results ON privacy_requests (result_expires_at) WHERE result IS NOT NULL;

    CREATE TABLE privacy_suppressions (
      org_id bigint NOT NULL,
      subject_hash bytea NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      request_id bigint NOT NULL,
      PRIMARY KEY (org_id, subject_hash)
    );

    ALTER TABLE deliveries DROP CONSTRAINT deliveries_kind_check;
    ALTER TABLE deliveries ADD CONSTRAINT deliveries_kind_check CHECK (kind IN ('matched', 'event', 'erased'));
    CREATE INDEX deliveries_contact ON deliveries (org_id, ((body::jsonb) ->> 'contact'));
    CREATE INDEX deliveries_erased_unredacted ON deliveries (org_id, id)
      WHERE kind = 'erased' AND status <> 'pending' AND (body::jsonb) ? 'contact';
  `.execute(db);
}

// A schema Citus can distribute by org_id (issue 16, docs/scaling.md "Stage 2"),
// on every PostgreSQL 13+: nothing here needs Citus, `trackway migrate
// --distribute` (src/db/distribute.ts) does the distribution afterwards.
//
// - Identity columns become bigint columns with a sequence default (Citus
//   refuses to distribute a table with an identity column). Each sequence
//   keeps the name and the position of the identity's own sequence, so
//   visitors.person_id keeps drawing from persons_id_seq.
// - Unique keys without org_id go: integrations_id and deliveries_id (ids stay
//   unique: they come from sequences), and organisations' global token_hash
//   and domain_key keys. Those two lookups move into reference tables written
//   in the same transaction as the organisation: organisation_domains
//   (domain_key -> org_id, which also decides "domain taken") and
//   organisation_tokens (token_hash -> org_id).
// - integration_owners (id -> org_id), also a reference table, serves the
//   id-only integration paths (`integration/{id}`), written with each
//   integration. Deliveries are too many for that: `deliveries/{id}` looks in
//   the caller's organisations (organisation_members, a reference table).
// - organisation_members.org_id loses its foreign key to organisations: a
//   reference table cannot reference a distributed one (organisations are
//   never deleted, so the ON DELETE CASCADE never ran).
// - deliveries_pending_org: the dispatcher's claim per organisation
//   (src/webhooks/claims.repository.ts) walks it within one organisation.
import { type Kysely, sql } from 'kysely';

/** Tables whose id was an identity column (users is a reference table, the rest are tenant tables). */
const IDENTITY_TABLES = ['users', 'organisations', 'integrations', 'persons', 'contacts', 'learn_events', 'deliveries'];

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE visitors ALTER COLUMN person_id DROP DEFAULT`.execute(db);
  for (const table of IDENTITY_TABLES) {
    const seq = `${table}_id_seq`;
    const { rows } = await sql<{ last_value: string; is_called: boolean }>`
      SELECT last_value, is_called FROM ${sql.table(seq)}
    `.execute(db);
    const { last_value: lastValue, is_called: isCalled } = rows[0]!;
    await sql`ALTER TABLE ${sql.table(table)} ALTER COLUMN id DROP IDENTITY`.execute(db);
    await sql`CREATE SEQUENCE ${sql.table(seq)} AS bigint OWNED BY ${sql.raw(`${table}.id`)}`.execute(db);
    await sql`SELECT setval(${seq}, ${lastValue}::bigint, ${isCalled})`.execute(db);
    await sql`ALTER TABLE ${sql.table(table)} ALTER COLUMN id SET DEFAULT nextval(${sql.lit(seq)}::regclass)`.execute(db);
  }
  await sql`
    ALTER TABLE visitors ALTER COLUMN person_id SET DEFAULT nextval('persons_id_seq');

    CREATE TABLE organisation_domains (
      domain_key text PRIMARY KEY,
      org_id bigint NOT NULL
    );
    INSERT INTO organisation_domains (domain_key, org_id) SELECT domain_key, id FROM organisations;

    CREATE TABLE organisation_tokens (
      token_hash bytea PRIMARY KEY,
      org_id bigint NOT NULL
    );
    INSERT INTO organisation_tokens (token_hash, org_id) SELECT token_hash, id FROM organisations;

    CREATE TABLE integration_owners (
      id bigint PRIMARY KEY,
      org_id bigint NOT NULL
    );
    INSERT INTO integration_owners (id, org_id) SELECT id, org_id FROM integrations;

    ALTER TABLE organisations DROP CONSTRAINT organisations_token_hash_key;
    ALTER TABLE organisations DROP CONSTRAINT organisations_domain_key_key;
    DROP INDEX integrations_id;
    DROP INDEX deliveries_id;
    ALTER TABLE organisation_members DROP CONSTRAINT organisation_members_org_id_fkey;

    CREATE INDEX deliveries_pending_org ON deliveries (org_id, integration_id, next_attempt_at) WHERE status = 'pending';
  `.execute(db);
}

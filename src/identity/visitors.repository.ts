// Reads of visitors and their contacts, scoped by organisation: for the
// platform API, and a person's contacts for the ingest's event exports.
import { sql } from 'kysely';
import { type Database, PREPARE } from '../db/database.ts';
import { type Executor, orgScoped, type OrgId } from '../db/tenancy.ts';

const VISITOR_COLUMNS = ['core_id', 'roaming_id', 'corex_id', 'name', 'person_id', 'first_seen', 'last_seen', 'user_agent', 'location'] as const;

export function findVisitor(db: Database, orgId: OrgId, coreId: string) {
  return orgScoped(db, orgId).selectFrom('visitors').select(VISITOR_COLUMNS).where('core_id', '=', coreId).executeTakeFirst();
}

export interface VisitorQuery {
  orgId: OrgId;
  contactsOnly: boolean;
  /** [last_seen ISO, core_id] of the last item of the previous page */
  after?: [string, string];
  limit: number;
}

export function listVisitors(db: Database, q: VisitorQuery) {
  let query = orgScoped(db, q.orgId)
    .selectFrom('visitors as v')
    .select(VISITOR_COLUMNS.map((c) => `v.${c}` as const));
  if (q.contactsOnly) {
    query = query.where(({ exists, selectFrom }) =>
      exists(selectFrom('contacts as c').select('c.id').where('c.org_id', '=', q.orgId).whereRef('c.person_id', '=', 'v.person_id')),
    );
  }
  if (q.after) {
    const [at, core] = q.after;
    query = query.where(sql<boolean>`(v.last_seen, v.core_id) < (${at}::timestamptz, ${core})`);
  }
  return query
    .orderBy('v.last_seen', 'desc')
    .orderBy('v.core_id', 'desc')
    .limit(q.limit + 1)
    .execute();
}

/** Contacts of several persons of one organisation; `verified` when a link to it was made with a valid hash. */
export async function contactsOfPersons(db: Database, orgId: OrgId, persons: number[]) {
  if (persons.length === 0) return [];
  return orgScoped(db, orgId)
    .selectFrom('contacts as c')
    .select(['c.person_id', 'c.type', 'c.value'])
    .select(({ exists, selectFrom }) =>
      exists(
        selectFrom('visitor_contacts as vc')
          .select('vc.contact_id')
          .where('vc.org_id', '=', orgId)
          .whereRef('vc.contact_id', '=', 'c.id')
          .where('vc.verified', '=', true),
      )
        .$castTo<boolean>()
        .as('verified'),
    )
    .where('c.person_id', 'in', persons)
    .orderBy('c.id')
    .execute();
}

/** Visitors last seen since `since`, and of those, since `recentSince`. */
export async function visitorsSeen(db: Database, orgId: OrgId, since: Date, recentSince: Date) {
  const row = await orgScoped(db, orgId)
    .selectFrom('visitors')
    .select([sql<string>`count(*)`.as('total'), sql<string>`count(*) FILTER (WHERE last_seen >= ${recentSince})`.as('recent')])
    .where('last_seen', '>=', since)
    .executeTakeFirstOrThrow();
  return { total: Number(row.total), recent: Number(row.recent) };
}

/** Distinct contacts linked to a visitor since `since`, and of those, since `recentSince`. */
export async function contactsLinked(db: Database, orgId: OrgId, since: Date, recentSince: Date) {
  const row = await orgScoped(db, orgId)
    .selectFrom('visitor_contacts')
    .select([
      sql<string>`count(DISTINCT contact_id)`.as('total'),
      sql<string>`count(DISTINCT contact_id) FILTER (WHERE linked_at >= ${recentSince})`.as('recent'),
    ])
    .where('linked_at', '>=', since)
    .executeTakeFirstOrThrow();
  return { total: Number(row.total), recent: Number(row.recent) };
}

/**
 * The contacts of several persons of one organisation in one read (an ingest
 * batch's exported events, and a person an identify of the batch changed:
 * src/identity/stitching.service.ts readContacts and contacts): each with
 * its person and the visitors that verified it, in id order. The links'
 * organisation is the parameter, not `c.org_id`: a correlated organisation
 * kept Citus from routing the read to one shard (it ran on all 32). Every
 * batch with exported events reads it, so it is a fixed text, prepared once
 * per connection, not built per batch (test/identity/contacts-read.test.ts
 * checks its generic plan).
 */
export async function contactsOfPersonsSeen(tx: Executor, orgId: OrgId, persons: readonly number[]) {
  const { rows } = await sql<{ person_id: number; type: 'EMAIL' | 'PHONE'; value: string; verified_by: string[] }>`${sql.raw(PREPARE)}
    SELECT c.person_id, c.type, c.value,
           ARRAY(SELECT vc.core_id FROM visitor_contacts vc
                 WHERE vc.org_id = ${orgId} AND vc.contact_id = c.id AND vc.verified = true) AS verified_by
    FROM contacts c
    WHERE c.org_id = ${orgId} AND c.person_id = ANY(${[...persons]}::bigint[])
    ORDER BY c.id
  `.execute(tx);
  return rows;
}

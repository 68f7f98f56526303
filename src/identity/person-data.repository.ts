// A person's identity records for privacy requests (src/privacy/): which
// person a subject names, the person's visitors, contacts and profile (an
// export reads them, an erasure deletes them: person-erasure.repository.ts),
// and the visitors retention finds too old. Kysely only; every statement
// names its organisation.
import type { Location, RecentView } from '../db/schema.ts';
import { type Executor, orgScoped, type OrgId } from '../db/tenancy.ts';
import type { ContactType } from './normalise.rules.ts';

/** The person a contact (its value as stored) belongs to. */
export async function personOfContact(db: Executor, orgId: OrgId, type: ContactType, value: string): Promise<number | undefined> {
  const row = await orgScoped(db, orgId)
    .selectFrom('contacts')
    .select('person_id')
    .where('type', '=', type)
    .where('value', '=', value)
    .executeTakeFirst();
  return row?.person_id;
}

/** The person a visitor belongs to. */
export async function personOfVisitor(db: Executor, orgId: OrgId, coreId: string): Promise<number | undefined> {
  const row = await orgScoped(db, orgId).selectFrom('visitors').select('person_id').where('core_id', '=', coreId).executeTakeFirst();
  return row?.person_id;
}

export interface PersonVisitor {
  core_id: string;
  roaming_id: string;
  corex_id: string | null;
  name: string | null;
  first_seen: Date;
  last_seen: Date;
  user_agent: string | null;
  location: Location | null;
  person_id: number;
}

/** The persons' visitors, by core_id, after `afterCoreId` when given (pages of `limit`). */
export function visitorsOfPersons(
  db: Executor,
  orgId: OrgId,
  persons: readonly number[],
  limit: number,
  afterCoreId?: string,
): Promise<PersonVisitor[]> {
  if (persons.length === 0) return Promise.resolve([]);
  let q = orgScoped(db, orgId)
    .selectFrom('visitors')
    .select(['core_id', 'roaming_id', 'corex_id', 'name', 'first_seen', 'last_seen', 'user_agent', 'location', 'person_id'])
    .where('person_id', 'in', persons);
  if (afterCoreId !== undefined) q = q.where('core_id', '>', afterCoreId);
  return q.orderBy('core_id').limit(limit).execute();
}

export interface PersonContact {
  id: number;
  type: ContactType;
  value: string;
  created_at: Date;
  verified: boolean;
}

/** The persons' contacts, oldest first; `verified` when a link to it was made with a valid hash. */
export function contactsOfPersons(db: Executor, orgId: OrgId, persons: readonly number[]): Promise<PersonContact[]> {
  if (persons.length === 0) return Promise.resolve([]);
  return orgScoped(db, orgId)
    .selectFrom('contacts as c')
    .select(['c.id', 'c.type', 'c.value', 'c.created_at'])
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

export interface PersonProfileRow {
  id: number;
  last_view: RecentView[];
  last_cart_product_id: number | null;
  last_cart_url: string | null;
  last_cart_at: Date | null;
}

/** The persons' recent-activity profiles (a person without activity has none). */
export function profilesOfPersons(db: Executor, orgId: OrgId, persons: readonly number[]): Promise<PersonProfileRow[]> {
  if (persons.length === 0) return Promise.resolve([]);
  return orgScoped(db, orgId)
    .selectFrom('persons')
    .select(['id', 'last_view', 'last_cart_product_id', 'last_cart_url', 'last_cart_at'])
    .where('id', 'in', persons)
    .orderBy('id')
    .execute();
}

/** Up to `limit` visitors not seen since `before`, oldest first (visitors_last_seen): what retention erases. */
export function visitorsNotSeenSince(db: Executor, orgId: OrgId, before: Date, limit: number): Promise<{ core_id: string; person_id: number }[]> {
  return (
    orgScoped(db, orgId)
      .selectFrom('visitors')
      .select(['core_id', 'person_id'])
      .where('last_seen', '<', before)
      // the order of a backward scan of visitors_last_seen (org_id, last_seen DESC, core_id): no sort
      .orderBy('last_seen', 'asc')
      .orderBy('core_id', 'desc')
      .limit(limit)
      .execute()
  );
}

/** Which of `persons` have a visitor seen since `since` (retention keeps them). */
export async function personsSeenSince(db: Executor, orgId: OrgId, persons: readonly number[], since: Date): Promise<number[]> {
  if (persons.length === 0) return [];
  const rows = await orgScoped(db, orgId)
    .selectFrom('visitors')
    .select('person_id')
    .distinct()
    .where('person_id', 'in', persons)
    .where('last_seen', '>=', since)
    .execute();
  return rows.map((r) => r.person_id);
}

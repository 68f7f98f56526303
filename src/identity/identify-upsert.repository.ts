// A batch's visitors upsert and one organisation's identifies that meet no
// other identify of the batch, in ONE statement (Stitching.touchVisitors):
// the contacts and links identifyContactsTogether (identity.repository.ts)
// would write right after the upsert, written by CTEs of the upsert itself,
// with each identify's person taken from the upsert's RETURNING. One round
// trip per batch less, and the statement is prepared once (fixed text).
//
// Only for a batch that brings no corex_id (so nothing is stitched after the
// upsert, and the person the upsert returns is the one identifyTogether would
// have used) and that holds an identify (so every visitor is written and
// returned: a forced touch, see visitorsUpsert). Locks are taken in the same
// order as the two statements took them: all visitors first (the contacts'
// ORDER BY reads the whole upsert before inserting any contact), then the
// contacts in (type, value) order.
//
// Outside a transaction (`refuseMerges`: a batch of such identifies and
// nothing else, Stitching.identifyAloneAtOnce) the statement is the whole
// batch, unless a contact it meets belongs to another person: the two
// persons must then be merged, which takes more statements. It then raises
// (trackway_refuse, SQLSTATE TW001) and is undone whole, and the caller
// writes the batch in a transaction instead (isMergeRefusal).
import { type RawBuilder, sql } from 'kysely';
import { PREPARE } from '../db/database.ts';
import type { Executor, OrgId } from '../db/tenancy.ts';
import { contactsThenLinks, type IdentifiedContact, type IdentifyRow, type TouchedVisitor } from './identity.repository.ts';
import { type VisitorTouch, visitorsUpsert } from './visitors-upsert.repository.ts';

/** The SQLSTATE of trackway_refuse (migration 2026-11-27T0100): the statement wrote nothing. */
const REFUSED = 'TW001';

/** Whether a `refuseMerges` statement refused (a contact of another person): nothing was written. */
export function isMergeRefusal(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === REFUSED;
}

/** The identifies of one organisation written with the upsert (their person comes from it). */
export type IdentifyAhead = Omit<IdentifyRow, 'person'>;

type Row = {
  org_id: OrgId;
  core_id: string;
  person_id: number;
  corex_id: string | null;
  inserted: boolean | null;
  /** null on a visitor's row; a contact's id on a contact's row */
  id: number | null;
  type: 'EMAIL' | 'PHONE';
  value: string;
  created: boolean;
  linked: boolean;
  verified: boolean;
};

/**
 * upsertVisitors (no corex_id in `rows`, at least one forced) and
 * identifyContactsTogether for `orgId`'s `identifies`, in one statement.
 * Returns the visitors as upsertVisitors does and each identify's contacts
 * (in its claim's order) as identifyContactsTogether does.
 */
export async function upsertVisitorsIdentifying(
  tx: Executor,
  rows: VisitorTouch[],
  orgId: OrgId,
  identifies: IdentifyAhead[],
  alongside?: RawBuilder<unknown>,
  { refuseMerges = false }: { refuseMerges?: boolean } = {},
): Promise<{ visitors: TouchedVisitor[]; contacts: Map<string, (IdentifiedContact & { created: boolean })[]> }> {
  if (rows.some((r) => r.corexId !== null) || !rows.some((r) => r.force)) {
    throw new Error('upsertVisitorsIdentifying: only for a batch without corex_id that holds an identify');
  }
  const input = JSON.stringify(
    identifies.flatMap((r) => r.contacts.map((c) => ({ core_id: r.coreId, type: c.type, value: c.value, verified: c.verified }))),
  );
  const { rows: out } = await sql<Row>`${sql.raw(PREPARE)}WITH ${alongside ? sql`alongside AS (${alongside}),` : sql``}
    touched AS (
      ${visitorsUpsert(rows)}
      RETURNING v.org_id, v.core_id, v.person_id, v.corex_id, (xmax = 0) AS inserted
    ),
    input AS (
      SELECT * FROM jsonb_to_recordset(${input}::jsonb) AS x(core_id text, type text, value text, verified boolean)
    ),
    ${contactsThenLinks(
      orgId,
      sql`SELECT t.org_id, i.type, i.value, t.person_id
      FROM input i JOIN touched t ON t.org_id = ${orgId}::bigint AND t.core_id = i.core_id
      ORDER BY i.type, i.value`,
    )}
    SELECT t.org_id, t.core_id, t.person_id, t.corex_id, t.inserted,
      NULL::bigint AS id, NULL::text AS type, NULL::text AS value, NULL::boolean AS created, NULL::boolean AS linked, NULL::boolean AS verified
    FROM touched t
    UNION ALL
    SELECT ${orgId}::bigint, i.core_id, c.person_id, NULL, NULL, c.id, c.type, c.value, c.created,
      EXISTS (SELECT 1 FROM l WHERE l.core_id = i.core_id AND l.contact_id = c.id AND l.inserted),
      i.verified
    FROM c JOIN input i ON i.type = c.type AND i.value = c.value${
      refuseMerges
        ? sql`
    JOIN touched t ON t.org_id = ${orgId}::bigint AND t.core_id = i.core_id
    WHERE CASE WHEN c.person_id = t.person_id THEN true ELSE trackway_refuse('a contact of another person: the persons must merge') END`
        : sql``
    }
  `.execute(tx);
  const visitors: TouchedVisitor[] = [];
  const contacts = new Map<string, (IdentifiedContact & { created: boolean })[]>();
  for (const r of out) {
    if (r.id === null) {
      // no corex_id in the batch: no row's corex_id moved
      visitors.push({
        org_id: r.org_id,
        core_id: r.core_id,
        person_id: r.person_id,
        corex_id: r.corex_id,
        old_corex_id: r.corex_id,
        inserted: r.inserted!,
      });
      continue;
    }
    const contact = { id: r.id, type: r.type, value: r.value, person_id: r.person_id, linked: r.linked, verified: r.verified, created: r.created };
    const list = contacts.get(r.core_id);
    if (list) list.push(contact);
    else contacts.set(r.core_id, [contact]);
  }
  if (visitors.length !== rows.length) throw new Error(`upsertVisitorsIdentifying: ${visitors.length} of ${rows.length} visitors returned`);
  // the claim's order (EMAIL before PHONE, as identifyContacts returns them)
  for (const r of identifies) {
    if (r.contacts.length < 2) continue;
    const order = new Map(r.contacts.map((c, i) => [`${c.type}:${c.value}`, i]));
    contacts.get(r.coreId)?.sort((a, b) => order.get(`${a.type}:${a.value}`)! - order.get(`${b.type}:${b.value}`)!);
  }
  return { visitors, contacts };
}

// The visitors upsert as a statement fragment: identity's write of its own
// table, which two callers carry with another statement in one round trip
// (upsertVisitors below in identity.repository.ts, with the batch's events
// insert as a CTE; tracking's plain batch, src/tracking/plain-batch.repository.ts,
// as one CTE beside its events insert). The one place where a statement
// writes two areas' tables: each area builds its own part (eslint.boundaries.js
// EXPOSED says so), and docs/architecture.md explains why.
import { sql } from 'kysely';
import type { Location } from '../db/schema.ts';
import type { OrgId } from '../db/tenancy.ts';
import { isoTimestamp } from '../db/timestamps.ts';

export interface VisitorTouch {
  orgId: OrgId;
  coreId: string;
  roamingId: string;
  corexId: string | null;
  firstSeen: Date;
  lastSeen: Date;
  userAgent: string | null;
  location: Location | null;
  /** written even when fresh and unchanged (an identify: the visitor list shows it as the latest activity) */
  force?: boolean;
  /** the name the batch's last identify with one gave (identifies force the write); absent or null: kept as it is */
  name?: string | null;
}

/**
 * A returning visitor's row is rewritten only when something about it changed
 * (roaming_id, user agent, location, corex_id) or its last_seen is older than
 * this: last_seen (and the visitors_last_seen index entry every rewrite
 * makes) moves at most once per interval while the visitor browses.
 */
export const VISITOR_TOUCH_SECONDS = 60;

/**
 * Whether a stored visitor (`stored`) must be rewritten for an incoming touch
 * (`incoming`): something about it changed or its last_seen is stale. The age
 * is a difference of two timestamps compared with an interval: `timestamptz -
 * timestamptz` is immutable where `timestamptz - interval` is not, and Citus
 * refuses non-immutable functions in ON CONFLICT.
 */
function worthAWrite(stored: string, incoming: string): string {
  const [v, x] = [stored, incoming];
  return `${x}.last_seen - ${v}.last_seen > interval '${VISITOR_TOUCH_SECONDS} seconds'
      OR ${v}.roaming_id IS DISTINCT FROM ${x}.roaming_id
      OR (${x}.user_agent IS NOT NULL AND ${v}.user_agent IS DISTINCT FROM ${x}.user_agent)
      OR (${x}.location IS NOT NULL AND ${v}.location IS DISTINCT FROM ${x}.location)
      OR (${x}.corex_id IS NOT NULL AND ${v}.corex_id IS DISTINCT FROM ${x}.corex_id)
      OR (${x}.name IS NOT NULL AND ${v}.name IS DISTINCT FROM ${x}.name)`;
}

/** The condition under which ON CONFLICT rewrites an existing visitor (the rest are only locked). */
const WORTH_A_WRITE_SQL = `
    WHERE ${worthAWrite('v', 'EXCLUDED')}`;

/** last_seen under `hold`: the one value an unchanged touch would still move (and an indexed one) stays. */
const HELD_LAST_SEEN_SQL = `CASE WHEN ${worthAWrite('v', 'EXCLUDED')} THEN GREATEST(v.last_seen, EXCLUDED.last_seen) ELSE v.last_seen END`;

/** A visitor touch as it travels in the upsert's jsonb parameter. */
function visitorTouchJson(r: VisitorTouch) {
  return {
    org_id: r.orgId,
    core_id: r.coreId,
    roaming_id: r.roamingId,
    corex_id: r.corexId,
    first_seen: isoTimestamp(r.firstSeen),
    last_seen: isoTimestamp(r.lastSeen),
    user_agent: r.userAgent,
    location: r.location,
    name: r.name ?? null,
  };
}

/**
 * How the upsert treats a stored visitor whose touch is not worth a write:
 * - `skip` (the default): ON CONFLICT's WHERE leaves it as it is (only
 *   locked), and RETURNING does not return it;
 * - `hold`: it is rewritten with its own values (a HOT update: no indexed
 *   column moves), so that RETURNING gives every visitor of the batch with
 *   its person_id under its row lock, as of its latest version. The plain
 *   batch asks for it when its events record a view or a cart
 *   (src/identity/profile-upsert.repository.ts needs each marked visitor's
 *   person); `v.last_seen` older than the touch's tells such a row from one
 *   the touch wrote.
 */
export type UnchangedVisitors = 'skip' | 'hold';

/**
 * The upsert of a batch's visitors, without RETURNING (upsertVisitors adds
 * its own; the plain batch carries it as a CTE). All rows travel as one jsonb
 * parameter: one statement text whatever the batch size.
 */
export function visitorsUpsert(rows: VisitorTouch[], unchanged: UnchangedVisitors = 'skip') {
  const data = JSON.stringify(rows.map(visitorTouchJson));
  // a batch with a forced touch writes all its visitors (identifies are few beside events)
  const force = rows.some((r) => r.force);
  const WORTH_A_WRITE = sql.raw(force || unchanged === 'hold' ? '' : WORTH_A_WRITE_SQL);
  const LAST_SEEN = sql.raw(unchanged === 'hold' && !force ? HELD_LAST_SEEN_SQL : 'GREATEST(v.last_seen, EXCLUDED.last_seen)');
  const COREX = sql.raw(rows.some((r) => r.corexId !== null) ? 'corex_id = COALESCE(EXCLUDED.corex_id, v.corex_id),' : '');
  return sql`INSERT INTO visitors AS v (org_id, core_id, roaming_id, corex_id, first_seen, last_seen, user_agent, location, name)
    SELECT * FROM jsonb_to_recordset(${data}::jsonb) AS x(
      org_id bigint, core_id text, roaming_id text, corex_id text,
      first_seen timestamptz, last_seen timestamptz, user_agent text, location jsonb, name text)
    ON CONFLICT (org_id, core_id) DO UPDATE SET
      roaming_id = EXCLUDED.roaming_id,
      ${COREX}
      last_seen = ${LAST_SEEN},
      user_agent = COALESCE(EXCLUDED.user_agent, v.user_agent),
      location = COALESCE(EXCLUDED.location, v.location),
      name = COALESCE(EXCLUDED.name, v.name)
    ${WORTH_A_WRITE}`;
}

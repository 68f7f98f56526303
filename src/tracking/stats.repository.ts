// Event counts of one organisation for getOrganisationStats (visitors and
// contacts are identity's: identity/visitors.service.ts). Kysely only, a range
// on the primary key (org_id, received_at, id), with a received_at range so
// only the monthly partitions of the window are read.
import { sql } from 'kysely';
import type { Database } from '../db/database.ts';
import { orgScoped, type OrgId } from '../db/tenancy.ts';

export interface HourBucket {
  hour: Date;
  /** events of the hour */
  count: number;
  /** of those, events at or after the start of the short window */
  recent: number;
}

/**
 * Events per UTC hour from `since` to `until`, for buckets that have any;
 * `recent` counts the ones at or after `recentSince` (the short window).
 */
export async function eventsPerHour(db: Database, orgId: OrgId, since: Date, recentSince: Date, until: Date): Promise<HourBucket[]> {
  const rows = await orgScoped(db, orgId)
    .selectFrom('events')
    .select([
      sql<Date>`date_trunc('hour', received_at, 'UTC')`.as('hour'),
      sql<string>`count(*)`.as('count'),
      sql<string>`count(*) FILTER (WHERE received_at >= ${recentSince})`.as('recent'),
    ])
    .where('received_at', '>=', since)
    .where('received_at', '<=', until)
    .groupBy(sql`1`)
    .execute();
  return rows.map((r) => ({ hour: r.hour, count: Number(r.count), recent: Number(r.recent) }));
}

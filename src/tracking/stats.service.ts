// getOrganisationStats: activity of an organisation assigned to the caller
// over rolling windows ending now (24 hours and 7 days), and events per UTC
// hour for the last 24 hours (the current, partial hour last); the requests
// kept out as bots by reason, in whole UTC hours (bot-counts.service.ts).
import type { Deps } from '../deps.ts';
import type { Principal, Schemas } from '../http/types.ts';
import { requireOrganisation } from '../platform/access.service.ts';
import { visitorActivity } from '../identity/visitors.service.ts';
import { eventsPerHour } from './stats.repository.ts';
import { botCountsSince } from './bot-counts.repository.ts';
import type { OrgId } from '../db/tenancy.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export async function organisationStats(
  deps: Pick<Deps, 'db'>,
  principal: Principal,
  orgId: OrgId,
  now = new Date(),
): Promise<Schemas['OrganisationStats']> {
  await requireOrganisation(deps.db, principal, orgId);
  const dayAgo = new Date(now.getTime() - DAY);
  const weekAgo = new Date(now.getTime() - 7 * DAY);
  const firstHour = Math.floor(now.getTime() / HOUR) * HOUR - 23 * HOUR;
  const [buckets, { visitors, contacts }, bots] = await Promise.all([
    eventsPerHour(deps.db, orgId, weekAgo, dayAgo, now),
    visitorActivity(deps, orgId, weekAgo, dayAgo),
    botCountsSince(deps.db, orgId, new Date(firstHour - 144 * HOUR), new Date(firstHour)),
  ]);
  const byHour = new Map(buckets.map((b) => [b.hour.getTime(), b.count]));
  const bots_24h = { user_agent: 0, webdriver: 0 };
  const bots_7d = { user_agent: 0, webdriver: 0 };
  for (const b of bots) {
    bots_24h[b.reason] = b.day;
    bots_7d[b.reason] = b.week;
  }
  const events_per_hour = Array.from({ length: 24 }, (_, i) => {
    const at = firstHour + i * HOUR;
    return { hour: new Date(at).toISOString(), count: byHour.get(at) ?? 0 };
  });
  return {
    visitors_24h: visitors.recent,
    visitors_7d: visitors.total,
    contacts_24h: contacts.recent,
    contacts_7d: contacts.total,
    events_24h: buckets.reduce((n, b) => n + b.recent, 0),
    events_7d: buckets.reduce((n, b) => n + b.count, 0),
    events_per_hour,
    bots_24h,
    bots_7d,
  };
}

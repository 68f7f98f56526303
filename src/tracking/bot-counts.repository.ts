// bot_requests (migration 2026-11-26T0300): tracking requests kept out as
// bots, per organisation, UTC hour and reason. Kysely only; every statement
// names its organisation (one shard under Citus) and takes its times as
// parameters.
import { sql } from 'kysely';
import type { Database } from '../db/database.ts';
import { orgScoped, type OrgId } from '../db/tenancy.ts';
import type { BotReason } from './bots.rules.ts';

export interface BotCountRow {
  hour: Date;
  reason: BotReason;
  requests: number;
}

/** Adds these counts to the organisation's rows (one statement). */
export async function addBotCounts(db: Database, orgId: OrgId, rows: readonly BotCountRow[]): Promise<void> {
  await db
    .insertInto('bot_requests')
    .values(rows.map((r) => ({ org_id: orgId, hour: r.hour, reason: r.reason, requests: r.requests })))
    .onConflict((oc) => oc.columns(['org_id', 'hour', 'reason']).doUpdateSet({ requests: sql<number>`bot_requests.requests + excluded.requests` }))
    .execute();
}

/** Deletes the organisation's rows of hours before `before`. */
export async function pruneBotCounts(db: Database, orgId: OrgId, before: Date): Promise<void> {
  await orgScoped(db, orgId).deleteFrom('bot_requests').where('hour', '<', before).execute();
}

/** Requests kept out per reason: since `weekStart`, and of those since `dayStart` (hours at or after). */
export async function botCountsSince(
  db: Database,
  orgId: OrgId,
  weekStart: Date,
  dayStart: Date,
): Promise<{ reason: BotReason; week: number; day: number }[]> {
  const rows = await orgScoped(db, orgId)
    .selectFrom('bot_requests')
    .select(['reason', sql<string>`sum(requests)`.as('week'), sql<string>`coalesce(sum(requests) FILTER (WHERE hour >= ${dayStart}), 0)`.as('day')])
    .where('hour', '>=', weekStart)
    .groupBy('reason')
    .execute();
  return rows.map((r) => ({ reason: r.reason, week: Number(r.week), day: Number(r.day) }));
}

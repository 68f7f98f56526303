// The locking read of the visitors a batch may stitch (upsertVisitors in
// identity.repository.ts): one statement per organisation, `org_id = $1`,
// which is the only form of FOR UPDATE that Citus runs (on one shard).
import { sql } from 'kysely';
import { PREPARE } from '../db/database.ts';
import type { Executor, OrgId } from '../db/tenancy.ts';
import type { VisitorTouch } from './visitors-upsert.repository.ts';

/** The key of a visitor in the maps of a batch. */
export function visitorKey(orgId: OrgId | string, coreId: string): string {
  return `${orgId}\u0000${coreId}`;
}

/** Locks the rows' existing visitors and reads their corex_id, one statement per organisation. */
export async function lockCorexIds(tx: Executor, rows: VisitorTouch[]): Promise<Map<string, string | null>> {
  const byOrg = new Map<OrgId, string[]>();
  for (const r of rows) {
    const coreIds = byOrg.get(r.orgId) ?? [];
    coreIds.push(r.coreId);
    byOrg.set(r.orgId, coreIds);
  }
  const before = new Map<string, string | null>();
  for (const [orgId, coreIds] of byOrg) {
    const { rows: locked } = await sql<{ core_id: string; corex_id: string | null }>`${sql.raw(PREPARE)}
      SELECT core_id, corex_id FROM visitors WHERE org_id = ${orgId} AND core_id = ANY(${coreIds}::text[]) FOR UPDATE
    `.execute(tx);
    for (const v of locked) before.set(visitorKey(orgId, v.core_id), v.corex_id);
  }
  return before;
}

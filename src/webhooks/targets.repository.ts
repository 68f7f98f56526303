// The NOTIFY behind the target cache's invalidation (targets.service.ts).
import { sql } from 'kysely';
import { INTEGRATIONS_CHANNEL } from '../db/notifications.ts';
import type { Tx, OrgId } from '../db/tenancy.ts';

/** Tells every process (after commit) that this organisation's integrations changed. */
export async function announceIntegrationChange(tx: Tx, orgId: OrgId): Promise<void> {
  await sql`SELECT pg_notify(${INTEGRATIONS_CHANNEL}, ${String(orgId)})`.execute(tx);
}

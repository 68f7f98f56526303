// One index entry less per delivery written (issue 24): deliveries_pending_integration
// (integration_id, next_attempt_at) WHERE pending duplicated deliveries_pending_org
// (org_id, integration_id, next_attempt_at) WHERE pending for every statement that
// could use it: each names its organisation (tenant isolation), so the claim's walk of
// the integrations, the backlog count per integration and the cancellation of an
// integration's deliveries all take deliveries_pending_org. Every delivery entered it
// twice (at its insert and at each claim, which moves next_attempt_at to the lease end).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS deliveries_pending_integration`.execute(db);
}

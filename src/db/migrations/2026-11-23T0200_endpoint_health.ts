// Fair dispatch and the circuit breaker (docs/design.md "Trust").
//
// webhook_endpoint_health: the health of each integration's endpoint, shared
// by every dispatcher process. A row exists only while the endpoint is
// failing (or was disabled for it); a success deletes it. Kept apart from the
// integrations row on purpose: integrations.modified_at versions the
// dispatcher's credential cache and must not move with every failure.
//
// deliveries_pending_integration replaces deliveries_integration_pending: the
// claim walks the integrations that have pending deliveries (a loose index
// scan, one descent per integration) and takes each one's oldest due
// deliveries in order, so it needs next_attempt_at after integration_id. The
// backlog counter and the cancellation of an integration's deliveries use it
// as they used the old index.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE webhook_endpoint_health (
      org_id bigint NOT NULL,
      integration_id bigint NOT NULL,
      consecutive_failures integer NOT NULL DEFAULT 0,
      failing_since timestamptz,
      last_failure_at timestamptz,
      last_error text,
      opened_count integer NOT NULL DEFAULT 0,
      paused_until timestamptz,
      disabled_at timestamptz,
      disabled_reason text,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (org_id, integration_id)
    );
    CREATE INDEX deliveries_pending_integration ON deliveries (integration_id, next_attempt_at) WHERE status = 'pending';
    DROP INDEX deliveries_integration_pending;
  `.execute(db);
}

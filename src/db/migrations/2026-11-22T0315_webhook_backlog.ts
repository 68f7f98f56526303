// The bound on the outbox backlog per integration (WEBHOOK_MAX_BACKLOG): a
// row here means the integration has at least that many pending deliveries,
// and the outbox writes its new deliveries as failed ("backlog limit
// reached", retryable through the API) instead of pending. Kept fresh by a
// periodic counter in the webhook runtime (src/webhooks/backlog.worker.ts); usually
// empty, read by the outbox insert through its primary key.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE webhook_backlog_limits (
      org_id bigint NOT NULL,
      integration_id bigint NOT NULL,
      pending integer NOT NULL,
      since timestamptz NOT NULL DEFAULT now(),
      checked_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (org_id, integration_id)
    );
  `.execute(db);
}

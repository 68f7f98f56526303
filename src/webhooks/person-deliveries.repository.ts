// The deliveries about a person, for privacy requests (src/privacy/): read
// for an export, deleted by an erasure, and the erasure's own notices
// (contactErased) written and later redacted. Kysely only; every statement
// names its organisation.
//
// How the deliveries about a person are found: every `matched` and `event`
// body names exactly one contact of the person it is about (event exports go
// once per contact of the event's person; a match names its contact), and a
// contact only ever moves with its whole person. So "the deliveries whose
// `contact` is one of the person's contacts" is exactly the person's
// deliveries. The outbox writes that contact beside the body, in the column
// `contact` (migration 2026-11-27T0200: an index on the body's expression
// parsed the body with every row version), and the index deliveries_contact
// (org_id, contact) finds them without reading anyone else's. A person
// without a contact has no deliveries.
import { sql } from 'kysely';
import { ALL_ORGANISATIONS, PREPARE } from '../db/database.ts';
import type { DeliveryKind, DeliveryStatus } from '../db/schema.ts';
import type { Executor, Tx, OrgId } from '../db/tenancy.ts';
import { DELIVERIES_CHANNEL } from '../db/notifications.ts';
import { notifyPayload } from './outbox.repository.ts';

export interface PersonDelivery {
  id: number;
  integration_id: number;
  kind: DeliveryKind;
  status: DeliveryStatus;
  created_at: Date;
  delivered_at: Date | null;
  body: string;
}

/** The deliveries naming one of `contacts` (values as stored), oldest first, after id `afterId`: an export's notifications. */
export async function deliveriesAbout(
  db: Executor,
  orgId: OrgId,
  contacts: readonly string[],
  afterId: number,
  limit: number,
): Promise<PersonDelivery[]> {
  if (contacts.length === 0) return [];
  const { rows } = await sql<PersonDelivery>`
    SELECT d.id, d.integration_id, d.kind, d.status, d.created_at, d.delivered_at, d.body
    FROM deliveries d
    WHERE d.org_id = ${orgId}::bigint AND d.contact = ANY(${contacts}::text[]) AND d.kind <> 'erased' AND d.id > ${afterId}::bigint
    ORDER BY d.id
    LIMIT ${limit}::int
  `.execute(db);
  return rows;
}

/**
 * Deletes up to `limit` deliveries naming one of `contacts` (whatever their
 * status: a pending one is never sent; an attempt in flight records nothing,
 * its outcome finding no row) and their attempts, whose response excerpts
 * may echo the contact. The erasure's own notices are left alone. Returns how
 * many deliveries went.
 */
export async function deleteDeliveriesAbout(tx: Tx, orgId: OrgId, contacts: readonly string[], limit: number): Promise<number> {
  if (contacts.length === 0) return 0;
  const { rows } = await sql<{ id: number }>`
    DELETE FROM deliveries d
    WHERE d.org_id = ${orgId}::bigint AND d.id IN (
      SELECT x.id FROM deliveries x
      WHERE x.org_id = ${orgId}::bigint AND x.contact = ANY(${contacts}::text[]) AND x.kind <> 'erased'
      LIMIT ${limit}::int
    )
    RETURNING d.id
  `.execute(tx);
  if (rows.length === 0) return 0;
  await sql`
    DELETE FROM delivery_attempts WHERE org_id = ${orgId}::bigint AND delivery_id = ANY(${rows.map((r) => r.id)}::bigint[])
  `.execute(tx);
  return rows.length;
}

/**
 * Writes the erasure notices, pending and due now, in the caller's
 * transaction (the one that deletes the contacts), and wakes the dispatchers
 * on commit. Unlike other deliveries they are never held back by the backlog
 * bound (WEBHOOK_MAX_BACKLOG): they are few, and the receiver must hear of
 * every erasure.
 */
export async function enqueueErasedNotices(tx: Tx, orgId: OrgId, rows: { integrationId: number; body: string }[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    INSERT INTO deliveries (org_id, integration_id, kind, body, status, next_attempt_at)
    SELECT ${orgId}::bigint, r.integration_id, 'erased', r.body, 'pending', ${new Date()}::timestamptz
    FROM unnest(${rows.map((r) => r.integrationId)}::bigint[], ${rows.map((r) => r.body)}::text[]) AS r(integration_id, body)
  `.execute(tx);
  await sql`SELECT pg_notify(${DELIVERIES_CHANNEL}, ${notifyPayload([orgId])}::text)`.execute(tx);
}

/**
 * Organisations holding erasure notices that are finished (delivered,
 * failed or cancelled) but still carry their contact: the one statement of
 * the redaction that spans organisations, on a partial index that is empty
 * but for the moments between a notice's end and its redaction.
 */
export async function organisationsWithUnredactedNotices(db: Executor, limit: number): Promise<OrgId[]> {
  const { rows } = await sql<{ org_id: OrgId }>`${sql.raw(PREPARE)}${sql.raw(ALL_ORGANISATIONS)}
    SELECT DISTINCT d.org_id FROM deliveries d
    WHERE d.kind = 'erased' AND d.status <> 'pending' AND (d.body::jsonb) ? 'contact'
    LIMIT ${limit}::int
  `.execute(db);
  return rows.map((r) => r.org_id);
}

/** Up to `limit` finished erasure notices of the organisation that still carry their contact. */
export async function unredactedNotices(db: Executor, orgId: OrgId, limit: number): Promise<{ id: number; body: string }[]> {
  const { rows } = await sql<{ id: number; body: string }>`
    SELECT d.id, d.body FROM deliveries d
    WHERE d.org_id = ${orgId}::bigint AND d.kind = 'erased' AND d.status <> 'pending' AND (d.body::jsonb) ? 'contact'
    ORDER BY d.id
    LIMIT ${limit}::int
  `.execute(db);
  return rows;
}

/**
 * Replaces the bodies of finished erasure notices (only while they are still
 * finished: a retry may have requeued one) and drops the response excerpts
 * of their attempts, the delivering one's on the row included (a receiver
 * may echo the body). Returns how many.
 */
export async function redactNotices(db: Executor, orgId: OrgId, rows: { id: number; body: string }[]): Promise<number> {
  if (rows.length === 0) return 0;
  const { rows: done } = await sql<{ id: number }>`
    UPDATE deliveries d SET body = u.body, delivered_response_excerpt = NULL
    FROM unnest(${rows.map((x) => x.id)}::bigint[], ${rows.map((x) => x.body)}::text[]) AS u(id, body)
    WHERE d.org_id = ${orgId}::bigint AND d.id = u.id AND d.kind = 'erased' AND d.status <> 'pending'
    RETURNING d.id
  `.execute(db);
  if (done.length === 0) return 0;
  await sql`
    UPDATE delivery_attempts SET response_excerpt = NULL
    WHERE org_id = ${orgId}::bigint AND delivery_id = ANY(${done.map((x) => x.id)}::bigint[]) AND response_excerpt IS NOT NULL
  `.execute(db);
  return done.length;
}

// Privacy requests through the platform API and the CLI (README "Privacy"):
// made (validated, the subject hashed and sealed, the suppression list
// changed at once), read and listed, and the suppression list read.
// Organisation-scoped like every such operation (requireOrganisation): a
// platform account or the organisation's merchant; another account gets 403.
import type { Deps } from '../deps.ts';
import type { Database } from '../db/database.ts';
import type { PrivacyRequestType } from '../db/schema.ts';
import { type FieldError, platformError } from '../http/errors.ts';
import { summary } from '../http/field-errors.ts';
import { cursorNumber, decodeCursor, pageLimit, toPage } from '../http/pagination.ts';
import type { Principal, Schemas } from '../http/types.ts';
import { requireOrganisation } from '../platform/access.service.ts';
import { announceOrganisationChange } from '../platform/organisation-settings.service.ts';
import { sealSubject } from './request-run.service.ts';
import { announceRequest, findRequest, insertRequest, listRequests, type RequestRow } from './requests.repository.ts';
import { normaliseSubject, type Subject, type SubjectType } from './subject-hash.crypto.ts';
import { addSuppression, listSuppressions, removeSuppression } from './suppression.repository.ts';
import type { OrgId } from '../db/tenancy.ts';

type PrivacyDeps = Pick<Deps, 'db' | 'cipher' | 'subjects' | 'organisations'>;
export type PrivacyRequestView = Schemas['PrivacyRequest'];

/** Who asked: a user of the API, or the operator on the CLI. */
export type Requester = { via: 'api'; principal: Principal } | { via: 'cli' };

function invalid(errors: FieldError[]) {
  return platformError(400, 4000, summary(errors), errors);
}

function notFound() {
  return platformError(404, 4040, 'Privacy request not found');
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** A request as stored, result included (the CLI's read: no principal to check). */
export function findRequestRow(db: Database, orgId: OrgId, id: number): Promise<RequestRow | undefined> {
  return findRequest(db, orgId, id, true);
}

export function requestView(row: RequestRow): PrivacyRequestView {
  const view: PrivacyRequestView = {
    id: row.id,
    type: row.type,
    status: row.status,
    suppress: row.suppress,
    subject_type: row.subject_type,
    requested_by: row.requested_by,
    requested_via: row.requested_via,
    created_at: row.created_at.toISOString(),
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
    counts: row.counts,
    error: row.error,
    result_expires_at: iso(row.result_expires_at),
  };
  if (typeof row.result === 'string') view.result = JSON.parse(row.result) as Schemas['PrivacyExport'];
  return view;
}

/** The subject of a request body, normalised as identify stores contacts, or 400. */
export function parseSubject(raw: Schemas['PrivacySubject']): Subject {
  // the contract lets exactly one through
  const given = (['email', 'phone', 'core_id'] as const).filter((k) => typeof raw[k] === 'string');
  if (given.length !== 1) throw invalid([{ path: '/subject', message: 'must name exactly one of email, phone, core_id' }]);
  const type: SubjectType = given[0]!;
  const value = normaliseSubject(type, raw[type]!);
  if (value === undefined) throw invalid([{ path: `/subject/${type}`, message: 'is empty once normalised' }]);
  return { type, value };
}

/**
 * Records a request. An erase or export is queued for the runner (woken on
 * commit); with `suppress`, the subject's hash goes on the suppression list
 * in the same transaction, so it applies before the request runs. An
 * unsuppress is done at once. Nothing but the hash and, while the request is
 * open, the sealed subject is kept.
 */
export async function createRequest(
  deps: PrivacyDeps,
  requester: Requester,
  orgId: OrgId,
  body: { type: PrivacyRequestType; subject: Schemas['PrivacySubject']; suppress?: boolean },
): Promise<PrivacyRequestView> {
  if (requester.via === 'api') await requireOrganisation(deps.db, requester.principal, orgId);
  const suppress = body.suppress === true;
  if (body.type === 'unsuppress' && suppress) throw invalid([{ path: '/suppress', message: 'must be false or left out with unsuppress' }]);
  const subject = parseSubject(body.subject);
  const hash = deps.subjects.hash(orgId, subject);
  const at = new Date();
  const open = body.type !== 'unsuppress';
  const row = await deps.db.transaction().execute(async (tx) => {
    const made = await insertRequest(tx, {
      orgId,
      type: body.type,
      suppress,
      subjectType: subject.type,
      subjectHash: hash,
      subjectEnc: open ? sealSubject(deps.cipher, subject) : null,
      requestedBy: requester.via === 'api' ? requester.principal.userId : null,
      requestedVia: requester.via,
      at,
      done: !open,
    });
    let listChanged = false;
    if (suppress) listChanged = await addSuppression(tx, orgId, hash, made.id, at);
    if (body.type === 'unsuppress') listChanged = await removeSuppression(tx, orgId, hash);
    // the policy's `suppressing` (whether identifies must be checked against the list) follows
    if (listChanged) await announceOrganisationChange(tx, orgId);
    if (open && requester.via === 'api') await announceRequest(tx, orgId);
    return made;
  });
  deps.organisations.invalidate(orgId);
  return requestView(row);
}

/** One request of the organisation; an export's result while it is kept. */
export async function getRequest(deps: PrivacyDeps, principal: Principal, orgId: OrgId, id: number): Promise<PrivacyRequestView> {
  await requireOrganisation(deps.db, principal, orgId);
  const row = await findRequest(deps.db, orgId, id, true);
  if (!row) throw notFound();
  return requestView(row);
}

/** The organisation's requests, newest first (without export results). */
export async function listRequestPage(
  deps: PrivacyDeps,
  principal: Principal,
  orgId: OrgId,
  query: { cursor?: string; limit?: number },
): Promise<Schemas['PrivacyRequestList']> {
  await requireOrganisation(deps.db, principal, orgId);
  const limit = pageLimit(query.limit);
  const filters = { list: 'privacy-requests', org_id: orgId };
  const after = decodeCursor(query.cursor, filters);
  const rows = await listRequests(deps.db, orgId, limit + 1, after ? cursorNumber(after, 'id') : undefined);
  const page = toPage(rows, limit, (last) => ({ id: last.id }), filters);
  return { items: page.rows.map(requestView), next_cursor: page.next_cursor };
}

/** The organisation's suppression list, newest first: which request made each entry, never the subject. */
export async function listSuppressionPage(
  deps: PrivacyDeps,
  principal: Principal,
  orgId: OrgId,
  query: { cursor?: string; limit?: number },
): Promise<Schemas['PrivacySuppressionList']> {
  await requireOrganisation(deps.db, principal, orgId);
  const limit = pageLimit(query.limit);
  const filters = { list: 'privacy-suppressions', org_id: orgId };
  const after = decodeCursor(query.cursor, filters);
  const rows = await listSuppressions(deps.db, orgId, limit + 1, after ? cursorNumber(after, 'request_id') : undefined);
  const page = toPage(rows, limit, (last) => ({ request_id: last.request_id }), filters);
  return {
    items: page.rows.map((r) => ({ request_id: r.request_id, subject_type: r.subject_type, created_at: r.created_at.toISOString() })),
    next_cursor: page.next_cursor,
  };
}

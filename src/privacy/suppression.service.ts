// The suppression list as the other areas see it: whether an organisation
// has one (the organisation directory caches the answer with the rest of its
// policy, src/platform/organisation-directory.service.ts). Lookups of given subjects
// happen at ingest (ingest-privacy.service.ts); the list is changed through
// privacy requests (privacy.service.ts).
import type { Executor, OrgId } from '../db/tenancy.ts';
import { hasSuppressions } from './suppression.repository.ts';

/** The directory's check of one organisation: its suppression list is not empty. */
export function suppressionCheck(db: Executor): (orgId: OrgId) => Promise<boolean> {
  return (orgId) => hasSuppressions(db, orgId);
}

// What handlers and services are given: one explicit object, built once at
// start (buildDeps, src/server.ts). State that lives across calls (caches,
// limiters, the ingest queue) is made there, once per process, and reaches a
// service through this object; no service keeps its own in a module.
import type { Config } from './config.ts';
import type { Database } from './db/database.ts';
import type { Metrics } from './http/metrics.ts';
import type { TrafficLimits } from './http/traffic-limits.ts';
import type { Logger } from './log.ts';
import type { Cipher } from './platform/secrets.service.ts';
import type { Location } from './db/schema.ts';
import type { FreshVisitors } from './identity/fresh-visitors.service.ts';
import type { OrganisationDirectory } from './platform/organisation-directory.service.ts';
import type { SubjectHasher } from './privacy/subject-hash.crypto.ts';
import type { Tokens } from './platform/tokens.crypto.ts';
import type { EventIds } from './tracking/events.repository.ts';
import type { Ingestor } from './tracking/ingest.service.ts';
import type { TargetCache } from './webhooks/targets.service.ts';

export interface Deps {
  config: Config;
  db: Database;
  log: Logger;
  metrics: Metrics;
  tokens: Tokens;
  cipher: Cipher;
  /** active integrations per organisation (cached) */
  targets: TargetCache;
  /** organisations by id: active or not, and their trust policy (cached) */
  organisations: OrganisationDirectory;
  /** location of a client IP from the local geo-IP database */
  geo: { locate(ip: string): Location | null };
  /** the ingest path: resolves when an identify or event is committed */
  ingest: Ingestor;
  /** the tracking operations' limits (address, organisation, identify budget): one set per process, whichever path admits */
  trackingLimits: TrafficLimits;
  /** the analytics host's limits (learning events), the same rules as tracking's, buckets of their own */
  analyticsLimits: TrafficLimits;
  /** keyed hashes of privacy subjects (emails, phones, core_ids): the suppression list's key */
  subjects: SubjectHasher;
  /** the visitors this process wrote lately (identity): the plain batch leaves out touches that would not change them; erasures forget them */
  freshVisitors: FreshVisitors;
  /** the ids of exported events, drawn from their sequence a block at a time (tracking) */
  eventIds: EventIds;
}

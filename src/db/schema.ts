// Kysely table types; they mirror src/db/migrations.
import type { ColumnType, Generated } from 'kysely';
import type { components } from '../../generated/openapi.ts';
import type { OrgId } from './tenancy.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** a timestamp with a database default (insert may omit it) */
type GeneratedTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Json<T> = ColumnType<T, string, string>;
/** text that may be null and may be left out of an insert */
type NullableColumn = ColumnType<string | null, string | null | undefined, string | null>;

export interface SettingsTable {
  key: string;
  value: string;
}

export interface UsersTable {
  id: Generated<number>;
  email: string;
  email_key: string;
  name: Generated<string>;
  phone: Generated<string>;
  password_hash: string | null;
  platform_name: string | null;
  is_active: Generated<boolean>;
  is_email_verified: Generated<boolean>;
  is_phone_verified: Generated<boolean>;
  is_superuser: Generated<boolean>;
  created_at: GeneratedTimestamp;
  modified_at: GeneratedTimestamp;
  /** in every bearer token (claim `sv`); a password change increments it, revoking older tokens */
  session_version: Generated<number>;
}

export interface LoginFailuresTable {
  key: string;
  window_start: Timestamp;
  failures: number;
}

export interface OrganisationsTable {
  id: Generated<OrgId>;
  /** the token in clear: only until the start-up step seals it into token_enc (rows written by older versions) */
  token: NullableColumn;
  /** the token sealed with the secret key (deps.cipher) */
  token_enc: NullableColumn;
  token_hash: Buffer;
  name: Generated<string>;
  organisation_name: Generated<string>;
  domain: string;
  domain_key: string;
  currency: Generated<string>;
  country_code: Generated<string>;
  is_active: Generated<boolean>;
  logo: Generated<string>;
  wid: string | null;
  referer: string | null;
  features_enabled: Generated<string>;
  created_by: number | null;
  created_at: GeneratedTimestamp;
  modified_at: GeneratedTimestamp;
  /** trust settings (migration 2026-11-23T0100): null allowed_domains = the default, [domain_key] */
  identity_verification: Generated<'optional' | 'required'>;
  allowed_domains: string[] | null;
  enforce_origin: Generated<boolean>;
  /** false: event exports only for verified contact links (migration 2026-11-26T0200) */
  export_unverified: Generated<boolean>;
  /** the identity secret sealed with the server's Cipher; null until first needed (older organisations) */
  identity_secret_enc: string | null;
  /** privacy (migration 2026-11-26T0100): honour `Sec-GPC: 1` (default true) */
  honor_gpc: Generated<boolean>;
  /** keep known bots out of tracking (migration 2026-11-26T0300, default true) */
  filter_bots: Generated<boolean>;
  /** erase visitors not seen for this many days (1–3650); null: keep them */
  visitor_retention_days: number | null;
}

export interface OrganisationMembersTable {
  user_id: number;
  org_id: OrgId;
  role: 'owner' | 'platform';
  created_at: GeneratedTimestamp;
}

export interface IntegrationsTable {
  org_id: OrgId;
  id: Generated<number>;
  type: 'WEBHOOK';
  active: boolean;
  endpoint: string;
  auth_token_enc: string | null;
  auth_token_hint: string | null;
  http_timeout: number;
  do_events: boolean;
  do_contacts: boolean;
  signing_secret_enc: string;
  created_at: GeneratedTimestamp;
  modified_at: GeneratedTimestamp;
  deleted_at: Timestamp | null;
}

export interface RecentView {
  url: string;
  at: string;
}

export interface PersonsTable {
  org_id: OrgId;
  id: Generated<number>;
  last_view: ColumnType<RecentView[], string | undefined, string>;
  last_cart_product_id: number | null;
  last_cart_url: string | null;
  last_cart_at: Timestamp | null;
}

/** A visitor's approximate location: the contract's Location. */
export type Location = components['schemas']['Location'];

export interface VisitorsTable {
  org_id: OrgId;
  core_id: string;
  roaming_id: string;
  corex_id: string | null;
  person_id: Generated<number>;
  name: string | null;
  first_seen: Timestamp;
  last_seen: Timestamp;
  user_agent: string | null;
  location: Json<Location> | null;
}

export interface ContactsTable {
  org_id: OrgId;
  id: Generated<number>;
  type: 'EMAIL' | 'PHONE';
  value: string;
  person_id: number;
  created_at: GeneratedTimestamp;
}

export interface VisitorContactsTable {
  org_id: OrgId;
  core_id: string;
  contact_id: number;
  linked_at: GeneratedTimestamp;
  /** made or confirmed by an identify with a valid hash */
  verified: Generated<boolean>;
}

export interface ProductsTable {
  org_id: OrgId;
  product_id: number;
  url: string;
  seen_at: Timestamp;
}

export interface EventsTable {
  org_id: OrgId;
  received_at: Timestamp;
  id: Generated<number>;
  name: string;
  core_id: string;
  roaming_id: string;
  corex_id: string | null;
  body: Json<Record<string, unknown>>;
}

export interface LearnEventsTable {
  org_id: OrgId;
  id: Generated<number>;
  event_name: string;
  event_val: Json<string | Record<string, unknown>>;
  event_category: string;
  u: string | null;
  lang: string;
  received_at: GeneratedTimestamp;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'cancelled';
/** `matched` (contactMatched), `event` (eventExported), `erased` (contactErased) */
export type DeliveryKind = 'matched' | 'event' | 'erased';

export interface DeliveriesTable {
  org_id: OrgId;
  id: Generated<number>;
  integration_id: number;
  kind: DeliveryKind;
  webhook_id: Generated<string>;
  body: string;
  status: Generated<DeliveryStatus>;
  attempts_count: Generated<number>;
  /** attempts_count when the current retry schedule started (a manual retry restarts it) */
  schedule_start: Generated<number>;
  next_attempt_at: Timestamp | null;
  /**
   * the claim's lease (its attempt's end at the latest); a pending delivery is
   * due once next_attempt_at has passed and it holds no lease still running
   * (src/db/migrations/2026-12-01T0200_deliveries_lease.ts)
   */
  lease_until: Timestamp | null;
  created_at: GeneratedTimestamp;
  delivered_at: Timestamp | null;
  last_error: string | null;
  /** the contact a `matched` or `event` body names (privacy requests find a person's deliveries by it); null for erasure notices */
  contact: string | null;
  /**
   * The attempt that delivered it (its start, status, duration and excerpt),
   * kept on the delivery instead of a row of delivery_attempts; null while not
   * delivered, and for deliveries delivered before 2026-12-01, whose attempt is
   * a row there (src/db/migrations/2026-12-01T0100_delivering_attempt.ts)
   */
  delivered_attempt_at: Timestamp | null;
  delivered_status_code: number | null;
  delivered_duration_ms: number | null;
  delivered_response_excerpt: string | null;
}

export interface DeliveryAttemptsTable {
  org_id: OrgId;
  delivery_id: number;
  n: number;
  attempted_at: Timestamp;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  response_excerpt: string | null;
}

/** integrations at WEBHOOK_MAX_BACKLOG pending deliveries: their new deliveries are written failed */
export interface WebhookBacklogLimitsTable {
  org_id: OrgId;
  integration_id: number;
  /** pending deliveries counted at the last check (counting stops at the bound) */
  pending: number;
  since: GeneratedTimestamp;
  checked_at: GeneratedTimestamp;
}

/** an integration's endpoint while it fails (or after it was disabled for failing); no row = healthy */
export interface WebhookEndpointHealthTable {
  org_id: OrgId;
  integration_id: number;
  /** failed attempts since the last successful one */
  consecutive_failures: Generated<number>;
  failing_since: Timestamp | null;
  last_failure_at: Timestamp | null;
  last_error: string | null;
  /** times the circuit breaker opened since the last success (0 = closed); grows the cool-down */
  opened_count: Generated<number>;
  /** while open: no claims before this (then one probe) */
  paused_until: Timestamp | null;
  disabled_at: Timestamp | null;
  disabled_reason: string | null;
  updated_at: GeneratedTimestamp;
}

export type PrivacyRequestType = 'erase' | 'export' | 'unsuppress';
export type PrivacyRequestStatus = 'queued' | 'running' | 'done' | 'failed';
/** what a privacy request names: a contact (normalised as identify stores it) or a visitor's core_id */
export type SubjectType = 'email' | 'phone' | 'core_id';

/** What an erase removed, or an export holds. */
export interface PrivacyCounts {
  persons: number;
  visitors: number;
  contacts: number;
  events: number;
  deliveries: number;
}

/** An erase, export or unsuppress request (migration 2026-11-26T0100; src/privacy/). */
export interface PrivacyRequestsTable {
  org_id: OrgId;
  id: Generated<number>;
  type: PrivacyRequestType;
  status: Generated<PrivacyRequestStatus>;
  suppress: Generated<boolean>;
  subject_type: SubjectType;
  /** the keyed hash of the subject (src/privacy/subject-hash.crypto.ts) */
  subject_hash: Buffer;
  /** the subject sealed with the server's Cipher; only while queued or running */
  subject_enc: string | null;
  /** the user who asked; null when the CLI did */
  requested_by: number | null;
  requested_via: 'api' | 'cli';
  created_at: GeneratedTimestamp;
  started_at: Timestamp | null;
  finished_at: Timestamp | null;
  /** claims so far: the fencing token of the runner holding it */
  attempts: Generated<number>;
  lease_until: Timestamp | null;
  /** the persons the subject resolved to (set by the first run) */
  person_ids: number[] | null;
  counts: Json<PrivacyCounts> | null;
  /** an export's document (JSON text), until result_expires_at */
  result: string | null;
  result_expires_at: Timestamp | null;
  error: string | null;
}

/** The suppression list: keyed hashes of subjects whose identifies store nothing personal. */
export interface PrivacySuppressionsTable {
  org_id: OrgId;
  subject_hash: Buffer;
  created_at: GeneratedTimestamp;
  request_id: number;
}

/** Tracking requests kept out as bots, per organisation, UTC hour and reason (migration 2026-11-26T0300). */
export interface BotRequestsTable {
  org_id: OrgId;
  hour: Timestamp;
  reason: 'user_agent' | 'webdriver';
  requests: number;
}

/** lookup tables (reference tables under Citus), written with the row they point to (migration 2026-11-23T0400) */
export interface OrganisationDomainsTable {
  domain_key: string;
  org_id: OrgId;
}

export interface OrganisationTokensTable {
  token_hash: Buffer;
  org_id: OrgId;
}

export interface IntegrationOwnersTable {
  id: number;
  org_id: OrgId;
}

export interface DB {
  settings: SettingsTable;
  users: UsersTable;
  login_failures: LoginFailuresTable;
  organisations: OrganisationsTable;
  organisation_members: OrganisationMembersTable;
  integrations: IntegrationsTable;
  persons: PersonsTable;
  visitors: VisitorsTable;
  contacts: ContactsTable;
  visitor_contacts: VisitorContactsTable;
  products: ProductsTable;
  events: EventsTable;
  learn_events: LearnEventsTable;
  deliveries: DeliveriesTable;
  delivery_attempts: DeliveryAttemptsTable;
  webhook_backlog_limits: WebhookBacklogLimitsTable;
  webhook_endpoint_health: WebhookEndpointHealthTable;
  organisation_domains: OrganisationDomainsTable;
  organisation_tokens: OrganisationTokensTable;
  integration_owners: IntegrationOwnersTable;
  privacy_requests: PrivacyRequestsTable;
  privacy_suppressions: PrivacySuppressionsTable;
  bot_requests: BotRequestsTable;
}

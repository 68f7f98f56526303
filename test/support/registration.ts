// Shared set-up for the analytics host tests: each test registers its own
// users and organisations; every request may come from its own client IP
// (with TRUST_PROXY=true) so the per-IP registration limit never interferes.
import { unique, uniqueIp } from './accounts.ts';
import type { TestServer } from './harness.ts';
import type { BodyOf } from './client.ts';

export const REGISTRATION_TOKEN = 'reg_test_4WzX9kQ2pL7sV1bN';
export const UNKNOWN_TOKEN = { status: 'failed', code: 5104, reason: 'Invalid org_token: please provide the correct organisation token' };

/** A registration body no other test uses. */
export function registration(over: Record<string, unknown> = {}) {
  const n = unique('an');
  return {
    email: `${n}@owner.example`,
    password: 'r1se&shine-2024',
    first_name: 'Maria',
    domain: `${n}.bakery.example`,
    entity: "Maria's Bakery",
    ...over,
  };
}

export interface RegisterOptions {
  /** the `token` query parameter; null leaves it out; default the test token */
  token?: string | null;
  /** the client IP (X-Forwarded-For); default a fresh one */
  ip?: string;
}

/** A self-service registration; its reply typed T (the 200's body by default, the refusal's where a test reads one). */
export function register<T = BodyOf<'registerAnalyticsUser'>>(srv: TestServer, body: unknown, opts: RegisterOptions = {}) {
  const token = opts.token === undefined ? REGISTRATION_TOKEN : opts.token;
  const query = token === null ? '' : `?token=${encodeURIComponent(token)}`;
  return srv.api.post<T>(`/api/v1/register${query}`, body, { headers: { 'x-forwarded-for': opts.ip ?? uniqueIp() } });
}

/** The stored organisation of a domain (its token is not returned by registration), with its token decrypted. */
export async function organisationOf(srv: TestServer, domain: string) {
  const row = await srv.database.handle.db.selectFrom('organisations').selectAll().where('domain', '=', domain).executeTakeFirst();
  return row && { ...row, token: row.token_enc ? srv.deps.cipher.decrypt(row.token_enc) : row.token };
}

/** A learning event; its reply typed T (the 200's body by default, `BodyOf<'submitLearningEvent', 400>` where a test reads a refusal). */
export function learn<T = BodyOf<'submitLearningEvent'>>(srv: TestServer, body: unknown) {
  return srv.api.post<T>('/rest/v1/learn/event', body);
}

// Authentication and tenant matrix over EVERY bearer-protected operation of
// the contract (read from generated/openapi.json, so a new one is covered
// without touching this file). Each request is aimed at a victim tenant's
// real resources and sent with a broken credential (none, malformed, expired,
// bad signature, alg none, another platform's token...) → 401/4010; with a
// valid token of another account on the same platform → 403/4030 or
// 404/4040 (or, where nothing of the victim is named, a success that shows
// nothing of it). No answer may carry the victim's identifiers, tokens,
// emails or domains, and the victim's rows must not change. Finally the
// victim's own token gets through, so the refusals above were about the
// credential and not about the request.
import { expect } from 'chai';
import fc from 'fast-check';
import { SignJWT } from 'jose';
import { ISSUER } from '../../src/platform/tokens.crypto.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type ContractOperation, contractOperations, schemas } from '../support/operations.ts';
import { TestReceiver } from '../support/receiver.ts';
import { unique } from '../support/accounts.ts';
import { type FullTenant, fullTenant } from './fixtures.ts';
import type { PlatformError } from '../support/client.ts';

const JWT_SECRET = 'auth-matrix-secret-that-is-long-enough-0123456789';
const KEY = new TextEncoder().encode(JWT_SECRET);
const OTHER_KEY = new TextEncoder().encode('another-secret-that-is-long-enough-9876543210');

const bearerOps = contractOperations().filter((op) => op.bearer);
/** Parameters and body fields that name a resource of one tenant. */
const TENANT_REFS = new Set(['org_id', 'integration_id', 'delivery_id', 'request_id', 'id', 'org_token', 'core_id']);

interface Attempt {
  name: string;
  header: string | undefined;
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

describe('auth and tenant matrix (every bearer-protected operation)', function () {
  this.timeout(120_000);
  let srv: TestServer;
  let receiver: TestReceiver;
  let victim: FullTenant;
  let neighbour: FullTenant;
  let foreign: FullTenant;
  let broken: Attempt[];
  const figures = { requests: 0, operations: bearerOps.length };

  before(async () => {
    receiver = await TestReceiver.start(() => ({ status: 204 }));
    srv = await startTestServer({ JWT_SECRET, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', TRUST_PROXY: 'true' });
    victim = await fullTenant(srv, receiver.url, 'acme', 'victim');
    neighbour = await fullTenant(srv, receiver.url, 'acme', 'neighbour');
    foreign = await fullTenant(srv, receiver.url, 'globex', 'foreign');
    const now = Math.floor(Date.now() / 1000);
    const claims = (over: Record<string, unknown> = {}) => ({
      iss: ISSUER,
      aud: 'acme',
      sub: String(victim.account.userId),
      iat: now,
      exp: now + 600,
      ...over,
    });
    const sign = (payload: Record<string, unknown>, key = KEY, alg = 'HS256') =>
      new SignJWT(payload).setProtectedHeader({ alg, typ: 'JWT' }).sign(key);
    const token = victim.account.token;
    const [h, p, sig] = token.split('.') as [string, string, string];
    broken = [
      { name: 'no Authorization header', header: undefined },
      { name: 'empty Authorization header', header: '' },
      { name: 'scheme only', header: 'Bearer' },
      { name: 'Basic credentials', header: `Basic ${Buffer.from(`${victim.account.email}:${victim.account.password}`).toString('base64')}` },
      { name: 'token without the scheme', header: token },
      { name: 'not a JWT', header: 'Bearer not-a-jwt' },
      { name: 'two tokens', header: `Bearer ${token} ${token}` },
      { name: 'expired', header: `Bearer ${await sign(claims({ iat: now - 7200, exp: now - 3600 }))}` },
      { name: 'not valid yet', header: `Bearer ${await sign(claims({ nbf: now + 3600 }))}` },
      { name: 'bad signature', header: `Bearer ${h}.${p}.${sig.slice(0, -2)}${sig.endsWith('AA') ? 'BB' : 'AA'}` },
      { name: 'signed with another key', header: `Bearer ${await sign(claims(), OTHER_KEY)}` },
      {
        name: 'payload swapped under a valid signature',
        header: `Bearer ${h}.${b64({ ...claims(), sub: String(neighbour.account.userId) })}.${sig}`,
      },
      { name: 'alg none', header: `Bearer ${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims())}.` },
      { name: 'alg HS512 with the right key', header: `Bearer ${await sign(claims(), KEY, 'HS512')}` },
      { name: 'another issuer', header: `Bearer ${await sign(claims({ iss: 'someone-else' }))}` },
      { name: 'no such user', header: `Bearer ${await sign(claims({ sub: '987654321' }))}` },
      { name: 'a token of another platform (globex)', header: `Bearer ${foreign.account.token}` },
    ];
  });

  after(async () => {
    console.log(`      auth matrix figures: ${figures.operations} bearer-protected operations, ${figures.requests} requests`);
    await srv?.stop();
    await receiver?.close();
  });

  /** A request to the operation aimed at `t`'s resources (valid as far as the contract goes). */
  function requestFor(op: ContractOperation, t: FullTenant) {
    const path = op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
      const v = t.values[name];
      if (v === undefined) throw new Error(`${op.operationId}: no fixture value for path parameter ${name}; add it to fullTenant().values`);
      return encodeURIComponent(v);
    });
    const query = op.params
      .filter((p) => p.in === 'query' && p.required)
      .map((p) => {
        const v = t.values[p.name];
        if (v === undefined) throw new Error(`${op.operationId}: no fixture value for query parameter ${p.name}`);
        return `${p.name}=${encodeURIComponent(v)}`;
      });
    let body: Record<string, unknown> | undefined;
    if (op.body) {
      const [sample] = fc.sample(schemas.valid(op.body), { numRuns: 1, seed: 42 });
      body = { ...(sample as Record<string, unknown>) };
      if ('org_id' in body) body.org_id = t.orgId;
      if ('id' in body) body.id = t.integrationId;
      if (typeof body.data === 'object' && body.data !== null) body.data = { ...body.data, endpoint: `${receiver.url}?matrix` };
      if (op.operationId === 'registerClientUser') {
        const n = unique('matrix').toLowerCase();
        body = { email: `${n}@merchant.example`, domain: `${n}.shop.example` };
      }
      if (op.operationId === 'patchIntegration') body = { data: { do_events: true } };
      // the generator does not keep to maxProperties: one identifier, the tenant's visitor
      if (op.operationId === 'createPrivacyRequest') body = { type: 'export', subject: { core_id: t.coreId } };
      // a wrong current password: past authentication, changes nothing (the victim's own call below sends the right one)
      if (op.operationId === 'changePassword') body = { current_password: 'not the password of anyone', new_password: 'a new passphrase 2026' };
    }
    return { path: query.length ? `${path}?${query.join('&')}` : path, body };
  }

  /** Whether the request names one of the victim's resources (then another tenant must be refused). */
  function namesTenant(op: ContractOperation): boolean {
    if (op.params.some((p) => p.in !== 'header' && p.name !== 'platform_name' && TENANT_REFS.has(p.name) && (p.required || p.in === 'path')))
      return true;
    const props = Object.keys(schemas.resolve(op.body).properties ?? {});
    return props.some((k) => TENANT_REFS.has(k));
  }

  const snapshot = async () => {
    const db = srv.database.handle.db;
    const org = victim.orgId;
    return {
      organisation: await db.selectFrom('organisations').selectAll().where('id', '=', org).execute(),
      members: await db.selectFrom('organisation_members').selectAll().where('org_id', '=', org).orderBy('user_id').execute(),
      integrations: await db.selectFrom('integrations').selectAll().where('org_id', '=', org).orderBy('id').execute(),
      deliveries: await db
        .selectFrom('deliveries')
        .select(['id', 'status', 'attempts_count', 'next_attempt_at'])
        .where('org_id', '=', org)
        .orderBy('id')
        .execute(),
      visitors: await db.selectFrom('visitors').selectAll().where('org_id', '=', org).orderBy('core_id').execute(),
      learn: await db.selectFrom('learn_events').selectAll().where('org_id', '=', org).orderBy('id').execute(),
      privacyRequests: await db.selectFrom('privacy_requests').selectAll().where('org_id', '=', org).orderBy('id').execute(),
      suppressions: await db.selectFrom('privacy_suppressions').selectAll().where('org_id', '=', org).execute(),
    };
  };

  function expectNoLeak(op: ContractOperation, what: string, text: string, sent: string): void {
    for (const secret of victim.secrets) {
      if (sent.includes(secret)) continue; // the caller's own input echoed back is not a leak
      expect(text.includes(secret), `${op.operationId} (${what}) answered with the victim's "${secret}": ${text.slice(0, 300)}`).to.equal(false);
    }
  }

  for (const op of bearerOps) {
    it(`${op.operationId} (${op.method} ${op.path}) refuses every broken credential and every other tenant`, async () => {
      const before = await snapshot();
      const { path, body } = requestFor(op, victim);
      const sent = path + JSON.stringify(body ?? '');
      const unscoped = !op.path.includes('{platform_name}');
      for (const attempt of broken) {
        const headers: Record<string, string> = {};
        if (attempt.header !== undefined) headers.authorization = attempt.header;
        const r = await srv.api.request<PlatformError>(op.method, path, { body, headers });
        figures.requests++;
        expectNoLeak(op, attempt.name, r.text, sent);
        const otherTenant = unscoped && attempt.name.startsWith('a token of another platform');
        if (otherTenant) {
          // the unscoped path takes the platform from the token: a valid foreign token is just another tenant
          expect([403, 404], `${op.operationId} with ${attempt.name}: ${r.text}`).to.include(r.status);
          expect(r.body.code).to.equal(r.status === 403 ? 4030 : 4040);
          continue;
        }
        expect(r.status, `${op.operationId} with ${attempt.name}: ${r.text}`).to.equal(401);
        expect(r.body.code, attempt.name).to.equal(4010);
        expect(
          Object.keys(r.body).filter((k) => !['code', 'message', 'request_id'].includes(k)),
          attempt.name,
        ).to.deep.equal([]);
        expect(r.headers.get('www-authenticate'), attempt.name).to.equal('Bearer');
      }

      // valid tokens of other accounts: the neighbour on the same platform; the foreign platform's on its own path
      const others: [string, FullTenant][] = [['an account of the same platform', neighbour]];
      if (!unscoped) others.push(['an account of another platform, on its own path', foreign]);
      for (const [who, attacker] of others) {
        const p = attacker === foreign ? path.replace(/^\/v1\/rest\/acme\//, '/v1/rest/globex/') : path;
        const r = await srv.api.request<PlatformError>(op.method, p, { body, token: attacker.account.token });
        figures.requests++;
        expectNoLeak(op, who, r.text, sent);
        if (namesTenant(op)) {
          expect([403, 404], `${op.operationId} by ${who}: ${r.text}`).to.include(r.status);
          expect(r.body.code, who).to.equal(r.status === 403 ? 4030 : 4040);
        } else {
          expect(r.status, `${op.operationId} by ${who}: ${r.text}`).to.be.below(500);
        }
      }
      expect(await snapshot(), 'the victim’s data changed').to.deep.equal(before);
    });
  }

  it('lets the victim’s own token through on every one of them (so the refusals above were about the credential)', async () => {
    // destructive operations last, and the password change (which revokes the token it was made with) at the very end
    const rank = (op: ContractOperation) => (op.operationId === 'changePassword' ? 2 : op.method === 'DELETE' ? 1 : 0);
    const order = [...bearerOps].sort((a, b) => rank(a) - rank(b));
    for (const op of order) {
      const request = requestFor(op, victim);
      const { path } = request;
      const body =
        op.operationId === 'changePassword' ? { current_password: victim.account.password, new_password: 'a new passphrase 2026' } : request.body;
      const r = await srv.api.request(op.method, path, { body, token: victim.account.token });
      figures.requests++;
      // a retry of a delivery that is still pending is 409: past authentication and the tenant check
      expect([401, 403, 404], `${op.operationId} with the victim's own token: ${r.status} ${r.text}`).to.not.include(r.status);
      expect(r.status, `${op.operationId}: ${r.text}`).to.be.below(500);
    }
  });
});

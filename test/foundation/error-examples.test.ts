// Every error example the document shows is the server's real answer: each
// one is driven here against a running server (status, code or error,
// message or reason, `errors`, and `request_id`: shown in the example, and
// equal to X-Request-Id in the answer). Each operation has its own 400
// example (test/foundation/bad-request-drivers.ts makes them). A
// documented error example without a driver below fails the test, so an
// example cannot be added, or a message changed, without the other.
// Numbers in messages (ids, byte counts, seconds) are compared as "a number".
import net from 'node:net';
import { expect } from 'chai';
import { loadConfig } from '../../src/config.ts';
import { createDb } from '../../src/db/database.ts';
import { createLogger } from '../../src/log.ts';
import { startOnDatabase } from '../../src/server.ts';
import { REGISTRATION_TOKEN, register, registration } from '../support/registration.ts';
import { type Account, newAccount, newMerchant, newWebhook, unique, uniqueIp } from '../support/accounts.ts';
import { BAD_REQUEST_OPERATIONS, badRequests } from './bad-request-drivers.ts';
import { ApiClient, type Reply, type BodyOf, type PlatformError } from '../support/client.ts';
import { doc } from '../support/contract.ts';
import { freshDatabase, startTestServer, type TestServer } from '../support/harness.ts';
import { b64url } from '../support/payload.ts';
import type { OrgId } from '../../src/db/tenancy.ts';

type Json = Record<string, unknown>;

interface Example {
  id: string;
  status: number;
  body: Json;
}

/** Every example of a 4xx/5xx JSON response in the bundled document, named by where it is written. */
function documentedErrorExamples(): Example[] {
  const out: Example[] = [];
  const statusOfComponent = new Map<string, number>();
  const collect = (id: string, status: number, response: Json) => {
    for (const media of Object.values((response.content ?? {}) as Record<string, Json>)) {
      if (media.example !== undefined) out.push({ id, status, body: media.example as Json });
      for (const [name, ex] of Object.entries((media.examples ?? {}) as Record<string, Json>)) {
        out.push({ id: `${id} ${name}`, status, body: ex.value as Json });
      }
    }
  };
  for (const item of Object.values(doc.paths)) {
    for (const op of Object.values(item)) {
      const responses = op.responses as Record<string, Json> | undefined;
      for (const [status, response] of Object.entries(responses ?? {})) {
        if (!/^[45]\d\d$/.test(status)) continue;
        const ref = response.$ref as string | undefined;
        if (ref) statusOfComponent.set(ref.split('/').pop()!, Number(status));
        else collect(`${op.operationId as string} ${status}`, Number(status), response);
      }
    }
  }
  for (const [name, response] of Object.entries(doc.components.responses ?? {})) {
    const status = statusOfComponent.get(name);
    if (status !== undefined) collect(name, status, response);
  }
  return out;
}

/** Digits vary (ids, sizes, seconds); everything else must be word for word. */
const shape = (v: unknown) => (typeof v === 'string' ? v.replace(/\d+/g, '#') : v);

/** A TCP relay to PostgreSQL that can be cut: the database "goes away" for one server only. */
async function relayTo(url: string) {
  const target = new URL(url);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const relayed = new URL(url);
  relayed.hostname = '127.0.0.1';
  relayed.port = String((server.address() as net.AddressInfo).port);
  return {
    url: relayed.toString(),
    cut: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('documented error examples equal the server’s answers', function () {
  this.timeout(120_000);
  let srv: TestServer; // registration open, limits at their defaults
  let limited: TestServer; // tiny limits: every 429
  let closed: TestServer; // no REGISTRATION_TOKEN: registration disabled
  let account: Account;
  let orgId: OrgId;

  before(async () => {
    [srv, limited, closed] = await Promise.all([
      startTestServer({ REGISTRATION_TOKEN, TRUST_PROXY: 'true' }),
      startTestServer({
        REGISTRATION_TOKEN,
        TRACKING_RATE_LIMIT: '1/1h',
        LOGIN_RATE_LIMIT: '1/1h',
        REGISTRATION_RATE_LIMIT: '1/1h',
      }),
      startTestServer(),
    ]);
    account = await newAccount(srv);
    orgId = (await newMerchant(srv, account)).organisation.id;
  });
  after(async () => {
    await Promise.all([srv?.stop(), limited?.stop(), closed?.stop()]);
  });

  const p = () => `/v1/rest/${account.platform}`;
  const visitor = () => ({ roaming: unique('r'), core: unique('c') });
  const event = (o: number, name: string, s = srv) => {
    const v = visitor();
    return (body: unknown, headers: Record<string, string> = {}) =>
      s.api.post(`/jsv1/${o}/${v.roaming}/${v.core}/null/event/${name}`, body, { headers });
  };
  const identify = (o: number, payload: string, headers: Record<string, string> = {}) => {
    const v = visitor();
    return srv.api.get(`/jsv1/identify/${o}/${v.roaming}/${v.core}/${payload}`, { headers });
  };
  const settings = async (body: Json) => {
    const merchant = await newMerchant(srv, account);
    const r = await srv.api.request('PATCH', `${p()}/organisations/${merchant.organisation.id}`, { body, token: account.token });
    expect(r.status, r.text).to.equal(200);
    return merchant.organisation.id;
  };
  const big = (n: number) => JSON.stringify({ page: 'x'.repeat(n) });

  /** How to make the server give each documented example; the server-breaking ones run last. */
  const drivers: Record<string, () => Promise<Reply>> = {
    // platform
    // one 400 per operation (its own example, no longer a shared one)
    ...Object.fromEntries(
      BAD_REQUEST_OPERATIONS.map((op) => [`${op} 400`, () => badRequests({ srv, platform: account.platform, token: account.token, orgId })[op]!()]),
    ),
    'PlatformUnauthorized missingToken': () => srv.api.get(`${p()}/organisations`),
    'PlatformUnauthorized invalidToken': () => srv.api.get(`${p()}/organisations`, { token: 'abc' }),
    PlatformForbidden: () => srv.api.get(`${p()}/organisations/987654321`, { token: account.token }),
    PlatformNotFound: () => srv.api.get(`${p()}/integration/987654321`, { token: account.token }),
    'getVisitor 404': () => srv.api.get(`${p()}/organisations/${orgId}/visitors/nobody-here`, { token: account.token }),
    'getDelivery 404': () => srv.api.get(`${p()}/deliveries/987654321`, { token: account.token }),
    'retryDelivery 404': () => srv.api.post(`${p()}/deliveries/987654321/retry`, undefined, { token: account.token }),
    'getPrivacyRequest 404': () => srv.api.get(`${p()}/organisations/${orgId}/privacy-requests/987654321`, { token: account.token }),
    PlatformPayloadTooLarge: () =>
      srv.api.post(`${p()}/users/login`, undefined, {
        raw: JSON.stringify({ email: 'x'.repeat(1_100_000) }),
        headers: { 'content-type': 'application/json' },
      }),
    PlatformUnsupportedMediaType: () =>
      srv.api.post(`${p()}/users/login`, undefined, { raw: 'email=a', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
    PlatformRateLimited: async () => {
      const body = { email: 'nobody@platform.example', password: 'wrong password' };
      await limited.api.post('/v1/rest/acme/users/login', body);
      return limited.api.post('/v1/rest/acme/users/login', body);
    },
    'loginPlatformUser 401': () =>
      srv.api.post(`${p()}/users/login`, { email: account.email, password: 'not the password' }, { headers: { 'x-forwarded-for': uniqueIp() } }),
    'changePassword 401 wrongPassword': () =>
      srv.api.post(
        `${p()}/users/password`,
        { current_password: 'not the password', new_password: 'long enough 123' },
        { token: account.token, headers: { 'x-forwarded-for': uniqueIp() } },
      ),
    'registerClientUser 409 emailExists': async () => {
      const first = await newMerchant(srv, account);
      return srv.api.post(`${p()}/users/register`, { email: first.user.email, domain: `${unique('d')}.example` }, { token: account.token });
    },
    'registerClientUser 409 organisationExists': async () => {
      const first = await newMerchant(srv, account);
      return srv.api.post(
        `${p()}/users/register`,
        { email: `${unique('e')}@merchant.example`, domain: first.organisation.domain },
        { token: account.token },
      );
    },
    'registerClientUser 403': async () => {
      // a self-registered merchant's session asks for the platform-only operation
      const body = registration();
      await register(srv, body);
      const l = await srv.api.post<BodyOf<'loginPlatformUser'>>(
        '/v1/rest/merchant/users/login',
        { email: body.email, password: body.password },
        { headers: { 'x-forwarded-for': uniqueIp() } },
      );
      return srv.api.post(
        '/v1/rest/merchant/users/register',
        { email: `${unique('e')}@merchant.example`, domain: `${unique('d')}.example` },
        { token: l.body.bearer_token },
      );
    },
    'retryDelivery 409': async () => {
      const o = (await newMerchant(srv, account)).organisation.id;
      await newWebhook(srv, account, o);
      await identify(o, b64url({ email: `${unique('v')}@example.com` }));
      const list = await srv.api.get<BodyOf<'listDeliveries'>>(`${p()}/organisations/${o}/deliveries`, { token: account.token });
      return srv.api.post(`${p()}/deliveries/${list.body.items[0]!.id}/retry`, undefined, { token: account.token });
    },
    // tracking
    TrackingNotFound: () => event(987654321, 'view')({ page: 'https://shop.example/' }),
    TrackingPayloadTooLarge: () =>
      srv.api.post(`/jsv1/${orgId}/r1/c1/null/event/view`, undefined, { raw: big(40_000), headers: { 'content-type': 'text/plain' } }),
    TrackingUnsupportedMediaType: () =>
      srv.api.post(`/jsv1/${orgId}/r1/c1/null/event/view`, undefined, {
        raw: 'page=x',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
    TrackingRateLimited: async () => {
      const o = (await newMerchant(limited, await newAccount(limited))).organisation.id;
      const send = event(o, 'view', limited);
      await send({ page: 'https://shop.example/' });
      return send({ page: 'https://shop.example/' });
    },
    TrackingOriginNotAllowed: async () =>
      event(await settings({ enforce_origin: true }), 'view')({ page: 'https://shop.example/' }, { origin: 'https://phish.attacker.example' }),
    'identifyVisitor 400 invalidPayload': () => identify(orgId, b64url({ email: 'jane.doe@' })),
    'identifyVisitor 400 notBase64': () => identify(orgId, '@@not-base64@@'),
    'identifyVisitor 400 invalidRequest': () => srv.api.get(`/jsv1/identify/${orgId}/r1/${'c'.repeat(65)}/${b64url({ email: 'a@b.co' })}`),
    'identifyVisitor 403 unverifiedIdentity': async () =>
      identify(await settings({ identity_verification: 'required' }), b64url({ email: 'jane.doe@example.com' })),
    'identifyVisitor 403 originNotAllowed': async () =>
      identify(await settings({ enforce_origin: true }), b64url({ email: 'jane.doe@example.com' }), { origin: 'https://phish.attacker.example' }),
    // analytics
    AnalyticsPayloadTooLarge: () =>
      srv.api.post('/rest/v1/learn/event', undefined, {
        raw: JSON.stringify({ eventVal: 'x'.repeat(1_100_000) }),
        headers: { 'content-type': 'application/json' },
      }),
    AnalyticsUnsupportedMediaType: () => srv.api.post('/rest/v1/learn/event', undefined, { raw: 'a=b', headers: { 'content-type': 'text/plain' } }),
    AnalyticsRateLimited: async () => {
      const send = () => limited.api.post('/rest/v1/learn/event', { org_token: 'nope', eventName: 'x', eventVal: 'y' });
      await send();
      return send();
    },
    'submitLearningEvent 400 unknownToken': () =>
      srv.api.post('/rest/v1/learn/event', { org_token: 'no-such-token', eventName: 'signup', eventVal: 'trial' }),
    'submitLearningEvent 400 invalidInput': () =>
      srv.api.post('/rest/v1/learn/event', { org_token: 'no-such-token', eventName: 'signup', eventVal: 42 }),
    'registerAnalyticsUser 400 alreadyRegistered': async () => {
      const email = 'owner@bakery.example.org';
      await register(srv, registration({ email }));
      return register(srv, registration({ email }));
    },
    'registerAnalyticsUser 400 orgExists': async () => {
      const domain = `${unique('b')}.bakery.example`;
      await register(srv, registration({ domain }));
      return register(srv, registration({ domain }));
    },
    'registerAnalyticsUser 400 invalidInput': () => register(srv, registration({ password: 'short' })),
    'registerAnalyticsUser 401': () => register(srv, registration(), { token: 'wrong' }),
    'registerAnalyticsUser 403': () => register(closed, registration()),
    'registerAnalyticsUser 429': async () => {
      await register(limited, registration(), { ip: '127.0.0.1' });
      return register(limited, registration(), { ip: '127.0.0.1' });
    },
  };

  /** The same server answers after PostgreSQL goes away (503) and after a table disappears (500). */
  const broken: Record<string, (s: { down: ApiClient; gone: ApiClient }) => Promise<Reply>> = {
    PlatformUnavailable: ({ down }) => down.post('/v1/rest/acme/users/login', { email: 'a@platform.example', password: 'whatever' }),
    TrackingUnavailable: ({ down }) => down.post('/jsv1/1/r1/c1/null/event/view', { page: 'https://shop.example/' }),
    AnalyticsUnavailable: ({ down }) => down.post('/rest/v1/learn/event', { org_token: 'x', eventName: 'y', eventVal: 'z' }),
    'getReadiness 503': ({ down }) => down.get('/readyz'),
    PlatformInternalError: ({ gone }) => gone.post('/v1/rest/acme/users/login', { email: 'a@platform.example', password: 'whatever' }),
    TrackingInternalError: ({ gone }) => gone.post('/jsv1/1/r1/c1/null/event/view', { page: 'https://shop.example/' }),
    AnalyticsInternalError: ({ gone }) => gone.post('/rest/v1/learn/event', { org_token: 'x', eventName: 'y', eventVal: 'z' }),
  };

  const examples = documentedErrorExamples();

  it('has a driver for every documented error example, and no driver without an example', () => {
    const documented = examples.map((e) => e.id).sort();
    expect(documented).to.deep.equal([...Object.keys(drivers), ...Object.keys(broken)].sort());
  });

  function compare(example: Example, reply: Reply): void {
    const what = `${example.id}: ${reply.status} ${reply.text}`;
    // any area's error body (or /readyz's), read field by field as the example names them
    const body = reply.body as Partial<PlatformError> & Record<string, unknown>;
    expect(reply.status, what).to.equal(example.status);
    if (typeof example.body.status === 'string' && !('code' in example.body) && !('message' in example.body)) {
      expect(reply.body, what).to.deep.equal(example.body); // /readyz: not an error envelope
      return;
    }
    // every documented error body shows the request id, as every real one has it
    expect(example.body, `${example.id}: the example shows request_id`).to.have.property('request_id');
    const { request_id: _documented, ...rest } = example.body;
    for (const [key, value] of Object.entries(rest)) {
      if (key === 'errors') {
        const norm = (list: { path: string; message: string }[]) => list.map((e) => ({ path: shape(e.path), message: shape(e.message) }));
        expect(norm(body.errors ?? []), what).to.deep.equal(norm(value as never));
      } else expect(shape(body[key]), `${what} (${key})`).to.equal(shape(value));
    }
    // every error body carries the request id, the X-Request-Id header's value
    expect(body.request_id, what).to.be.a('string').and.equal(reply.headers.get('x-request-id'));
  }

  /** Runs each comparison and reports every difference at once. */
  async function compareAll(list: Example[], reply: (e: Example) => Promise<Reply>): Promise<void> {
    const failures: string[] = [];
    for (const example of list) {
      try {
        compare(example, await reply(example));
      } catch (err) {
        failures.push((err as Error).message);
      }
    }
    expect(failures, failures.join('\n')).to.deep.equal([]);
  }

  it('answers each example word for word (status, code or error, message, errors, request_id)', async () => {
    await compareAll(
      examples.filter((e) => drivers[e.id]),
      (e) => drivers[e.id]!(),
    );
  });

  it('answers the 500 and 503 examples when a table or the whole database is gone', async () => {
    const database = await freshDatabase();
    const relay = await relayTo(database.url);
    const handle = createDb(relay.url, { max: 4, onError: () => {} });
    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      TRACKWAY_VALIDATE_RESPONSES: 'true',
      TRACKWAY_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
    });
    const running = await startOnDatabase(config, handle, createLogger('silent'), { dispatcher: false, jobs: false });
    try {
      const api = new ApiClient(running.url);
      // tables the three areas need, renamed away: an unexpected database error is a 500
      const admin = createDb(database.url, { max: 1, onError: () => {} });
      await admin.db.schema.alterTable('users').renameTo('users_gone').execute();
      await admin.db.schema.alterTable('organisations').renameTo('organisations_gone').execute();
      await admin.db.schema.alterTable('organisation_tokens').renameTo('organisation_tokens_gone').execute();
      await admin.close();
      await compareAll(
        examples.filter((e) => e.status === 500),
        (e) => broken[e.id]!({ down: api, gone: api }),
      );
      await relay.cut();
      await compareAll(
        examples.filter((e) => e.status === 503),
        (e) => broken[e.id]!({ down: api, gone: api }),
      );
    } finally {
      await running.close();
      await handle.close();
      await database.drop();
    }
  });
});

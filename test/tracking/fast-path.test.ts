// The fast path (src/http/fast-path.ts) against the Koa path: two servers on
// ONE database, the same configuration but TRACKWAY_FAST_PATH on and off,
// the same requests sent to both; status line, every header but Date, and
// the body must be identical, for well-formed requests (answered by the fast
// path) and for every kind of bad or unusual one (handed over to Koa). What
// was stored must be the same too.
import http from 'node:http';
import { expect } from 'chai';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { type RunningServer, startOnDatabase } from '../../src/server.ts';
import { addSuppression } from '../../src/privacy/suppression.repository.ts';
import { ApiClient } from '../support/client.ts';
import { freshDatabase, type TestDatabase, type TestServer } from '../support/harness.ts';
import { type Account, newAccount, newMerchant, unique } from '../support/accounts.ts';
import { b64url } from '../support/payload.ts';
import type { OrgId } from '../../src/db/tenancy.ts';

interface Raw {
  status: number;
  message: string;
  headers: string[];
  body: string;
}

function send(base: string, method: string, path: string, headers: Record<string, string | number>, body?: Buffer | string): Promise<Raw> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: hostname, port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const raw = res.rawHeaders;
        const kept: string[] = [];
        for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() !== 'date') kept.push(`${raw[i]}: ${raw[i + 1]}`);
        resolve({ status: res.statusCode!, message: res.statusMessage!, headers: kept, body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const metric = async (srv: RunningServer, outcome: string) => {
  const text = await (await fetch(`${srv.url}/metrics`)).text();
  return Number(new RegExp(`trackway_fast_path_requests_total\\{outcome="${outcome}"\\} (\\d+)`).exec(text)?.[1] ?? NaN);
};

describe('tracking: the fast path answers exactly as the Koa path', () => {
  let database: TestDatabase;
  let fast: RunningServer;
  let koa: RunningServer;
  let account: Account;
  let org: OrgId;
  let domain: string;
  let other: OrgId;
  /** an organisation with a suppression list (its email and core_id below) */
  let quiet: OrgId;
  let quietDomain: string;
  let seq = 0;

  before(async () => {
    database = await freshDatabase();
    const env = (fastPath: string) =>
      loadConfig({
        PORT: '0',
        HOST: '127.0.0.1',
        TRACKWAY_DATA_DIR: `/tmp/trackway-test-data-${process.pid}`,
        TRACKWAY_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
        LOG_LEVEL: 'silent',
        TRACKWAY_VALIDATE_RESPONSES: 'true',
        PASSWORD_HASH_COST: '14',
        TRUST_PROXY: 'true',
        // small budgets, so refusals are compared too (each server counts its own)
        TRACKING_IP_RATE_LIMIT: '40/1h',
        TRACKING_IDENTIFY_RATE_LIMIT: '3/1h',
        TRACKWAY_FAST_PATH: fastPath,
      });
    const log = createLogger('silent');
    fast = await startOnDatabase(env('on'), database.handle, log, { dispatcher: false });
    koa = await startOnDatabase(env('off'), database.handle, log, { dispatcher: false, jobs: false });
    const srv = { ...fast, api: new ApiClient(fast.url) } as unknown as TestServer;
    account = await newAccount(srv);
    const m = await newMerchant(srv, account);
    org = m.organisation.id;
    domain = m.organisation.domain;
    other = (await newMerchant(srv, account)).organisation.id;
    const s = await srv.api.request('PATCH', `/v1/rest/${account.platform}/organisations/${other}`, {
      body: { enforce_origin: true, identity_verification: 'required' },
      token: account.token,
    });
    expect(s.status, s.text).to.equal(200);
    ({ id: quiet, domain: quietDomain } = (await newMerchant(srv, account)).organisation);
    for (const subject of [
      { type: 'email' as const, value: 'suppressed@example.com' },
      { type: 'core_id' as const, value: 'c-suppressed' },
    ]) {
      await addSuppression(fast.deps.db, quiet, fast.deps.subjects.hash(quiet, subject), 1, new Date());
    }
    // the policy says `suppressing` from now on, in both servers
    for (const server of [fast, koa]) server.deps.organisations.invalidate(quiet);
  });
  after(async () => {
    await koa?.close();
    await fast?.close();
    await database?.drop();
  });

  /** Sends the request to both servers (each with its own visitor ids when `ids` is used) and compares the answers. */
  async function same(
    method: string,
    path: (v: { roaming: string; core: string }) => string,
    headers: Record<string, string | number> = {},
    body?: Buffer | string,
  ): Promise<Raw> {
    const requestId = `same-${++seq}`;
    const ip = headers['x-forwarded-for'] ?? `203.0.113.${(seq % 200) + 1}`;
    const h = { 'x-request-id': requestId, 'x-forwarded-for': ip, ...headers };
    const v = { roaming: unique('r'), core: unique('c') };
    // the same length on both, so Content-Length compares too
    const a = await send(fast.url, method, path({ ...v, core: `${v.core}f` }), h, body);
    const b = await send(koa.url, method, path({ ...v, core: `${v.core}k` }), h, body);
    // a refusal's wait depends on when each server's bucket started: its figure is not compared
    const wait = (t: string) => (a.status === 429 ? t.replace(/(retry after |Retry-After: )\d+/g, '$1N') : t);
    const norm = (r: Raw) => ({
      ...r,
      headers: r.headers.map(wait),
      body: wait(r.body.replaceAll(`${v.core}f`, v.core).replaceAll(`${v.core}k`, v.core)),
    });
    expect(norm(a), `${method} ${path(v)}`).to.deep.equal(norm(b));
    return a;
  }

  const JSON_TYPE: Record<string, string> = { 'content-type': 'application/json' };
  const ev =
    (name: string, corex = 'null', o: () => number = () => org) =>
    (v: { roaming: string; core: string }) =>
      `/jsv1/${o()}/${v.roaming}/${v.core}/${corex}/event/${name}`;

  it('answers well-formed events and identifies itself, byte for byte as Koa does', async () => {
    const before = await metric(fast, 'answered');
    const cart = {
      cart_url: `https://${domain}/cart`,
      product_id: 7,
      line_items: [{ quantity: 1, title: 'Shirt', line_price: 9.5, id: '1', product_id: 7 }],
      cart_value: 9.5,
    };
    const cases: [string, unknown, Record<string, string>][] = [
      ['view', { page: `https://${domain}/a` }, JSON_TYPE],
      ['view', { page: `https://${domain}/b` }, { 'content-type': 'text/plain;charset=UTF-8' }],
      ['updatecart', cart, JSON_TYPE],
      ['removefromcart', { ...cart, line_items: [], cart_value: 0 }, { 'content-type': 'application/json; charset=utf-8' }],
      ['productview', { product_id: 7, price: 9.5, product_url: `https://${domain}/p/7` }, JSON_TYPE],
      ['categoryview', { category: 'summer' }, { 'content-type': 'text/plain' }],
    ];
    for (const [name, body, headers] of cases) {
      const r = await same('POST', ev(name), { ...headers, 'user-agent': 'UA/1.0', origin: `https://${domain}` }, JSON.stringify(body));
      expect(r.status, r.body).to.equal(202);
    }
    const withCorex = await same('POST', ev('view', 'cust-1'), JSON_TYPE, JSON.stringify({ page: `https://${domain}/c` }));
    expect(withCorex.status).to.equal(202);
    const id = await same(
      'GET',
      (v) => `/jsv1/identify/${org}/${v.roaming}/${v.core}/${b64url({ email: `${unique('e')}@x.example`, name: 'Jane' })}`,
    );
    expect(id.status).to.equal(200);
    // without X-Request-Id each answers a new one
    const a = await send(
      fast.url,
      'POST',
      `/jsv1/${org}/r1/${unique('c')}/null/event/view`,
      JSON_TYPE,
      JSON.stringify({ page: 'https://x.example/' }),
    );
    expect(a.headers.find((h) => h.startsWith('X-Request-Id: '))).to.match(/^X-Request-Id: [0-9a-f-]{36}$/);
    expect(await metric(fast, 'answered')).to.equal(before + cases.length + 3);
  });

  it('stores the same events, visitors and locations as the Koa path', async () => {
    const v = unique('c');
    const ua = { 'user-agent': 'Stored/2.0', 'content-type': 'application/json', 'x-forwarded-for': '10.0.0.1, 81.2.69.160' };
    const page = { page: `https://${domain}/stored` };
    expect((await send(fast.url, 'POST', `/jsv1/${org}/r-f/${v}-f/cx-f/event/view`, ua, JSON.stringify(page))).status).to.equal(202);
    expect((await send(koa.url, 'POST', `/jsv1/${org}/r-f/${v}-k/cx-f/event/view`, ua, JSON.stringify(page))).status).to.equal(202);
    const c = new pg.Client({ connectionString: database.url });
    await c.connect();
    try {
      const events = await c.query(`SELECT core_id, roaming_id, corex_id, name, body FROM events WHERE core_id IN ($1, $2) ORDER BY core_id`, [
        `${v}-f`,
        `${v}-k`,
      ]);
      const visitors = await c.query(`SELECT core_id, user_agent, location, corex_id FROM visitors WHERE core_id IN ($1, $2) ORDER BY core_id`, [
        `${v}-f`,
        `${v}-k`,
      ]);
      const strip = (rows: Record<string, unknown>[]) => rows.map((r) => ({ ...r, core_id: String(r.core_id).slice(0, -2) }));
      expect(events.rows).to.have.length(2);
      expect(strip(events.rows)[0]).to.deep.equal(strip(events.rows)[1]);
      expect(visitors.rows).to.have.length(2);
      expect(strip(visitors.rows)[0]).to.deep.equal(strip(visitors.rows)[1]);
    } finally {
      await c.end();
    }
  });

  it('answers requests under Global Privacy Control and about suppressed subjects as any other, and stores the same', async () => {
    const before = await metric(fast, 'answered');
    const GPC = { 'sec-gpc': '1' };
    const page = JSON.stringify({ page: `https://${quietDomain}/` });
    const identify =
      (payload: unknown, o = () => quiet) =>
      (v: { roaming: string; core: string }) =>
        `/jsv1/identify/${o()}/${v.roaming}/${v.core}/${b64url(payload)}`;
    const cases: [string, string, (v: { roaming: string; core: string }) => string, Record<string, string>, string?][] = [
      ['GPC view with a corex_id', 'POST', ev('view', 'cust-2', () => quiet), { ...JSON_TYPE, ...GPC }, page],
      [
        'GPC productview',
        'POST',
        ev('productview', 'null', () => quiet),
        { ...JSON_TYPE, ...GPC },
        JSON.stringify({ product_id: 8, price: 1, product_url: `https://${quietDomain}/p/8` }),
      ],
      ['GPC identify', 'GET', identify({ email: 'gpc@example.com', name: 'Gee' }), GPC],
      ['suppressed email', 'GET', identify({ email: ' Suppressed@Example.com', phone: '+1 555 0100', name: 'Sue' }), {}],
      ['suppressed core_id, event', 'POST', () => `/jsv1/${quiet}/r1/c-suppressed/null/event/view`, JSON_TYPE, page],
      ['suppressed core_id, identify', 'GET', () => `/jsv1/identify/${quiet}/r1/c-suppressed/${b64url({ email: 'x@example.com' })}`, {}],
    ];
    for (const [what, method, path, headers, body] of cases) {
      const r = await same(method, path, headers, body);
      expect(r.status, `${what}: ${r.body}`).to.be.oneOf([200, 202]);
    }
    expect(await metric(fast, 'answered')).to.equal(before + cases.length);

    const c = new pg.Client({ connectionString: database.url });
    await c.connect();
    try {
      const q = async (text: string) => (await c.query(text, [quiet])).rows.map((r) => ({ ...r, core_id: String(r.core_id).replace(/[fk]$/, '') }));
      const visitors = await q(`SELECT core_id, corex_id, name, right(core_id, 1) AS via FROM visitors WHERE org_id = $1 ORDER BY core_id`);
      const events = await q(`SELECT core_id, corex_id, name, right(core_id, 1) AS via FROM events WHERE org_id = $1 ORDER BY core_id`);
      const by = (rows: Record<string, unknown>[], via: string) => rows.filter((r) => r.via === via).map(({ via: _, ...r }) => r);
      // four visitors and two events through each path, the same; nothing of the suppressed core_id
      expect(by(visitors, 'f')).to.have.length(4);
      expect(by(visitors, 'f')).to.deep.equal(by(visitors, 'k'));
      expect(by(events, 'f')).to.have.length(2);
      expect(by(events, 'f')).to.deep.equal(by(events, 'k'));
      expect(visitors.filter((v) => v.via !== 'f' && v.via !== 'k')).to.deep.equal([]);
      expect(visitors.every((v) => v.name === null && v.corex_id === null)).to.equal(true);
      expect(events.every((e) => e.corex_id === null)).to.equal(true);
      for (const table of ['contacts', 'visitor_contacts', 'deliveries', 'products']) {
        expect((await c.query(`SELECT count(*)::int AS n FROM ${table} WHERE org_id = $1`, [quiet])).rows[0].n, table).to.equal(0);
      }
    } finally {
      await c.end();
    }
  });

  it('hands bad and unusual requests to Koa, whose answers are the documented ones', async () => {
    const before = await metric(fast, 'handed_over');
    const page = JSON.stringify({ page: `https://${domain}/x` });
    const cases: [string, string, (v: { roaming: string; core: string }) => string, Record<string, string>, (Buffer | string)?][] = [
      ['missing field', 'POST', ev('view'), JSON_TYPE, '{}'],
      ['unknown field', 'POST', ev('view'), JSON_TYPE, JSON.stringify({ page: 'https://a.example/', extra: 1 })],
      ['wrong type', 'POST', ev('updatecart'), JSON_TYPE, JSON.stringify({ product_id: 'x' })],
      ['not JSON', 'POST', ev('view'), JSON_TYPE, '{"page":'],
      ['an array', 'POST', ev('view'), JSON_TYPE, '[1]'],
      ['a string', 'POST', ev('view'), JSON_TYPE, '"x"'],
      ['__proto__', 'POST', ev('view'), JSON_TYPE, '{"__proto__":{"page":"https://a.example/"}}'],
      ['escaped NUL', 'POST', ev('view'), JSON_TYPE, '{"page":"https://a.example/\\u0000"}'],
      ['a BOM (co-body strips it)', 'POST', ev('view'), JSON_TYPE, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(page)])],
      ['not UTF-8', 'POST', ev('view'), JSON_TYPE, Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])],
      ['too deep', 'POST', ev('view'), JSON_TYPE, `${'{"a":'.repeat(40)}1${'}'.repeat(40)}`],
      ['empty body', 'POST', ev('view'), JSON_TYPE, ''],
      ['text/html', 'POST', ev('view'), { 'content-type': 'text/html' }, page],
      ['latin1 charset', 'POST', ev('view'), { 'content-type': 'application/json; charset=latin1' }, page],
      ['no content type', 'POST', ev('view'), {}, page],
      ['gzip claimed', 'POST', ev('view'), { 'content-type': 'application/json', 'content-encoding': 'gzip' }, page],
      ['too large', 'POST', ev('view'), JSON_TYPE, JSON.stringify({ page: `https://a.example/${'x'.repeat(40_000)}` })],
      ['a query string', 'POST', (v) => `${ev('view')(v)}?x=1`, JSON_TYPE, page],
      ['unknown organisation', 'POST', ev('view', 'null', () => 999999), JSON_TYPE, page],
      ['org id not a number', 'POST', ev('view', 'null', () => 0), JSON_TYPE, page],
      ['bad visitor id', 'POST', (v) => `/jsv1/${org}/bad!id/${v.core}/null/event/view`, JSON_TYPE, page],
      ['bad percent-encoding', 'POST', (v) => `/jsv1/${org}/${v.roaming}/${v.core}%zz/null/event/view`, JSON_TYPE, page],
      ['NUL in the path', 'POST', (v) => `/jsv1/${org}/${v.roaming}/${v.core}%00/null/event/view`, JSON_TYPE, page],
      ['unknown event', 'POST', ev('nosuch'), JSON_TYPE, page],
      ['origin refused', 'POST', ev('view', 'null', () => other), JSON_TYPE, page],
      ['origin elsewhere', 'POST', ev('view', 'null', () => other), { ...JSON_TYPE, origin: 'https://evil.example' }, page],
      ['the pixel', 'GET', (v) => `${ev('view')(v)}?page=${encodeURIComponent(`https://${domain}/p`)}`, {}],
      ['OPTIONS', 'OPTIONS', ev('view'), { 'access-control-request-headers': 'content-type' }],
      ['payload not base64', 'GET', (v) => `/jsv1/identify/${org}/${v.roaming}/${v.core}/!!!`, {}],
      ['payload not JSON', 'GET', (v) => `/jsv1/identify/${org}/${v.roaming}/${v.core}/${Buffer.from('hi').toString('base64url')}`, {}],
      ['payload invalid', 'GET', (v) => `/jsv1/identify/${org}/${v.roaming}/${v.core}/${b64url({ email: 1 })}`, {}],
      [
        'verification required',
        'GET',
        (v) => `/jsv1/identify/${other}/${v.roaming}/${v.core}/${b64url({ email: 'a@b.example' })}`,
        { origin: `https://x.example` },
      ],
    ];
    for (const [what, method, path, headers, body] of cases) {
      const r = await same(method, path, headers, body);
      expect(r.status, `${what}: ${r.body}`).to.be.oneOf([200, 202, 204, 400, 403, 404, 405, 413, 415]);
      if (r.status >= 400) expect(JSON.parse(r.body), what).to.have.property('error');
    }
    expect(await metric(fast, 'handed_over')).to.be.greaterThan(before + 20);
  });

  it('refuses over the limits exactly as Koa does (Retry-After included), and charges once', async () => {
    const ip = '81.2.69.142';
    const page = JSON.stringify({ page: `https://${domain}/limit` });
    const statuses: number[] = [];
    for (let i = 0; i < 45; i++) statuses.push((await same('POST', ev('view'), { ...JSON_TYPE, 'x-forwarded-for': ip }, page)).status);
    // 40 per address: the fast path charged each accepted request once, as Koa did
    expect(statuses.filter((s) => s === 202)).to.have.length(40);
    expect(statuses.slice(40)).to.deep.equal([429, 429, 429, 429, 429]);
    const refused = await send(fast.url, 'POST', ev('view')({ roaming: 'r', core: unique('c') }), { ...JSON_TYPE, 'x-forwarded-for': ip }, page);
    expect(refused.headers.some((h) => /^Retry-After: \d+$/.test(h))).to.equal(true);
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await same('GET', (v) => `/jsv1/identify/${org}/${v.roaming}/${v.core}/${b64url({ email: `n${i}@x.example` })}`, {
        'x-forwarded-for': '81.2.69.143',
      });
      ids.push(r.status);
    }
    expect(ids).to.deep.equal([200, 200, 200, 429, 429]);
  });
});

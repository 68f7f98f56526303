import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import YAML from 'yaml';
import { createAjv } from '../../src/http/ajv.ts';
import { staleFiles } from '../../scripts/generate.ts';
import { doc, operations, route } from '../support/contract.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';

const REDOCLY = path.resolve(import.meta.dirname, '../../node_modules/.bin/redocly');

describe('contract', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer();
  });
  after(() => srv.stop());

  it('generated/ is what `npm run generate` makes from openapi/', async function () {
    this.timeout(60_000);
    expect(await staleFiles()).to.deep.equal([]);
  });

  it('covers every path of the interface, the read endpoints and the webhooks', () => {
    const expected: [string, string][] = [
      ['POST', '/v1/rest/acme/users/login'],
      ['POST', '/v1/rest/acme/users/register'],
      ['POST', '/v1/rest/acme/integration'],
      ['PUT', '/v1/rest/acme/integration'],
      ['POST', '/v1/rest/integration'],
      ['PUT', '/v1/rest/integration'],
      ['GET', '/v1/rest/acme/integration?org_id=1'],
      ['GET', '/v1/rest/acme/integration/1'],
      ['DELETE', '/v1/rest/acme/integration/1'],
      ['GET', '/v1/rest/acme/organisations'],
      ['GET', '/v1/rest/acme/organisations/1'],
      ['GET', '/v1/rest/acme/organisations/1/visitors/abc'],
      ['GET', '/v1/rest/acme/organisations/1/events'],
      ['GET', '/v1/rest/acme/organisations/1/deliveries'],
      ['POST', '/v1/rest/acme/deliveries/1/retry'],
      ['GET', '/v1/rest/acme/organisations/1/learn-events'],
      ['POST', '/v1/rest/acme/organisations/1/privacy-requests'],
      ['GET', '/v1/rest/acme/organisations/1/privacy-requests'],
      ['GET', '/v1/rest/acme/organisations/1/privacy-requests/1'],
      ['GET', '/v1/rest/acme/organisations/1/privacy-suppressions'],
      ['GET', '/jsv1/identify/1/r/c/eyJ9'],
      ['GET', '/jsv1/1/r/c/null/event/view'],
      ...['view', 'updatecart', 'removefromcart', 'checkout', 'buy', 'productview', 'categoryview'].map((e): [string, string] => [
        'POST',
        `/jsv1/1/r/c/null/event/${e}`,
      ]),
      ['POST', '/rest/v1/learn/event'],
      ['POST', '/api/v1/register?token=x'],
    ];
    for (const [method, path] of expected) {
      expect(route(method, path), `${method} ${path}`).to.not.equal(undefined);
    }
    expect(Object.keys(doc.webhooks).sort()).to.deep.equal(['contactErased', 'contactMatched', 'eventExported']);
  });

  it('gives every operation an operationId, summary, description, tags and examples', () => {
    for (const r of operations) {
      const op = doc.paths[r.path]![r.method] as Record<string, unknown>;
      expect(op.operationId, r.path).to.be.a('string');
      expect(op.summary, r.operationId).to.be.a('string');
      expect(op.description, r.operationId).to.be.a('string');
      expect(op.tags, r.operationId).to.be.an('array').that.is.not.empty;
    }
  });

  it('publishes the bundled document at /openapi.json and /openapi.yaml, this instance first in servers', async () => {
    // without PUBLIC_URL: the address the request reached
    const here = { url: srv.url, description: 'This Trackway instance (every area)' };
    const published = JSON.parse(JSON.stringify({ ...doc, servers: [here, ...(doc.servers as unknown[])] }));
    const json = await srv.api.get<{ servers: unknown[] }>('/openapi.json', { unchecked: true });
    expect(json.status).to.equal(200);
    expect(json.body.servers).to.deep.equal(published.servers);
    expect(json.body).to.deep.equal(published);
    const yaml = await srv.api.get('/openapi.yaml', { unchecked: true });
    expect(yaml.status).to.equal(200);
    expect(yaml.headers.get('content-type')).to.match(/^application\/yaml/);
    expect(YAML.parse(yaml.text)).to.deep.equal(published);
  });

  it('names PUBLIC_URL first in servers when it is set', async () => {
    const other = await startTestServer({ PUBLIC_URL: 'https://trackway.shop-platform.example/' });
    try {
      const json = await other.api.get<{ servers: unknown[] }>('/openapi.json', { unchecked: true });
      expect(json.body.servers[0]).to.deep.equal({
        url: 'https://trackway.shop-platform.example',
        description: 'This Trackway instance (every area)',
      });
      expect(json.body.servers.slice(1)).to.deep.equal(doc.servers);
    } finally {
      await other.stop();
    }
  });

  it('has one servers list: no path item or operation carries servers of its own', () => {
    const where: string[] = [];
    for (const [p, item] of Object.entries(doc.paths as Record<string, Record<string, { servers?: unknown }>>)) {
      if ('servers' in item) where.push(p);
      for (const [method, op] of Object.entries(item)) if (op && typeof op === 'object' && 'servers' in op) where.push(`${method} ${p}`);
    }
    expect(where).to.deep.equal([]);
    expect((doc.servers as { url: string }[]).map((s) => s.url)).to.deep.equal([
      'https://api.trackway.example',
      'https://track.trackway.example',
      'https://learn.trackway.example',
    ]);
  });

  it("gives no warning under Redocly's default rules as served under a real PUBLIC_URL (one at localhost)", async function () {
    this.timeout(120_000);
    // Redocly's `no-server-example.com` flags any host ending in example.com or localhost:
    // the public address here is another reserved name
    const other = await startTestServer({ PUBLIC_URL: 'https://trackway.shop-platform.example' });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'trackway-redocly-'));
    try {
      const lint = async (api: TestServer['api'], name: string) => {
        const served = await api.get('/openapi.json', { unchecked: true });
        fs.writeFileSync(path.join(dir, name), served.text);
        // run in an empty directory: no redocly.yaml there, so `recommended` alone applies
        const r = spawnSync(REDOCLY, ['lint', '--extends', 'recommended', '--format', 'json', name], {
          cwd: dir,
          encoding: 'utf8',
          env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
        });
        const out = JSON.parse(r.stdout) as { totals: { errors: number; warnings: number }; problems: { ruleId: string }[] };
        return { totals: out.totals, rules: out.problems.map((p) => p.ruleId) };
      };
      expect(await lint(other.api, 'public.json')).to.deep.equal({ totals: { errors: 0, warnings: 0, ignored: 0 }, rules: [] });
      // at http://127.0.0.1 with no PUBLIC_URL: the one servers list names it once
      const local = await lint(srv.api, 'local.json');
      expect(local.rules.filter((id) => id !== 'no-server-example.com')).to.deep.equal([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      await other.stop();
    }
  });

  it('describes text/plain event bodies as JSON strings whose content is the application/json schema', () => {
    const ajv = createAjv();
    ajv.addSchema(doc, 'contract');
    let seen = 0;
    for (const item of Object.values(doc.paths as Record<string, Record<string, any>>)) {
      for (const op of Object.values(item)) {
        const content = op?.requestBody?.content;
        if (!content?.['text/plain']) continue;
        seen++;
        const plain = content['text/plain'];
        // what a validator that knows nothing of contentSchema checks: a string
        expect(plain.schema.type, op.operationId).to.equal('string');
        expect(plain.schema.contentMediaType, op.operationId).to.equal('application/json');
        expect(plain.schema.contentSchema, op.operationId).to.deep.equal(content['application/json'].schema);
        expect(plain.example, op.operationId).to.be.a('string');
        // the string holds JSON that the application/json schema accepts
        const inside = JSON.parse(plain.example as string);
        const ref = (plain.schema.contentSchema as { $ref?: string }).$ref;
        const check = ajv.compile(ref?.startsWith('#') ? { $ref: `contract${ref}` } : plain.schema.contentSchema);
        expect(check(inside), `${op.operationId}: ${JSON.stringify(check.errors)}`).to.equal(true);
      }
    }
    expect(seen).to.equal(7);
  });
});

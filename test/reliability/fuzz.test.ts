// Spec-driven fuzzing: for EVERY operation in generated/openapi.json, requests
// generated from its schemas (valid ones aimed at real ids with a real bearer
// token, and invalid ones), then hand-picked nasties. The server must never
// answer 5xx, never crash (it answers /healthz throughout), and every answer
// must conform to the contract (test/support/contract.ts).
//
// FUZZ_RUNS (default 40) valid and as many invalid requests per operation;
// FUZZ_SEED to replay a run (the seed is printed); FUZZ_FAILURES_FILE appends
// every bad answer to a file (the assertion shows the first 25). The requests
// are built in fuzz-probes.ts.
import { writeFileSync } from 'node:fs';
import { expect } from 'chai';
import fc from 'fast-check';
import { areaOf } from '../../src/http/errors.ts';
import { checkResponse, route, schemaValidator } from '../support/contract.ts';
import { startTestServer, type TestServer } from '../support/harness.ts';
import { type ContractOperation, contractOperations } from '../support/operations.ts';
import { rawRequest } from '../support/raw-http.ts';
import { TestReceiver } from '../support/receiver.ts';
import { type FullTenant, fullTenant } from './fixtures.ts';
import { type Probe, probeBuilders, REGISTRATION_TOKEN, SEED } from './fuzz-probes.ts';

const RUNS = Math.max(1, Number(process.env.FUZZ_RUNS ?? 40));
const CONCURRENCY = 8;
const AREA_ERROR = { platform: 'PlatformError', tracking: 'TrackingError', analytics: 'AnalyticsFailure' } as const;

describe('spec-driven fuzzing (every operation of the contract)', function () {
  this.timeout(600_000);
  let srv: TestServer;
  let receiver: TestReceiver;
  let main: FullTenant;
  /** owns the only integration testIntegration may post to (a local receiver no fuzzed request can change) */
  let owner: FullTenant;
  /** whose trust settings are fuzzed (enforce_origin, required verification), so the tracking operations aimed at `main` keep reaching the ingest path */
  let trust: FullTenant;
  const ops = contractOperations();
  const figures = { requests: 0, fiveXX: 0, byStatus: new Map<number, number>(), byKind: new Map<string, number>() };
  const failures: string[] = [];

  before(async () => {
    receiver = await TestReceiver.start(() => ({ status: 204 }));
    srv = await startTestServer({
      REGISTRATION_TOKEN,
      LOGIN_RATE_LIMIT: 'off',
      REGISTRATION_RATE_LIMIT: 'off',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    });
    main = await fullTenant(srv, receiver.url, 'acme', 'fuzz');
    owner = await fullTenant(srv, receiver.url, 'acme', 'owner');
    trust = await fullTenant(srv, receiver.url, 'acme', 'trust');
  });

  after(async () => {
    const statuses = [...figures.byStatus]
      .sort((a, b) => a[0] - b[0])
      .map(([s, n]) => `${s}×${n}`)
      .join(' ');
    const kinds = [...figures.byKind].map(([k, n]) => `${k} ${n}`).join(', ');
    console.log(
      `      fuzz figures: ${figures.requests} requests fuzzed over ${ops.length} operations (${kinds}); 5xx seen: ${figures.fiveXX}; ` +
        `statuses ${statuses}; FUZZ_RUNS=${RUNS} FUZZ_SEED=${SEED}`,
    );
    await srv?.stop();
    await receiver?.close();
  });

  function tenantFor(op: ContractOperation): FullTenant {
    if (op.operationId === 'updateOrganisationSettings' || op.operationId === 'rotateIdentitySecret') return trust;
    return op.operationId === 'testIntegration' ? owner : main;
  }

  const { probeArb, nasties } = probeBuilders(tenantFor);

  async function send(p: Probe): Promise<void> {
    let status = 0;
    let reply: { status: number; headers: Headers; body: unknown; text: string };
    try {
      if (p.raw) {
        const r = await rawRequest(srv.url, p.raw);
        if (r.closedWithoutAnswer) throw new Error('the connection was closed without an answer');
        reply = r;
      } else {
        reply = await srv.api.request(p.method, p.path, { raw: p.body, headers: p.headers, unchecked: true });
      }
      status = reply.status;
      figures.byStatus.set(status, (figures.byStatus.get(status) ?? 0) + 1);
      if (status >= 500) {
        figures.fiveXX++;
        throw new Error(`answered ${status}`);
      }
      // the path as the server saw it (the URL parser resolves dot segments)
      const seen = new URL(p.path, 'http://x').pathname + (p.path.includes('?') ? `?${p.path.split('?').slice(1).join('?')}` : '');
      try {
        checkResponse(p.method, seen, reply);
      } catch (err) {
        const area = areaOf(seen.split('?')[0]!);
        const areaShaped = status >= 400 && status < 500 && schemaValidator(AREA_ERROR[area])(reply.body);
        // refused by node's HTTP parser before routing: enough that it is a 4xx in the area's shape
        if (p.parserMayRefuse && areaShaped) return;
        // a path no operation has (after `..` was resolved): the body gate answers before routing does
        if (!route(p.method, seen) && areaShaped && [400, 404, 405, 413, 415].includes(status)) return;
        throw err;
      }
    } catch (err) {
      failures.push(
        `${p.op.operationId} [${p.kind}: ${p.what}] ${p.method} ${p.path.slice(0, 160)} → ${status}: ${String((err as Error).message).slice(0, 400)}`,
      );
    } finally {
      figures.requests++;
      figures.byKind.set(p.kind, (figures.byKind.get(p.kind) ?? 0) + 1);
    }
  }

  async function run(probes: Probe[]): Promise<void> {
    for (let i = 0; i < probes.length; i += CONCURRENCY) {
      await Promise.all(probes.slice(i, i + CONCURRENCY).map(send));
    }
  }

  function report(): void {
    const seen = failures.splice(0);
    if (process.env.FUZZ_FAILURES_FILE) writeFileSync(process.env.FUZZ_FAILURES_FILE, seen.join('\n\n'), { flag: 'a' });
    expect(seen, `${seen.length} bad answers (FUZZ_SEED=${SEED}):\n${seen.slice(0, 25).join('\n')}`).to.deep.equal([]);
  }

  it(`answers ${RUNS} valid and ${RUNS} invalid generated requests per operation with documented non-5xx answers`, async () => {
    expect(ops.length).to.be.greaterThan(30);
    for (const [i, op] of ops.entries()) {
      const valid = fc.sample(probeArb(op, 'valid'), { numRuns: RUNS, seed: SEED + i });
      const invalid = fc.sample(probeArb(op, 'invalid'), { numRuns: RUNS, seed: SEED + 7919 * (i + 1) });
      await run([...valid, ...invalid]);
    }
    const health = await srv.api.get('/healthz');
    expect(health.status).to.equal(200);
    report();
  });

  it('answers the hand-picked nasties for every operation without a 5xx, in the contract', async () => {
    for (const op of ops) await run(nasties(op));
    const health = await srv.api.get('/healthz');
    expect(health.status).to.equal(200);
    report();
  });

  it('is still up and still serves the fixture tenant after all of it', async () => {
    expect((await srv.api.get('/healthz')).status).to.equal(200);
    expect((await srv.api.get('/readyz')).status).to.equal(200);
    const r = await srv.api.get(`/v1/rest/acme/organisations/${owner.orgId}`, { token: owner.account.token });
    expect(r.status).to.equal(200);
    const e = await srv.api.post(`/jsv1/${owner.orgId}/${owner.roamingId}/${owner.coreId}/null/event/view`, { page: 'https://shop.example.com/' });
    expect(e.status).to.equal(202);
  });
});

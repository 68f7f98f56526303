// The request series are counted in plain numbers and handed to prom-client
// when the registry is read (src/http/metrics.ts: localCounter, the request
// duration histogram). What a scrape shows, and what the primary of a
// cluster adds up across workers, must be what prom-client's own Counter and
// Histogram fed the same requests would show.
import { expect } from 'chai';
import client from 'prom-client';
import { createMetrics, localCounter } from '../../src/http/metrics.ts';

const NAMES = ['trackway_http_requests_total', 'trackway_http_request_duration_seconds'];
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

/** prom-client's own metrics, as createMetrics made them before. */
function reference() {
  const registry = new client.Registry();
  const requests = new client.Counter({
    name: NAMES[0]!,
    help: 'HTTP requests by operationId and status',
    labelNames: ['operation', 'status'],
    registers: [registry],
  });
  const duration = new client.Histogram({
    name: NAMES[1]!,
    help: 'HTTP request duration by operationId',
    labelNames: ['operation'],
    buckets: BUCKETS,
    registers: [registry],
  });
  return {
    registry,
    observeRequest(operation: string, status: number, seconds: number) {
      requests.inc({ operation, status: String(status) });
      duration.observe({ operation }, seconds);
    },
  };
}

const REQUESTS: [string, number, number][] = [
  ['recordViewEvent', 202, 0.0004],
  ['recordViewEvent', 202, 0.003],
  ['recordViewEvent', 429, 0.0001],
  ['identifyVisitor', 200, 0.02],
  ['recordViewEvent', 202, 0.001],
  ['getHealth', 200, 12],
  ['identifyVisitor', 403, 0.25],
];

async function scrapeOf(registry: client.Registry): Promise<string> {
  const parts = await Promise.all(NAMES.map((n) => registry.getSingleMetricAsString(n)));
  return parts.join('\n');
}

async function jsonOf(registry: client.Registry) {
  return (await registry.getMetricsAsJSON()).filter((m) => NAMES.includes(m.name));
}

describe('metrics: request series counted locally', () => {
  it('scrape the same as prom-client’s own counter and histogram, between reads too', async () => {
    const [ours, theirs] = [createMetrics(), reference()];
    for (const [op, status, s] of REQUESTS.slice(0, 3)) for (const m of [ours, theirs]) m.observeRequest(op, status, s);
    expect(await scrapeOf(ours.registry)).to.equal(await scrapeOf(theirs.registry));
    for (const [op, status, s] of REQUESTS.slice(3)) for (const m of [ours, theirs]) m.observeRequest(op, status, s);
    const text = await scrapeOf(ours.registry);
    expect(text).to.equal(await scrapeOf(theirs.registry));
    expect(text).to.match(/^trackway_http_requests_total\{operation="recordViewEvent",status="202"\} 3$/m);
    expect(text).to.match(/^trackway_http_request_duration_seconds_bucket\{le="0.001",operation="recordViewEvent"\} 3$/m);
    expect(text).to.match(/^trackway_http_request_duration_seconds_count\{operation="getHealth"\} 1$/m);
  });

  it('add up across workers as prom-client’s own do (the primary’s aggregation)', async () => {
    const workers = [createMetrics(), createMetrics()];
    const refs = [reference(), reference()];
    REQUESTS.forEach(([op, status, s], i) => {
      workers[i % 2]!.observeRequest(op, status, s);
      refs[i % 2]!.observeRequest(op, status, s);
    });
    const ours = client.AggregatorRegistry.aggregate(await Promise.all(workers.map((w) => jsonOf(w.registry))));
    const theirs = client.AggregatorRegistry.aggregate(await Promise.all(refs.map((w) => jsonOf(w.registry))));
    expect(await ours.metrics()).to.equal(await theirs.metrics());
    expect(await ours.metrics()).to.match(/^trackway_http_request_duration_seconds_count\{operation="recordViewEvent"\} 4$/m);
  });

  it('a local counter shows a series at 0 once made, and counts what it was told between reads', async () => {
    const registry = new client.Registry();
    const c = localCounter({ name: 'x_total', help: 'x', labelNames: ['outcome'] as const, registers: [registry] });
    const [a, b] = [c.series({ outcome: 'a' }), c.series({ outcome: 'b' })];
    expect(await registry.getSingleMetricAsString('x_total')).to.match(/^x_total\{outcome="a"\} 0$/m);
    for (let i = 0; i < 5; i++) a.inc();
    b.inc();
    expect(await registry.getSingleMetricAsString('x_total')).to.match(/^x_total\{outcome="a"\} 5\nx_total\{outcome="b"\} 1$/m);
    a.inc();
    expect(await registry.getSingleMetricAsString('x_total')).to.match(/^x_total\{outcome="a"\} 6$/m);
  });
});

// The dispatcher's sender on a thread of its own (thread-sender.client.ts):
// what an attempt records is what the sender on the dispatcher's thread
// records (status, excerpt, Retry-After, the private-address guard, errors),
// connections are kept alive across attempts, a stopping dispatcher's abort
// interrupts the attempts in flight on the other thread, and closing it ends
// the attempts it still held instead of leaving them waiting. Real receivers
// on 127.0.0.1, a real worker thread.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { INTERRUPTED_ERROR, type SendRequest, type SendResult, createSender } from '../../src/webhooks/sender.client.ts';
import { THREAD_STOPPED_ERROR, createThreadSender } from '../../src/webhooks/thread-sender.client.ts';

interface Receiver {
  url: string;
  connections: () => number;
  /** requests whose answer is held until release() */
  held: () => number;
  /** most /hold requests held at once */
  peakHeld: () => number;
  release: () => void;
  /** answers the held requests 503 */
  fail: () => void;
  close: () => Promise<void>;
}

/** Answers /ok 200 with a body, /slow-down 429 with Retry-After, /hold only when released. */
async function receiver(): Promise<Receiver> {
  let connections = 0;
  let peak = 0;
  let holding: http.ServerResponse[] = [];
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/hold') {
        holding.push(res);
        peak = Math.max(peak, holding.length);
        return;
      }
      if (req.url === '/slow-down') {
        res.writeHead(429, { 'retry-after': '7' });
        res.end('slow down');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`got ${String(req.headers['webhook-id'] ?? 'no id')}`);
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => connections,
    held: () => holding.length,
    peakHeld: () => peak,
    release: () => {
      for (const res of holding) res.end('late');
      holding = [];
    },
    fail: () => {
      for (const res of holding) {
        res.statusCode = 503;
        res.end('down');
      }
      holding = [];
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

async function until(cond: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** what two senders must agree on (timing aside) */
function comparable(r: SendResult) {
  return { statusCode: r.statusCode, error: r.error, responseExcerpt: r.responseExcerpt, retryAfterMs: r.retryAfterMs, permanent: r.permanent };
}

describe('webhook sender on its own thread', function () {
  let rx: Receiver;
  beforeEach(async () => {
    rx = await receiver();
  });
  afterEach(async () => {
    rx.release();
    await rx.close();
  });

  it('records what the sender on the calling thread records', async () => {
    const options = { allowPrivateNetworks: true, maxSocketsPerOrigin: 8, maxFreeSocketsPerOrigin: 8 };
    const here = createSender(options);
    const there = createThreadSender(options);
    try {
      // the thread says when it has loaded: a dispatcher claims nothing before
      await there.ready!();
      const requests: SendRequest[] = [
        { url: `${rx.url}/ok`, body: '{"a":1}', headers: { 'content-type': 'application/json', 'webhook-id': 'msg_1' }, timeoutMs: 5_000 },
        { url: `${rx.url}/slow-down`, body: '{}', headers: {}, timeoutMs: 5_000 },
        { url: 'ftp://example.com/hook', body: '{}', headers: {}, timeoutMs: 5_000 },
        { url: 'http://127.0.0.1:1/closed-port', body: '{}', headers: {}, timeoutMs: 5_000 },
      ];
      for (const req of requests) {
        const before = Date.now();
        const [a, b] = await Promise.all([here.send(req), there.send(req)]);
        expect(comparable(b), req.url).to.deep.equal(comparable(a));
        expect(b.startedAt).to.be.an.instanceOf(Date);
        expect(b.startedAt.getTime()).to.be.within(before - 1, Date.now());
      }
      const ok = await there.send(requests[0]!);
      expect(ok.statusCode).to.equal(200);
      expect(ok.responseExcerpt).to.equal('got msg_1');
      const slow = await there.send(requests[1]!);
      expect(slow.retryAfterMs).to.equal(7_000);
    } finally {
      here.close();
      there.close();
    }
  });

  it('keeps the private-address guard on the other thread', async () => {
    const there = createThreadSender({ allowPrivateNetworks: false, maxSocketsPerOrigin: 8, maxFreeSocketsPerOrigin: 8 });
    try {
      const r = await there.send({ url: `${rx.url}/ok`, body: '{}', headers: {}, timeoutMs: 5_000 });
      expect(r.statusCode).to.equal(null);
      expect(r.permanent).to.equal(true);
      expect(r.error).to.be.a('string');
      expect(rx.connections()).to.equal(0);
      // the same code the guard gives on the calling thread
      const here = createSender({ allowPrivateNetworks: false, maxSocketsPerOrigin: 8, maxFreeSocketsPerOrigin: 8 });
      const h = await here.send({ url: `${rx.url}/ok`, body: '{}', headers: {}, timeoutMs: 5_000 });
      here.close();
      expect(comparable(r)).to.deep.equal(comparable(h));
    } finally {
      there.close();
    }
  });

  it('sends 200 attempts, 4 at a time, over at most 4 connections', async () => {
    const there = createThreadSender({ allowPrivateNetworks: true, maxSocketsPerOrigin: 64, maxFreeSocketsPerOrigin: 32 });
    try {
      for (let round = 0; round < 50; round++) {
        const results = await Promise.all(
          Array.from({ length: 4 }, (_, k) =>
            there.send({ url: `${rx.url}/ok`, body: JSON.stringify({ round, k }), headers: { 'webhook-id': `msg_${round}_${k}` }, timeoutMs: 5_000 }),
          ),
        );
        for (const [k, r] of results.entries()) expect(r.responseExcerpt).to.equal(`got msg_${round}_${k}`);
      }
      expect(rx.connections()).to.be.within(1, 4);
    } finally {
      there.close();
    }
  });

  it("interrupts the attempts in flight when the caller's signal aborts, and every later one", async () => {
    const there = createThreadSender({ allowPrivateNetworks: true, maxSocketsPerOrigin: 8, maxFreeSocketsPerOrigin: 8 });
    const abort = new AbortController();
    try {
      const inFlight = Array.from({ length: 3 }, () =>
        there.send({ url: `${rx.url}/hold`, body: '{}', headers: {}, timeoutMs: 30_000, signal: abort.signal }),
      );
      await until(() => rx.held() === 3);
      abort.abort();
      for (const r of await Promise.all(inFlight)) {
        expect(r.statusCode).to.equal(null);
        expect(r.error).to.equal(INTERRUPTED_ERROR);
      }
      const later = await there.send({ url: `${rx.url}/ok`, body: '{}', headers: {}, timeoutMs: 5_000, signal: abort.signal });
      expect(later.error).to.equal(INTERRUPTED_ERROR);
    } finally {
      there.close();
    }
  });

  it('ends the attempts it still holds when closed, and sends nothing after', async () => {
    const there = createThreadSender({ allowPrivateNetworks: true, maxSocketsPerOrigin: 8, maxFreeSocketsPerOrigin: 8 });
    const held = Array.from({ length: 2 }, () => there.send({ url: `${rx.url}/hold`, body: '{}', headers: {}, timeoutMs: 30_000 }));
    await until(() => rx.held() === 2);
    there.close();
    for (const r of await Promise.all(held)) {
      expect(r.statusCode).to.equal(null);
      expect(r.error).to.equal(THREAD_STOPPED_ERROR);
    }
    const after = await there.send({ url: `${rx.url}/ok`, body: '{}', headers: {}, timeoutMs: 5_000 });
    expect(after.error).to.equal(THREAD_STOPPED_ERROR);
    // the two held attempts, nothing after
    expect(rx.connections()).to.equal(2);
  });

  describe('handed more of a lane than its cap (the dispatcher’s handoff)', () => {
    const options = { allowPrivateNetworks: true, maxSocketsPerOrigin: 64, maxFreeSocketsPerOrigin: 32 };
    const hold = (lane: number, cap: number, startBy = Date.now() + 60_000): SendRequest => ({
      url: `${rx.url}/hold`,
      body: '{}',
      headers: {},
      timeoutMs: 30_000,
      lane: { key: lane, cap, startBy },
    });

    it('never has more of a lane in flight than its cap, and starts the next as one ends', async () => {
      const there = createThreadSender(options);
      try {
        const results = Array.from({ length: 12 }, () => there.send(hold(7, 3)));
        await until(() => rx.held() === 3);
        await new Promise((r) => setTimeout(r, 100));
        expect(rx.held(), 'in flight before any ended').to.equal(3);
        // each release ends three; the thread starts three more without being asked again
        for (let round = 1; round < 4; round++) {
          rx.release();
          await until(() => rx.held() === 3);
        }
        rx.release();
        for (const r of await Promise.all(results)) {
          expect(r.statusCode).to.equal(200);
          expect(r.notStarted).to.equal(undefined);
        }
        expect(rx.peakHeld()).to.equal(3);
      } finally {
        there.close();
      }
    });

    it('gives back unstarted what waits in a dropped lane, and only that lane', async () => {
      const there = createThreadSender(options);
      try {
        const a = Array.from({ length: 4 }, () => there.send(hold(1, 1)));
        const b = Array.from({ length: 2 }, () => there.send(hold(2, 1)));
        await until(() => rx.held() === 2);
        there.drop!(1);
        const droppedA = await Promise.all(a.slice(1));
        for (const r of droppedA) {
          expect(r.notStarted).to.equal(true);
          expect(r.statusCode).to.equal(null);
        }
        rx.release();
        expect((await a[0]!).statusCode).to.equal(200);
        await until(() => rx.held() === 1);
        rx.release();
        for (const r of await Promise.all(b)) expect(r.statusCode).to.equal(200);
        expect(rx.peakHeld()).to.equal(2);
      } finally {
        there.close();
      }
    });

    it('gives back unstarted what waits in a lane once one of its attempts fails', async () => {
      // the dispatcher starts nothing more of the integration until the failure is written and it knows
      // whether the endpoint's breaker opened: what waits here must not start meanwhile
      const there = createThreadSender(options);
      try {
        const results = Array.from({ length: 6 }, () => there.send(hold(4, 2)));
        await until(() => rx.held() === 2);
        rx.fail();
        const all = await Promise.all(results);
        expect(all.slice(0, 2).map((r) => r.statusCode)).to.deep.equal([503, 503]);
        for (const r of all.slice(2)) expect(r.notStarted).to.equal(true);
        expect(rx.held()).to.equal(0);
        expect(rx.peakHeld()).to.equal(2);
      } finally {
        there.close();
      }
    });

    it('does not start an attempt whose start-by time passed while it waited', async () => {
      const there = createThreadSender(options);
      try {
        const first = there.send(hold(3, 1));
        const late = there.send(hold(3, 1, Date.now() + 200));
        await until(() => rx.held() === 1);
        await new Promise((r) => setTimeout(r, 300));
        rx.release();
        expect((await first).statusCode).to.equal(200);
        expect((await late).notStarted).to.equal(true);
        expect(rx.peakHeld()).to.equal(1);
      } finally {
        there.close();
      }
    });

    it('gives back what waits when the caller’s signal aborts, and interrupts what runs', async () => {
      const there = createThreadSender(options);
      const abort = new AbortController();
      try {
        const reqs = Array.from({ length: 3 }, () => there.send({ ...hold(4, 1), signal: abort.signal }));
        await until(() => rx.held() === 1);
        abort.abort();
        const [running, ...waiting] = await Promise.all(reqs);
        expect(running!.error).to.equal(INTERRUPTED_ERROR);
        for (const r of waiting) expect(r.notStarted).to.equal(true);
      } finally {
        there.close();
      }
    });
  });
});

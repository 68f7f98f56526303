// The sender's connection reuse: one keep-alive agent per origin, so many
// attempts to one receiver travel over a few TCP connections (at most the
// requests in flight at once), and a second origin gets connections of its own;
// and an endpoint URL it cannot send to, refused for good every time.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { createSender } from '../../src/webhooks/sender.client.ts';

interface Receiver {
  url: string;
  /** TCP connections accepted */
  connections: () => number;
  /** requests answered */
  requests: () => number;
  close: () => Promise<void>;
}

async function receiver(): Promise<Receiver> {
  let connections = 0;
  let requests = 0;
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    req.resume();
    req.on('end', () => {
      requests++;
      res.statusCode = 204;
      res.end();
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    connections: () => connections,
    requests: () => requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

describe('webhook sender connection reuse', function () {
  it('sends many attempts to one origin over at most as many connections as were in flight', async () => {
    const a = await receiver();
    const b = await receiver();
    const sender = createSender({ allowPrivateNetworks: true, maxSocketsPerOrigin: 64, maxFreeSocketsPerOrigin: 32 });
    try {
      const inFlight = 4;
      const rounds = 50;
      for (let i = 0; i < rounds; i++) {
        const results = await Promise.all(
          Array.from({ length: inFlight }, (_, k) =>
            sender.send({
              url: k % 2 === 0 ? a.url : b.url,
              body: JSON.stringify({ i, k }),
              headers: { 'content-type': 'application/json' },
              timeoutMs: 5_000,
            }),
          ),
        );
        for (const r of results) expect(r.statusCode, r.error ?? '').to.equal(204);
      }
      expect(a.requests()).to.equal((rounds * inFlight) / 2);
      expect(b.requests()).to.equal((rounds * inFlight) / 2);
      // two requests in flight per origin at most: two connections each, reused for all 100
      expect(a.connections()).to.be.within(1, 2);
      expect(b.connections()).to.be.within(1, 2);
    } finally {
      sender.close();
      await a.close();
      await b.close();
    }
  });

  it('refuses an endpoint URL it cannot send to, as permanent, every time it is asked', async () => {
    const sender = createSender({ allowPrivateNetworks: true, maxSocketsPerOrigin: 8, maxFreeSocketsPerOrigin: 8 });
    try {
      for (let i = 0; i < 2; i++) {
        const invalid = await sender.send({ url: 'not a url', body: '{}', headers: {}, timeoutMs: 1_000 });
        expect(invalid).to.include({ statusCode: null, permanent: true, error: 'Invalid URL', responseExcerpt: null });
        const ftp = await sender.send({ url: 'ftp://127.0.0.1/hook', body: '{}', headers: {}, timeoutMs: 1_000 });
        expect(ftp).to.include({ statusCode: null, permanent: true, error: 'unsupported protocol ftp: (http or https only)' });
      }
    } finally {
      sender.close();
    }
  });
});

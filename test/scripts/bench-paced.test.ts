// The open-loop sender of the mixed scenario (scripts/bench-paced.ts)
// against a local server: every request due is sent, tagged answers are
// reported with their time, latency counts from the due time, and failures
// are counted, not dropped.
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { paced } from '../../scripts/bench-paced.ts';

describe('bench paced sender', () => {
  let server: http.Server;
  let base: string;
  const seen: string[] = [];
  before(async () => {
    server = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      req.resume();
      req.on('end', () => {
        // /slow answers after 250 ms, /bad with a 503, /drop closes the socket
        if (req.url === '/drop') return req.socket.destroy();
        const answer = () => {
          res.statusCode = req.url === '/bad' ? 503 : 202;
          res.end('{}');
        };
        if (req.url === '/slow') setTimeout(answer, 250);
        else answer();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  it('sends rate × seconds requests over the given sockets and reports the tagged answers', async () => {
    seen.length = 0;
    let n = 0;
    const t0 = performance.timeOrigin + performance.now();
    const r = await paced(base, () => ({ method: 'POST', path: `/e/${++n}`, body: '{"a":1}', tag: n % 10 === 0 ? `t${n}` : undefined }), {
      rate: 400,
      seconds: 0.5,
      connections: 4,
    });
    expect(r).to.include({ sent: 200, completed: 200, non2xx: 0, errors: 0, target_rps: 400 });
    expect(seen).to.have.length(200);
    expect(seen[199]).to.equal('POST /e/200');
    expect([...r.acked.keys()]).to.have.length(20);
    for (const at of r.acked.values()) expect(at).to.be.within(t0, performance.timeOrigin + performance.now());
    expect(r.p50_ms).to.be.at.most(r.p99_ms);
  });

  it('counts the wait for a slow answer against the server, from the due time', async () => {
    // one socket: the 24 requests due while /slow is answered wait for it, and that wait is their latency
    // (counted from when they were sent, most would show ~1 ms and the median too)
    let n = 0;
    const r = await paced(base, () => ({ method: 'GET', path: n++ === 0 ? '/slow' : '/fast' }), { rate: 100, seconds: 0.3, connections: 1 });
    expect(r.completed).to.equal(30);
    expect(r.max_ms).to.be.at.least(250);
    expect(r.p50_ms).to.be.at.least(50);
  });

  it('counts non-2xx answers and failed connections', async () => {
    let n = 0;
    const r = await paced(base, () => ({ method: 'GET', path: ['/bad', '/drop', '/fast'][n++ % 3]! }), { rate: 300, seconds: 0.1, connections: 2 });
    expect(r).to.include({ sent: 30, non2xx: 10, errors: 10, completed: 20 });
  });
});

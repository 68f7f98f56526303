// The webhook receiver of the mixed scenario (scripts/bench-mixed.ts), in a
// process of its own: the bench process also drives the load, and an arrival
// stamped by a busy event loop would be stamped late. node:http with
// keep-alive, answers 204; for each delivery notes the wall-clock time its
// body had fully arrived (performance.timeOrigin + now(): the same clock as
// the service's occurred_at and PostgreSQL's commit timestamps, this machine's
// CLOCK_REALTIME) with its event_id, occurred_at and the marker the bench put
// in the page URL (`?m=`).
//
// Protocol: prints `ready` once listening; for each line `dump` on stdin
// prints one JSON line {"received": n, "records": [[arrival_ms, event_id,
// occurred_at, marker], ...]} and forgets them; `count` prints {"received": n}.
// Run as plain JavaScript (esbuild), never through tsx.
import http from 'node:http';
import readline from 'node:readline';

type Record_ = [number, string | null, string | null, string | null];

let records: Record_[] = [];
let received = 0;

const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const at = performance.timeOrigin + performance.now();
    received++;
    res.statusCode = 204;
    res.end();
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as {
        event_id?: string;
        occurred_at?: string;
        properties?: { page?: string };
      };
      const page = body.properties?.page;
      const marker = page ? new URL(page).searchParams.get('m') : null;
      records.push([at, body.event_id ?? null, body.occurred_at ?? null, marker]);
    } catch {
      records.push([at, null, null, null]);
    }
  });
});

server.listen(Number(process.env.RECEIVER_PORT), '127.0.0.1', () => process.stdout.write('ready\n'));

for await (const line of readline.createInterface({ input: process.stdin })) {
  if (line === 'dump') {
    process.stdout.write(JSON.stringify({ received, records }) + '\n');
    records = [];
  } else if (line === 'count') {
    process.stdout.write(JSON.stringify({ received }) + '\n');
  }
}
server.closeAllConnections();
server.close();

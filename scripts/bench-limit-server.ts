// The durable limit (docs/design.md "Quality bars"): the least a server can do and still
// acknowledge an event only once it is durable. node:http with keep-alive,
// the JSON body parsed, one row per request group-committed into one table
// (primary key only) on the service's own PostgreSQL, 202 after COMMIT.
//
// Group commit as the service's ingest does it (src/tracking/ingest.service.ts):
// requests of one event-loop turn join a queue; while fewer than IN_FLIGHT
// transactions are running, up to MAX_BATCH queued rows go into the next one;
// the rest wait for a transaction to finish. Each batch is ONE multi-row
// INSERT of one jsonb parameter, sent as a named prepared statement, in its
// own implicit transaction: the reply waits for it, i.e. for its COMMIT (and,
// with synchronous_commit on, the WAL flush).
//
// A GET (identify) carries its JSON in the last path segment (base64url):
// decoded and parsed like a body. Run by scripts/bench.ts as plain JavaScript
// (compiled by esbuild at start), never through tsx.
import http from 'node:http';
import pg from 'pg';

const PORT = Number(process.env.PORT);
const MAX_BATCH = Number(process.env.LIMIT_MAX_BATCH ?? 256);
const IN_FLIGHT = Number(process.env.LIMIT_IN_FLIGHT ?? 2);
const TABLE = process.env.LIMIT_TABLE ?? 'bench_limit_events';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: IN_FLIGHT, application_name: 'bench-limit' });
pool.on('error', () => {});
const INSERT_TEXT = `INSERT INTO ${TABLE} (path, client_ip, body)
  SELECT r.p, r.i, r.b FROM jsonb_to_recordset($1::jsonb) AS r(p text, i text, b jsonb)`;

const ACCEPTED = Buffer.from('{"status":"accepted"}');
const ACCEPTED_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'content-length': String(ACCEPTED.length) };

interface Pending {
  /** the row as a JSON object text: {"p": path, "i": client ip, "b": <the body, verbatim>} */
  row: string;
  res: http.ServerResponse;
}

const queue: Pending[] = [];
let inFlight = 0;
let scheduled = false;
let batches = 0;
let rows = 0;

function answer(res: http.ServerResponse, status: number, body?: string): void {
  if (status === 202) {
    res.writeHead(202, ACCEPTED_HEADERS);
    res.end(ACCEPTED);
  } else {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(body ?? '{}');
  }
}

function pump(): void {
  scheduled = false;
  while (inFlight < IN_FLIGHT && queue.length > 0) {
    const batch = queue.splice(0, MAX_BATCH);
    inFlight++;
    let json = '[';
    for (let i = 0; i < batch.length; i++) json += (i ? ',' : '') + batch[i]!.row;
    json += ']';
    pool
      .query({ name: 'bench_limit_insert', text: INSERT_TEXT, values: [json] })
      .then(
        () => {
          batches++;
          rows += batch.length;
          for (const p of batch) answer(p.res, 202);
        },
        (err: unknown) => {
          process.stderr.write(`limit server: batch of ${batch.length} failed: ${(err as Error).message}\n`);
          for (const p of batch) answer(p.res, 503, '{"error":"unavailable"}');
        },
      )
      .finally(() => {
        inFlight--;
        if (queue.length > 0) pump();
      });
  }
}

function payloadOf(url: string): string {
  const q = url.indexOf('?');
  const p = q < 0 ? url : url.slice(0, q);
  return Buffer.from(decodeURIComponent(p.slice(p.lastIndexOf('/') + 1)), 'base64url').toString('utf8');
}

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const url = req.url ?? '/';
    if (url === '/stats') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ batches, rows }));
      return;
    }
    let body: string;
    try {
      body = chunks.length > 0 ? Buffer.concat(chunks).toString('utf8') : req.method === 'GET' ? payloadOf(url) : '';
      JSON.parse(body);
    } catch {
      answer(res, 400, '{"error":"invalid_json"}');
      return;
    }
    const xff = req.headers['x-forwarded-for'];
    const ip = typeof xff === 'string' ? xff.split(',')[0]!.trim() : (req.socket.remoteAddress ?? '');
    // the body is valid JSON (parsed above): it goes into the batch's jsonb verbatim
    queue.push({ row: `{"p":${JSON.stringify(url)},"i":${JSON.stringify(ip)},"b":${body}}`, res });
    if (!scheduled) {
      scheduled = true;
      setImmediate(pump);
    }
  });
});
server.listen(PORT, '127.0.0.1');

function stop(): void {
  server.close();
  server.closeAllConnections();
  void pool.end().finally(() => process.exit(0));
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

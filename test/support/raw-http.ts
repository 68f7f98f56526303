// Raw HTTP/1.1 over a socket, for what fetch refuses to send: invalid bytes in
// a request line or a header, conflicting framing, bodies trickled slowly.
import net from 'node:net';

export interface RawReply {
  status: number;
  headers: Headers;
  text: string;
  body: unknown;
  /** the socket was closed without any response */
  closedWithoutAnswer: boolean;
}

function parse(all: Buffer): RawReply {
  // skip interim answers (100 Continue)
  let buf = all;
  while (/^HTTP\/1\.[01] 1\d\d /.test(buf.subarray(0, 16).toString('latin1')) && buf.indexOf('\r\n\r\n') > 0) {
    buf = buf.subarray(buf.indexOf('\r\n\r\n') + 4);
  }
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return { status: 0, headers: new Headers(), text: '', body: undefined, closedWithoutAnswer: buf.length === 0 };
  const head = buf.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '')?.[1] ?? 0);
  const headers = new Headers();
  for (const line of head.slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) headers.append(line.slice(0, i).trim(), line.slice(i + 1).trim());
  }
  let payload = buf.subarray(end + 4);
  if (/chunked/i.test(headers.get('transfer-encoding') ?? '')) {
    const parts: Buffer[] = [];
    let rest = payload;
    for (;;) {
      const nl = rest.indexOf('\r\n');
      if (nl < 0) break;
      const size = parseInt(rest.subarray(0, nl).toString('latin1'), 16);
      if (!size) break;
      parts.push(rest.subarray(nl + 2, nl + 2 + size));
      rest = rest.subarray(nl + 2 + size + 2);
    }
    payload = Buffer.concat(parts);
  } else if (headers.has('content-length')) {
    payload = payload.subarray(0, Number(headers.get('content-length')));
  }
  const text = payload.toString('utf8');
  let body: unknown = text;
  if ((headers.get('content-type') ?? '').startsWith('application/json') && text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  return { status, headers, text, body, closedWithoutAnswer: false };
}

/** Sends `request` as is (add `Connection: close`), resolves with the parsed answer once the server closes. */
export function rawRequest(base: string, request: Buffer | string, timeoutMs = 10_000): Promise<RawReply> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', () => {}); // a reset after the answer is fine; no answer shows below
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(parse(Buffer.concat(chunks)));
    });
    socket.write(request);
  });
}

/** A request head (and body) in HTTP/1.1 with `Connection: close`. */
export function httpRequest(method: string, target: string, headers: Record<string, string>, body?: Buffer | string): Buffer {
  const b = body === undefined ? Buffer.alloc(0) : Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  const lines = [`${method} ${target} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  if (body !== undefined && !Object.keys(headers).some((k) => /^(content-length|transfer-encoding)$/i.test(k))) {
    lines.push(`Content-Length: ${b.length}`);
  }
  return Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), b]);
}

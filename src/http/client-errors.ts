// Requests node's HTTP parser refuses before the app sees them (a malformed
// request line or header, conflicting framing, headers over 16 KB, a client
// too slow to send its request within HTTP_HEADERS_TIMEOUT/HTTP_REQUEST_TIMEOUT)
// are answered like every other error: JSON in the area's shape, read from
// the request line when there is one, and the connection is closed.
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { type ErrorKind, areaError, areaOf } from './errors.ts';

interface ParserError extends Error {
  code?: string;
  rawPacket?: Buffer;
}

const KIND: Record<string, { kind: ErrorKind; message: string }> = {
  HPE_HEADER_OVERFLOW: { kind: 'headers_too_large', message: 'The request headers exceed 16 KB' },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { kind: 'payload_too_large', message: 'The chunk extensions are too large' },
  ERR_HTTP_REQUEST_TIMEOUT: { kind: 'request_timeout', message: 'The request was not received in time' },
};

/** The path of the request line in what the parser saw, if it got that far. */
function pathOf(raw: Buffer | undefined): string {
  if (!raw) return '/';
  const line = raw.subarray(0, Math.min(raw.length, 8192)).toString('latin1').split('\r\n', 1)[0] ?? '';
  const target = line.split(' ')[1] ?? '/';
  return target.startsWith('/') ? target.split('?')[0]! : '/';
}

/** The server's 'clientError' listener. */
export function answerClientError(err: ParserError, socket: Duplex): void {
  // like node's default: never write into a response already under way
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean; req?: { url?: string } } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const { kind, message } = KIND[err.code ?? ''] ?? { kind: 'validation' as const, message: 'Malformed HTTP request' };
  // a request cut off mid-body has been parsed up to its headers: its path is known
  const url = inFlight?.req?.url;
  const area = areaOf(url ? (url.split('?')[0] ?? '/') : pathOf(err.rawPacket));
  const e = areaError(area, kind, message);
  const requestId = randomUUID();
  const body = JSON.stringify({ ...e.body, request_id: requestId });
  const reason =
    { 400: 'Bad Request', 408: 'Request Timeout', 413: 'Payload Too Large', 431: 'Request Header Fields Too Large' }[e.status] ?? 'Error';
  const cors = area === 'tracking' ? 'Access-Control-Allow-Origin: *\r\n' : '';
  socket.end(
    `HTTP/1.1 ${e.status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\n${cors}Connection: close\r\n\r\n${body}`,
  );
  // a client that never reads must not keep the socket
  setTimeout(() => socket.destroy(), 2_000).unref();
}

// Cursor pagination shared by every list endpoint: `?cursor=&limit=` in,
// `{items, next_cursor}` out. A cursor is opaque to clients: base64url of a
// small JSON object holding the position after the last item and a short
// fingerprint of the filters it was made with, so a cursor replayed with other
// filters (or a hand-made one) answers 400/4000 instead of a wrong page.
//
// Usage in a service:
//   const limit = pageLimit(query.limit);
//   const filters = { org_id: orgId, status };
//   const after = decodeCursor(query.cursor, filters);          // undefined on the first page
//   const afterId = after ? cursorNumber(after, 'id') : undefined;
//   const rows = await repo.list(db, orgId, afterId, limit + 1); // fetch one extra row
//   return toPage(rows, limit, (last) => ({ id: last.id }), filters);
import { createHash } from 'node:crypto';
import { platformError } from './errors.ts';

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

/** A position in a listing: the sort key(s) of the last item returned. */
export type CursorPosition = Record<string, string | number | null>;

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

function badCursor(): Error {
  return platformError(400, 4000, 'Invalid request: query.cursor is not a valid cursor for this listing', [
    { path: 'query.cursor', message: 'is not a valid cursor for this listing' },
  ]);
}

/** The page size: `limit` (a number or a numeric string) clamped to 1..200, default 50. */
export function pageLimit(limit: unknown, def = DEFAULT_LIMIT): number {
  const n = typeof limit === 'string' && limit.trim() !== '' ? Number(limit) : typeof limit === 'number' ? limit : NaN;
  if (!Number.isFinite(n)) return def;
  return Math.min(MAX_LIMIT, Math.max(1, Math.trunc(n)));
}

function fingerprint(filters: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(filters ?? null))
    .digest('base64url')
    .slice(0, 10);
}

/** An opaque cursor for `position`, valid only with the same `filters`. */
export function encodeCursor(position: CursorPosition, filters?: unknown): string {
  return Buffer.from(JSON.stringify({ p: position, f: fingerprint(filters) }), 'utf8').toString('base64url');
}

/**
 * The position in a cursor made by `encodeCursor` with the same `filters`;
 * undefined when no cursor was sent. Anything else throws 400/4000.
 */
export function decodeCursor(raw: string | undefined | null, filters?: unknown): CursorPosition | undefined {
  if (raw === undefined || raw === null || raw === '') return undefined;
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(raw)) throw badCursor();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    throw badCursor();
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw badCursor();
  const { p, f } = parsed as { p?: unknown; f?: unknown };
  if (f !== fingerprint(filters)) throw badCursor();
  if (typeof p !== 'object' || p === null || Array.isArray(p)) throw badCursor();
  for (const v of Object.values(p)) {
    if (v !== null && typeof v !== 'string' && typeof v !== 'number') throw badCursor();
  }
  return p as CursorPosition;
}

/** A numeric key of a decoded position (a safe integer), else 400. */
export function cursorNumber(position: CursorPosition, key: string): number {
  const v = position[key];
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw badCursor();
  return v;
}

/** A string key of a decoded position, else 400. */
export function cursorString(position: CursorPosition, key: string): string {
  const v = position[key];
  if (typeof v !== 'string') throw badCursor();
  return v;
}

/**
 * One page from `rows` fetched with `limit + 1`: the first `limit` rows, and a
 * cursor after the last of them when there was one more.
 */
export function toPage<R>(
  rows: R[],
  limit: number,
  positionOf: (last: R) => CursorPosition,
  filters?: unknown,
): { rows: R[]; next_cursor: string | null } {
  if (rows.length <= limit) return { rows, next_cursor: null };
  const kept = rows.slice(0, limit);
  return { rows: kept, next_cursor: encodeCursor(positionOf(kept[kept.length - 1]!), filters) };
}

/** A timestamp key (ISO 8601) of a decoded position, normalised, else 400. */
export function cursorTime(position: CursorPosition, key: string): string {
  const v = cursorString(position, key);
  const ms = Date.parse(v);
  if (Number.isNaN(ms)) throw badCursor();
  return new Date(ms).toISOString();
}

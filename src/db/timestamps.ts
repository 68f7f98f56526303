// Timestamps as the batch statements' JSON parameters carry them: the ISO
// string JSON.stringify writes for a Date (Date#toJSON), formatted once per
// millisecond. Every request of a batch brings its instant (an event's row
// carries it once, its visitor touch twice: first_seen and last_seen), and
// V8 formats each Date through toJSON → toISOString → a printf: about 2 % of
// a worker's CPU in the perf profile of view (docs/profiles/whole-host.md).

let lastMs = Number.NaN;
let lastIso = '';

/** What JSON.stringify writes for `d` (without the quotes): its ISO string, or null for an invalid date. */
export function isoTimestamp(d: Date): string | null {
  const ms = d.getTime();
  if (ms !== lastMs) {
    if (Number.isNaN(ms)) return null;
    lastIso = d.toISOString();
    lastMs = ms;
  }
  return lastIso;
}

/** isoTimestamp for an optional one: null stays null. */
export function isoTimestampOrNull(d: Date | null | undefined): string | null {
  return d == null ? null : isoTimestamp(d);
}

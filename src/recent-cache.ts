// A bounded memo of recent answers, for work a client repeats request after
// request (a visitor sends all its events from one address): two generations
// of a Map (when the young one is full it becomes the old one), so every
// operation is O(1) and at most 2 × `max` entries are kept, whatever the
// keys a client sends.
export class RecentCache<V> {
  private young = new Map<string, V>();
  private old = new Map<string, V>();
  constructor(private readonly max: number) {}

  get(key: string): V | undefined {
    const v = this.young.get(key);
    if (v !== undefined) return v;
    const o = this.old.get(key);
    if (o !== undefined) this.set(key, o);
    return o;
  }

  set(key: string, value: V): void {
    if (this.young.size >= this.max) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, value);
  }
}

/**
 * Deletes the `count` oldest entries of a Map (its first in insertion
 * order), in one pass. A Map that forgets its oldest entry one at a time
 * (`map.delete(map.keys().next().value)` per insert) is slow in V8: deleted
 * entries stay in its table as holes until the next rehash, and every new
 * iterator walks past all of them, so at 10,000 entries each eviction cost
 * about 5 µs against 0.2 µs in batches of an eighth
 * (docs/profiles/hidden-classes.md).
 */
export function evictOldest<K, V>(map: Map<K, V>, count: number): void {
  if (count <= 0) return;
  for (const k of map.keys()) {
    map.delete(k);
    if (--count === 0) return;
  }
}

/** How many entries a bounded Map of `max` evicts at once when it is over: an eighth of it (at least one). */
export const evictionBatch = (max: number): number => Math.max(1, max >> 3);

/**
 * Keeps a Map whose newest entries are last within `max`: once it is over,
 * its oldest are forgotten, an eighth of `max` at a time (evictOldest). The
 * bounded Maps (fresh visitors, webhook credentials) call it after each insert.
 */
export function keepWithin<K, V>(map: Map<K, V>, max: number): void {
  if (map.size > max) evictOldest(map, map.size - max - 1 + evictionBatch(max));
}

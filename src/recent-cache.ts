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

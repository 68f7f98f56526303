// fast-check arbitraries derived from the contract's JSON schemas: values the
// schema accepts (`valid`), and values it should refuse or that probe what it
// cannot express (`invalid`: wrong types, missing and unknown properties,
// out-of-range numbers, over-long strings, text PostgreSQL cannot store).
// A small subset of JSON Schema 2020-12: what generated/openapi.json uses.
import fc from 'fast-check';

type Json = Record<string, unknown>;
export type Schema = Json;

const MAX_ITEMS = 4;

/** Strings that tend to break things downstream of validation. */
export const NASTY_STRINGS = [
  '',
  ' ',
  'a\u0000b',
  '\u0000',
  'lone \ud800 high',
  'lone \udc00 low',
  '\ud83d\ude00 emoji',
  '\u202e right-to-left',
  '\ufeffBOM',
  "'; DROP TABLE users; --",
  '%00',
  '%',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  '${jndi:ldap://127.0.0.1/a}',
  '\\',
  '"',
  '\r\n\r\nX-Injected: 1',
  'null',
  'x'.repeat(5000),
  '9'.repeat(400),
  'http://',
  'https://%zz',
  'javascript:alert(1)',
];

export const NASTY_NUMBERS = [0, -1, -0, 1.5, 2 ** 53, 2 ** 53 + 2, 1e21, -1e21, 1e308, -1e308, Number.MIN_VALUE, 2 ** 31, 2 ** 63];

export class SchemaValues {
  constructor(private readonly doc: Json) {}

  /** Follows $ref (also nested ones) to the schema it names. */
  resolve(schema: Schema | undefined): Schema {
    let s: Schema = schema ?? {};
    for (let i = 0; i < 20 && typeof s.$ref === 'string'; i++) {
      const { $ref, ...rest } = s;
      const target = $ref
        .replace(/^#\//, '')
        .split('/')
        .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
        .reduce<Json>((o, k) => o[k] as Json, this.doc);
      s = { ...target, ...rest };
    }
    return s;
  }

  /** Values the schema accepts (mostly: formats are approximated). */
  valid(raw: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
    const s = this.resolve(raw);
    if ('const' in s) return fc.constant(s.const);
    if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
    if (Array.isArray(s.oneOf) || Array.isArray(s.anyOf)) {
      const branches = ((s.oneOf ?? s.anyOf) as Schema[]).map((b) => this.valid(b, depth + 1));
      return fc.oneof(...branches);
    }
    const type = Array.isArray(s.type) ? (s.type as string[]) : s.type ? [s.type as string] : this.guessTypes(s);
    if (type.length > 1) return fc.oneof(...type.map((t) => this.valid({ ...s, type: t }, depth)));
    switch (type[0]) {
      case 'null':
        return fc.constant(null);
      case 'boolean':
        return fc.boolean();
      case 'integer': {
        const min = typeof s.minimum === 'number' ? s.minimum : -1_000_000;
        const max = typeof s.maximum === 'number' ? Math.min(s.maximum, Number.MAX_SAFE_INTEGER) : Math.max(min, 0) + 1_000_000;
        return fc.integer({ min: Math.max(min, Number.MIN_SAFE_INTEGER), max });
      }
      case 'number': {
        const min = typeof s.minimum === 'number' ? s.minimum : -1e9;
        const max = typeof s.maximum === 'number' ? s.maximum : 1e9;
        return fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
      }
      case 'string':
        return this.validString(s);
      case 'array': {
        const maxItems = Math.min(typeof s.maxItems === 'number' ? s.maxItems : MAX_ITEMS, MAX_ITEMS);
        const minItems = typeof s.minItems === 'number' ? s.minItems : 0;
        return fc.array(depth > 6 ? fc.constant(null) : this.valid(s.items as Schema, depth + 1), {
          minLength: minItems,
          maxLength: Math.max(minItems, maxItems),
        });
      }
      case 'object':
      default:
        return this.validObject(s, depth);
    }
  }

  private guessTypes(s: Schema): string[] {
    if (s.properties || s.additionalProperties !== undefined || s.required) return ['object'];
    if (s.items) return ['array'];
    if (s.pattern || s.format || s.maxLength !== undefined) return ['string'];
    return ['string', 'integer', 'boolean', 'object'];
  }

  private validString(s: Schema): fc.Arbitrary<string> {
    const maxLength = typeof s.maxLength === 'number' ? s.maxLength : 64;
    const minLength = typeof s.minLength === 'number' ? s.minLength : 0;
    const fit = (a: fc.Arbitrary<string>) => a.filter((v) => v.length >= minLength && v.length <= maxLength);
    if (s.format === 'uri' || s.pattern === '^https?://') {
      return fit(
        fc.webUrl({ validSchemes: ['https', 'http'], withQueryParameters: true, withFragments: true }).filter((u) => /^https?:\/\//.test(u)),
      );
    }
    if (s.format === 'email') return fit(fc.emailAddress());
    if (s.format === 'date-time') return fc.date({ noInvalidDate: true, min: new Date(0), max: new Date(4e12) }).map((d) => d.toISOString());
    if (typeof s.pattern === 'string') {
      try {
        return fit(fc.stringMatching(new RegExp(s.pattern)));
      } catch {
        // a pattern fast-check cannot read: fall back to plain text
      }
    }
    return fc.string({ minLength, maxLength: Math.min(maxLength, 80) });
  }

  private validObject(s: Schema, depth: number): fc.Arbitrary<unknown> {
    const props = (s.properties ?? {}) as Record<string, Schema>;
    const required = new Set((s.required ?? []) as string[]);
    const keys = Object.keys(props);
    if (keys.length === 0) {
      if (s.additionalProperties === false) return fc.constant({});
      return depth > 4 ? fc.constant({}) : fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
    }
    const record: Record<string, fc.Arbitrary<unknown>> = {};
    for (const k of keys) record[k] = depth > 8 ? fc.constant(null) : this.valid(props[k], depth + 1);
    const minProps = typeof s.minProperties === 'number' ? s.minProperties : 0;
    return fc.record(record, { requiredKeys: keys.filter((k) => required.has(k)) }).filter((o) => Object.keys(o as object).length >= minProps);
  }

  /** Values that break the schema in one place (or probe what it cannot say). */
  invalid(raw: Schema | undefined): fc.Arbitrary<unknown> {
    const s = this.resolve(raw);
    const anything = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }),
      fc.constantFrom<unknown>(...NASTY_STRINGS, ...NASTY_NUMBERS, null, true, [], {}, [[[]]]),
      fc.string({ unit: 'binary', maxLength: 40 }),
    );
    return fc.oneof(
      { weight: 1, arbitrary: anything },
      {
        weight: 4,
        arbitrary: fc.tuple(this.valid(s), fc.integer({ min: 0, max: 1_000_000 }), anything).map(([v, pick, junk]) => this.mutate(s, v, pick, junk)),
      },
    );
  }

  /** Changes one thing in a valid value: a leaf replaced, a required key dropped, an unknown key added, a bound crossed. */
  private mutate(s: Schema, value: unknown, pick: number, junk: unknown): unknown {
    const paths: (string | number)[][] = [];
    const collect = (v: unknown, path: (string | number)[], depth: number) => {
      paths.push(path);
      if (depth > 8 || typeof v !== 'object' || v === null) return;
      if (Array.isArray(v)) v.forEach((x, i) => collect(x, [...path, i], depth + 1));
      else for (const [k, x] of Object.entries(v)) collect(x, [...path, k], depth + 1);
    };
    collect(value, [], 0);
    const path = paths[pick % paths.length]!;
    const schema = this.schemaAt(s, path);
    const mode = Math.floor(pick / paths.length) % 5;
    let replacement: unknown = junk;
    if (mode === 1 && schema) {
      const r = this.resolve(schema);
      if (typeof r.maxLength === 'number') replacement = 'y'.repeat(r.maxLength + 1);
      else if (typeof r.maximum === 'number') replacement = r.maximum + 1;
      else if (typeof r.minimum === 'number') replacement = r.minimum - 1;
    } else if (mode === 2) replacement = NASTY_STRINGS[pick % NASTY_STRINGS.length];
    else if (mode === 3) replacement = NASTY_NUMBERS[pick % NASTY_NUMBERS.length];
    if (path.length === 0) return mode === 4 && typeof value === 'object' && value !== null ? { ...value, unexpected_field: junk } : replacement;
    const copy = structuredClone(value) as Record<string | number, unknown>;
    let cur = copy;
    for (const p of path.slice(0, -1)) cur = cur[p] as Record<string | number, unknown>;
    const last = path[path.length - 1]!;
    if (mode === 4 && !Array.isArray(cur)) delete cur[last];
    else cur[last] = replacement;
    return copy;
  }

  private schemaAt(s: Schema, path: (string | number)[]): Schema | undefined {
    let cur: Schema | undefined = s;
    for (const p of path) {
      if (!cur) return undefined;
      const r = this.resolve(cur);
      if (typeof p === 'number') cur = r.items as Schema | undefined;
      else cur = (r.properties as Record<string, Schema> | undefined)?.[p];
    }
    return cur;
  }
}

// The requests the spec-driven fuzzing sends (fuzz.test.ts): generated from
// each operation's schemas (valid ones aimed at real ids with a real bearer
// token, and invalid ones), and the hand-picked nasties, raw HTTP included.
import fc from 'fast-check';
import { type ContractOperation, schemas } from '../support/operations.ts';
import { httpRequest } from '../support/raw-http.ts';
import { type FullTenant } from './fixtures.ts';
import { b64url } from '../support/payload.ts';

/** FUZZ_SEED to replay a run (the seed is printed). */
export const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
export const REGISTRATION_TOKEN = 'fuzz-registration-token';

export interface Probe {
  op: ContractOperation;
  kind: 'valid' | 'invalid' | 'nasty' | 'raw';
  what: string;
  method: string;
  /** the request target as sent */
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /** sent over a raw socket (bytes fetch will not send) */
  raw?: Buffer;
  /** node's parser may refuse it before routing: a 4xx in the area's error shape is enough */
  parserMayRefuse?: boolean;
}

/** Percent-encodes what encodeURIComponent can (a lone surrogate cannot travel in a URL: made well-formed). */
function enc(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return encodeURIComponent(s.replace(/[\uD800-\uDFFF]/g, '\uFFFD'));
  }
}

const text = (v: unknown) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));

/** The probe builders, aimed at the fixtures of the tenant `tenantFor` names for an operation. */
export function probeBuilders(tenantFor: (op: ContractOperation) => FullTenant) {
  /** A known good value for a parameter, if the fixtures have one. */
  function fixture(op: ContractOperation, name: string): string | undefined {
    if (op.operationId === 'registerAnalyticsUser' && name === 'token') return REGISTRATION_TOKEN;
    return tenantFor(op).values[name];
  }

  function bodyWithIds(op: ContractOperation, body: unknown, useIds: boolean): unknown {
    if (!useIds || typeof body !== 'object' || body === null || Array.isArray(body)) return body;
    const t = tenantFor(op);
    const b = { ...(body as Record<string, unknown>) };
    if ('org_id' in b) b.org_id = t.orgId;
    if ('id' in b && /integration/i.test(op.operationId)) b.id = t.integrationId;
    if ('org_token' in b) b.org_token = t.orgToken;
    return b;
  }

  function probeArb(op: ContractOperation, mode: 'valid' | 'invalid'): fc.Arbitrary<Probe> {
    const paramArbs = op.params.map((p) => {
      const good = fixture(op, p.name);
      const validValue = schemas.valid(p.schema).map(text);
      const valid = good === undefined ? validValue : fc.oneof({ weight: 3, arbitrary: fc.constant(good) }, { weight: 1, arbitrary: validValue });
      return fc.record({ valid, invalid: schemas.invalid(p.schema).map(text), include: p.required ? fc.constant(true) : fc.boolean() });
    });
    const body = op.body
      ? fc.record({
          valid: fc.tuple(schemas.valid(op.body), fc.nat(9)).map(([b, n]) => bodyWithIds(op, b, n < 8)),
          invalid: schemas.invalid(op.body),
        })
      : fc.constant(undefined);
    const wrongTypes = [
      'text/xml',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/json; charset=utf-16',
      'application/jsonx',
    ];
    return fc
      .record({
        params: fc.tuple(...paramArbs),
        body,
        target: fc.nat(op.params.length + 3),
        auth: fc.constantFrom('', 'Bearer garbage', 'Basic Zm9vOmJhcg==', `Bearer ${tenantFor(op).account.token}x`),
        wrongType: fc.constantFrom(...wrongTypes),
        plain: fc.boolean(),
      })
      .map(({ params, body: b, target, auth, wrongType, plain }) => {
        const invalidAt = mode === 'invalid' ? target : -1;
        const values: Record<string, string> = {};
        const query: string[] = [];
        const headers: Record<string, string> = {};
        op.params.forEach((p, i) => {
          const v = params[i]!;
          if (!v.include && invalidAt !== i) return;
          const value = invalidAt === i ? v.invalid : v.valid;
          if (p.in === 'path') values[p.name] = value;
          else if (p.in === 'query') query.push(`${enc(p.name)}=${enc(value)}`);
          else if (p.in === 'header') headers[p.name] = value.replace(/[^\x20-\x7e]/g, '?');
        });
        let what = invalidAt >= 0 && invalidAt < op.params.length ? `invalid ${op.params[invalidAt]!.name}` : mode;
        if (op.bearer) headers.authorization = `Bearer ${tenantFor(op).account.token}`;
        if (op.bearer && invalidAt === op.params.length) {
          what = `auth ${auth.slice(0, 12) || '(none)'}`;
          if (auth) headers.authorization = auth;
          else delete headers.authorization;
        }
        let payload: string | undefined;
        if (b !== undefined) {
          const useInvalid = invalidAt === op.params.length + 1 || (mode === 'invalid' && !op.params.length);
          payload = JSON.stringify(useInvalid ? b.invalid : b.valid) ?? 'null';
          if (useInvalid) what = 'invalid body';
          headers['content-type'] = op.mediaTypes.includes('text/plain') && plain ? 'text/plain;charset=UTF-8' : 'application/json';
          if (invalidAt === op.params.length + 2) {
            headers['content-type'] = wrongType;
            what = `content-type ${wrongType}`;
          }
        }
        const path = op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => enc(values[name] ?? fixture(op, name) ?? 'x'));
        return { op, kind: mode, what, method: op.method, path: query.length ? `${path}?${query.join('&')}` : path, headers, body: payload };
      });
  }

  /** The valid body of an operation with a deterministic generator (for the nasties built on it). */
  function sampleBody(op: ContractOperation): Record<string, unknown> {
    const [b] = fc.sample(schemas.valid(op.body), { numRuns: 1, seed: SEED });
    return bodyWithIds(op, b, true) as Record<string, unknown>;
  }

  function baseHeaders(op: ContractOperation): Record<string, string> {
    return op.bearer ? { authorization: `Bearer ${tenantFor(op).account.token}` } : {};
  }

  function goodPath(op: ContractOperation, over: Record<string, string> = {}): string {
    return op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => over[name] ?? enc(fixture(op, name) ?? 'x'));
  }

  function nasties(op: ContractOperation): Probe[] {
    const out: Probe[] = [];
    const headers = baseHeaders(op);
    const add = (what: string, p: Partial<Probe>) => out.push({ op, kind: 'nasty', what, method: op.method, path: goodPath(op), headers, ...p });

    // path segments: very long, malformed percent-encoding, NUL, huge and odd numbers
    const segments = [
      'a'.repeat(10_000),
      '%',
      '%zz',
      '%E0%A4%A',
      '%ED%A0%80',
      '%C0%AF',
      '%00',
      'a%00b',
      '%FF',
      '..',
      '.',
      '99999999999999999999',
      '1e21',
      '-1',
      '0',
      '1.5',
      '0x10',
      '%20',
      '%2F',
      '%2e%2e',
    ];
    for (const p of op.params.filter((x) => x.in === 'path')) {
      for (const s of segments) add(`path ${p.name}=${s.slice(0, 16)}`, { path: goodPath(op, { [p.name]: s }) });
    }
    if (op.operationId === 'identifyVisitor') {
      const payloads = [
        { name: 'a\u0000b' },
        { email: 'x\u0000@y.example' },
        { name: 'lone \ud800' },
        { name: { deep: { er: 1 } } },
        { email: 'a@b.example', extra: 1 },
        [],
        'str',
      ].map((v) => JSON.stringify(v));
      payloads.push('{"name":"a"', '\u0000', '{"name":"\\ud800"}');
      for (const json of payloads) {
        add(`payload ${json.slice(0, 24)}`, { path: goodPath(op, { payload: Buffer.from(json, 'utf8').toString('base64url') }) });
      }
      add('payload invalid utf-8', {
        path: goodPath(op, { payload: Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]).toString('base64url') }),
      });
      add('payload 4096 chars', { path: goodPath(op, { payload: 'A'.repeat(4096) }) });
      add('payload standard base64 with %2F', { path: goodPath(op, { payload: enc(b64url({ name: '???>>>' }).replace(/_/g, '/')) }) });
    }
    // query strings
    const q = op.params.filter((x) => x.in === 'query');
    for (const p of q) {
      for (const v of ['%zz', '%00', 'a'.repeat(5000), '-1', '99999999999999999999', '1e400', '[]', '{}', '%ED%A0%80']) {
        add(`query ${p.name}=${v.slice(0, 12)}`, { path: `${goodPath(op)}?${p.name}=${v}` });
      }
      add(`query ${p.name} twice`, { path: `${goodPath(op)}?${p.name}=1&${p.name}=2` });
      add(`query ${p.name}[]`, { path: `${goodPath(op)}?${p.name}[]=1&${p.name}[a]=2` });
    }
    add('query unknown and odd', { path: `${goodPath(op)}?__proto__=1&constructor=2&=&&a=%` });

    // headers with odd values
    const token = tenantFor(op).account.token;
    const odd: Record<string, string>[] = [
      { authorization: `Bearer ${'x'.repeat(8000)}` },
      { authorization: 'Bearer a.b.c' },
      { authorization: `Bearer  ${token}` },
      { authorization: `bearer ${token}` },
      { authorization: `Bearer ${token} trailing` },
      { authorization: `Bearer ${token}, Bearer ${token}` },
      { authorization: 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.' },
      { cookie: 'a=%zz; =b; c; __proto__=1' },
      { 'x-request-id': 'x'.repeat(300) },
      { 'x-forwarded-for': 'not-an-ip, ::ffff:zz, 999.1.1.1' },
      { accept: '*/*;q=abc, application/json;q=-1' },
      { 'accept-encoding': 'gzip;q=x, br, *;q=0' },
      { 'if-none-match': '"' },
      { referer: 'javascript:alert(1)' },
      { 'user-agent': 'u'.repeat(8000) },
      { 'content-type': 'application/json' },
      { range: 'bytes=0-0' },
    ];
    for (const h of odd) add(`header ${Object.keys(h)[0]}: ${Object.values(h)[0]!.slice(0, 16)}`, { headers: { ...headers, ...h } });

    if (op.body) {
      const valid = sampleBody(op);
      const json = JSON.stringify(valid);
      const withJson = { ...headers, 'content-type': 'application/json' };
      const bodies: [string, string | Uint8Array][] = [
        ['deep objects 10k', `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`],
        ['deep arrays 10k', `${'['.repeat(10_000)}${']'.repeat(10_000)}`],
        ['deep unclosed', '{"a":'.repeat(10_000)],
        ['deep 33 in a valid body', JSON.stringify({ ...valid, x: JSON.parse(`${'{"d":'.repeat(33)}1${'}'.repeat(33)}`) })],
        ['empty', ''],
        ['whitespace', '  \n'],
        ['null', 'null'],
        ['string', '"str"'],
        ['number', '12'],
        ['true', 'true'],
        ['object', '{}'],
        ['array', '[]'],
        ['array of the body', `[${json}]`],
        ['BOM', `\ufeff${json}`],
        ['duplicate keys', json.replace(/^\{/, `{${Object.keys(valid).length ? `${JSON.stringify(Object.keys(valid)[0])}:{"dup":true},` : ''}`)],
        ['__proto__', json.replace(/^\{/, '{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}},')],
        ['raw NUL byte', json.replace(/"([^"]*)"$/, '"a\u0000b"').replace(/}$/, ',"z":"a\u0000b"}')],
        ['invalid utf-8', Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xfe, 0xc0, 0xaf, 0xed, 0xa0, 0x80]), Buffer.from('"}')])],
        ['invalid utf-8 in a valid body', Buffer.concat([Buffer.from(json.slice(0, -1) + ',"zz":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')])],
        ['huge numbers', json.replace(/:(-?\d+(\.\d+)?)/g, ':1e400')],
        ['huger numbers', json.replace(/:(-?\d+(\.\d+)?)/g, ':123456789012345678901234567890123456789')],
        ['negative huge numbers', json.replace(/:(-?\d+(\.\d+)?)/g, ':-1e400')],
        ['trailing garbage', `${json}xyz`],
        ['two documents', `${json}${json}`],
        ['unterminated string', '{"a":"abc'],
        ['control character', '{"a":"\u0001\u001f"}'],
      ];
      // every string field with NUL, a lone surrogate, or very long; every number huge
      for (const [k, v] of Object.entries(valid)) {
        if (typeof v === 'string') {
          bodies.push([`${k} with \\u0000`, JSON.stringify({ ...valid, [k]: `${v}\u0000` })]);
          bodies.push([`${k} with \\ud800`, JSON.stringify({ ...valid, [k]: `${v}\ud800` })]);
          bodies.push([`${k} with \\udc00 first`, JSON.stringify({ ...valid, [k]: `\udc00${v}` })]);
          bodies.push([`${k} 100k chars`, JSON.stringify({ ...valid, [k]: 'x'.repeat(100_000) })]);
        }
        if (typeof v === 'number') {
          for (const n of ['1e308', '-1e308', '1e400', '9007199254740993', '-0', '0.1e-400', '1.7976931348623157e309']) {
            bodies.push([`${k}=${n}`, JSON.stringify({ ...valid, [k]: 0 }).replace(`"${k}":0`, `"${k}":${n}`)]);
          }
        }
        bodies.push([`${k} as array`, JSON.stringify({ ...valid, [k]: [v] })]);
        bodies.push([`${k} as object`, JSON.stringify({ ...valid, [k]: { v } })]);
      }
      bodies.push(['key with NUL', JSON.stringify({ ...valid, 'k\u0000': 1 })]);
      for (const [what, body] of bodies) add(`body ${what}`, { headers: withJson, body });
      for (const type of [
        'text/xml',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/json; charset=utf-16',
        'application/json; charset=latin1',
        'application/json; charset=nope',
        'text/plain',
        'application/jsonx',
        'APPLICATION/JSON',
        'application/json, text/plain',
        '*/*',
      ]) {
        add(`content-type ${type}`, { headers: { ...headers, 'content-type': type }, body: json });
      }
      add('content-encoding gzip (not gzip)', { headers: { ...withJson, 'content-encoding': 'gzip' }, body: json });
      add('content-encoding br (not br)', { headers: { ...withJson, 'content-encoding': 'br' }, body: json });
      add('content-encoding unknown', { headers: { ...withJson, 'content-encoding': 'x-nope' }, body: json });
      add('no body at all', {});
    }

    // bytes fetch will not send: over a raw socket
    const target = goodPath(op);
    const h = { ...headers };
    const raw = (what: string, request: Buffer, parserMayRefuse = true) =>
      out.push({ op, kind: 'raw', what, method: op.method, path: target, headers: h, raw: request, parserMayRefuse });
    raw(
      'header value with bytes 0x80-0xff',
      Buffer.concat([
        Buffer.from(`${op.method} ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nUser-Agent: `),
        Buffer.from([0xff, 0xfe, 0x80]),
        Buffer.from(`\r\n${h.authorization ? `Authorization: ${h.authorization}\r\n` : ''}Content-Length: 0\r\n\r\n`),
      ]),
      false,
    );
    raw(
      'authorization with bytes 0x80-0xff',
      Buffer.concat([
        Buffer.from(`${op.method} ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer `),
        Buffer.from([0xe9, 0xff]),
        Buffer.from('\r\nContent-Length: 0\r\n\r\n'),
      ]),
      false,
    );
    raw('NUL in a header value', httpRequest(op.method, target, { ...h, 'X-Odd': 'a\u0000b' }));
    raw(
      'raw byte 0xff in the path',
      Buffer.concat([Buffer.from(`${op.method} ${target}`), Buffer.from([0xff]), Buffer.from(' HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')]),
    );
    raw('space in the path', httpRequest(op.method, `${target} x`, h));
    raw(
      'Content-Length and Transfer-Encoding',
      httpRequest(
        op.method,
        target,
        { ...h, 'Content-Type': 'application/json', 'Content-Length': '2', 'Transfer-Encoding': 'chunked' },
        '0\r\n\r\n',
      ),
    );
    raw('Content-Length not a number', httpRequest(op.method, target, { ...h, 'Content-Type': 'application/json', 'Content-Length': 'abc' }, '{}'));
    raw(
      'two Content-Lengths',
      httpRequest(op.method, target, { ...h, 'Content-Type': 'application/json', 'Content-Length': '2', 'content-length': '3' }, '{}'),
    );
    raw(
      'bad chunk size',
      httpRequest(op.method, target, { ...h, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }, 'zz\r\n{}\r\n0\r\n\r\n'),
    );
    raw('obsolete header folding', Buffer.from(`${op.method} ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Fold: a\r\n b\r\n\r\n`));
    raw('header without a colon', Buffer.from(`${op.method} ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nNoColon\r\n\r\n`));
    raw('HTTP/0.9 style', Buffer.from(`${op.method} ${target}\r\n\r\n`));
    raw('unknown method', httpRequest('BREW', target, h));
    raw('Expect: 100-continue', httpRequest(op.method, target, { ...h, Expect: '100-continue' }), false);
    raw('body on a GET (ignored) or POST without a content type', httpRequest(op.method, target, h, '{"a":1}'), false);
    raw('body with a content type the method does not take', httpRequest(op.method, target, { ...h, 'Content-Type': 'text/xml' }, '<a/>'), false);
    return out;
  }

  return { probeArb, nasties };
}

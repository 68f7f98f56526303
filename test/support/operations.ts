// Every operation of the contract with what a request to it needs: its
// parameters (path-level and operation-level, resolved), its body schema and
// media types, whether it is bearer-protected. Read from generated/openapi.json,
// so a new operation is picked up by the suites built on it.
import { doc } from './contract.ts';
import { type Schema, SchemaValues } from './schema-values.ts';

export interface Param {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  schema: Schema;
}

export interface ContractOperation {
  operationId: string;
  method: string;
  path: string;
  params: Param[];
  body: Schema | undefined;
  bodyRequired: boolean;
  mediaTypes: string[];
  bearer: boolean;
  /** documented statuses */
  statuses: string[];
}

export const schemas = new SchemaValues(doc);

export function contractOperations(): ContractOperation[] {
  const out: ContractOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    const shared = ((item as Record<string, unknown>).parameters ?? []) as Schema[];
    for (const method of ['get', 'put', 'post', 'delete', 'patch']) {
      const op = (item as Record<string, Record<string, unknown>>)[method];
      if (!op) continue;
      const params = new Map<string, Param>();
      for (const raw of [...shared, ...((op.parameters ?? []) as Schema[])]) {
        const p = schemas.resolve(raw);
        params.set(`${String(p.in)}:${String(p.name)}`, {
          name: p.name as string,
          in: p.in as Param['in'],
          required: p.required === true,
          schema: (p.schema ?? {}) as Schema,
        });
      }
      const rb = op.requestBody ? schemas.resolve(op.requestBody as Schema) : undefined;
      const content = (rb?.content ?? {}) as Record<string, { schema?: Schema }>;
      const security = (op.security ?? doc.security ?? []) as Record<string, unknown>[];
      out.push({
        operationId: op.operationId as string,
        method: method.toUpperCase(),
        path,
        params: [...params.values()],
        body: content['application/json']?.schema,
        bodyRequired: rb?.required === true,
        mediaTypes: Object.keys(content),
        bearer: security.some((s) => 'bearerAuth' in s),
        statuses: Object.keys(op.responses as object),
      });
    }
  }
  return out;
}

/** The path with its `{name}` segments replaced (values are percent-encoded unless `raw`). */
export function fillPath(path: string, values: Record<string, string>, raw: Set<string> = new Set()): string {
  return path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`no value for path parameter ${name} of ${path}`);
    return raw.has(name) ? v : encodeURIComponent(v);
  });
}

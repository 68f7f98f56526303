// The bundled contract (generated/openapi.json, made from openapi/ by
// `npm run generate`): what the router validates against and what we publish.
import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import { projectPath } from '../project.ts';

export const CONTRACT_PATH = projectPath('generated', 'openapi.json');

export interface ContractDocument {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, unknown> } & Record<string, unknown>;
  webhooks?: Record<string, unknown>;
  [key: string]: unknown;
}

let cached: string | undefined;

/** A fresh deep copy: openapi-backend dereferences the document it is given in place. */
export function contractDocument(): ContractDocument {
  cached ??= readFileSync(CONTRACT_PATH, 'utf8');
  return JSON.parse(cached) as ContractDocument;
}

const served = new Map<string, { json: string; yaml: string }>();

/**
 * The document as published by a running instance: its one `servers` list
 * (there are no per-path or per-operation lists) names that instance first,
 * so "Try it out" and a generated SDK's default base URL reach it, then the
 * public addresses of the source document.
 */
export function servedContract(instanceUrl: string): { json: string; yaml: string } {
  let out = served.get(instanceUrl);
  if (!out) {
    const doc = contractDocument();
    const here = { url: instanceUrl, description: 'This Trackway instance (every area)' };
    doc.servers = [here, ...((doc.servers as { url: string }[] | undefined) ?? []).filter((s) => s.url !== instanceUrl)];
    out = { json: JSON.stringify(doc, null, 2) + '\n', yaml: YAML.stringify(doc, { aliasDuplicateObjects: false }) };
    // a handful of addresses at most (PUBLIC_URL, or the Host names clients use)
    if (served.size > 16) served.clear();
    served.set(instanceUrl, out);
  }
  return out;
}

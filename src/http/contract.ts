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

let cached: { doc: ContractDocument; json: string; yaml: string } | undefined;

function load() {
  if (!cached) {
    const json = readFileSync(CONTRACT_PATH, 'utf8');
    const doc = JSON.parse(json) as ContractDocument;
    cached = { doc, json, yaml: YAML.stringify(doc, { aliasDuplicateObjects: false }) };
  }
  return cached;
}

/** A fresh deep copy: openapi-backend dereferences the document it is given in place. */
export function contractDocument(): ContractDocument {
  return JSON.parse(load().json) as ContractDocument;
}

export function contractJson(): string {
  return load().json;
}

export function contractYaml(): string {
  return load().yaml;
}

// One way to build Ajv for the contract: JSON Schema 2020-12 (OpenAPI 3.1's
// dialect) with the standard formats. openapi-backend's own default is draft-07,
// which would silently ignore 2020-12 keywords.
import { createRequire } from 'node:module';
import type { Ajv, Options } from 'ajv';

const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020.js') as { default: new (opts: Options) => Ajv };
const addFormats = require('ajv-formats') as { default: (ajv: Ajv) => Ajv };

export type { Ajv };

export function createAjv(opts: Options = {}): Ajv {
  // strict off: the contract carries OpenAPI keywords (example, discriminator, xml)
  const ajv = new Ajv2020.default({ allErrors: true, ...opts, strict: false });
  addFormats.default(ajv);
  return ajv;
}

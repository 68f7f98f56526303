// Loaded with `node --import`: any import of esbuild or tsx fails, so a
// process that runs with it runs without them (what the compiled server must do).
import { register } from 'node:module';

const hooks = `
export async function resolve(specifier, context, next) {
  if (/^(esbuild|tsx)(\\/|$)/.test(specifier)) throw new Error('imported in production: ' + specifier);
  return next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);

#!/usr/bin/env node
// `npm start`: the compiled server (dist/src/main.js), built first when dist/
// is missing or older than the sources (scripts/build-state.js says which).
// Cluster workers re-run this file: only the primary checks the build.
import cluster from 'node:cluster';
import { pathToFileURL } from 'node:url';
import { DIST_MAIN, ensureBuilt } from './build-state.js';

if (cluster.isPrimary) ensureBuilt((line) => process.stderr.write(`trackway: ${line}\n`));
await import(pathToFileURL(DIST_MAIN).href);

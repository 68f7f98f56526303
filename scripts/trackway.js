#!/usr/bin/env node
// The `trackway` command (package bin): the compiled CLI in dist/ when it is
// a build of the current sources, else the TypeScript sources through tsx.
// Cluster workers (`serve --workers N`) run what their primary runs.
import cluster from 'node:cluster';
import { pathToFileURL } from 'node:url';
import { buildState, DIST_MAIN } from './build-state.js';

const compiled = cluster.isWorker ? process.env.TRACKWAY_LAUNCH === 'dist' : buildState().fresh;
process.env.TRACKWAY_LAUNCH = compiled ? 'dist' : 'src';
if (compiled) {
  await import(pathToFileURL(DIST_MAIN).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/main.ts');
}

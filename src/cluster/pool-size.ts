// How many workers `serve` runs by default, and how many database
// connections each may hold, so that all of them together stay well within
// PostgreSQL's max_connections.
import os from 'node:os';
import { ConfigError } from '../config.ts';

/** the most `--workers` accepts */
export const MAX_WORKERS = 64;
/** the default is one worker per core, at most this many (each holds its own geo data and pool) */
export const DEFAULT_MAX_WORKERS = 8;
/** the pool of a single `serve` process, and the most a worker gets */
export const SERVE_POOL_SIZE = 40;
/** below this a worker's pool would starve its ingest batches and the dispatcher */
export const MIN_POOL_SIZE = 5;

export function defaultWorkers(cores = os.availableParallelism()): number {
  return Math.max(1, Math.min(cores, DEFAULT_MAX_WORKERS));
}

/**
 * The pool of each of `workers` workers: together they take at most half of
 * max_connections (the other half stays free for the CLI, psql, other hosts
 * and the superuser reserve), each less one for its LISTEN connection, and
 * never more than a single `serve` process uses.
 */
export function workerPoolSize(maxConnections: number, workers: number): number {
  const share = Math.floor(maxConnections / 2 / workers) - 1;
  if (share < MIN_POOL_SIZE) {
    throw new ConfigError(
      `--workers ${workers}: PostgreSQL's max_connections (${maxConnections}) leaves ${Math.max(0, share)} connections per worker ` +
        `(at least ${MIN_POOL_SIZE} are needed); run fewer workers or raise max_connections`,
    );
  }
  return Math.min(SERVE_POOL_SIZE, share);
}

/**
 * The ingest batches each of `workers` workers writes at once: the host's
 * INGEST_IN_FLIGHT shared among them, at least one each.
 */
export function workerIngestInFlight(hostInFlight: number, workers: number): number {
  return Math.max(1, Math.round(hostInFlight / workers));
}

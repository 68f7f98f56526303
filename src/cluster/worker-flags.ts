// The V8 flags the primary adds to its workers' node command line (node:cluster
// execArgv), after the primary's own.
//
// --heap-growing-percent=100: after each full garbage collection V8 lets the
// old generation grow to twice what survived it (at least 16 MB more) before
// the next one. Without the flag, on a host with this much memory, V8 allows
// up to four times when its collector keeps up with the program easily. A
// worker's live heap is ~35 MB; under the bench's dispatch rounds worker 1's
// old space filled to ~160 MB, most of it garbage waiting for a full
// collection (the one a heap snapshot makes took the heap from 116 to 35 MB),
// and that set the largest process's RSS: 269 MB against the 256 MB target.
// The cost is more full collections, each about as long as the live heap is
// large; BENCHMARKS.md ("Memory: the workers' old generation") has both sides.
// A flag of the same name on the primary's command line (`node
// --heap-growing-percent=N …`) is inherited by the workers and wins.
export const WORKER_V8_FLAGS: readonly string[] = ['--heap-growing-percent=100'];

/** `execArgv` (the primary's) with each of WORKER_V8_FLAGS the operator did not set already. */
export function workerExecArgv(execArgv: readonly string[]): string[] {
  const named = (arg: string) => arg.split('=')[0]!.replaceAll('_', '-');
  const given = new Set(execArgv.map(named));
  return [...execArgv, ...WORKER_V8_FLAGS.filter((f) => !given.has(named(f)))];
}

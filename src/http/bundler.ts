// esbuild for the browser assets (the tracker, the dashboard), built into
// memory: by `npm run build`, which writes them to dist/assets/, and at start
// under tsx. The compiled server never loads this module (nor esbuild).
// esbuild's service process is stopped once no build is running,
// so it does not stay for the server's life; the next build starts it again.
// Builds share that one process: stopping it under a running build would
// leave the build waiting forever, hence the count.
import { type BuildOptions, type BuildResult, build, stop } from 'esbuild';

let running = 0;

type InMemory = BuildOptions & { write: false };

export async function buildInMemory(options: InMemory): Promise<BuildResult<InMemory>> {
  running++;
  try {
    return await build(options);
  } finally {
    if (--running === 0) await stop();
  }
}

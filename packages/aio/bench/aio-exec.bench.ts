/**
 * The process API of AioSandbox over HTTP against the AIO stand-in server in this process (the
 * same server the stand-in image runs): plain exec on the shell session, streamed exec on the
 * async bash API, against bare spawns on this machine (tools/bench/process-bench.mjs). Run:
 * `npm run bench -w @sbx/aio`. Writes bench/results/aio-processes.{json,md}.
 */
import { runProcessBench } from '../../../tools/bench/process-bench-run.js';
import { AioSandbox } from '../src/aio-sandbox.js';
import { startStandin } from '../src/aio-standin.fixture.js';

async function main(): Promise<void> {
  const standin = await startStandin();
  const sandbox = new AioSandbox('bench-exec', { baseUrl: standin.url, homeDir: standin.home });
  try {
    await runProcessBench({
      name: 'aio-processes',
      pkg: '@sbx/aio',
      label: 'aio (stand-in server, HTTP)',
      sandbox,
      megabytes: 10,
    });
  } finally {
    await sandbox.close();
    await standin.close();
  }
}

await main();

/**
 * The process API of AioSandbox over HTTP against the AIO stand-in server in this process (the
 * same server the stand-in image runs): plain exec on the shell session, streamed exec on the
 * async bash API, against bare spawns on this machine (tools/bench/process-bench.mjs). Run:
 * `npm run bench -w @sbx/aio`. Writes bench/results/aio-processes.{json,md}.
 */
import { cpus, release } from 'node:os';
import { processMarkdown, processRows } from '../../../tools/bench/process-bench.mjs';
import { writeBenchResults } from '../../../tools/bench/bench-kit.js';
import { AioSandbox } from '../src/aio-sandbox.js';
import { startStandin } from '../src/aio-standin.fixture.js';

async function main(): Promise<void> {
  const standin = await startStandin();
  const sandbox = new AioSandbox('bench-exec', { baseUrl: standin.url, homeDir: standin.home });
  try {
    const rows = await processRows('aio (stand-in server, HTTP)', sandbox, {
      calls: Number(process.env.SBX_BENCH_EXEC_CALLS ?? 100),
      megabytes: Number(process.env.SBX_BENCH_STREAM_MB ?? 10),
    });
    const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ${process.platform} ${release()}`;
    const markdown = processMarkdown('@sbx/aio: commands as processes', rows, machine);
    await writeBenchResults(
      'aio-processes',
      { package: '@sbx/aio (processes)', started: new Date().toISOString(), machine, rows },
      markdown,
    );
  } finally {
    await sandbox.close();
    await standin.close();
  }
}

await main();

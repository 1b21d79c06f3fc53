/**
 * The process API of BoxliteSandbox over `FakeBoxliteRuntime`, whose executions are host processes
 * (no VM boots on the machines this runs on): what it measures is the adapter's own cost (the
 * streaming execution, the process kit, the output capture) over a bare spawn of the same shell
 * (tools/bench/process-bench.mjs), not a VM's. Commands run as `sh -lc` (a login shell, which reads
 * the profile) where the anchor spawns `sh -c`. Run: `npm run bench -w @sbx/boxlite`. Writes
 * bench/results/boxlite-processes.{json,md}.
 */
import { cpus, release } from 'node:os';
import { processMarkdown, processRows } from '../../../tools/bench/process-bench.mjs';
import { writeBenchResults } from '../../../tools/bench/bench-kit.js';
import { BoxliteSandbox } from '../src/boxlite-sandbox.js';
import { FakeBoxliteRuntime } from '../src/testing/fake-boxlite-runtime.js';

async function main(): Promise<void> {
  const runtime = new FakeBoxliteRuntime();
  const box = await runtime.create({ name: 'sbx-boxlite-bench' });
  const sandbox = new BoxliteSandbox('0123456789abcdef', { box });
  try {
    const rows = await processRows('boxlite (fake runtime: host processes)', sandbox, {
      calls: Number(process.env.SBX_BENCH_EXEC_CALLS ?? 100),
      megabytes: Number(process.env.SBX_BENCH_STREAM_MB ?? 100),
    });
    const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ${process.platform} ${release()}`;
    const markdown = processMarkdown('@sbx/boxlite: commands as processes', rows, machine);
    await writeBenchResults(
      'boxlite-processes',
      { package: '@sbx/boxlite (processes)', started: new Date().toISOString(), machine, rows },
      markdown,
    );
  } finally {
    await sandbox.close();
    await runtime.dispose();
  }
}

await main();

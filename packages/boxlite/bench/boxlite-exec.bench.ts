/**
 * The process API of BoxliteSandbox over `FakeBoxliteRuntime`, whose executions are host processes
 * (no VM boots on the machines this runs on): what it measures is the adapter's own cost (the
 * streaming execution, the process kit, the output capture) over a bare spawn of the same shell
 * (tools/bench/process-bench.mjs), not a VM's. Commands run as `sh -lc` (a login shell, which reads
 * the profile) where the anchor spawns `sh -c`. Run: `npm run bench -w @sbx/boxlite`. Writes
 * bench/results/boxlite-processes.{json,md}.
 */
import { runProcessBench } from '../../../tools/bench/process-bench-run.js';
import { BoxliteSandbox } from '../src/boxlite-sandbox.js';
import { FakeBoxliteRuntime } from '../src/testing/fake-boxlite-runtime.js';

async function main(): Promise<void> {
  const runtime = new FakeBoxliteRuntime();
  const box = await runtime.create({ name: 'sbx-boxlite-bench' });
  const sandbox = new BoxliteSandbox('0123456789abcdef', { box });
  try {
    await runProcessBench({
      name: 'boxlite-processes',
      pkg: '@sbx/boxlite',
      label: 'boxlite (fake runtime: host processes)',
      sandbox,
      megabytes: 100,
    });
  } finally {
    await sandbox.close();
    await runtime.dispose();
  }
}

await main();

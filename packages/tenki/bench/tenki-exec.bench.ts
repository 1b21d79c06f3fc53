/**
 * The process API of TenkiSandbox over `FakeTenkiClient` with live commands (`start`), whose
 * commands are host processes: what it measures is the adapter's own cost (the live process, the
 * process kit, the output capture) over a bare spawn of the same shell
 * (tools/bench/process-bench.mjs), not Tenki's. Commands run as `sh -lc` (a login shell, which reads
 * the profile) where the anchor spawns `sh -c`. Run: `npm run bench -w @sbx/tenki`. Writes
 * bench/results/tenki-processes.{json,md}.
 */
import { runProcessBench } from '../../../tools/bench/process-bench-run.js';
import { TenkiSandbox } from '../src/tenki-sandbox.js';
import { FakeTenkiClient } from '../src/testing/fake-tenki-client.js';

async function main(): Promise<void> {
  const client = new FakeTenkiClient({ userDataLink: false });
  const remote = await client.create({
    name: 'sbx-tenki-bench',
    workspaceId: null,
    sticky: false,
    wait: false,
  });
  const sandbox = new TenkiSandbox('0123456789abcdef', { remote });
  try {
    await runProcessBench({
      name: 'tenki-processes',
      pkg: '@sbx/tenki',
      label: 'tenki (fake client: host processes)',
      sandbox,
      megabytes: 100,
    });
  } finally {
    await sandbox.close();
    await client.dispose();
  }
}

await main();

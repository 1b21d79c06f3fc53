/**
 * The process API of TenkiSandbox over `FakeTenkiClient` with live commands (`start`), whose
 * commands are host processes: what it measures is the adapter's own cost (the live process, the
 * process kit, the output capture) over a bare spawn of the same shell
 * (tools/bench/process-bench.mjs), not Tenki's. Commands run as `sh -lc` (a login shell, which reads
 * the profile) where the anchor spawns `sh -c`. Run: `npm run bench -w @sbx/tenki`. Writes
 * bench/results/tenki-processes.{json,md}.
 */
import { cpus, release } from 'node:os';
import { processMarkdown, processRows } from '../../../tools/bench/process-bench.mjs';
import { writeBenchResults } from '../../../tools/bench/bench-kit.js';
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
    const rows = await processRows('tenki (fake client: host processes)', sandbox, {
      calls: Number(process.env.SBX_BENCH_EXEC_CALLS ?? 100),
      megabytes: Number(process.env.SBX_BENCH_STREAM_MB ?? 100),
    });
    const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ${process.platform} ${release()}`;
    const markdown = processMarkdown('@sbx/tenki: commands as processes', rows, machine);
    await writeBenchResults(
      'tenki-processes',
      { package: '@sbx/tenki (processes)', started: new Date().toISOString(), machine, rows },
      markdown,
    );
  } finally {
    await sandbox.close();
    await client.dispose();
  }
}

await main();

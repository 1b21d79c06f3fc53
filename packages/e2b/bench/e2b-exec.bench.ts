/**
 * The process API of E2BSandbox through the real `e2b` SDK against the E2B stand-in server on
 * 127.0.0.1 (envd's process RPCs over HTTP), against bare spawns on this machine
 * (tools/bench/process-bench.mjs). Run: `npm run bench -w @sbx/e2b`. Writes
 * bench/results/e2b-processes.{json,md}.
 */
import { cpus, release } from 'node:os';
import { processMarkdown, processRows } from '../../../tools/bench/process-bench.mjs';
import { writeBenchResults } from '../../../tools/bench/bench-kit.js';
import { E2BSandbox } from '../src/e2b-sandbox.js';
import { SdkE2BClient } from '../src/sdk-client.js';
import { E2BStandinServer } from '../src/testing/e2b-standin-server.js';

async function main(): Promise<void> {
  const standin = await new E2BStandinServer().start();
  const sdk = new SdkE2BClient({
    apiKey: standin.apiKey,
    apiUrl: standin.url,
    sandboxUrl: standin.url,
  });
  const remote = await sdk.create({ template: 'base', metadata: {} });
  const sandbox = new E2BSandbox(remote.sandboxId, remote);
  try {
    const rows = await processRows('e2b (real SDK, stand-in)', sandbox, {
      calls: Number(process.env.SBX_BENCH_EXEC_CALLS ?? 100),
      megabytes: Number(process.env.SBX_BENCH_STREAM_MB ?? 10),
    });
    const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ${process.platform} ${release()}`;
    const markdown = processMarkdown('@sbx/e2b: commands as processes', rows, machine);
    await writeBenchResults(
      'e2b-processes',
      { package: '@sbx/e2b (processes)', started: new Date().toISOString(), machine, rows },
      markdown,
    );
  } finally {
    await sandbox.close();
    await standin.stop();
  }
}

await main();

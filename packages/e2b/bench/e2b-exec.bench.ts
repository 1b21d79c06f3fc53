/**
 * The process API of E2BSandbox through the real `e2b` SDK against the E2B stand-in server on
 * 127.0.0.1 (envd's process RPCs over HTTP), against bare spawns on this machine
 * (tools/bench/process-bench.mjs). Run: `npm run bench -w @sbx/e2b`. Writes
 * bench/results/e2b-processes.{json,md}.
 */
import { runProcessBench } from '../../../tools/bench/process-bench-run.js';
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
    await runProcessBench({
      name: 'e2b-processes',
      pkg: '@sbx/e2b',
      label: 'e2b (real SDK, stand-in)',
      sandbox,
      megabytes: 10,
    });
  } finally {
    await sandbox.close();
    await standin.stop();
  }
}

await main();

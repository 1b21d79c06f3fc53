/**
 * The process API of OpenSandboxSandbox through the real `@alibaba-group/opensandbox` SDK against
 * the OpenSandbox stand-in on 127.0.0.1 (execd's SSE line events over HTTP), against bare spawns
 * on this machine (tools/bench/process-bench.mjs). Run: `npm run bench -w @sbx/opensandbox`.
 * Writes bench/results/opensandbox-processes.{json,md}.
 */
import { silentLogger } from '@sbx/core';
import { runProcessBench } from '../../../tools/bench/process-bench-run.js';
import { OpenSandboxProvider } from '../src/opensandbox-provider.js';
import { OpenSandboxStandin } from '../src/testing/opensandbox-standin.js';

const API_KEY = 'bench-key';

async function main(): Promise<void> {
  const standin = await OpenSandboxStandin.start({ apiKey: API_KEY });
  const provider = new OpenSandboxProvider({
    config: { opensandbox: { domain: standin.domain, api_key: API_KEY, disable_metrics: true } },
    logger: silentLogger,
  });
  try {
    const id = await provider.acquire({ userId: 'bench', threadId: 'processes' });
    const sandbox = provider.get(id)!;
    await runProcessBench({
      name: 'opensandbox-processes',
      pkg: '@sbx/opensandbox',
      label: 'opensandbox (real SDK, stand-in)',
      sandbox,
      megabytes: 10,
    });
  } finally {
    await provider.shutdown();
    await standin.stop();
  }
}

await main();

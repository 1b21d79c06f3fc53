/**
 * The process API of OpenSandboxSandbox through the real `@alibaba-group/opensandbox` SDK against
 * the OpenSandbox stand-in on 127.0.0.1 (execd's SSE line events over HTTP), against bare spawns
 * on this machine (tools/bench/process-bench.mjs). Run: `npm run bench -w @sbx/opensandbox`.
 * Writes bench/results/opensandbox-processes.{json,md}.
 */
import { cpus, release } from 'node:os';
import { silentLogger } from '@sbx/core';
import { processMarkdown, processRows } from '../../../tools/bench/process-bench.mjs';
import { writeBenchResults } from '../../../tools/bench/bench-kit.js';
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
    const rows = await processRows('opensandbox (real SDK, stand-in)', sandbox, {
      calls: Number(process.env.SBX_BENCH_EXEC_CALLS ?? 100),
      megabytes: Number(process.env.SBX_BENCH_STREAM_MB ?? 10),
    });
    const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ${process.platform} ${release()}`;
    const markdown = processMarkdown('@sbx/opensandbox: commands as processes', rows, machine);
    await writeBenchResults(
      'opensandbox-processes',
      { package: '@sbx/opensandbox (processes)', started: new Date().toISOString(), machine, rows },
      markdown,
    );
  } finally {
    await provider.shutdown();
    await standin.stop();
  }
}

await main();

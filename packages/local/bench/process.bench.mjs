// The process API of @sbx/local against bare spawns (see tools/bench/process-bench.mjs).
// Writes <repo>/bench/results/local-processes.{json,md}. Needs built packages.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalSandboxProvider, findShell } from '@sbx/local';
import { processMarkdown, processRows } from '../../../tools/bench/process-bench.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');

const baseDir = await mkdtemp(path.join(os.tmpdir(), 'sbx-bench-proc-'));
const provider = new LocalSandboxProvider({ baseDir, allowHostBash: true });
const sandbox = provider.get(await provider.acquire({ userId: 'bench', threadId: 'processes' }));
const rows = await processRows('local', sandbox, {
  calls: Number(process.env.SBX_BENCH_EXEC_CALLS ?? 200),
  megabytes: Number(process.env.SBX_BENCH_STREAM_MB ?? 100),
  // The anchor runs the shell the sandbox runs, so the ratio is sbx's own cost.
  shell: await findShell(),
});
await provider.shutdown();
await rm(baseDir, { recursive: true, force: true });
const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ${process.platform} ${os.release()}`;
const result = {
  package: '@sbx/local (processes)',
  started: new Date().toISOString(),
  machine,
  rows,
};
const dir = path.join(repo, 'bench', 'results');
await mkdir(dir, { recursive: true });
await writeFile(path.join(dir, 'local-processes.json'), `${JSON.stringify(result, null, 2)}\n`);
const md = processMarkdown('@sbx/local: commands as processes', rows, machine);
await writeFile(path.join(dir, 'local-processes.md'), md);
process.stdout.write(md);

/**
 * One provider's process benchmark, run and written the same way by every package: the rows of
 * `process-bench.mjs` for `sandbox`, as `bench/results/<name>.{json,md}`.
 * `SBX_BENCH_EXEC_CALLS` and `SBX_BENCH_STREAM_MB` override the sample count and the volume.
 */
import { cpus, release } from 'node:os';
import type { Sandbox } from '@sbx/core';
import { processMarkdown, processRows } from './process-bench.mjs';
import { writeBenchResults } from './bench-kit.js';

export interface ProcessBenchRun {
  /** The results' file name, e.g. `boxlite-processes`. */
  readonly name: string;
  /** The package, e.g. `@sbx/boxlite`. */
  readonly pkg: string;
  /** What the sandbox runs against, as the rows name it. */
  readonly label: string;
  readonly sandbox: Sandbox;
  /** Streamed volume unless `SBX_BENCH_STREAM_MB` says otherwise. */
  readonly megabytes: number;
}

export async function runProcessBench(run: ProcessBenchRun): Promise<void> {
  const rows = await processRows(run.label, run.sandbox, {
    calls: Number(process.env.SBX_BENCH_EXEC_CALLS ?? 100),
    megabytes: Number(process.env.SBX_BENCH_STREAM_MB ?? run.megabytes),
  });
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ${process.platform} ${release()}`;
  const markdown = processMarkdown(`${run.pkg}: commands as processes`, rows, machine);
  await writeBenchResults(
    run.name,
    { package: `${run.pkg} (processes)`, started: new Date().toISOString(), machine, rows },
    markdown,
  );
}

// The process-API benchmarks every provider runs the same way, each against an anchor measured in
// the same run on this machine: a bare `child_process.spawn` of the same shell command.
// - exec('true') overhead: per-call p50 of `sandbox.exec('true')` vs spawning `sh -c true`;
// - first-output latency: from the call to the first `onStdout` chunk of `echo first; sleep 0.2`
//   vs the first 'data' event of the same spawn;
// - streaming throughput: the wall clock of streaming N MB through `onStdout` vs reading the same
//   bytes from a bare spawn's pipe.
// Samples alternate sbx and anchor, so load on the machine hits both alike.
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const p95 = (values) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(0.95 * s.length))];
};
const round = (n, d = 2) => Math.round(n * 10 ** d) / 10 ** d;

/** Spawns `sh -c command`; resolves the time to its first stdout byte and to its close. */
function rawSpawn(command, shell = '/bin/sh') {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let first;
    let bytes = 0;
    const child = spawn(shell, ['-c', command], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d) => {
      first ??= performance.now() - t0;
      bytes += d.length;
    });
    child.on('error', reject);
    child.on('close', () => resolve({ first, total: performance.now() - t0, bytes }));
  });
}

/** One sbx exec, timed the same way. */
async function sbxExec(sandbox, command) {
  const t0 = performance.now();
  let first;
  let bytes = 0;
  await sandbox.exec(command, {
    onStdout: (chunk) => {
      first ??= performance.now() - t0;
      bytes += chunk.length;
    },
  });
  return { first, total: performance.now() - t0, bytes };
}

async function plainExec(sandbox, command) {
  const t0 = performance.now();
  await sandbox.exec(command);
  return performance.now() - t0;
}

/**
 * Rows (`{ benchmark, sbx_ms, baseline, baseline_ms, ratio, note }`) for one sandbox.
 * `label` names the provider; `calls` the exec('true') samples; `megabytes` the streamed volume.
 */
export async function processRows(
  label,
  sandbox,
  { calls = 100, firstOutputRuns = 10, megabytes = 100, shell = '/bin/sh' } = {},
) {
  const rows = [];
  const row = (benchmark, ours, baseline, anchor, note) =>
    rows.push({
      benchmark: `${label}: ${benchmark}`,
      sbx_ms: round(ours),
      baseline,
      baseline_ms: round(anchor),
      ratio: round(ours / anchor),
      note,
    });

  for (let i = 0; i < 5; i++) {
    await plainExec(sandbox, 'true');
    await rawSpawn('true', shell);
  }
  const ours = [];
  const raw = [];
  for (let i = 0; i < calls; i++) {
    ours.push(await plainExec(sandbox, 'true'));
    raw.push((await rawSpawn('true', shell)).total);
  }
  row(
    "exec('true') per call (p50)",
    median(ours),
    `bare spawn(${shell.split('/').pop()} -c true)`,
    median(raw),
    `p95 ${round(p95(ours))} vs ${round(p95(raw))} ms over ${calls} calls`,
  );

  const firstOurs = [];
  const firstRaw = [];
  for (let i = 0; i < firstOutputRuns; i++) {
    firstOurs.push((await sbxExec(sandbox, 'echo first; sleep 0.2')).first);
    firstRaw.push((await rawSpawn('echo first; sleep 0.2', shell)).first);
  }
  row(
    'first output of a streamed command (p50)',
    median(firstOurs),
    'first data event of a bare spawn',
    median(firstRaw),
    `the command runs 200 ms more; ${firstOutputRuns} runs`,
  );

  const volume = `head -c ${megabytes * 1024 * 1024} /dev/zero | tr '\\0' 'a'`;
  const streamed = await sbxExec(sandbox, volume);
  const bare = await rawSpawn(volume, shell);
  row(
    `stream ${megabytes} MB of output through onStdout`,
    streamed.total,
    'bare spawn reading the same pipe',
    bare.total,
    `${round((megabytes / streamed.total) * 1000, 0)} MB/s vs ${round((megabytes / bare.total) * 1000, 0)} MB/s; ${streamed.bytes} chars delivered`,
  );
  return rows;
}

/** The result file's markdown table. */
export function processMarkdown(title, rows, machine) {
  const out = [`# ${title}`, ''];
  out.push(
    `${machine}. Anchors are measured in the same run, alternating with sbx. Ratio = sbx / anchor (lower is better for sbx).`,
    '',
  );
  out.push('| benchmark | sbx (ms) | anchor | anchor (ms) | ratio | note |');
  out.push('| --- | ---: | --- | ---: | ---: | --- |');
  for (const r of rows) {
    out.push(
      `| ${r.benchmark} | ${r.sbx_ms} | ${r.baseline} | ${r.baseline_ms} | ${r.ratio} | ${r.note} |`,
    );
  }
  return `${out.join('\n')}\n`;
}

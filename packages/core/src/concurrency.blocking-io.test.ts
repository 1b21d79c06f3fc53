import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The lease/serializer/warm-pool paths run on the event loop of a gateway: one synchronous I/O
 * call there stalls every request. This guard runs a full acquire → execute → release workload in
 * a child `node --trace-sync-io` and fails on any sync-API warning. The child runs the same
 * sources, transpiled on the fly to CommonJS (no build step) so that module loading, which is
 * startup work, happens before tracing starts. A self-check run proves the harness would notice:
 * it performs one deliberate `readFileSync` after the workload and must be reported.
 *
 * One report is tolerated, and only in exactly this shape: `crypto.randomUUID` (owner ids) refills
 * its entropy cache with `randomFillSync` every 128 ids. That is a non-blocking `getrandom`
 * syscall, not I/O that can stall on a disk, socket or daemon.
 */

const here = dirname(fileURLToPath(import.meta.url));
const ENTRIES = [
  'serializer/acquire-serializer.ts',
  'execution-leases/lease-manager.ts',
  'execution-leases/lease-client.ts',
  'execution-leases/lease-context.ts',
  'warm-pool/warm-pool.ts',
  'async/clock.ts',
  'testing/fake-provider.ts',
];
const SYNC_WARNING = 'WARNING: Detected use of sync API';

/** The sync-API reports in `stderr`, minus the tolerated entropy refill of `randomUUID`. */
function syncIoReports(stderr: string): string[] {
  return stderr
    .split(SYNC_WARNING)
    .slice(1)
    .map((block) => block.trim())
    .filter((block) => {
      const frames = block.split('\n').map((l) => l.trim());
      const entropyRefill =
        frames[0]?.startsWith('at randomFillSync ') === true &&
        frames.slice(1, 4).some((f) => f.startsWith('at randomUUID '));
      return !entropyRefill;
    });
}

async function transpileGraph(outDir: string): Promise<void> {
  const seen = new Set<string>();
  const queue = ENTRIES.map((e) => resolve(here, e));
  while (queue.length > 0) {
    const file = queue.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    const source = await readFile(file, 'utf8');
    for (const m of source.matchAll(/from\s+'(\.{1,2}\/[^']+)\.js'/g)) {
      queue.push(resolve(dirname(file), `${m[1]}.ts`));
    }
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
      fileName: file,
    });
    const target = join(outDir, relative(here, file)).replace(/\.ts$/, '.js');
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, outputText);
  }
}

const HARNESS = `
const { readFileSync } = require('node:fs');
const { AcquireSerializer } = require('./serializer/acquire-serializer.js');
const { SandboxLeaseManager } = require('./execution-leases/lease-manager.js');
const { acquireSandboxClientLease } = require('./execution-leases/lease-client.js');
const { WarmPool } = require('./warm-pool/warm-pool.js');
const { FakeSandboxProvider } = require('./testing/fake-provider.js');

async function main() {
// --trace-sync-io only reports from the first event-loop turn on; start the workload after it.
await new Promise((r) => setImmediate(r));
await new Promise((r) => setTimeout(r, 1));

const provider = new FakeSandboxProvider();
const manager = new SandboxLeaseManager(provider);
const serializer = new AcquireSerializer({ limit: 4 });
const threads = ['t1', 't2', 't3'];

await Promise.all(threads.flatMap((threadId) => [0, 1, 2].map(async (n) => {
  const owner = 'agent:' + threadId + ':' + n;
  const id = await manager.acquire(owner, { userId: 'u', threadId, releaseOnLast: n !== 2 });
  await serializer.hold(id, () => serializer.run(() => provider.get(id).executeCommand('echo ' + owner)));
  await manager.reuseOrAcquire(owner, id, { userId: 'u', threadId });
  await manager.release(owner);
})));

const controller = new AbortController();
const cancelled = manager.acquire('agent:cancelled', { userId: 'u', threadId: 't9', signal: controller.signal });
controller.abort();
await cancelled.catch(() => {});

const lease = await acquireSandboxClientLease(provider, { userId: 'u', threadId: 't1', ownerPrefix: 'gateway:upload' });
await lease.run((sb) => sb.writeFile('/mnt/user-data/uploads/a.txt', 'hello'));
await lease.release();

const pool = new WarmPool({ idleTimeoutSeconds: 1, checkIntervalSeconds: 0.01, destroy: async () => true });
pool.put('fake:u:t1', 'client');
pool.start();
await pool.ensureCapacity(5, 'fake:u:t4');
await pool.runIdleCheck();
await pool.destroyAll();
serializer.close();
manager.close();

if (process.argv[2] === 'self-check') readFileSync(process.argv[1]);
process.stdout.write('HARNESS-DONE ' + provider.released.length + '\\n');
}

main().catch((error) => {
  process.stderr.write('HARNESS-FAILED ' + (error && error.stack) + '\\n');
  process.exitCode = 1;
});
`;

function runChild(script: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, ['--trace-sync-io', script, ...args], {
    timeout: 60_000,
  });
}

describe('blocking-I/O guard for the concurrency primitives', () => {
  let dir: string;
  let script: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sbx-sync-io-'));
    await writeFile(join(dir, 'package.json'), '{"type":"commonjs"}');
    await transpileGraph(dir);
    script = join(dir, 'harness.js');
    await writeFile(script, HARNESS);
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('self-check: a deliberate readFileSync in the same harness is reported', async () => {
    const { stdout, stderr } = await runChild(script, ['self-check']);
    expect(stdout).toContain('HARNESS-DONE');
    const reports = syncIoReports(stderr);
    // readFileSync shows up as its open/stat/read/close steps, every one traced back to it.
    expect(reports.length).toBeGreaterThan(0);
    for (const report of reports) expect(report).toMatch(/\bat readFileSync \(/);
  });

  it('acquire, execute and release through the lease manager, serializer and warm pool do no synchronous I/O', async () => {
    const { stdout, stderr } = await runChild(script, []);
    expect(stdout).toMatch(/HARNESS-DONE [1-9]/); // the workload ran to the end and parked
    expect(syncIoReports(stderr)).toEqual([]);
  });
});

import { spawn } from 'node:child_process';
import { mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';

/**
 * Runs a stand-in VM's commands for real on the host, confined by path translation: every
 * occurrence of a mapped prefix (`/mnt/user-data`, ...) in the argv is rewritten to the same path
 * below the box's own directory, and the box directory is cut out of the output again. Paths
 * outside the mapped prefixes reach the host unchanged, so this is a test double, not a boundary.
 * Fakes of remote runtimes (BoxLite, Tenki) run their `exec` through it, so the shared
 * `find`/`grep` protocol and shell quoting are exercised against real tools.
 */

/** Which tools the stand-in VM has: the host's (GNU) or only busybox applets. */
export type Userland = 'host' | 'busybox';

const BUSYBOX_APPLETS = [
  'sh',
  'cat',
  'base64',
  'wc',
  'mkdir',
  'find',
  'grep',
  'head',
  'tr',
  'ls',
  'rm',
  'mv',
  'cp',
  'echo',
  'printf',
  'test',
  '[',
  'dirname',
  'basename',
  'sleep',
  'ln',
  'touch',
  'env',
  'true',
  'false',
  'sed',
  'chmod',
  'id',
  'uname',
];

/** A directory of busybox applet links, so `PATH=<dir>` gives a busybox-only userland. */
export async function busyboxBin(root: string): Promise<string> {
  const dir = path.join(root, '.busybox-bin');
  await mkdir(dir, { recursive: true });
  await Promise.all(
    BUSYBOX_APPLETS.map((applet) =>
      symlink('/usr/bin/busybox', path.join(dir, applet)).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
      }),
    ),
  );
  return dir;
}

export interface HostRun {
  /** The box directory standing in for the VM's root. */
  boxDir: string;
  /** Absolute prefixes that live below `boxDir`. */
  mapped: readonly string[];
  command: string;
  args: readonly string[];
  env: Readonly<Record<string, string>>;
  timeoutSecs?: number | undefined;
  signal?: AbortSignal | undefined;
  /** For `busybox`: the applet directory (`busyboxBin`). */
  busyboxDir?: string | undefined;
}

export interface HostRunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function mapIn(text: string, boxDir: string, mapped: readonly string[]): string {
  if (mapped.length === 0) return text;
  const re = new RegExp(mapped.map(escapeRegExp).join('|'), 'g');
  return text.replace(re, (m) => `${boxDir}${m}`);
}

function mapOut(text: string, boxDir: string): string {
  return text.split(boxDir).join('');
}

export function runOnHost(run: HostRun): Promise<HostRunResult> {
  const args = run.args.map((a) => mapIn(a, run.boxDir, run.mapped));
  const env: Record<string, string> = {
    PATH: run.busyboxDir ?? process.env.PATH ?? '/usr/bin:/bin',
    HOME: run.boxDir,
    LC_ALL: 'C.UTF-8',
  };
  for (const [k, v] of Object.entries(run.env)) env[k] = mapIn(v, run.boxDir, run.mapped);
  const command =
    run.busyboxDir && run.command === 'sh' ? path.join(run.busyboxDir, 'sh') : run.command;
  return new Promise<HostRunResult>((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: run.boxDir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    let killed = false;
    const kill = (): void => {
      killed = true;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer =
      run.timeoutSecs === undefined ? undefined : setTimeout(kill, run.timeoutSecs * 1000);
    run.signal?.addEventListener('abort', kill, { once: true });
    child.on('error', reject);
    child.on('close', (code, sig) => {
      if (timer !== undefined) clearTimeout(timer);
      run.signal?.removeEventListener('abort', kill);
      resolve({
        exitCode: code ?? (killed || sig ? 137 : 1),
        stdout: mapOut(Buffer.concat(out).toString('utf8'), run.boxDir),
        stderr: mapOut(Buffer.concat(err).toString('utf8'), run.boxDir),
      });
    });
  });
}

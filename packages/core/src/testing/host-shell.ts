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

export interface HostStart extends Omit<HostRun, 'signal'> {
  /** Keep standard input open as a pipe (else it is the null device). */
  stdin?: boolean;
  onStdout?: (text: string) => void;
  onStderr?: (text: string) => void;
}

/** A command `startOnHost` started: it streams, takes input and signals its process group. */
export interface HostProcess {
  readonly pid: number | undefined;
  /** Settles when the command has exited and its output was delivered. Never rejects. */
  readonly exited: Promise<{ exitCode: number; signal?: NodeJS.Signals; error?: Error }>;
  write(data: Uint8Array | string): void;
  closeStdin(): void;
  kill(signal: NodeJS.Signals): void;
}

/**
 * Starts a stand-in VM's command on the host, as `runOnHost` does, with its output streamed to
 * the listeners (box paths cut out chunk by chunk) as it is produced. At `timeoutSecs` the group
 * is killed (status 137), as a VM's exec limit would.
 */
export function startOnHost(run: HostStart): HostProcess {
  const args = run.args.map((a) => mapIn(a, run.boxDir, run.mapped));
  const env: Record<string, string> = {
    PATH: run.busyboxDir ?? process.env.PATH ?? '/usr/bin:/bin',
    HOME: run.boxDir,
    LC_ALL: 'C.UTF-8',
  };
  for (const [k, v] of Object.entries(run.env)) env[k] = mapIn(v, run.boxDir, run.mapped);
  const command =
    run.busyboxDir && run.command === 'sh' ? path.join(run.busyboxDir, 'sh') : run.command;
  const child = spawn(command, args, {
    cwd: run.boxDir,
    env,
    stdio: [run.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    detached: true,
  });
  child.stdin?.on('error', () => {});
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  child.stdout!.on('data', (text: string) => run.onStdout?.(mapOut(text, run.boxDir)));
  child.stderr!.on('data', (text: string) => run.onStderr?.(mapOut(text, run.boxDir)));
  let killed = false;
  const kill = (signal: NodeJS.Signals): void => {
    if (signal === 'SIGKILL') killed = true;
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      child.kill(signal);
    }
  };
  const timer =
    run.timeoutSecs === undefined
      ? undefined
      : setTimeout(() => kill('SIGKILL'), run.timeoutSecs * 1000);
  const exited = new Promise<{ exitCode: number; signal?: NodeJS.Signals; error?: Error }>(
    (resolve) => {
      child.on('error', (error) => {
        if (timer !== undefined) clearTimeout(timer);
        resolve({ exitCode: 127, error });
      });
      child.on('close', (code, sig) => {
        if (timer !== undefined) clearTimeout(timer);
        resolve({
          exitCode: code ?? (killed || sig ? 137 : 1),
          ...(sig ? { signal: sig } : {}),
        });
      });
    },
  );
  return {
    pid: child.pid,
    exited,
    write: (data) => void child.stdin?.write(data),
    closeStdin: () => void child.stdin?.end(),
    kill,
  };
}

/** Runs a stand-in VM's command on the host to its end and returns what it printed. */
export async function runOnHost(run: HostRun): Promise<HostRunResult> {
  const out: string[] = [];
  const err: string[] = [];
  const { signal, ...rest } = run;
  const started = startOnHost({
    ...rest,
    onStdout: (text) => out.push(text),
    onStderr: (text) => err.push(text),
  });
  const onAbort = (): void => started.kill('SIGKILL');
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const exit = await started.exited;
    if (exit.error) throw exit.error;
    return { exitCode: exit.exitCode, stdout: out.join(''), stderr: err.join('') };
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

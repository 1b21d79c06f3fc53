import { spawn } from 'node:child_process';
import { busyboxBin } from '@sbx/core/testing';
import type { Userland } from '@sbx/core/testing';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * The inside of one remote sandbox, played on the host for the test doubles: sandbox paths under
 * `/mnt` live below a private temporary root (`/mnt/user-data/x` is `<root>/mnt/user-data/x`),
 * commands run in a real `bash`, and before they run every `/mnt` path in the command text is
 * pointed at the root and the root is cut from what they print. Scripts written for the sandbox
 * (the bootstrap, the remote search commands of @sbx/core) therefore run unchanged and report
 * sandbox paths. A test double, not an isolation boundary.
 */

/** A file-API failure shaped like execd's answer: HTTP status plus Go's error text. */
export class MachineFileError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = 'MachineFileError';
    this.status = status;
    this.code = code;
  }
}

export interface MachineRunOptions {
  envs?: Readonly<Record<string, string>>;
  /** Absent or 0: no limit. */
  timeoutMs?: number;
  cwd?: string;
  /** Aborting kills the command's process group (execd does so when the client goes away). */
  signal?: AbortSignal;
  /** Output as the command prints it (sandbox paths already shown as the sandbox's). */
  onStdout?: (text: string) => void;
  onStderr?: (text: string) => void;
}

export interface MachineRunResult {
  stdout: string;
  stderr: string;
  /** Go's `ExitCode()`: the status, or -1 when a signal killed the command. */
  exitCode: number;
  /** Go's wait error text: `exit status N` or `signal: killed`; absent on success. */
  waitError?: string;
  elapsedMs: number;
}

const MNT_RE = /(^|[\s'"=:;|&(<>`])\/mnt(?=[/\s'";|&)<>`]|$)/g;

function errnoOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export class HostShellMachine {
  readonly root: string;
  /** Environment of every command (the create-time `env`). */
  readonly env: Readonly<Record<string, string>>;
  /** Applet directory when the sandbox has only busybox tools (no GNU grep `-Z`, no bash). */
  readonly busyboxDir: string | undefined;

  private constructor(
    root: string,
    env: Readonly<Record<string, string>>,
    busyboxDir: string | undefined,
  ) {
    this.root = root;
    this.env = env;
    this.busyboxDir = busyboxDir;
  }

  static async create(
    env: Readonly<Record<string, string>> = {},
    userland: Userland = 'host',
  ): Promise<HostShellMachine> {
    const root = await mkdtemp(path.join(os.tmpdir(), 'sbx-opensandbox-'));
    await mkdir(path.join(root, 'mnt'), { recursive: true });
    const busyboxDir = userland === 'busybox' ? await busyboxBin(root) : undefined;
    return new HostShellMachine(root, { ...env }, busyboxDir);
  }

  /** Host path of an absolute sandbox path; refuses anything that would leave the root. */
  hostPath(sandboxPath: string): string {
    if (!sandboxPath.startsWith('/')) {
      throw new MachineFileError(400, 'INVALID_PATH', `path must be absolute: ${sandboxPath}`);
    }
    const host = path.join(this.root, path.posix.normalize(sandboxPath));
    if (host !== this.root && !host.startsWith(`${this.root}${path.sep}`)) {
      throw new MachineFileError(400, 'INVALID_PATH', `path escapes the sandbox: ${sandboxPath}`);
    }
    return host;
  }

  rewriteCommand(command: string): string {
    return command.replace(MNT_RE, (_match, lead: string) => `${lead}${this.root}/mnt`);
  }

  /** Sandbox view of a text the host produced. */
  toSandboxText(text: string): string {
    return text.split(this.root).join('');
  }

  async readBytes(sandboxPath: string): Promise<Uint8Array> {
    const host = this.hostPath(sandboxPath);
    try {
      return new Uint8Array(await readFile(host));
    } catch (error) {
      throw this.#fileError(error, 'open', sandboxPath);
    }
  }

  /** Like execd's upload: parent directories created, file truncated and written, then chmod. */
  async writeBytes(sandboxPath: string, data: Uint8Array, mode?: number): Promise<void> {
    const host = this.hostPath(sandboxPath);
    try {
      await mkdir(path.dirname(host), { recursive: true });
      await writeFile(host, data);
      // execd reads the mode's decimal digits as octal (644 → rw-r--r--).
      if (mode !== undefined) await chmod(host, parseInt(String(mode), 8));
    } catch (error) {
      throw this.#fileError(error, 'open', sandboxPath);
    }
  }

  async exists(sandboxPath: string): Promise<boolean> {
    try {
      await stat(this.hostPath(sandboxPath));
      return true;
    } catch {
      return false;
    }
  }

  run(command: string, options: MachineRunOptions = {}): Promise<MachineRunResult> {
    const env: Record<string, string> = {
      PATH: this.busyboxDir ?? process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: this.root,
      LANG: 'C.UTF-8',
      ...this.env,
      ...(options.envs ?? {}),
    };
    const cwd = options.cwd === undefined ? this.root : this.hostPath(options.cwd);
    const started = Date.now();
    return new Promise((resolve, reject) => {
      // execd runs `bash --noprofile --norc -c`, or `sh -c` where there is no bash.
      const [shell, ...shellArgs] =
        this.busyboxDir === undefined
          ? ['bash', '--noprofile', '--norc', '-c']
          : [path.join(this.busyboxDir, 'sh'), '-c'];
      const child = spawn(shell!, [...shellArgs, this.rewriteCommand(command)], {
        cwd,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
        // Its own process group, so a timeout can kill everything the command started.
        detached: true,
      });
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      const outText = new TextDecoder();
      const errText = new TextDecoder();
      child.stdout.on('data', (d: Buffer) => {
        stdout.push(d);
        options.onStdout?.(this.toSandboxText(outText.decode(d, { stream: true })));
      });
      child.stderr.on('data', (d: Buffer) => {
        stderr.push(d);
        options.onStderr?.(this.toSandboxText(errText.decode(d, { stream: true })));
      });
      const killGroup = (): void => {
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      };
      const timer =
        options.timeoutMs !== undefined && options.timeoutMs > 0
          ? setTimeout(killGroup, options.timeoutMs)
          : undefined;
      options.signal?.addEventListener('abort', killGroup, { once: true });
      child.on('error', (error) => {
        if (timer) clearTimeout(timer);
        reject(error);
      });
      child.on('close', (code, signal) => {
        if (timer) clearTimeout(timer);
        options.signal?.removeEventListener('abort', killGroup);
        const exitCode = code ?? -1;
        const result: MachineRunResult = {
          stdout: this.toSandboxText(Buffer.concat(stdout).toString('utf8')),
          stderr: this.toSandboxText(Buffer.concat(stderr).toString('utf8')),
          exitCode,
          elapsedMs: Date.now() - started,
        };
        if (signal) result.waitError = `signal: ${signal === 'SIGKILL' ? 'killed' : signal}`;
        else if (exitCode !== 0) result.waitError = `exit status ${exitCode}`;
        resolve(result);
      });
    });
  }

  async dispose(): Promise<void> {
    await rm(this.root, { recursive: true, force: true });
  }

  #fileError(error: unknown, op: string, sandboxPath: string): MachineFileError {
    if (error instanceof MachineFileError) return error;
    const code = errnoOf(error);
    if (code === 'ENOENT') {
      return new MachineFileError(
        404,
        'FILE_NOT_FOUND',
        `file not found. ${op} ${sandboxPath}: no such file or directory`,
      );
    }
    const reason =
      code === 'EISDIR'
        ? 'is a directory'
        : code === 'ENOTDIR'
          ? 'not a directory'
          : code === 'EACCES'
            ? 'permission denied'
            : this.toSandboxText(error instanceof Error ? error.message : String(error));
    return new MachineFileError(
      500,
      'RUNTIME_ERROR',
      `error accessing file: ${op} ${sandboxPath}: ${reason}`,
    );
  }
}

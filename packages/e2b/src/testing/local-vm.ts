import { spawn } from 'node:child_process';
import { mkdir, readFile, rm, stat, lstat, writeFile, readlink } from 'node:fs/promises';
import path from 'node:path';

/**
 * A stand-in for one E2B VM's filesystem and shell, on the host: VM paths live below `root`
 * (`/home/user/x` is `<root>/home/user/x`). Commands run in a real `bash`; before they run, the VM
 * prefixes `/home` and `/mnt` in the command text are pointed at `root`, and `root` is cut from
 * what they print, so scripts written for the VM (the bootstrap, the remote search commands) run
 * unchanged and report VM paths. `sudo` is a pass-through function. This is a test double, not an
 * isolation boundary: it is used only by `FakeE2BClient` and the stand-in server.
 */
export interface LocalVmRunOptions {
  envs?: Record<string, string>;
  cwd?: string;
  /** 0 or absent: no limit. */
  timeoutMs?: number;
  onStdout?: (data: string) => void;
  onStderr?: (data: string) => void;
  signal?: AbortSignal;
  /** Keep stdin open as a pipe (else it is the null device). */
  stdin?: boolean;
  /** Called once the process runs, with its controls. */
  onStart?: (control: LocalVmProcessControl) => void;
}

export interface LocalVmProcessControl {
  readonly pid: number;
  write(data: Uint8Array | string): void;
  closeStdin(): void;
  kill(signal: NodeJS.Signals): void;
}

export interface LocalVmRunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

export interface LocalVmOutputListener {
  onStdout?: (data: string) => void;
  onStderr?: (data: string) => void;
}

/** A command the VM runs now, as envd's process list knows it. */
export interface LocalVmProcess {
  readonly pid: number;
  readonly command: string;
  readonly envs: Record<string, string>;
  readonly cwd?: string;
  readonly control: LocalVmProcessControl;
  /** Settles with the run's result when the command ends. */
  readonly ended: Promise<LocalVmRunResult>;
  /** Output from now on goes to `listener` too; the returned function stops that. */
  follow(listener: LocalVmOutputListener): () => void;
}

const VM_PREFIX_RE = /(^|[\s'"=:;|&(<>`])\/(home|mnt)(?=\/|$|[\s'";|&)<>`])/g;

export class LocalVm {
  readonly root: string;
  /** Environment of every command (the create-time `envs`). */
  readonly envs: Record<string, string>;
  /** Running commands by pid, of every client (envd's `List` / `Connect`). */
  readonly processes = new Map<number, LocalVmProcess>();

  constructor(root: string, envs: Record<string, string> = {}) {
    this.root = path.resolve(root);
    this.envs = { ...envs };
  }

  async init(homeDir = '/home/user'): Promise<void> {
    await mkdir(this.hostPath(homeDir), { recursive: true });
    await mkdir(this.hostPath('/mnt'), { recursive: true });
  }

  /** Host path of a VM path; refuses anything that would leave the root. */
  hostPath(vmPath: string): string {
    if (!vmPath.startsWith('/')) vmPath = `/home/user/${vmPath}`;
    const normalized = path.posix.normalize(vmPath);
    const host = path.join(this.root, normalized);
    if (host !== this.root && !host.startsWith(`${this.root}${path.sep}`)) {
      throw new Error(`path escapes the VM root: ${vmPath}`);
    }
    return host;
  }

  /** VM path of a host path below the root. */
  vmPath(hostPath: string): string {
    return hostPath === this.root ? '/' : hostPath.slice(this.root.length);
  }

  rewriteCommand(command: string): string {
    return command.replace(VM_PREFIX_RE, (_m, lead: string, dir: string) => {
      return `${lead}${this.root}/${dir}`;
    });
  }

  #unrewrite(text: string): string {
    return text.split(this.root).join('');
  }

  async readBytes(vmPath: string): Promise<Uint8Array> {
    return new Uint8Array(await readFile(await this.#resolveLinks(vmPath)));
  }

  async writeBytes(vmPath: string, data: Uint8Array): Promise<void> {
    const host = await this.#resolveLinks(vmPath);
    await mkdir(path.dirname(host), { recursive: true });
    await writeFile(host, data);
  }

  async makeDir(vmPath: string): Promise<boolean> {
    const host = await this.#resolveLinks(vmPath);
    try {
      await stat(host);
      return false;
    } catch {
      await mkdir(host, { recursive: true });
      return true;
    }
  }

  async remove(vmPath: string): Promise<void> {
    await rm(await this.#resolveLinks(vmPath, false), { recursive: true, force: true });
  }

  async info(
    vmPath: string,
  ): Promise<{ type: 'file' | 'dir' | 'symlink'; size: number; symlinkTarget?: string }> {
    const host = this.hostPath(vmPath);
    const s = await lstat(host);
    if (s.isSymbolicLink()) {
      return {
        type: 'symlink',
        size: s.size,
        symlinkTarget: this.#unrewrite(await readlink(host)),
      };
    }
    return { type: s.isDirectory() ? 'dir' : 'file', size: s.size };
  }

  /**
   * Follows symlinks created inside the VM (the bootstrap links `/mnt/user-data` to the home
   * directory with an absolute host target, or a VM target when made through `files`).
   */
  async #resolveLinks(vmPath: string, followLast = true): Promise<string> {
    const normalized = path.posix.normalize(vmPath.startsWith('/') ? vmPath : `/${vmPath}`);
    const parts = normalized.split('/').filter(Boolean);
    let current = this.root;
    for (let i = 0; i < parts.length; i += 1) {
      const next = path.join(current, parts[i] as string);
      const last = i === parts.length - 1;
      let resolved = next;
      if (!last || followLast) {
        try {
          const s = await lstat(next);
          if (s.isSymbolicLink()) {
            const target = await readlink(next);
            resolved = target.startsWith(this.root) ? target : this.hostPath(target);
          }
        } catch {
          // missing: the caller's operation reports it
        }
      }
      current = resolved;
    }
    return current;
  }

  run(command: string, options: LocalVmRunOptions = {}): Promise<LocalVmRunResult> {
    const script = `sudo() { "$@"; }\n${this.rewriteCommand(command)}`;
    const cwd = this.hostPath(options.cwd ?? '/home/user');
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: this.hostPath('/home/user'),
      LANG: 'C.UTF-8',
      ...this.envs,
      ...(options.envs ?? {}),
    };
    const followers = new Set<LocalVmOutputListener>();
    if (options.onStdout || options.onStderr) followers.add(options);
    let settle!: (result: LocalVmRunResult) => void;
    const ended = new Promise<LocalVmRunResult>((resolve) => (settle = resolve));
    return new Promise((resolve, reject) => {
      const child = spawn('bash', ['--norc', '-c', script], {
        cwd,
        env,
        stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
        detached: true,
      });
      child.stdin?.on('error', () => {});
      if (child.pid !== undefined) {
        const pid = child.pid;
        const control: LocalVmProcessControl = {
          pid,
          write: (data) => child.stdin?.write(data),
          closeStdin: () => child.stdin?.end(),
          kill: (signal) => {
            try {
              process.kill(-pid, signal);
            } catch {
              // already gone
            }
          },
        };
        this.processes.set(pid, {
          pid,
          command,
          envs: { ...(options.envs ?? {}) },
          ...(options.cwd ? { cwd: options.cwd } : {}),
          control,
          ended,
          follow: (listener) => {
            followers.add(listener);
            return () => followers.delete(listener);
          },
        });
        options.onStart?.(control);
      }
      let stdout = '';
      let stderr = '';
      let timedOut = false;
      child.stdout!.setEncoding('utf8');
      child.stderr!.setEncoding('utf8');
      child.stdout!.on('data', (d: string) => {
        stdout += d;
        const text = this.#unrewrite(d);
        for (const f of followers) f.onStdout?.(text);
      });
      child.stderr!.on('data', (d: string) => {
        stderr += d;
        const text = this.#unrewrite(d);
        for (const f of followers) f.onStderr?.(text);
      });
      const killGroup = (): void => {
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      };
      const timer =
        options.timeoutMs && options.timeoutMs > 0
          ? setTimeout(() => {
              timedOut = true;
              killGroup();
            }, options.timeoutMs)
          : undefined;
      const onAbort = (): void => killGroup();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      child.on('error', (error) => {
        if (timer) clearTimeout(timer);
        reject(error);
      });
      child.on('close', (code, signal) => {
        if (timer) clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        if (child.pid !== undefined) this.processes.delete(child.pid);
        const result = {
          exitCode: code ?? (signal ? 137 : 0),
          stdout: this.#unrewrite(stdout),
          stderr: this.#unrewrite(stderr),
          timedOut,
        };
        settle(result);
        resolve(result);
      });
    });
  }

  async destroy(): Promise<void> {
    await rm(this.root, { recursive: true, force: true });
  }
}

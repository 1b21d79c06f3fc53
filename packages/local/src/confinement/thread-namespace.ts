import { spawn, type ChildProcess } from 'node:child_process';
import type { FileHandle } from 'node:fs/promises';
import type { Readable, Writable } from 'node:stream';
import type { Logger } from '@sbx/core';
import { ConfinementStartError } from './confinement-errors.js';
import type { SandboxOwner } from './sandbox-owner.js';
import { GATE_SCRIPT, type SpawnPlan } from './spawn-plan.js';

/** How long a namespace may take to come up before its start counts as failed. */
const START_TIMEOUT_MS = 30_000;
/** How long `kill()` waits for bubblewrap to report the namespace gone. */
const KILL_WAIT_MS = 5_000;
const STDERR_KEPT = 2_048;

/**
 * Limits attach here (see `namespace-limits`): the namespace's init is placed under them once it
 * exists, and each entering command starts under them, since a command entered from outside is
 * the gateway's child, not the init's: its argv is wrapped (rlimits set before it `exec`s the
 * entry), and it waits at a gate until `admitter()`'s function has placed it (its cgroup).
 */
export interface NamespaceLimitsHooks {
  attach?(initPid: number): Promise<void>;
  wrapEntry?(argv: readonly string[]): string[];
  /**
   * The same for a gated entry, as one program: waits at the gate (descriptor 4) and sets the
   * rlimits before it execs `argv` (one process start fewer than a gate in front of a wrapper).
   */
  wrapGated?(argv: readonly string[]): string[];
  admitter?(): ((pid: number) => Promise<void>) | undefined;
  /** Processes the kernel killed for the memory limit so far; undefined without one. */
  oomKills?(): Promise<number | undefined>;
  release?(): Promise<void>;
}

export interface ThreadNamespaceOptions {
  readonly bwrap: string;
  readonly nsenter: string;
  /** bubblewrap has `--disable-userns` (0.8+); older ones rely on the seccomp filter alone. */
  readonly disableUserns: boolean;
  /**
   * `buildMountPlan`'s arguments, and the descriptors its sources are bound from (handed to
   * bubblewrap from `FIRST_SOURCE_FD` on, closed here once it started).
   */
  readonly mountPlan: () => Promise<NamespacePlan>;
  /** Host user the namespace and its commands run as; `undefined`: the gateway's own. */
  readonly owner: SandboxOwner | undefined;
  /** The seccomp program every command gets (`seccompProgram()`), when there is one. */
  readonly seccomp?: () => Buffer;
  readonly limits?: NamespaceLimitsHooks;
  readonly logger: Logger;
  readonly sandboxId: string;
}

/** What one start of a namespace is built from (see `ThreadNamespaceOptions.mountPlan`). */
export interface NamespacePlan {
  readonly args: readonly string[];
  readonly handles: readonly FileHandle[];
  /**
   * A program started with the namespace's init, in its pid namespace (so it ends with it), that
   * prints `ready` once it serves; the namespace counts as started then. Its failure ends the
   * namespace. (The egress forwarder.)
   */
  readonly companion?: readonly string[];
  /** Variables every command entered into this start gets (the egress proxy's). */
  readonly env?: Readonly<Record<string, string>>;
  /** Frees what this start holds outside the namespace (the egress attachment), once it ended. */
  readonly release?: () => Promise<void>;
}

interface Running {
  readonly child: ChildProcess;
  /** Host pid of the namespace's pid 1 (bubblewrap's reaper inside). */
  readonly initPid: number;
  readonly ended: Promise<void>;
  readonly env: Readonly<Record<string, string>>;
  /** `NamespacePlan.release`, at most once. */
  readonly release: () => Promise<void>;
}

/** `release` at most once, its failure logged (the namespace is gone either way). */
function releaseOnce(
  release: (() => Promise<void>) | undefined,
  logger: Logger,
  sandboxId: string,
): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => {
    done ??= (release?.() ?? Promise.resolve()).catch((error: unknown) => {
      logger.error('What a sandbox namespace held outside could not be freed', {
        sandboxId,
        error: error instanceof Error ? error.message : String(error),
      });
    });
    return done;
  };
}

/**
 * One long-lived set of namespaces per thread, like a container that commands are `exec`ed
 * into: bubblewrap builds it once (user, mount, pid, ipc, uts and network namespaces, the mount
 * plan) around an init that only waits, and every command enters it with `nsenter` and a second,
 * nested bubblewrap that drops what the entry kept (capabilities, new user namespaces via
 * `--disable-userns`, the seccomp filter on descriptor 3).
 *
 * Chosen over one namespace per command because a thread is a workspace, not a batch job: a
 * server started in the background by one command answers the next one's `curl localhost`, a
 * later `ps` sees earlier jobs, and `/tmp` keeps what a previous command left there. What the
 * thread started is still bounded as a whole: killing the init (pid 1 of the namespace) makes
 * the kernel kill every process in it, whatever it did to its session, process group or
 * environment (`setsid env -i`, double forks, `nohup`); and the init dies with the gateway
 * (`--die-with-parent`, SIGKILL included).
 */
export class ThreadNamespace {
  readonly #options: ThreadNamespaceOptions;
  #running: Running | undefined;
  #starting: Promise<Running> | undefined;
  #oomSeen = 0;

  constructor(options: ThreadNamespaceOptions) {
    this.#options = options;
  }

  /** Host pid of the namespace's init while it runs (tests, `sbx doctor`). */
  get initPid(): number | undefined {
    return this.#running?.initPid;
  }

  get running(): boolean {
    return this.#running !== undefined;
  }

  /** The namespace, started if it is not running. Concurrent callers share one start. */
  async ensure(): Promise<number> {
    if (this.#running) return this.#running.initPid;
    this.#starting ??= this.#start().finally(() => {
      this.#starting = undefined;
    });
    return (await this.#starting).initPid;
  }

  /**
   * The spawn of one command in the namespace: `<shell> <args>` in `cwd` (a path inside the
   * namespace) as the sandbox user, after `ensure()`.
   */
  async entry(shell: string, shellArgs: readonly string[], cwd: string): Promise<SpawnPlan> {
    const initPid = await this.ensure();
    const o = this.#options;
    const seccomp = o.seccomp?.();
    const nested = [
      o.bwrap,
      '--dev-bind',
      '/',
      '/',
      '--unshare-user',
      ...(o.disableUserns ? ['--disable-userns'] : []),
      '--die-with-parent',
      ...(seccomp ? ['--seccomp', '3'] : []),
      '--chdir',
      cwd,
      '--',
      shell,
      ...shellArgs,
    ];
    const enter = [
      o.nsenter,
      `--target=${initPid}`,
      '--user',
      '--mount',
      '--pid',
      '--net',
      '--ipc',
      '--uts',
      '--root',
      '--wd',
      '--preserve-credentials',
      '--',
      ...nested,
    ];
    const admit = o.limits?.admitter?.();
    const limits = o.limits;
    let argv: string[];
    if (admit) {
      argv = limits?.wrapGated
        ? limits.wrapGated(enter)
        : ['/bin/sh', '-c', GATE_SCRIPT, 'sh', ...enter];
    } else {
      argv = limits?.wrapEntry ? limits.wrapEntry(enter) : enter;
    }
    const env = this.#running?.env;
    return {
      file: argv[0] as string,
      args: argv.slice(1),
      ...(env && Object.keys(env).length > 0 ? { env } : {}),
      ...(o.owner ? { uid: o.owner.uid, gid: o.owner.gid } : {}),
      ...(seccomp ? { fd3: seccomp } : {}),
      ...(admit ? { admit } : {}),
    };
  }

  /**
   * How many processes the kernel killed for the memory limit since the last call (0 without a
   * memory limit in force). One read per command: the count seen last is kept, so a kill while
   * two commands of the thread overlap is reported by the first to ask.
   */
  async newOomKills(): Promise<number> {
    if (!this.#running) return 0;
    const total = (await this.#options.limits?.oomKills?.()) ?? 0;
    const fresh = Math.max(0, total - this.#oomSeen);
    this.#oomSeen = total;
    return fresh;
  }

  /**
   * Ends the namespace and with it every process the thread started: SIGKILL to its init, after
   * which the kernel kills the rest of the pid namespace. Resolves once bubblewrap has exited
   * (bounded). Idempotent; the next command starts a fresh namespace.
   */
  async kill(): Promise<void> {
    const starting = this.#starting;
    if (starting) await starting.catch(() => undefined);
    const running = this.#running;
    if (!running) return;
    this.#running = undefined;
    try {
      process.kill(running.initPid, 'SIGKILL');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
    // Waited for with the loop held: a gateway shutting down from a script must see it through.
    running.child.ref();
    await within(running.ended, KILL_WAIT_MS);
    await running.release();
    await this.#options.limits?.release?.();
  }

  async #start(): Promise<Running> {
    const o = this.#options;
    const plan = await o.mountPlan();
    const release = releaseOnce(plan.release, o.logger, o.sandboxId);
    try {
      return await this.#spawn(plan, release);
    } catch (error) {
      await release();
      throw error;
    } finally {
      await Promise.all(plan.handles.map((h) => h.close().catch(() => undefined)));
    }
  }

  async #spawn(plan: NamespacePlan, release: () => Promise<void>): Promise<Running> {
    const o = this.#options;
    const { handles } = plan;
    // Says the namespace is built (bubblewrap reports its pid before the mounts are done, and a
    // command entered before then would find no root), then waits for the gateway: its pipe ends
    // (EOF) only when the gateway is gone. With a companion, its own `ready` says it, and its
    // end ends the init (and so the namespace): a sandbox never runs on without its forwarder.
    const init = plan.companion
      ? ['-c', '{ "$@" </dev/null || kill $$; } & read -r _ || true', 'sh', ...plan.companion]
      : ['-c', 'echo ready; read -r _ || true'];
    const args = [...plan.args, '--info-fd', '3', '--', '/bin/sh', ...init];
    let child: ChildProcess;
    try {
      child = spawn(o.bwrap, args, {
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe', 'pipe', ...handles.map((h) => h.fd)],
        env: {},
        cwd: '/',
        ...(o.owner ? { uid: o.owner.uid, gid: o.owner.gid } : {}),
      });
    } catch (err) {
      throw new ConfinementStartError('Could not start the sandbox namespace (bubblewrap)', {
        details: { sandboxId: o.sandboxId, reason: (err as Error).message },
        cause: err,
      });
    }
    let stderr = '';
    (child.stderr as Readable).setEncoding('utf8');
    (child.stderr as Readable).on('data', (text: string) => {
      if (stderr.length < STDERR_KEPT) stderr += text.slice(0, STDERR_KEPT - stderr.length);
    });
    const stdin = child.stdin as Writable & { unref?: () => void };
    stdin.on('error', () => {});
    // `close` (after stderr is drained) for a start's failure message; `exit` for a kill, since
    // the pipes are unreferenced and would not keep the loop turning until they close.
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    const ended = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const initPid = await new Promise<number>((resolve, reject) => {
      let info = '';
      const infoStream = child.stdio[3] as Readable;
      infoStream.setEncoding('utf8');
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        fail(`it did not come up within ${START_TIMEOUT_MS} ms`);
      }, START_TIMEOUT_MS);
      const fail = (reason: string) => {
        clearTimeout(timer);
        reject(
          new ConfinementStartError(`Could not start the sandbox namespace: ${reason}`, {
            details: { sandboxId: o.sandboxId, bwrap: stderr.trim().slice(0, 400) },
          }),
        );
      };
      let ready = '';
      let pid: number | undefined;
      const settle = () => {
        if (pid === undefined || !ready.includes('ready\n')) return;
        clearTimeout(timer);
        resolve(pid);
      };
      infoStream.on('data', (text: string) => {
        info += text;
        const found = /"child-pid"\s*:\s*(\d+)/.exec(info)?.[1];
        if (found !== undefined) pid = Number(found);
        settle();
      });
      const out = child.stdout as Readable;
      out.setEncoding('utf8');
      out.on('data', (text: string) => {
        if (ready.length < 64) ready += text;
        settle();
      });
      child.once('error', (err) => fail(err.message));
      child.once('exit', (code, signal) => {
        // Reported after `close` of stderr at the latest; read what bubblewrap said first.
        void closed.then(() => fail(`bubblewrap exited (${signal ?? code})`));
      });
    });
    const running: Running = { child, initPid, ended, env: plan.env ?? {}, release };
    child.once('exit', (code, signal) => {
      if (this.#running !== running) return;
      this.#running = undefined;
      void release();
      o.logger.warn('A sandbox namespace ended on its own; the next command starts a new one', {
        sandboxId: o.sandboxId,
        code,
        signal,
        bwrap: stderr.trim().slice(0, 400),
      });
    });
    // Neither the namespace nor its pipes keep the gateway's event loop alive.
    child.unref();
    stdin.unref?.();
    for (const stream of [child.stdout, child.stderr, child.stdio[3]]) {
      (stream as (Readable & { unref?: () => void }) | null)?.unref?.();
    }
    this.#running = running;
    this.#oomSeen = 0;
    try {
      await o.limits?.attach?.(initPid);
    } catch (err) {
      await this.kill();
      throw err;
    }
    return running;
  }
}

/** `promise`, or nothing after `ms`; the timer is cleared either way. */
async function within(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      promise,
      new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

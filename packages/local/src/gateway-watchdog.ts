import { spawn, type ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';
import type { Logger } from '@sbx/core';
import { GATEWAY_WATCHDOG_SCRIPT } from './gateway-watchdog-script.js';

/** An exit sooner than this after a start counts as a failure to start. */
const QUICK_EXIT_MS = 5_000;
/** Consecutive quick exits after which the watchdog is not restarted until the next command. */
const MAX_QUICK_EXITS = 3;

/**
 * Bounds the processes of a gateway by the gateway's life. Node cannot ask the kernel to signal a
 * child when its parent dies (`PR_SET_PDEATHSIG` needs native code, and would reach only the
 * direct child, not what it forks), and a process group does not outlive the reach of `setsid`.
 * So one small process per provider instance watches instead: a `node` process in a session of
 * its own (a signal to the gateway's process group, Ctrl-C in a terminal, does not reach it),
 * with a pipe from the gateway as its standard input. The kernel closes that pipe however the
 * gateway ends, SIGKILL included; the watchdog then kills what the gateway's commands left (see
 * `GATEWAY_WATCHDOG_SCRIPT`) and exits.
 *
 * Chosen over a reaper run at the next start: a next start may never come (or come with another
 * base directory), and until it does the processes would run unbounded. The watchdog costs one
 * process (about 40 MB) per provider that ran a command, started with the first command and
 * stopped by `shutdown()`. An agent with host bash runs as the gateway's user and can kill it;
 * the gateway logs that, and starts another with what it knows, with the next command at the
 * latest. The confined mode (one PID namespace per thread) will make this the kernel's job.
 */
export class GatewayWatchdog {
  readonly #marker: string;
  readonly #logger: Logger;
  /** What the watchdog was told, replayed to a restarted one. */
  readonly #sessions = new Map<number, string>();
  #child: ChildProcess | undefined;
  #quickExits = 0;

  /** `marker`: the `NAME=value` environment entry of every process of the provider. */
  constructor(marker: string, logger: Logger) {
    this.#marker = marker;
    this.#logger = logger;
  }

  /** The watchdog's pid while it runs (tests). */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /**
   * Starts the watchdog if it is not running. Synchronous, and called before a command is
   * spawned: the watchdog exists (forked) before anything it must reap does.
   */
  ensureRunning(): void {
    if (this.#child !== undefined || process.platform !== 'linux') return;
    const startedAt = Date.now();
    let child: ChildProcess;
    try {
      child = spawn(
        process.execPath,
        ['-e', GATEWAY_WATCHDOG_SCRIPT, this.#marker, String(process.pid)],
        {
          detached: true,
          stdio: ['pipe', 'ignore', 'ignore'],
          // Nothing of the gateway's environment: no tag (it would match itself), no
          // NODE_OPTIONS (a host's preloads have no business here).
          env: { ELECTRON_RUN_AS_NODE: '1' },
          cwd: '/',
        },
      );
    } catch (error) {
      this.#logger.error('Could not start the gateway watchdog', { error: describe(error) });
      return;
    }
    this.#child = child;
    const stdin = child.stdin as Writable & { unref?: () => void };
    // A write to a watchdog that died fails with EPIPE; its `exit` says what happened.
    stdin.on('error', () => {});
    child.on('error', (error) => {
      this.#logger.error('The gateway watchdog failed', { error: describe(error) });
    });
    child.once('exit', (code, signal) => {
      // Not the current watchdog: stopped (or already replaced) on purpose.
      if (this.#child !== child) return;
      this.#child = undefined;
      this.#logger.error(
        'The gateway watchdog ended: processes of this gateway are not bounded by its life until it runs again',
        { code, signal },
      );
      this.#quickExits = Date.now() - startedAt < QUICK_EXIT_MS ? this.#quickExits + 1 : 0;
      if (this.#quickExits < MAX_QUICK_EXITS) this.ensureRunning();
    });
    // Neither the watchdog nor its pipe keeps the gateway's event loop alive.
    child.unref();
    stdin.unref?.();
    for (const [sid, start] of this.#sessions) this.#send(`+ ${sid} ${start}`);
  }

  /** A command's session (its shell's pid) and the shell's start time. */
  track(sid: number, start: string): void {
    this.#sessions.set(sid, start);
    this.ensureRunning();
    this.#send(`+ ${sid} ${start}`);
  }

  forget(sid: number): void {
    if (this.#sessions.delete(sid)) this.#send(`- ${sid}`);
  }

  /** Ends the watchdog without a sweep: the gateway has reaped everything itself. */
  stop(): void {
    this.#sessions.clear();
    const child = this.#child;
    this.#child = undefined;
    this.#quickExits = 0;
    if (child?.stdin && !child.stdin.destroyed) {
      child.stdin.write('stop\n');
      child.stdin.end();
    }
  }

  #send(line: string): void {
    const stdin = this.#child?.stdin;
    if (stdin && !stdin.destroyed && stdin.writable) stdin.write(`${line}\n`);
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

import type { Logger } from '@sbx/core';
import { GatewayWatchdog } from './gateway-watchdog.js';
import { readProcStatSync } from './proc-stat.js';
import type { SandboxSessions } from './session-observer.js';
import {
  PROVIDER_PROCESS_MARKER,
  SANDBOX_PROCESS_MARKER,
  reapProcesses,
  type ReapTarget,
} from './process-reaper.js';

/**
 * At this many tracked sessions `started` first forgets those whose group is empty; the next
 * prune waits until twice as many are tracked as the last one left, so many live sessions do not
 * make every spawn check them all.
 */
const PRUNE_AT = 1024;

interface TrackedSession {
  readonly sandboxTag: string;
  /** The leader's start time (see `ReapTarget.sessions`). */
  readonly start: string;
}

function groupEmpty(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return false;
  } catch (err) {
    // EPERM: a member exists that we may not signal; only ESRCH means nobody is left.
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * The sessions the commands of one provider's sandboxes started: every host command's shell
 * leads a session (and process group) of its own, so what a command leaves running stays in it
 * unless it calls `setsid` itself, whatever it does to its environment (`env -i`,
 * `exec env -u …`). `release()` and `shutdown()` kill every process of these sessions as well as
 * every process carrying the environment tag, and a watchdog process (`GatewayWatchdog`) does
 * the same when the gateway dies.
 *
 * A session is forgotten once its group is seen empty (its shell exited and left nothing, or it
 * was reaped), so what is tracked is what is running. The per-thread confinement to come (one
 * PID namespace per thread) replaces the lot with the kernel's own bookkeeping; this class is
 * where it plugs in.
 */
export class CommandSessions {
  readonly #providerTag: string;
  readonly #logger: Logger;
  readonly #sessions = new Map<number, TrackedSession>();
  readonly #watchdog: GatewayWatchdog;
  #pruneAt = PRUNE_AT;

  constructor(providerTag: string, logger: Logger) {
    this.#providerTag = providerTag;
    this.#logger = logger;
    this.#watchdog = new GatewayWatchdog(`${PROVIDER_PROCESS_MARKER}=${providerTag}`, logger);
  }

  /**
   * Called before a command is spawned: the watchdog exists before anything it must reap does
   * (a gateway killed in between still has its processes reaped by the tag).
   */
  beforeSpawn(): void {
    this.#watchdog.ensureRunning();
  }

  /**
   * A command's shell was just spawned as the leader of its own session (`pid` is its session
   * id). Called synchronously after the spawn, before the event loop can reap the shell and free
   * its pid, so the start time read is the shell's own.
   */
  started(sandboxTag: string, pid: number): void {
    if (process.platform !== 'linux') return;
    const stat = readProcStatSync(pid);
    if (stat === undefined) {
      this.#logger.warn('A command shell could not be read from /proc; only its tag reaches it', {
        pid,
      });
      return;
    }
    if (this.#sessions.size >= this.#pruneAt) this.#prune();
    this.#sessions.set(pid, { sandboxTag, start: stat.start });
    this.#watchdog.track(pid, stat.start);
  }

  /** The shell of session `pid` exited: forgotten if it left nothing running in its group. */
  ended(pid: number): void {
    if (this.#sessions.has(pid) && groupEmpty(pid)) this.#forget(pid);
  }

  /** The view one sandbox's commands report to and its release reaps. */
  forSandbox(sandboxTag: string): SandboxSessions {
    return {
      beforeSpawn: () => this.beforeSpawn(),
      started: (pid) => this.started(sandboxTag, pid),
      ended: (pid) => this.ended(pid),
      reap: () => this.reap(sandboxTag),
    };
  }

  /** Whether a session of this sandbox may still be running. */
  holds(sandboxTag: string): boolean {
    for (const session of this.#sessions.values()) {
      if (session.sandboxTag === sandboxTag) return true;
    }
    return false;
  }

  /** Kills every process of one sandbox: its sessions, and whatever carries its tag. */
  async reap(sandboxTag: string): Promise<number> {
    const sessions = new Map<number, string>();
    for (const [sid, session] of this.#sessions) {
      if (session.sandboxTag === sandboxTag) sessions.set(sid, session.start);
    }
    const killed = await this.#reap({
      sessions,
      marker: { name: SANDBOX_PROCESS_MARKER, value: sandboxTag },
    });
    for (const sid of sessions.keys()) this.#forget(sid);
    return killed;
  }

  /** Kills every process of the provider, then stops the watchdog. */
  async reapAll(): Promise<number> {
    const sessions = new Map<number, string>();
    for (const [sid, session] of this.#sessions) sessions.set(sid, session.start);
    const killed = await this.#reap({
      sessions,
      marker: { name: PROVIDER_PROCESS_MARKER, value: this.#providerTag },
    });
    this.#sessions.clear();
    this.#watchdog.stop();
    return killed;
  }

  #reap(target: ReapTarget): Promise<number> {
    return reapProcesses(target, this.#logger);
  }

  #forget(sid: number): void {
    this.#sessions.delete(sid);
    this.#watchdog.forget(sid);
  }

  #prune(): void {
    for (const sid of [...this.#sessions.keys()]) if (groupEmpty(sid)) this.#forget(sid);
    this.#pruneAt = Math.max(PRUNE_AT, this.#sessions.size * 2);
  }
}

// The shell sessions of the AIO stand-in, capped like the image's (agent-infra/sandbox 1.9.3–1.11.0):
// `MAX_SHELL_SESSIONS` (default 10), `SHELL_SESSION_TIMEOUT` (default 3,600 s idle).
import { randomUUID } from 'node:crypto';
import { ShellSession } from './shell-session.mjs';

export const DEFAULT_MAX_SHELL_SESSIONS = 10;
export const DEFAULT_SHELL_SESSION_TIMEOUT_SECONDS = 3_600;

/** The image's answer when every session has a running command (agent-infra/sandbox#228). */
export class SessionLimitError extends Error {
  constructor(max) {
    super(`session limit reached and all ${max} existing sessions have active commands`);
    this.max = max;
  }
}

export class SessionTable {
  constructor({ shell, cwd, env, maxSessions, sessionTimeoutSeconds, now = () => Date.now() }) {
    this.shell = shell;
    this.cwd = cwd;
    this.env = env;
    this.maxSessions = maxSessions ?? DEFAULT_MAX_SHELL_SESSIONS;
    this.sessionTimeoutSeconds = sessionTimeoutSeconds ?? DEFAULT_SHELL_SESSION_TIMEOUT_SECONDS;
    this.now = now;
    this.sessions = new Map();
    /** Ids dropped to make room, in order (tests read it). */
    this.evicted = [];
  }

  get(id) {
    const session = this.sessions.get(id);
    return session && !session.dead ? session : undefined;
  }

  ids() {
    return [...this.sessions.keys()].filter((id) => !this.sessions.get(id).dead);
  }

  /**
   * A new session, after making room the image's way: expired sessions first, then the
   * least-recently-used one without a running command; with every session busy, a refusal.
   */
  async create(id = randomUUID()) {
    const existing = this.get(id);
    if (existing) return existing;
    await this.#dropExpired();
    if (this.ids().length >= this.maxSessions) {
      const idle = this.ids()
        .map((sid) => this.sessions.get(sid))
        .filter((s) => !s.busy)
        .sort((a, b) => a.lastUsedMs - b.lastUsedMs)[0];
      if (!idle) throw new SessionLimitError(this.maxSessions);
      this.evicted.push(idle.id);
      await this.delete(idle.id);
    }
    const session = new ShellSession(id, { shell: await this.shell, cwd: this.cwd, env: this.env });
    this.sessions.set(id, session);
    session.exited.then(() => {
      if (this.sessions.get(id) === session) this.sessions.delete(id);
    });
    await session.ready;
    return session;
  }

  async delete(id) {
    const session = this.sessions.get(id);
    if (!session) return false;
    this.sessions.delete(id);
    await session.close();
    return true;
  }

  async #dropExpired() {
    const cutoff = this.now() - this.sessionTimeoutSeconds * 1000;
    for (const id of this.ids()) {
      const session = this.sessions.get(id);
      if (!session.busy && session.lastUsedMs < cutoff) await this.delete(id);
    }
  }

  stats() {
    const live = this.ids().map((id) => this.sessions.get(id));
    const active = live.filter((s) => s.busy).length;
    return {
      total_sessions: live.length,
      active_sessions: active,
      idle_sessions: live.length - active,
      max_sessions: this.maxSessions,
      session_timeout: this.sessionTimeoutSeconds,
      usage_ratio: live.length / this.maxSessions,
    };
  }

  async closeAll() {
    await Promise.all([...this.sessions.values()].map((s) => s.close()));
    this.sessions.clear();
  }
}

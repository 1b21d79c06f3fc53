/**
 * Told about the session of one host command: its shell is spawned as the leader of a session
 * (and process group) of its own, and what it leaves running stays in that session unless it
 * calls `setsid` itself.
 */
export interface SessionObserver {
  /** Just before the spawn. */
  beforeSpawn(): void;
  /**
   * Right after the spawn, synchronously (before the event loop can reap the shell and free its
   * pid): `pid` is the shell's, which is the session's and the process group's id.
   */
  started(pid: number): void;
  /** The shell exited (what it started may still run). */
  ended(pid: number): void;
}

/** The sessions of one local sandbox: observed as its commands start, reaped at its release. */
export interface SandboxSessions extends SessionObserver {
  /** Kills every process of the sandbox's sessions and every process carrying its tag. */
  reap(): Promise<number>;
}

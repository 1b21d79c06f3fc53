import type { EnvPolicyMode, LocalToolEnvironment, Logger, PathMapping } from '@sbx/core';
import type { PosixRunOptions, PosixRunResult } from './posix-runner.js';
import type { SandboxSessions } from './session-observer.js';
import { findShell } from './shell.js';
import type { SandboxConfinement } from './confinement/sandbox-confinement.js';

export interface LocalSandboxOptions {
  /** Mount table: virtual directories and the host directories behind them. */
  mappings?: readonly PathMapping[];
  /**
   * Refuse every path no mount covers (default true). Only the legacy generic `local` sandbox,
   * which has no thread and serves host paths, turns it off.
   */
  confined?: boolean;
  /**
   * Let `executeCommand` run host commands. Default false: a host shell can reach every path the
   * server can, so it is an explicit opt-in (`sandbox.allow_host_bash`).
   */
  allowHostBash?: boolean;
  /**
   * Run every command confined in this namespace (see `ThreadNamespace`) instead of on the host;
   * `allowHostBash` is then irrelevant.
   */
  confinement?: SandboxConfinement;
  /** Wall clock of a command in seconds when the call gives no `timeoutMs`. Default 600. */
  bashCommandTimeout?: number;
  /** Wall clock of one grep or glob in seconds (`sandbox.search_timeout_seconds`). Default 10. */
  searchTimeoutSeconds?: number;
  /** How commands inherit the host environment (`sandbox.env_policy`). Default `allowlist`. */
  envPolicy?: EnvPolicyMode;
  /** Extra names the allowlist policy inherits (`sandbox.env_allow`). */
  envAllow?: readonly string[];
  /**
   * Tags every command's environment (`SBX_SANDBOX_PROCESS_TAG`, and the provider's tag), so
   * `killProcesses()` finds what the sandbox started even after `setsid` or a double fork.
   */
  processTags?: { sandbox: string; provider?: string };
  /**
   * The sessions of this sandbox's commands, kept by the provider: `killProcesses()` ends every
   * process in them as well as every tagged one, and the provider's watchdog ends them with the
   * gateway. Without it (a sandbox built on its own), the tag alone finds what to end.
   */
  sessions?: SandboxSessions;
  /** Shell executable; default: first of /bin/zsh, /bin/bash, /bin/sh, `sh` on PATH. */
  shell?: string;
  /** Per-stream output cap in bytes. Default 10 MiB. */
  maxCaptureBytes?: number;
  /**
   * Canonical host paths written through `writeFile`. Passed in when a sandbox replaces an earlier
   * instance of the same thread, so files written before still read back with virtual paths.
   */
  agentWrittenPaths?: Set<string>;
  /**
   * Host-side layout the agent tool layer needs for a host-backed sandbox (thread directories,
   * skills root). Reported through `localToolEnvironment`, so hosts need not pass it themselves.
   */
  toolEnvironment?: LocalToolEnvironment;
  logger?: Logger;
  /** Runs the shell command; replaceable so tests can observe what would be spawned. */
  runner?: (options: PosixRunOptions) => Promise<PosixRunResult>;
}

let defaultShell: Promise<string> | undefined;

/** The host's default shell, found once per process (a failed search is not cached). */
export function sharedDefaultShell(): Promise<string> {
  if (!defaultShell) {
    const pending = findShell();
    // Do not cache a failure: installing a shell later must be enough to recover.
    pending.catch(() => {
      if (defaultShell === pending) defaultShell = undefined;
    });
    defaultShell = pending;
  }
  return defaultShell;
}

import { execFile } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';

/** What a probe's command did. */
export interface ProbeRun {
  /** Exit status; null when it was killed or could not start. */
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Why it could not be run or was stopped (ENOENT, the time limit), if so. */
  readonly error?: string | undefined;
}

/**
 * The host as the confinement probes see it: files read, programs run. Injected, so each way a host
 * can refuse confinement is tested with a described host, and once for real on the test machine.
 */
export interface ProbeHost {
  readonly platform: NodeJS.Platform;
  /** Effective uid: root is not subject to the unprivileged user namespace switches. */
  readonly uid: number;
  /** The whole (small) file, or undefined when it cannot be read. */
  readFile(file: string): Promise<string | undefined>;
  executable(file: string): Promise<boolean>;
  /**
   * Runs `file` with `args`, a fixed `PATH` and nothing else in the environment; as `as` (a host
   * uid and gid) when given, which needs root.
   */
  run(
    file: string,
    args: readonly string[],
    as?: { readonly uid: number; readonly gid: number },
  ): Promise<ProbeRun>;
}

/** Each probe command's time limit. */
export const PROBE_RUN_TIMEOUT_MS = 10_000;
/** Output kept of a probe command (its stderr is shown in a doctor line). */
const PROBE_OUTPUT_BYTES = 64 * 1024;

export const realProbeHost: ProbeHost = {
  platform: process.platform,
  uid: process.getuid?.() ?? -1,
  async readFile(file) {
    try {
      return await readFile(file, 'utf8');
    } catch {
      return undefined;
    }
  },
  async executable(file) {
    try {
      await access(file, fsConstants.X_OK);
      return true;
    } catch {
      return false;
    }
  },
  run(file, args, as) {
    return new Promise((resolve) => {
      execFile(
        file,
        [...args],
        {
          ...(as ? { uid: as.uid, gid: as.gid } : {}),
          timeout: PROBE_RUN_TIMEOUT_MS,
          killSignal: 'SIGKILL',
          maxBuffer: PROBE_OUTPUT_BYTES,
          env: { PATH: '/usr/bin:/bin:/usr/sbin:/sbin' },
          encoding: 'utf8',
        },
        (err, stdout, stderr) => {
          const code = (err as { code?: unknown } | null)?.code;
          resolve({
            status: err ? (typeof code === 'number' ? code : null) : 0,
            stdout,
            stderr,
            error: err && typeof code !== 'number' ? err.message : undefined,
          });
        },
      );
    });
  },
};

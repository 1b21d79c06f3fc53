/**
 * Exit statuses of `sbx`. `exec` is the exception to the table: it exits with the status of the
 * command it ran, so scripts can use `sbx exec` where they would run the command directly; its own
 * failures use 125 (as `docker run` does) and a timed-out command 124 (as `timeout(1)` does).
 */
export const ExitCode = {
  /** Done; every check passed. */
  OK: 0,
  /** The command ran and found a problem: invalid config, a failed required check, a tool error. */
  FAILURE: 1,
  /** Bad command line: unknown command or option, malformed JSON arguments. */
  USAGE: 2,
  /** sbx could not do the work: config unreadable, provider not loadable, sandbox unavailable. */
  UNAVAILABLE: 3,
  /** `exec`: the command was killed by its time limit. */
  EXEC_TIMEOUT: 124,
  /** `exec`: sbx failed before or while running the command (not the command's own status). */
  EXEC_SBX_ERROR: 125,
  /** Interrupted by SIGINT. */
  INTERRUPTED: 130,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

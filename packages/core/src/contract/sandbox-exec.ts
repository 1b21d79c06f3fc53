/**
 * Commands as processes: the structured result of one command, the options that shape it, and
 * what a sandbox says it can do. `Sandbox.exec` is the primitive; `executeCommand` is the
 * reference-compatible text built from its result.
 */

/** Text is sent as UTF-8; bytes are sent as they are. */
export type ProcessInput = string | Uint8Array;

/** Receives output as the command produces it (decoded as UTF-8, never splitting a character). */
export type OutputListener = (chunk: string) => void;

export interface ExecOptions {
  /** Per-call environment overlay (request-scoped secrets). Applies to this call only. */
  env?: Readonly<Record<string, string>>;
  /** Working directory (a sandbox path, virtual paths allowed where the sandbox maps them). */
  cwd?: string;
  /** Wall-clock limit in milliseconds. Implementations document their default. */
  timeoutMs?: number;
  /** Aborting kills the command and rejects with `AbortedError`. */
  signal?: AbortSignal;
  /**
   * Written to the command's standard input, which is then closed. Without it the command reads
   * EOF at once, so nothing waits for input that never comes.
   */
  stdin?: ProcessInput;
  /** Output as it is produced; see `SandboxCapabilities.streaming` for when it arrives. */
  onStdout?: OutputListener;
  onStderr?: OutputListener;
  /**
   * Command scope (e.g. a subagent lease owner). Sandboxes with server-side shell sessions run
   * scoped commands in that scope's session; others ignore it.
   */
  scopeId?: string;
}

export interface ExecResult {
  /** The command's exit status; `null` when it has none (killed at its time limit, or unknown). */
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Wall clock from the start of the call to its end. */
  readonly durationMs: number;
  /** Some output was dropped to honour the sandbox's capture limit (the text says how much). */
  readonly truncated: boolean;
  /** The command was killed, or abandoned, for running past its limit. */
  readonly timedOut: boolean;
  /** The limit that applied, in milliseconds; always present when `timedOut`. */
  readonly timeoutMs?: number;
  /** The signal that ended the command (`SIGKILL`, ...), when one did and the sandbox knows it. */
  readonly signal?: string;
  /**
   * The sandbox's own words on how the command ended, when the status alone does not say it (a
   * limit on silence that left the command running, an end the backend reports by name). The
   * text form shows it in place of the timeout notice or the missing exit code.
   */
  readonly notice?: string;
}

/**
 * What a sandbox can do beyond running a command to completion. A call the sandbox cannot serve
 * throws `CapabilityNotSupportedError`; a caller that wants to degrade checks here first.
 */
export interface SandboxCapabilities {
  /**
   * `exec` listeners receive output while the command runs. When false they are called once, with
   * everything, when the command ends (the backend returns output only at the end).
   */
  readonly streaming: boolean;
  /** `exec({ stdin })` and `ProcessHandle.write` reach the command's standard input. */
  readonly stdin: boolean;
  /** `sandbox.processes` starts commands that outlive the call that started them. */
  readonly backgroundProcesses: boolean;
}

/** What a sandbox that runs commands only to completion, with no input, offers. */
export const ONE_SHOT_CAPABILITIES: SandboxCapabilities = Object.freeze({
  streaming: false,
  stdin: false,
  backgroundProcesses: false,
});

/** Every capability. */
export const FULL_PROCESS_CAPABILITIES: SandboxCapabilities = Object.freeze({
  streaming: true,
  stdin: true,
  backgroundProcesses: true,
});

import { createHash } from 'node:crypto';
import { execResultText } from './exec-result-text.js';
import type { LineRange } from '../paths/line-range.js';
import { CapabilityNotSupportedError } from '../errors/capability-errors.js';
import {
  ONE_SHOT_CAPABILITIES,
  type ExecOptions,
  type ExecResult,
  type SandboxCapabilities,
} from './sandbox-exec.js';
import type { ProcessHandle, ProcessInfo, SandboxProcesses } from './sandbox-processes.js';
/**
 * The sandbox contract every provider implements. All methods are async: a sandbox may live on the
 * host, in a container or in a remote VM, and no call on a request path may block the event loop.
 *
 * Error convention (the same for every implementation, unlike the Python reference whose remote
 * sandboxes return `"Error: ..."` strings): file operations throw typed `SbxError` subclasses
 * (`SandboxFileNotFoundError`, `SandboxPermissionError`, ...); `exec` resolves with the command's
 * status and output as data, and `executeCommand` returns them as one text with a non-zero exit
 * status written into it; neither throws for a command that failed.
 */
export interface ExecuteCommandOptions {
  /** Per-call environment overlay (request-scoped secrets). Applies to this call only. */
  env?: Readonly<Record<string, string>>;
  /** Wall-clock limit in milliseconds. Implementations document their default. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface ScopedExecuteCommandOptions extends ExecuteCommandOptions {
  /** Command scope (e.g. a subagent lease owner). Commands in one scope share one ordered session. */
  scopeId: string;
}

/** Which lines of a file `readFile` returns (the whole file when both ends are left open). */
export type ReadFileOptions = LineRange;

export interface WriteFileOptions {
  append?: boolean;
}

export interface ListDirOptions {
  /** Default 2: children and grandchildren. */
  maxDepth?: number;
}

export interface GlobOptions {
  includeDirs?: boolean;
  /** Default 200. */
  maxResults?: number;
}

export interface GlobResult {
  paths: string[];
  truncated: boolean;
}

export interface GrepOptions {
  /** Only search files whose path matches this glob. */
  glob?: string;
  literal?: boolean;
  /** Default false: searches are case-insensitive unless asked otherwise. */
  caseSensitive?: boolean;
  /** Default 100. */
  maxResults?: number;
}

export interface GrepMatch {
  readonly path: string;
  /** 1-based. */
  readonly lineNumber: number;
  /** Trailing CR/LF removed, cut to 200 characters (`197 + "..."`). */
  readonly line: string;
}

export interface GrepResult {
  matches: GrepMatch[];
  truncated: boolean;
}

/** What a sandbox without background processes answers on `sandbox.processes`. */
const NO_BACKGROUND_PROCESSES: SandboxProcesses = Object.freeze({
  start(): Promise<ProcessHandle> {
    return Promise.reject(
      new CapabilityNotSupportedError(
        'backgroundProcesses',
        'This sandbox cannot run background processes (sandbox.capabilities.backgroundProcesses is false)',
      ),
    );
  },
  list(): Promise<ProcessInfo[]> {
    return Promise.resolve([]);
  },
  get(): Promise<ProcessHandle | undefined> {
    return Promise.resolve(undefined);
  },
});

export abstract class Sandbox {
  readonly id: string;

  constructor(id: string) {
    this.id = id;
  }

  /**
   * Runs a shell command to completion: exit status, stdout and stderr apart, with listeners for
   * output as it is produced. A failing command resolves (non-zero `exitCode`); only a refused
   * call (bad input, a closed sandbox, an abort) rejects.
   */
  abstract exec(command: string, options?: ExecOptions): Promise<ExecResult>;

  /** Runs a shell command; returns stdout, stderr, exit-code and timeout notices as one text. */
  async executeCommand(command: string, options: ExecuteCommandOptions = {}): Promise<string> {
    return execResultText(await this.exec(command, options));
  }

  /** What this sandbox can do beyond running a command to completion. */
  get capabilities(): SandboxCapabilities {
    return ONE_SHOT_CAPABILITIES;
  }

  /** Background processes; see `SandboxProcesses` for their lifetime. */
  get processes(): SandboxProcesses {
    return NO_BACKGROUND_PROCESSES;
  }

  /**
   * Runs a command inside a command scope. The default passes through to `executeCommand`, so
   * sandboxes without server-side shell sessions need not implement scopes.
   */
  executeCommandInScope(command: string, options: ScopedExecuteCommandOptions): Promise<string> {
    const { scopeId: _scopeId, ...rest } = options;
    return this.executeCommand(command, rest);
  }

  /** Releases whatever a scope holds. The default has nothing to release. */
  async releaseCommandScope(_scopeId: string): Promise<void> {}

  abstract readFile(path: string, options?: ReadFileOptions): Promise<string>;

  /**
   * A value that changes whenever the file's content does: what the read-before-write gate
   * records when the agent reads or writes a file, and compares before the next write. `content`
   * is the text just read through `readFile`, when the caller has it. The default hashes the text
   * (reading the file when `content` is absent); a host-backed sandbox overrides it with the
   * file's identity and timestamps, so a mark costs O(1) instead of a read of the whole file.
   */
  async fileFingerprint(path: string, content?: string): Promise<string> {
    const text = content ?? (await this.readFile(path));
    return createHash('sha256').update(text, 'utf8').digest('hex');
  }

  /** Raw bytes of a file under `/mnt/user-data` (100 MiB cap). */
  abstract downloadFile(path: string): Promise<Uint8Array>;

  abstract writeFile(path: string, content: string, options?: WriteFileOptions): Promise<void>;

  /** Binary write with no content rewriting (uploads, channel attachments). */
  abstract updateFile(path: string, content: Uint8Array): Promise<void>;

  /** Sorted absolute paths; directories end with `/`. A missing or non-directory root gives `[]`. */
  abstract listDir(path: string, options?: ListDirOptions): Promise<string[]>;

  abstract glob(path: string, pattern: string, options?: GlobOptions): Promise<GlobResult>;

  /** Searches one text file, or a directory tree. */
  abstract grep(path: string, pattern: string, options?: GrepOptions): Promise<GrepResult>;

  /** Releases client resources (sockets, sessions). Idempotent. Does not destroy the sandbox. */
  async close(): Promise<void> {}
}

import {
  CapabilityNotSupportedError,
  ensureSandboxInitialized,
  isSbxError,
  errorMessage,
  fileOperationLock,
  runToolInvocation,
  type Sandbox,
  type ToolCallResult,
  type ToolContext,
  type ToolOutputListener,
  type ToolRunner,
} from '@sbx/core';
import {
  assertPathArgument,
  guardFileToolPath,
  maskHostPaths,
  normalizeToolPath,
  recordFileContent,
  resolveToolConfig,
} from '@sbx/core/internal';
import type { ApplyPatchResult, Editor, ToolOutputImage } from '@openai/agents';
import type * as AgentsSandbox from '@openai/agents/sandbox';
import type {
  ExecCommandArgs,
  ExposedPortEndpoint,
  ListDirectoryArgs,
  ReadFileArgs,
  SandboxArchiveLimits,
  SandboxDirectoryEntry,
  SandboxExecResult,
  SandboxSession,
  SandboxSessionState,
  ViewImageArgs,
  WorkspaceArchiveData,
  WorkspaceArchiveOptions,
  WriteStdinArgs,
} from '@openai/agents/sandbox';
import { posix } from 'node:path';
import { execYielded, writeStdin } from './exec-sessions.js';
import { viewImage } from './view-image.js';
import { hydrateWorkspace, persistWorkspace } from './workspace-archive.js';
import { removeWorkspaceFile } from './workspace-file-removal.js';

/** The workspace every sbx sandbox has: the manifest root of an sbx session. */
export const SBX_WORKSPACE_ROOT = '/mnt/user-data/workspace';

/** Longest patch `apply_patch` takes (the most one `write_file` can write, 16 MiB). */
export const MAX_PATCH_CHARS = 16 * 1024 * 1024;

/** An sbx session's state: the Agents SDK's, plus the thread the sandbox belongs to. */
export interface SbxSandboxSessionState extends SandboxSessionState {
  threadId: string;
  userId?: string;
}

type ApplyDiff = (input: string, diff: string, mode?: 'default' | 'create') => string;

/** One piece of a running `exec_command`'s output (`onExecOutput`). */
export interface SbxExecOutputEvent {
  readonly threadId: string;
  readonly stream: 'stdout' | 'stderr';
  readonly text: string;
}

/**
 * What a session takes: from the SDK, loaded with it, the diff applier and its error classes;
 * from the client, the output listener.
 */
export interface SessionDeps {
  readonly applyDiff: ApplyDiff;
  readonly onExecOutput?: ((event: SbxExecOutputEvent) => void) | undefined;
  readonly errors: Pick<
    typeof AgentsSandbox,
    'SandboxUnsupportedFeatureError' | 'SandboxPtyError' | 'SandboxExposedPortUnavailableError'
  >;
}

/**
 * One SandboxAgent session over one sbx tool context: the shell capability's `exec_command` runs
 * sbx's `bash` tool and the filesystem capability's `apply_patch` writes through `write_file`, so
 * the agent works under sbx's rules (authorization, leases, path confinement, masking, size
 * limits, read-before-write). The sandbox is acquired on first use.
 */
export class SbxSandboxSession implements SandboxSession<SbxSandboxSessionState> {
  state: SbxSandboxSessionState;
  readonly #runner: ToolRunner;
  readonly #applyDiff: ApplyDiff;
  readonly #errors: SessionDeps['errors'];
  readonly #onOutput: ToolOutputListener | undefined;
  #archiveLimits: SandboxArchiveLimits | null | undefined;

  constructor(state: SbxSandboxSessionState, runner: ToolRunner, deps: SessionDeps) {
    this.state = state;
    this.#runner = runner;
    this.#applyDiff = deps.applyDiff;
    this.#errors = deps.errors;
    const listener = deps.onExecOutput;
    this.#onOutput = listener
      ? (chunk) => listener({ threadId: state.threadId, stream: chunk.stream, text: chunk.text })
      : undefined;
  }

  /** The tool context the session runs on (its sandbox id and read marks). */
  get context(): ToolContext {
    return this.#runner.context;
  }

  /** Nothing to start: the sandbox is acquired by the first operation. */
  async start(): Promise<void> {}

  async running(): Promise<boolean> {
    return true;
  }

  /**
   * Whether the SDK offers `write_stdin`: it does so only for a session that says it has a PTY.
   * sbx has none, but with the process tools on (`config.processTools`) a command still running
   * after `yield_time_ms` keeps running as a session `write_stdin` feeds and polls over pipes;
   * `tty: true` itself is refused.
   */
  supportsPty(): boolean {
    return resolveToolConfig(this.context.config).processTools;
  }

  /**
   * `exec_command`: sbx's `bash` tool, which starts in the workspace. A `workdir` other than the
   * workspace is refused rather than composed into the command (`cd` in the command does it), as
   * are `tty: true`, another `shell` and `run_as`. Without the process tools the text is the
   * tool's (output, then `Exit Code: n` for a failure); with them the SDK's exec format, a
   * session id for a command still running after `yield_time_ms`.
   */
  async execCommand(args: ExecCommandArgs): Promise<string> {
    const refused = this.#refusal(args);
    if (refused) return `Error: ${refused}`;
    if (this.supportsPty()) return execYielded(this.#runner, args, this.#onOutput);
    return (await this.#bash(args)).text;
  }

  /** `write_stdin`: input to a running session, or a poll; Ctrl-C interrupts it. */
  async writeStdin(args: WriteStdinArgs): Promise<string> {
    if (!this.supportsPty()) {
      throw new this.#errors.SandboxPtyError(
        'write_stdin needs the process tools (config.processTools); sbx has no PTY sessions',
      );
    }
    return writeStdin(this.#runner, args);
  }

  async exec(args: ExecCommandArgs): Promise<SandboxExecResult> {
    const refused = this.#refusal(args);
    if (refused) {
      throw args.tty
        ? new this.#errors.SandboxPtyError(refused)
        : new this.#errors.SandboxUnsupportedFeatureError(refused);
    }
    const started = Date.now();
    const result = await this.#bash(args);
    const command = result.command;
    return {
      output: result.text,
      stdout: command?.stdout ?? '',
      stderr: command?.stderr ?? '',
      exitCode: command ? command.exitCode : null,
      wallTimeSeconds: (Date.now() - started) / 1000,
    };
  }

  /** Why sbx refuses these exec arguments, or undefined: what it cannot honour is not ignored. */
  #refusal(args: ExecCommandArgs): string | undefined {
    if (args.tty === true) {
      return 'tty is not supported: sbx has no PTY; run the command without tty (pipes)';
    }
    if (args.shell !== undefined && args.shell !== '') {
      return 'shell is not supported: commands run in the sandbox shell (bash -c)';
    }
    if (args.runAs !== undefined && args.runAs !== '') {
      return 'run_as is not supported: commands run as the sandbox user';
    }
    const workdir = args.workdir === undefined ? undefined : this.#resolve(args.workdir);
    if (workdir !== undefined && workdir !== SBX_WORKSPACE_ROOT) {
      return `workdir ${workdir} is not supported: commands start in ${SBX_WORKSPACE_ROOT}; use cd in the command`;
    }
    return undefined;
  }

  #bash(args: ExecCommandArgs): Promise<ToolCallResult> {
    return this.#runner.call('bash', { command: args.cmd }, { onOutput: this.#onOutput });
  }

  /** `view_image`: a PNG, JPEG, GIF or WebP file of at most 10 MB, as the SDK's image output. */
  viewImage(args: ViewImageArgs): Promise<ToolOutputImage> {
    if (args.runAs !== undefined && args.runAs !== '') {
      return Promise.reject(
        new this.#errors.SandboxUnsupportedFeatureError('run_as is not supported by sbx'),
      );
    }
    return viewImage(this.context, this.#resolve(args.path));
  }

  /**
   * The workspace as an sbx checkpoint archive (gzip tar; links and special files left out), at
   * most `MAX_WORKSPACE_ARCHIVE_BYTES` compressed. On a provider whose sandboxes are host
   * directories (the local one); elsewhere refused with the SDK's unsupported-feature error.
   */
  async persistWorkspace(): Promise<Uint8Array> {
    return this.#unsupportedAsSdk(() => persistWorkspace(this.context, this.#archiveLimits));
  }

  /**
   * An archive from `persistWorkspace` (untrusted: every refusal of a checkpoint import applies)
   * as the workspace, which must be empty. Same providers as `persistWorkspace`.
   */
  async hydrateWorkspace(
    data: WorkspaceArchiveData,
    options: WorkspaceArchiveOptions = {},
  ): Promise<void> {
    const limits =
      options.archiveLimits === undefined ? this.#archiveLimits : options.archiveLimits;
    await this.#unsupportedAsSdk(() => hydrateWorkspace(this.context, data, limits));
  }

  /** The SDK's archive limits: they lower sbx's own, never raise them. */
  setArchiveLimits(limits?: SandboxArchiveLimits | null): void {
    this.#archiveLimits = limits;
  }

  /** sbx's capability refusal as the SDK's unsupported-feature error; anything else as it is. */
  async #unsupportedAsSdk<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (isSbxError(err) && err.code === CapabilityNotSupportedError.CODE) {
        throw new this.#errors.SandboxUnsupportedFeatureError(err.message, { code: err.code });
      }
      throw err;
    }
  }

  /** No provider of sbx exposes a sandbox port to the host: refused, never a made-up endpoint. */
  resolveExposedPort(port: number): Promise<ExposedPortEndpoint> {
    return Promise.reject(
      new this.#errors.SandboxExposedPortUnavailableError(
        `port ${String(port)} is not exposed: sbx sandboxes expose no ports`,
        { port },
      ),
    );
  }

  /** A path the model gave, relative to the workspace unless absolute. */
  #resolve(path: string): string {
    assertPathArgument(path);
    return posix.normalize(path.startsWith('/') ? path : `${SBX_WORKSPACE_ROOT}/${path}`);
  }

  /**
   * The file's text under the sandbox's rules (path checked, locked against a concurrent write),
   * recording the read-before-write mark, as `read_file` does: a patch may then rewrite it.
   */
  async #readForPatch(path: string): Promise<string> {
    const context = this.context;
    return runToolInvocation(context, async () => {
      const sandbox = await ensureSandboxInitialized(context);
      await guardFileToolPath(context, sandbox, path, 'read');
      return fileOperationLock.runExclusive(sandbox.id, normalizeToolPath(path), async () => {
        const text = await sandbox.readFile(path);
        if (resolveToolConfig(context.config).readBeforeWrite.enabled) {
          await recordFileContent(context, sandbox, path, text);
        }
        return text;
      });
    });
  }

  async #masked(err: unknown): Promise<string> {
    return maskHostPaths(this.context, undefined, errorMessage(err));
  }

  /** `apply_patch`'s editor: V4A diffs applied here, the files written by `write_file`. */
  createEditor(): Editor {
    const write = async (path: string, content: string): Promise<ApplyPatchResult> => {
      const result = await this.#runner.call('write_file', { path, content });
      return result.isError
        ? { status: 'failed', output: result.text }
        : { status: 'completed', output: `Wrote ${path}` };
    };
    const patchProblem = (diff: unknown): string | undefined => {
      if (typeof diff !== 'string') return 'the patch must be a string';
      return diff.length > MAX_PATCH_CHARS
        ? `the patch is over ${MAX_PATCH_CHARS} characters`
        : undefined;
    };
    return {
      createFile: async (operation) => {
        const problem = patchProblem(operation.diff);
        if (problem) return { status: 'failed', output: `Error: ${problem}` };
        try {
          const path = this.#resolve(operation.path);
          return await write(path, this.#applyDiff('', operation.diff, 'create'));
        } catch (err) {
          return { status: 'failed', output: `Error: ${await this.#masked(err)}` };
        }
      },
      updateFile: async (operation) => {
        const problem = patchProblem(operation.diff);
        if (problem) return { status: 'failed', output: `Error: ${problem}` };
        try {
          const path = this.#resolve(operation.path);
          const current = await this.#readForPatch(path);
          const next = this.#applyDiff(current, operation.diff);
          if (operation.moveTo === undefined) return await write(path, next);
          // A move: the new file written under write_file's rules (an existing unread file
          // there is refused), then the old one removed.
          const target = this.#resolve(operation.moveTo);
          if (target === path) return await write(path, next);
          const written = await write(target, next);
          if (written.status === 'failed') return written;
          await removeWorkspaceFile(this.context, SBX_WORKSPACE_ROOT, path);
          return { status: 'completed', output: `Moved ${path} to ${target}` };
        } catch (err) {
          return { status: 'failed', output: `Error: ${await this.#masked(err)}` };
        }
      },
      deleteFile: async (operation) => {
        try {
          const path = this.#resolve(operation.path);
          await removeWorkspaceFile(this.context, SBX_WORKSPACE_ROOT, path);
          return { status: 'completed', output: `Deleted ${path}` };
        } catch (err) {
          return { status: 'failed', output: `Error: ${await this.#masked(err)}` };
        }
      },
    };
  }

  /** A file's text (sbx's file API is text), under the sandbox's path rules. */
  async readFile(args: ReadFileArgs): Promise<string> {
    return this.#readForPatch(this.#resolve(args.path));
  }

  async listDir(args: ListDirectoryArgs): Promise<SandboxDirectoryEntry[]> {
    const path = this.#resolve(args.path);
    const context = this.context;
    return runToolInvocation(context, async () => {
      const sandbox: Sandbox = await ensureSandboxInitialized(context);
      await guardFileToolPath(context, sandbox, path, 'read');
      const entries = await sandbox.listDir(path, { maxDepth: 1 });
      return entries.map((entry) => {
        const dir = entry.endsWith('/');
        const full = dir ? entry.slice(0, -1) : entry;
        return { name: posix.basename(full), path: full, type: dir ? 'dir' : 'file' };
      });
    });
  }
}

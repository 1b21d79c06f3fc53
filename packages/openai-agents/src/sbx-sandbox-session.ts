import {
  InvalidArgumentError,
  ensureSandboxInitialized,
  errorMessage,
  fileOperationLock,
  runToolInvocation,
  type Sandbox,
  type ToolCallResult,
  type ToolContext,
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
import type { ApplyPatchResult, Editor } from '@openai/agents';
import type {
  ExecCommandArgs,
  ListDirectoryArgs,
  ReadFileArgs,
  SandboxDirectoryEntry,
  SandboxExecResult,
  SandboxSession,
  SandboxSessionState,
} from '@openai/agents/sandbox';
import { posix } from 'node:path';

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

  constructor(state: SbxSandboxSessionState, runner: ToolRunner, applyDiff: ApplyDiff) {
    this.state = state;
    this.#runner = runner;
    this.#applyDiff = applyDiff;
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

  /** No pseudo-terminal: the shell capability then offers `exec_command` only. */
  supportsPty(): boolean {
    return false;
  }

  /**
   * `exec_command`: sbx's `bash` tool, which starts in the workspace. A `workdir` other than the
   * workspace is refused rather than composed into the command (`cd` in the command does it).
   * The text is the tool's: output, then `Exit Code: n` for a failure.
   */
  async execCommand(args: ExecCommandArgs): Promise<string> {
    return (await this.#bash(args)).text;
  }

  async exec(args: ExecCommandArgs): Promise<SandboxExecResult> {
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

  #bash(args: ExecCommandArgs): Promise<ToolCallResult> {
    const workdir = args.workdir === undefined ? undefined : this.#resolve(args.workdir);
    if (workdir !== undefined && workdir !== SBX_WORKSPACE_ROOT) {
      const message = `workdir ${workdir} is not supported: commands start in ${SBX_WORKSPACE_ROOT}; use cd in the command`;
      return Promise.resolve({
        text: `Error: ${message}`,
        isError: true,
        error: { code: InvalidArgumentError.CODE, message },
      });
    }
    return this.#runner.call('bash', { command: args.cmd });
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
        if (operation.moveTo !== undefined) {
          return { status: 'failed', output: 'Error: moving a file is not supported here' };
        }
        try {
          const path = this.#resolve(operation.path);
          const current = await this.#readForPatch(path);
          return await write(path, this.#applyDiff(current, operation.diff));
        } catch (err) {
          return { status: 'failed', output: `Error: ${await this.#masked(err)}` };
        }
      },
      deleteFile: async () => ({
        status: 'failed',
        output: 'Error: deleting a file is not supported here; use the shell (rm)',
      }),
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

import {
  InvalidArgumentError,
  ensureSandboxInitialized,
  errorMessage,
  fileOperationLock,
  isSbxError,
  runToolInvocation,
  type Sandbox,
  type ToolCallResult,
  type ToolContext,
  type ToolRunner,
  type ToolRunnerOptions,
} from '@sbx/core';
import {
  MAX_GLOB_PATTERN_LENGTH,
  MAX_PATTERN_LENGTH,
  VIRTUAL_PATH_PREFIX,
  assertPathArgument,
  countLiteralOccurrences,
  guardFileToolPath,
  maskHostPaths,
  normalizeToolPath,
  recordFileContent,
  refreshFileMark,
  resolveToolConfig,
} from '@sbx/core/internal';
import type {
  EditResult,
  ExecuteResponse,
  FileDownloadResponse,
  FileInfo,
  FileUploadResponse,
  GlobResult,
  GrepResult,
  LsResult,
  ReadRawResult,
  ReadResult,
  SandboxBackendProtocolV2,
  WriteResult,
} from 'deepagents';
import { downloadFiles, uploadFiles } from './deepagents-transfer.js';
import { langChainModules } from './langchain-modules.js';
import { runIdentityOf } from './run-identity.js';
import { toolOutputEvents } from './tool-output-events.js';
import { ThreadRunners } from '@sbx/core';

/** deepagents' default page when the model gives no `limit`. */
const DEFAULT_READ_LIMIT = 500;
/** Most paths one glob returns; deepagents has no limit argument for glob. */
const GLOB_LIMIT = 1000;
/** Most matches one grep returns when deepagents passes no `maxCount`. */
const GREP_LIMIT = 500;
/** Most lines one read returns (deepagents pages with offset/limit; the model sets the limit). */
const READ_LINE_LIMIT = 10_000;

export type SbxDeepAgentsBackendOptions = ToolRunnerOptions & {
  /** The backend's `id`. Default `sbx:<userId>/<threadId>`. */
  id?: string;
  /**
   * `execute` leaves a command still running after this many milliseconds in the background and
   * returns its output so far with its process id (bash's yield mode), instead of waiting for it
   * to end. Needs the process tools on (`config.processTools`); give the model the process tools
   * too (`createSbxTools({ context: backend.context, tools: [...PROCESS_TOOL_NAMES] })`) so it can
   * read, feed and stop what it started. Default: every command runs to its end.
   */
  executeYieldMs?: number;
  /**
   * Each operation runs in the thread and for the user of the LangGraph run it belongs to
   * (`configurable.thread_id`, `configurable.user_id`), falling back to `threadId` / `userId`
   * given here, each thread with its own sandbox and read-before-write marks: one deep agent
   * serves many conversations. Default true.
   */
  threadFromContext?: boolean;
};

/** A pattern from the model over its length bound (the tools' own bounds), or undefined. */
function patternProblem(pattern: string | null | undefined, max: number): string | undefined {
  if (pattern === null || pattern === undefined) return undefined;
  if (typeof pattern !== 'string') return 'pattern must be a string';
  return pattern.length > max ? `pattern must be at most ${max} characters` : undefined;
}

/**
 * `text` without the `Exit Code: n` line sbx's bash ends a failed command's text with: deepagents
 * states the exit code itself. Only that exact last line goes (the output itself is untouched).
 */
function withoutExitCodeLine(text: string, exitCode: number | null): string {
  if (exitCode === null || exitCode === 0) return text;
  const line = `Exit Code: ${exitCode}`;
  if (text === line) return '';
  return text.endsWith(`\n${line}`) ? text.slice(0, -(line.length + 1)) : text;
}

/** deepagents passes `/` (or nothing) for "everywhere"; in sbx that is the user-data root. */
function searchRoot(path: string | null | undefined): string {
  return !path || path === '/' ? VIRTUAL_PATH_PREFIX : path;
}

/**
 * The failure text of a file operation, without an `Error:` prefix: deepagents adds its own for
 * read, ls and glob (`grep` adds it here, as deepagents shows grep errors as they are).
 */
function fileErrorText(err: unknown, path: string): string {
  const kind = isSbxError(err) ? (err as { kind?: unknown }).kind : undefined;
  if (kind === 'ENOENT' || kind === 'ENOTDIR') return `File '${path}' not found`;
  if (kind === 'EISDIR') return `'${path}' is a directory, not a file`;
  if (kind === 'EACCES' || kind === 'EROFS') return `Permission denied: ${path}`;
  if (kind === 'EILSEQ') return `'${path}' is not a text file; sbx returns text only`;
  return errorMessage(err);
}

/**
 * A deepagents sandbox backend (`SandboxBackendProtocolV2`) over one sbx tool context, so a deep
 * agent's `ls`, `read_file`, `write_file`, `edit_file`, `glob`, `grep` and `execute` run in an sbx
 * sandbox under sbx's rules: lazy acquisition, execution leases, the authorization hook (once per
 * operation), local path confinement, host-path masking, size limits and read-before-write.
 *
 * Paths are sbx's virtual paths (`/mnt/user-data/workspace/...`); `/` as a search root means
 * `/mnt/user-data`. See the package README for what maps and what does not.
 */
export class SbxDeepAgentsBackend implements SandboxBackendProtocolV2 {
  readonly id: string;
  readonly #runners: ThreadRunners;
  readonly #threadFromContext: boolean;
  readonly #executeYieldMs: number | undefined;

  /**
   * @throws InvalidArgumentError for an `executeYieldMs` that is not a non-negative integer, or
   *   without the process tools on
   */
  constructor(options: SbxDeepAgentsBackendOptions) {
    const { id, threadFromContext = true, executeYieldMs, ...runnerOptions } = options;
    this.#runners = new ThreadRunners(runnerOptions);
    this.#threadFromContext = threadFromContext;
    if (executeYieldMs !== undefined) {
      if (!Number.isSafeInteger(executeYieldMs) || executeYieldMs < 0) {
        throw new InvalidArgumentError('executeYieldMs must be a non-negative integer');
      }
      if (!resolveToolConfig(this.#runners.base.context.config).processTools) {
        throw new InvalidArgumentError(
          'executeYieldMs needs the process tools on (config: { processTools: true })',
        );
      }
    }
    this.#executeYieldMs = executeYieldMs;
    const { userId, threadId } = this.#runners.base.context;
    this.id = id ?? `sbx:${userId ?? 'default'}/${threadId ?? 'default'}`;
  }

  /**
   * The construction-time tool context (the thread given to the constructor): its sandbox id and
   * read marks. A run naming another thread works on that thread's own context.
   */
  get context(): ToolContext {
    return this.#runners.base.context;
  }

  /**
   * The runner of the current operation: the thread of the LangGraph run it is part of (read from
   * LangChain's async-local run config), else the construction-time one.
   *
   * @throws InvalidArgumentError for a run's thread or user id outside the id rule
   */
  async #runner(): Promise<ToolRunner> {
    if (!this.#threadFromContext) return this.#runners.base;
    const { singletons } = await langChainModules();
    const config: unknown = singletons.AsyncLocalStorageProviderSingleton.getRunnableConfig();
    return this.#runners.for(runIdentityOf(config));
  }

  /**
   * One operation as one tool invocation: one authorization decision, the sandbox acquired
   * lazily, the path checked before any access, and failures as deepagents' `{ error }` with host
   * paths masked.
   */
  async #operate<T extends { error?: string }>(
    path: string,
    access: 'read' | 'write',
    body: (sandbox: Sandbox, context: ToolContext) => Promise<T>,
  ): Promise<T> {
    let context: ToolContext;
    try {
      context = (await this.#runner()).context;
    } catch (err) {
      return { error: errorMessage(err) } as T;
    }
    return runToolInvocation(context, async () => {
      let sandbox: Sandbox | undefined;
      let problem: string;
      try {
        // The path comes from the model: bounded and NUL-free before anything else sees it.
        assertPathArgument(path);
      } catch (err) {
        return { error: errorMessage(err) } as T;
      }
      try {
        sandbox = await ensureSandboxInitialized(context);
      } catch (err) {
        return { error: await maskHostPaths(context, undefined, errorMessage(err)) } as T;
      }
      try {
        await guardFileToolPath(context, sandbox, path, access);
      } catch (err) {
        // The validator's sentence names the path and the allowed roots, as in sbx's own tools.
        return { error: isSbxError(err) ? err.baseMessage : errorMessage(err) } as T;
      }
      try {
        return await body(sandbox, context);
      } catch (err) {
        problem = fileErrorText(err, path);
      }
      return { error: await maskHostPaths(context, sandbox, problem) } as T;
    });
  }

  ls(path: string): Promise<LsResult> {
    return this.#operate<LsResult>(path, 'read', async (sandbox) => {
      const entries = await sandbox.listDir(path, { maxDepth: 1 });
      const files: FileInfo[] = entries.map((entry) => ({
        path: entry,
        is_dir: entry.endsWith('/'),
      }));
      return { files };
    });
  }

  read(filePath: string, offset = 0, limit = DEFAULT_READ_LIMIT): Promise<ReadResult> {
    return this.#operate<ReadResult>(filePath, 'read', async (sandbox, context) => {
      const startLine = Math.max(0, Math.floor(Number(offset) || 0)) + 1;
      const count = Math.min(READ_LINE_LIMIT, Math.max(0, Math.floor(Number(limit) || 0)));
      if (count === 0) return { content: '', mimeType: 'text/plain' };
      const endLine = startLine + count - 1;
      // The lock keeps a concurrent write out from between the read and its mark (as read_file).
      const content = await fileOperationLock.runExclusive(
        sandbox.id,
        normalizeToolPath(filePath),
        async () => {
          const text = await sandbox.readFile(filePath, { startLine, endLine });
          if (resolveToolConfig(context.config).readBeforeWrite.enabled) {
            await refreshFileMark(context, sandbox, filePath);
          }
          return text;
        },
      );
      const lines = content === '' ? 0 : content.split('\n').length;
      return {
        content,
        mimeType: 'text/plain',
        ...(lines > 0 ? { startLine, endLine: startLine + lines - 1 } : {}),
      };
    });
  }

  readRaw(filePath: string): Promise<ReadRawResult> {
    return this.#operate<ReadRawResult>(filePath, 'read', async (sandbox, context) => {
      const content = await fileOperationLock.runExclusive(
        sandbox.id,
        normalizeToolPath(filePath),
        async () => {
          const text = await sandbox.readFile(filePath);
          if (resolveToolConfig(context.config).readBeforeWrite.enabled) {
            await recordFileContent(context, sandbox, filePath, text);
          }
          return text;
        },
      );
      return { data: { content, mimeType: 'text/plain', created_at: '', modified_at: '' } };
    });
  }

  /** A tool call on the current operation's thread; a bad run thread id is its failure. */
  async #call(name: string, input: unknown, streamAs?: string): Promise<ToolCallResult> {
    let runner: ToolRunner;
    try {
      runner = await this.#runner();
    } catch (err) {
      const message = errorMessage(err);
      const code = isSbxError(err) ? err.code : 'UNEXPECTED';
      return { text: `Error: ${message}`, isError: true, error: { code, message } };
    }
    if (streamAs === undefined) return runner.call(name, input);
    // deepagents passes execute no config: the run's config (its stream writer, the tool call)
    // is the one LangChain keeps for the running tool.
    const modules = await langChainModules();
    const config: unknown =
      modules.singletons.AsyncLocalStorageProviderSingleton.getRunnableConfig();
    if (typeof config !== 'object' || config === null) return runner.call(name, input);
    const events = toolOutputEvents(modules, config, streamAs, runner.context.logger);
    const result = await runner.call(name, input, { onOutput: events.onOutput });
    await events.settled();
    return result;
  }

  async write(filePath: string, content: string): Promise<WriteResult> {
    const result = await this.#call('write_file', { path: filePath, content });
    return result.isError ? { error: result.text } : { path: filePath, filesUpdate: null };
  }

  async edit(
    filePath: string,
    oldString: string,
    newString: string,
    replaceAll = false,
  ): Promise<EditResult> {
    let occurrences = 1;
    if (replaceAll && oldString !== '') {
      // deepagents reports the count; sbx's str_replace does not return it. Counted on the
      // version the edit is about to replace (a concurrent change can make it approximate).
      const read = await this.readRaw(filePath);
      const text = read.data?.content;
      // Linear whatever the strings (a native split or indexOf can take minutes on a hostile pair).
      if (typeof text === 'string') occurrences = await countLiteralOccurrences(text, oldString);
    }
    const result = await this.#call('str_replace', {
      path: filePath,
      old_str: oldString,
      new_str: newString,
      replace_all: replaceAll,
    });
    if (result.isError) return { error: result.text };
    return { path: filePath, filesUpdate: null, occurrences };
  }

  async grep(
    pattern: string,
    path?: string | null,
    glob?: string | null,
    maxCount?: number | null,
  ): Promise<GrepResult> {
    const root = searchRoot(path);
    const tooLong =
      patternProblem(pattern, MAX_PATTERN_LENGTH) ?? patternProblem(glob, MAX_GLOB_PATTERN_LENGTH);
    if (tooLong) return { error: `Error: ${tooLong}` };
    const result = await this.#operate<GrepResult>(root, 'read', async (sandbox) => {
      const found = await sandbox.grep(root, pattern, {
        literal: true,
        caseSensitive: true,
        maxResults: maxCount && maxCount > 0 ? Math.min(maxCount, GREP_LIMIT) : GREP_LIMIT,
        ...(glob ? { glob } : {}),
      });
      return {
        matches: found.matches.map((m) => ({ path: m.path, line: m.lineNumber, text: m.line })),
        truncated: found.truncated,
      };
    });
    return result.error === undefined ? result : { error: `Error: ${result.error}` };
  }

  glob(pattern: string, path?: string): Promise<GlobResult> {
    const root = searchRoot(path);
    const tooLong = patternProblem(pattern, MAX_GLOB_PATTERN_LENGTH);
    if (tooLong) return Promise.resolve({ error: tooLong });
    return this.#operate<GlobResult>(root, 'read', async (sandbox) => {
      const found = await sandbox.glob(root, pattern, {
        includeDirs: false,
        maxResults: GLOB_LIMIT,
      });
      return {
        files: found.paths.map((p) => ({ path: p, is_dir: false })),
        truncated: found.truncated,
      };
    });
  }

  /**
   * The `bash` tool. `exitCode` is the command's exit status as data (deepagents then adds its
   * `[Command failed with exit code n]` line, so sbx's own `Exit Code: n` line is left out of the
   * output); `null` when there is none: still running (yield mode), ended by its time limit or a
   * signal, or never started (the output says why). Its output goes out while it runs as
   * `sbx_tool_output` custom events with `tool: 'execute'` (`streamEvents`), all before the
   * result; not to LangGraph's `streamMode: 'custom'`, whose writer deepagents does not hand a
   * backend.
   */
  async execute(command: string): Promise<ExecuteResponse> {
    const input =
      this.#executeYieldMs === undefined
        ? { command }
        : { command, yield_time_ms: this.#executeYieldMs };
    const result = await this.#call('bash', input, 'execute');
    const details = result.command;
    if (details === undefined) return { output: result.text, exitCode: null, truncated: false };
    const exitCode = details.running || details.timedOut ? null : details.exitCode;
    return {
      output: withoutExitCodeLine(result.text, exitCode),
      exitCode,
      truncated: details.truncated,
    };
  }

  uploadFiles(files: Array<[string, Uint8Array]>): Promise<FileUploadResponse[]> {
    return this.#runner().then((runner) => uploadFiles(runner.context, files));
  }

  downloadFiles(paths: string[]): Promise<FileDownloadResponse[]> {
    return this.#runner().then((runner) => downloadFiles(runner.context, paths));
  }
}

import {
  createToolRunner,
  ensureSandboxInitialized,
  errorMessage,
  fileOperationLock,
  isSbxError,
  runToolInvocation,
  type Sandbox,
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
  FileInfo,
  GlobResult,
  GrepResult,
  LsResult,
  ReadRawResult,
  ReadResult,
  SandboxBackendProtocolV2,
  WriteResult,
} from 'deepagents';

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
};

/** A pattern from the model over its length bound (the tools' own bounds), or undefined. */
function patternProblem(pattern: string | null | undefined, max: number): string | undefined {
  if (pattern === null || pattern === undefined) return undefined;
  if (typeof pattern !== 'string') return 'pattern must be a string';
  return pattern.length > max ? `pattern must be at most ${max} characters` : undefined;
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
  readonly #runner: ToolRunner;

  constructor(options: SbxDeepAgentsBackendOptions) {
    const { id, ...runnerOptions } = options;
    this.#runner = createToolRunner(runnerOptions);
    const { userId, threadId } = this.#runner.context;
    this.id = id ?? `sbx:${userId ?? 'default'}/${threadId ?? 'default'}`;
  }

  /** The tool context every operation runs on (shared sandbox id and read marks). */
  get context(): ToolContext {
    return this.#runner.context;
  }

  /**
   * One operation as one tool invocation: one authorization decision, the sandbox acquired
   * lazily, the path checked before any access, and failures as deepagents' `{ error }` with host
   * paths masked.
   */
  #operate<T extends { error?: string }>(
    path: string,
    access: 'read' | 'write',
    body: (sandbox: Sandbox) => Promise<T>,
  ): Promise<T> {
    const context = this.context;
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
        return await body(sandbox);
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
    const context = this.context;
    return this.#operate<ReadResult>(filePath, 'read', async (sandbox) => {
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
    const context = this.context;
    return this.#operate<ReadRawResult>(filePath, 'read', async (sandbox) => {
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

  async write(filePath: string, content: string): Promise<WriteResult> {
    const result = await this.#runner.call('write_file', { path: filePath, content });
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
    const result = await this.#runner.call('str_replace', {
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

  async execute(command: string): Promise<ExecuteResponse> {
    const result = await this.#runner.call('bash', { command });
    // The exit status is part of sbx's text ("Exit Code: n"); a structured one needs the process
    // API, so it is reported as unknown rather than guessed from the text.
    return { output: result.text, exitCode: null, truncated: false };
  }
}

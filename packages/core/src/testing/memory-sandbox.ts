import { posix } from 'node:path';
import { validateExtraEnv } from '../config/env-policy.js';
import {
  SandboxFileError,
  SandboxFileNotFoundError,
  SandboxPermissionError,
  type FileErrorKind,
} from '../errors/errors.js';
import { compileGlob } from '../search/glob-match.js';
import { truncateLine } from '../search/grep-line-summary.js';
import { compileGrepPattern } from '../search/grep-pattern.js';
import type {
  ExecuteCommandOptions,
  GlobOptions,
  GlobResult,
  GrepMatch,
  GrepOptions,
  GrepResult,
  ListDirOptions,
  ReadFileOptions,
  ScopedExecuteCommandOptions,
  WriteFileOptions,
} from '../contract/sandbox.js';
import { Sandbox } from '../contract/sandbox.js';
import type { ExecOptions, ExecResult } from '../contract/sandbox-exec.js';
import { execResultText } from '../contract/exec-result-text.js';
import { shouldIgnoreName } from '../search/search-ignore.js';
import {
  BINARY_SNIFF_BYTES,
  DEFAULT_GLOB_MAX_RESULTS,
  DEFAULT_GREP_MAX_RESULTS,
  DEFAULT_LIST_DIR_DEPTH,
  DEFAULT_MAX_FILE_SIZE_BYTES,
  MAX_GREP_LINE_LENGTH,
} from '../search/search-limits.js';
import { compareRelativePaths } from '../search/search-order.js';
import { VIRTUAL_PATH_PREFIX, isUnderVirtualPrefix } from '../paths/virtual-paths.js';

export type MemorySandboxOperation =
  | 'executeCommand'
  | 'readFile'
  | 'downloadFile'
  | 'writeFile'
  | 'updateFile'
  | 'listDir'
  | 'glob'
  | 'grep';

/** One call as the sandbox saw it: the operation and its path (or command). */
export interface MemorySandboxCall {
  readonly operation: MemorySandboxOperation;
  /** Normalized path for file operations; the command text for `executeCommand`. */
  readonly target: string;
}

export interface MemoryCommandRecord {
  readonly command: string;
  readonly env: Readonly<Record<string, string>> | undefined;
  readonly timeoutMs: number | undefined;
  readonly scopeId: string | undefined;
}

/**
 * What a scripted command produced: a text (what `executeCommand` returns as is, and `exec`
 * reports as stdout with status 0), or the parts of a structured result.
 */
export type MemoryCommandOutput =
  string | { stdout?: string; stderr?: string; exitCode?: number | null; timedOut?: boolean };

/** Produces the output of a command; the sandbox has no shell of its own. */
export type MemoryCommandHandler = (
  command: string,
  options: ExecuteCommandOptions & { scopeId?: string },
  sandbox: MemorySandbox,
) => MemoryCommandOutput | Promise<MemoryCommandOutput>;

export interface MemorySandboxOptions {
  /** Initial files, by absolute path. Parent directories exist implicitly. */
  files?: Readonly<Record<string, string | Uint8Array>>;
  /** Path prefixes where writes fail with `EROFS` (a read-only mount). */
  readOnlyPaths?: readonly string[];
  /** Path prefixes where every operation fails with `EACCES`. */
  deniedPaths?: readonly string[];
  /** Output of `executeCommand`. Default: `(no output)` for every command. */
  onCommand?: MemoryCommandHandler;
  /**
   * Awaited at the start of every operation, before anything is read or changed. A test holds a
   * call here (await a promise it controls) to force an interleaving, or throws to fail it.
   */
  intercept?: (call: MemorySandboxCall) => void | Promise<void>;
}

const encoder = new TextEncoder();
const strictDecoder = new TextDecoder('utf-8', { fatal: true });
const lenientDecoder = new TextDecoder('utf-8');

function normalize(path: string): string {
  const n = posix.normalize(path.replace(/\\/g, '/'));
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

function parentsOf(path: string): string[] {
  const out: string[] = [];
  for (let p = posix.dirname(path); p !== '/' && p !== '.'; p = posix.dirname(p)) out.push(p);
  return out;
}

/** Universal newlines, as the contract's text reads do: `\r\n` and a lone `\r` become `\n`. */
function universalNewlines(text: string): string {
  return text.replace(/\r\n?/g, '\n');
}

function underAny(path: string, prefixes: readonly string[] | undefined): boolean {
  return (prefixes ?? []).some((prefix) => isUnderVirtualPrefix(path, prefix));
}

/**
 * A complete `Sandbox` over in-memory maps, for tool-layer and host tests that need real file
 * semantics (typed errors, line ranges, listing, glob and grep with the shared search rules)
 * without a host directory or a container. It has no shell: commands are recorded and answered by
 * `onCommand`. Every operation can be held or failed through `intercept`.
 */
export class MemorySandbox extends Sandbox {
  readonly files = new Map<string, Uint8Array>();
  /** Directories that exist without files in them (parents of files exist implicitly). */
  readonly directories = new Set<string>();
  readonly commands: MemoryCommandRecord[] = [];
  readonly calls: MemorySandboxCall[] = [];
  closed = false;
  readonly #options: MemorySandboxOptions;

  constructor(id: string, options: MemorySandboxOptions = {}) {
    super(id);
    this.#options = options;
    for (const [path, content] of Object.entries(options.files ?? {})) this.setFile(path, content);
  }

  /** Writes a file directly, bypassing permissions and the intercept hook (test setup). */
  setFile(path: string, content: string | Uint8Array): void {
    const p = normalize(path);
    for (const parent of parentsOf(p)) this.directories.add(parent);
    this.files.set(p, typeof content === 'string' ? encoder.encode(content) : content.slice());
  }

  /** The file's text as stored (no newline translation), or undefined (test assertions). */
  fileText(path: string): string | undefined {
    const data = this.files.get(normalize(path));
    return data === undefined ? undefined : lenientDecoder.decode(data);
  }

  /** Creates a directory and its parents directly (test setup). */
  mkdir(path: string): void {
    const p = normalize(path);
    this.directories.add(p);
    for (const parent of parentsOf(p)) this.directories.add(parent);
  }

  isDirectory(path: string): boolean {
    const p = normalize(path);
    if (p === '/' || this.directories.has(p)) return true;
    for (const file of this.files.keys()) if (file.startsWith(`${p}/`)) return true;
    return false;
  }

  override async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    const started = Date.now();
    const { scopeId, onStdout, onStderr, ...rest } = options;
    const output = await this.#run(command, rest, scopeId);
    const parts = typeof output === 'string' ? { stdout: output } : output;
    const stdout = parts.stdout ?? '';
    const stderr = parts.stderr ?? '';
    // No shell, no streaming: listeners get everything once, as the capabilities say.
    if (stdout) onStdout?.(stdout);
    if (stderr) onStderr?.(stderr);
    const timedOut = parts.timedOut ?? false;
    return {
      exitCode: timedOut ? null : (parts.exitCode ?? 0),
      stdout,
      stderr,
      durationMs: Date.now() - started,
      truncated: false,
      timedOut,
      ...(timedOut ? { timeoutMs: options.timeoutMs ?? 0 } : {}),
    };
  }

  override async executeCommand(
    command: string,
    options: ExecuteCommandOptions = {},
  ): Promise<string> {
    return this.#text(await this.#run(command, options, undefined));
  }

  override async executeCommandInScope(
    command: string,
    options: ScopedExecuteCommandOptions,
  ): Promise<string> {
    const { scopeId, ...rest } = options;
    return this.#text(await this.#run(command, rest, scopeId));
  }

  #text(output: MemoryCommandOutput): string {
    if (typeof output === 'string') return output;
    const timedOut = output.timedOut ?? false;
    return execResultText({
      exitCode: output.exitCode ?? 0,
      stdout: output.stdout ?? '',
      stderr: output.stderr ?? '',
      durationMs: 0,
      truncated: false,
      timedOut,
      ...(timedOut ? { timeoutMs: 0 } : {}),
    });
  }

  async readFile(path: string, options: ReadFileOptions = {}): Promise<string> {
    const p = await this.#enter('readFile', path);
    const text = universalNewlines(this.#decodeText(p, this.#existingFile(p, 'read')));
    if (options.startLine === undefined && options.endLine === undefined) return text;
    const lines = text.split('\n');
    if (text.endsWith('\n')) lines.pop();
    const start = Math.max(options.startLine ?? 1, 1);
    return lines.slice(start - 1, options.endLine ?? lines.length).join('\n');
  }

  async downloadFile(path: string): Promise<Uint8Array> {
    const p = await this.#enter('downloadFile', path);
    if (!isUnderVirtualPrefix(p, VIRTUAL_PATH_PREFIX)) {
      throw new SandboxPermissionError(
        `Access denied: path must be under '${VIRTUAL_PATH_PREFIX}'`,
        { path, operation: 'download' },
      );
    }
    return this.#existingFile(p, 'download').slice();
  }

  async writeFile(path: string, content: string, options: WriteFileOptions = {}): Promise<void> {
    const p = await this.#enter('writeFile', path);
    this.#assertWritable(p, 'write');
    const previous = options.append ? this.files.get(p) : undefined;
    const bytes = encoder.encode(content);
    if (previous === undefined) {
      this.setFile(p, bytes);
    } else {
      const merged = new Uint8Array(previous.length + bytes.length);
      merged.set(previous);
      merged.set(bytes, previous.length);
      this.setFile(p, merged);
    }
  }

  async updateFile(path: string, content: Uint8Array): Promise<void> {
    const p = await this.#enter('updateFile', path);
    this.#assertWritable(p, 'update');
    this.setFile(p, content);
  }

  async listDir(path: string, options: ListDirOptions = {}): Promise<string[]> {
    const root = await this.#enter('listDir', path);
    if (!this.isDirectory(root) || this.files.has(root)) return [];
    const maxDepth = options.maxDepth ?? DEFAULT_LIST_DIR_DEPTH;
    return this.#walk(root)
      .filter((entry) => entry.rel.split('/').length <= maxDepth)
      .map((entry) => `${this.#join(root, entry.rel)}${entry.dir ? '/' : ''}`)
      .sort();
  }

  async glob(path: string, pattern: string, options: GlobOptions = {}): Promise<GlobResult> {
    const root = await this.#enter('glob', path);
    const matches = compileGlob(pattern);
    this.#assertDirectory(root, path);
    const max = options.maxResults ?? DEFAULT_GLOB_MAX_RESULTS;
    const hits = this.#walk(root)
      .filter((entry) => (options.includeDirs || !entry.dir) && matches(entry.rel))
      .map((entry) => this.#join(root, entry.rel));
    return { paths: hits.slice(0, max), truncated: hits.length > max };
  }

  async grep(path: string, pattern: string, options: GrepOptions = {}): Promise<GrepResult> {
    const root = await this.#enter('grep', path);
    const regex = compileGrepPattern(pattern, {
      literal: options.literal ?? false,
      caseSensitive: options.caseSensitive ?? false,
    });
    const filter = options.glob ? compileGlob(options.glob) : undefined;
    let candidates: { file: string; rel: string }[];
    if (this.files.has(root)) {
      candidates = [{ file: root, rel: posix.basename(root) }];
    } else {
      this.#assertDirectory(root, path);
      candidates = this.#walk(root)
        .filter((entry) => !entry.dir)
        .map((entry) => ({ file: this.#join(root, entry.rel), rel: entry.rel }));
    }
    const max = options.maxResults ?? DEFAULT_GREP_MAX_RESULTS;
    const matches: GrepMatch[] = [];
    for (const { file, rel } of candidates) {
      if (filter && !filter(rel)) continue;
      const data = this.files.get(file);
      if (data === undefined || data.length > DEFAULT_MAX_FILE_SIZE_BYTES) continue;
      if (data.subarray(0, BINARY_SNIFF_BYTES).includes(0)) continue;
      const lines = universalNewlines(lenientDecoder.decode(data)).split('\n');
      lines.forEach((line, index) => {
        if (line.length + 1 > MAX_GREP_LINE_LENGTH) return;
        if (regex.test(line)) {
          matches.push({ path: file, lineNumber: index + 1, line: truncateLine(line) });
        }
      });
    }
    return { matches: matches.slice(0, max), truncated: matches.length > max };
  }

  override async close(): Promise<void> {
    this.closed = true;
  }

  async #run(
    command: string,
    options: ExecuteCommandOptions,
    scopeId: string | undefined,
  ): Promise<MemoryCommandOutput> {
    validateExtraEnv(options.env);
    this.calls.push({ operation: 'executeCommand', target: command });
    await this.#options.intercept?.({ operation: 'executeCommand', target: command });
    this.commands.push({ command, env: options.env, timeoutMs: options.timeoutMs, scopeId });
    const handler = this.#options.onCommand;
    if (!handler) return {};
    return handler(command, scopeId === undefined ? options : { ...options, scopeId }, this);
  }

  async #enter(operation: MemorySandboxOperation, path: string): Promise<string> {
    const p = normalize(path);
    this.calls.push({ operation, target: p });
    await this.#options.intercept?.({ operation, target: p });
    if (underAny(p, this.#options.deniedPaths)) {
      throw new SandboxPermissionError('Permission denied', { path, operation, kind: 'EACCES' });
    }
    return p;
  }

  #existingFile(p: string, operation: string): Uint8Array {
    const data = this.files.get(p);
    if (data !== undefined) return data;
    if (this.isDirectory(p)) {
      throw new SandboxFileError('Is a directory', { path: p, operation, kind: 'EISDIR' });
    }
    const kind = parentsOf(p).some((parent) => this.files.has(parent)) ? 'ENOTDIR' : 'ENOENT';
    throw new SandboxFileNotFoundError(`File not found: ${p}`, { path: p, operation, kind });
  }

  #decodeText(p: string, data: Uint8Array): string {
    try {
      return strictDecoder.decode(data);
    } catch (err) {
      throw new SandboxFileError(
        'File is not valid UTF-8 text',
        { path: p, operation: 'read', kind: 'EILSEQ' },
        { cause: err },
      );
    }
  }

  #assertWritable(p: string, operation: string): void {
    if (underAny(p, this.#options.readOnlyPaths)) {
      throw new SandboxPermissionError('Read-only file system', {
        path: p,
        operation,
        kind: 'EROFS',
      });
    }
    if (this.isDirectory(p) && !this.files.has(p)) {
      throw new SandboxFileError('Is a directory', { path: p, operation, kind: 'EISDIR' });
    }
    if (parentsOf(p).some((parent) => this.files.has(parent))) {
      throw new SandboxFileError('Not a directory', { path: p, operation, kind: 'ENOTDIR' });
    }
  }

  #assertDirectory(root: string, requested: string): void {
    if (this.files.has(root)) {
      throw new SandboxFileNotFoundError(`Not a directory: ${requested}`, {
        path: requested,
        kind: 'ENOTDIR',
      });
    }
    if (!this.isDirectory(root)) {
      throw new SandboxFileNotFoundError(`Directory not found: ${requested}`, {
        path: requested,
        kind: 'ENOENT' satisfies FileErrorKind,
      });
    }
  }

  #join(root: string, rel: string): string {
    return root === '/' ? `/${rel}` : `${root}/${rel}`;
  }

  /**
   * Every entry below `root` as a relative path, in the shared search order, without ignored names
   * and without anything below an ignored directory.
   */
  #walk(root: string): { rel: string; dir: boolean }[] {
    const prefix = root === '/' ? '/' : `${root}/`;
    const entries = new Map<string, boolean>();
    const add = (absolute: string, dir: boolean) => {
      if (!absolute.startsWith(prefix)) return;
      const parts = absolute.slice(prefix.length).split('/');
      if (parts.some((part) => shouldIgnoreName(part))) return;
      for (let depth = 1; depth < parts.length; depth++) {
        entries.set(parts.slice(0, depth).join('/'), true);
      }
      const rel = parts.join('/');
      if (rel) entries.set(rel, dir || (entries.get(rel) ?? false));
    };
    for (const dir of this.directories) add(dir, true);
    for (const file of this.files.keys()) add(file, false);
    return [...entries]
      .map(([rel, dir]) => ({ rel, dir }))
      .sort((a, b) => compareRelativePaths(a.rel, b.rel));
  }
}

import { Sandbox } from '../contract/sandbox.js';
import type {
  GlobOptions,
  GlobResult,
  GrepMatch,
  GrepOptions,
  GrepResult,
  ListDirOptions,
} from '../contract/sandbox.js';
import { assertSandboxFilePath } from '../contract/sandbox-file-checks.js';
import { InvalidArgumentError } from '../errors/errors.js';
import { shellQuote } from '../command/shell-quote.js';
import { planRemoteGlob } from '../search/search-remote-glob.js';
import { planRemoteGrep } from '../search/search-remote-grep.js';
import { planRemoteListDir } from '../search/search-remote-list-dir.js';

/**
 * The base of a sandbox reached through a remote shell (E2B, BoxLite, Tenki, OpenSandbox):
 * `listDir`, `glob` and `grep` are core's remote search commands, run through one hook and parsed
 * exactly like the local walkers. Each adapter had its own copy and they had drifted (a negative
 * depth refused by one only, duplicate grep matches removed by one only); written here once, every
 * adapter behaves the same.
 *
 * A subclass implements `runSearch` (run a command, return its stdout whatever its exit status:
 * the parsers read the header the command prints) and, when the sandbox's paths are not the
 * caller's, `remotePath` / `callerPath`.
 */
export abstract class RemoteShellSandbox extends Sandbox {
  /** The one search hook: stdout of `command`, whatever its exit status. */
  protected abstract runSearch(command: string): Promise<string>;

  /** Where a caller's path lives in the sandbox (validated there). Default: the same path. */
  protected remotePath(path: string): string {
    return path;
  }

  /** How a path the sandbox printed is shown to the caller who asked about `asked`. */
  protected callerPath(remote: string, _asked: string): string {
    return remote;
  }

  /**
   * `command` run from `cwd`, a caller's path checked and mapped like every other. The `cd` is a
   * line of its own with `|| exit`, so a failing `cd` stops the whole command (a `cd x && a; b`
   * would still run `b` in the wrong directory, and `cd x && a & b` runs all of `cd x && a` in a
   * background subshell, `b` where the shell started).
   *
   * Equivalent to a spawn with `cwd`: the first line is a complete command of our own (a quoted
   * word, `||`, `exit`: no open quote, bracket or here-document), and a shell reads and runs a
   * `-c` script one complete command at a time, so it has changed directory (or exited) before it
   * reads a byte of `command`, which then runs entirely in that same shell. The process contract
   * holds every sandbox to it (`&`, `;`, `||`, newlines).
   */
  protected commandInCwd(command: string, cwd: string | undefined): string {
    if (cwd === undefined) return command;
    if (typeof cwd !== 'string' || cwd === '') {
      throw new InvalidArgumentError('cwd must be a non-empty path');
    }
    this.checkPath(cwd);
    return `cd -- ${shellQuote(this.remotePath(cwd))} || exit 1\n${command}`;
  }

  /** Checks a caller's path before anything runs. Default: core's sandbox path rules. */
  protected checkPath(path: string): void {
    assertSandboxFilePath(path);
  }

  override async listDir(path: string, options: ListDirOptions = {}): Promise<string[]> {
    this.checkPath(path);
    if (options.maxDepth !== undefined && options.maxDepth < 0) {
      throw new InvalidArgumentError(`maxDepth must not be negative, got ${options.maxDepth}`);
    }
    const plan = planRemoteListDir(this.remotePath(path), options);
    const entries = plan.parse(await this.runSearch(plan.command));
    return entries.map((e) =>
      e.endsWith('/') ? `${this.callerPath(e.slice(0, -1), path)}/` : this.callerPath(e, path),
    );
  }

  override async glob(
    path: string,
    pattern: string,
    options: GlobOptions = {},
  ): Promise<GlobResult> {
    this.checkPath(path);
    const plan = planRemoteGlob(this.remotePath(path), pattern, { ...options, displayPath: path });
    const result = plan.parse(await this.runSearch(plan.command));
    return { ...result, paths: result.paths.map((p) => this.callerPath(p, path)) };
  }

  override async grep(
    path: string,
    pattern: string,
    options: GrepOptions = {},
  ): Promise<GrepResult> {
    this.checkPath(path);
    const plan = planRemoteGrep(this.remotePath(path), pattern, { ...options, displayPath: path });
    const result = await plan.parse(await this.runSearch(plan.command));
    return {
      ...result,
      matches: dedupeMatches(result.matches).map((m) => ({
        ...m,
        path: this.callerPath(m.path, path),
      })),
    };
  }
}

/** One match per (path, line): a file reached twice (a bind mount, a hard link) counts once. */
function dedupeMatches(matches: readonly GrepMatch[]): GrepMatch[] {
  const seen = new Set<string>();
  const out: GrepMatch[] = [];
  for (const match of matches) {
    const key = `${match.path}\0${match.lineNumber}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(match);
  }
  return out;
}

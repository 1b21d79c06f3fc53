import { posix } from 'node:path';
import {
  InvalidArgumentError,
  compareRelativePaths,
  compileGlob,
  matchingLineIndices,
  type GlobOptions,
  type GlobResult,
  type GrepMatch,
  type GrepOptions,
  type GrepResult,
  type Logger,
} from '@sbx/core';
import { regexToPosixEre } from '@sbx/core/provider-kit';
import {
  DEFAULT_GLOB_MAX_RESULTS,
  DEFAULT_GREP_MAX_RESULTS,
  MAX_GREP_LINE_LENGTH,
  compileGrepPattern,
  globNameFilter,
  shouldIgnorePath,
  truncateLine,
} from '@sbx/core/internal';
import { remoteOutputLimit } from '@sbx/core/provider-kit';
import type { AioApi } from './aio-api.js';
import { isHttpStatus } from './aio-http-error.js';

/** The grep API refuses larger `max_results`. */
const GREP_API_MAX_RESULTS = 10_000;
/** The glob API refuses larger `max_results`. */
const GLOB_API_MAX_RESULTS = 50_000;

function normalizeRoot(root: string): string {
  if (typeof root !== 'string' || !root.startsWith('/')) {
    throw new InvalidArgumentError(`search root must be an absolute path, got '${root}'`);
  }
  const trimmed = root.replace(/\/+$/, '');
  return trimmed === '' ? '/' : trimmed;
}

function relativeTo(root: string, entry: string): string | undefined {
  const prefix = root === '/' ? '/' : `${root}/`;
  if (!entry.startsWith(prefix) || entry.length === prefix.length) return undefined;
  const rel = entry.slice(prefix.length).replace(/\/+$/, '');
  if (rel === '' || rel.split('/').some((s) => s === '' || s === '.' || s === '..')) {
    return undefined;
  }
  return rel;
}

/**
 * glob and grep of one AioSandbox through the image's file endpoints. The image's answers are
 * candidates only: every path and line is filtered again with sbx's own matchers (patterns on a
 * search worker), so the results equal the local provider's.
 */
export class AioSearch {
  readonly #api: AioApi;
  readonly #logger: Logger;
  readonly #sandboxId: string;
  /** False once `POST /v1/file/glob` answered 404 (an image without it): glob lists instead. */
  #globApi = true;

  constructor(options: { api: AioApi; logger: Logger; sandboxId: string }) {
    this.#api = options.api;
    this.#logger = options.logger;
    this.#sandboxId = options.sandboxId;
  }

  async glob(path: string, pattern: string, options: GlobOptions = {}): Promise<GlobResult> {
    const matches = compileGlob(pattern);
    const maxResults = options.maxResults ?? DEFAULT_GLOB_MAX_RESULTS;
    if (!Number.isInteger(maxResults) || maxResults < 1) {
      throw new InvalidArgumentError(`maxResults must be a positive integer, got ${maxResults}`);
    }
    const root = normalizeRoot(path);
    const entries = await this.#globCandidates(root, pattern, options.includeDirs === true);
    const rels = new Set<string>();
    for (const entry of entries) {
      const rel = relativeTo(root, entry);
      if (rel === undefined || shouldIgnorePath(rel) || !matches(rel)) continue;
      rels.add(rel);
    }
    const sorted = [...rels].sort(compareRelativePaths);
    return {
      paths: sorted
        .slice(0, maxResults)
        .map((rel) => (root === '/' ? `/${rel}` : `${root}/${rel}`)),
      truncated: sorted.length > maxResults,
    };
  }

  /**
   * Paths that may match `pattern` below `root`, from the image's recursive glob endpoint (the
   * answer is then filtered with sbx's own matcher, so results equal the local provider's). An
   * image without the endpoint (404, remembered) lists the tree instead: `find` is a simple,
   * non-recursive glob in the image and would miss nested files.
   */
  async #globCandidates(root: string, pattern: string, includeDirs: boolean): Promise<string[]> {
    if (this.#globApi) {
      // Without a '/', sbx matches names at any depth: the image needs the explicit `**/`.
      const remote = pattern.includes('/') ? pattern : `**/${pattern}`;
      try {
        const found = await this.#api.globFiles({
          path: root,
          pattern: remote,
          filesOnly: !includeDirs,
          maxResults: GLOB_API_MAX_RESULTS,
        });
        if (!found.truncated) return found.paths;
        // A truncated answer may have cut matches the local filter would keep: list instead.
      } catch (err) {
        if (!isHttpStatus(err, 404)) throw err;
        this.#globApi = false;
        this.#logger.info('AIO image has no POST /v1/file/glob; glob lists the tree instead', {
          sandbox_id: this.#sandboxId,
        });
      }
    }
    const listed = await this.#api.listFiles(root);
    return listed.filter((f) => includeDirs || !f.isDirectory).map((f) => f.path);
  }

  async grep(path: string, pattern: string, options: GrepOptions = {}): Promise<GrepResult> {
    const regex = compileGrepPattern(pattern, options);
    const glob = options.glob == null ? undefined : compileGlob(options.glob);
    const maxResults = options.maxResults ?? DEFAULT_GREP_MAX_RESULTS;
    if (!Number.isInteger(maxResults) || maxResults < 1) {
      throw new InvalidArgumentError(`maxResults must be a positive integer, got ${maxResults}`);
    }
    const root = normalizeRoot(path);
    const nameFilter = options.glob == null ? undefined : globNameFilter(options.glob);
    // The image greps with its own regex engine: send a POSIX ERE that matches at least what the
    // pattern matches, then re-check every line here with the pattern itself.
    const { matches: raw, truncated: apiTruncated } = await this.#api.grep({
      path: root,
      pattern: options.literal ? pattern : regexToPosixEre(regex.source),
      caseInsensitive: regex.flags.includes('i'),
      fixedStrings: options.literal === true,
      maxResults: Math.min(remoteOutputLimit(maxResults), GREP_API_MAX_RESULTS),
      ...(nameFilter === undefined ? {} : { include: [nameFilter] }),
    });
    const candidates: { rel: string; file: string; lineNumber: number; text: string }[] = [];
    for (const m of raw) {
      let rel: string | undefined;
      if (m.file === root) rel = posix.basename(root);
      else {
        rel = relativeTo(root, m.file);
        if (rel !== undefined && shouldIgnorePath(rel)) continue;
      }
      if (rel === undefined || (glob && !glob(rel))) continue;
      const text = m.lineContent.replace(/\r?\n$/, '').replace(/\r$/, '');
      candidates.push({ rel, file: m.file, lineNumber: m.lineNumber, text });
    }
    // The pattern runs on a search worker under a deadline, never on this event loop.
    const hits = await matchingLineIndices(
      candidates.map((c) => c.text),
      regex,
      MAX_GREP_LINE_LENGTH,
    );
    const found: { rel: string; match: GrepMatch }[] = hits.map((i) => {
      const c = candidates[i]!;
      return {
        rel: c.rel,
        match: { path: c.file, lineNumber: c.lineNumber, line: truncateLine(c.text) },
      };
    });
    found.sort(
      (a, b) => compareRelativePaths(a.rel, b.rel) || a.match.lineNumber - b.match.lineNumber,
    );
    return {
      matches: found.slice(0, maxResults).map((f) => f.match),
      truncated: found.length > maxResults || apiTruncated,
    };
  }
}

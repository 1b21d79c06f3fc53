// File endpoints of the AIO stand-in, modelled on the image (agent-infra/sandbox 1.9.3–1.11.0).
import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { notFound, ok, osError, requireAbsolute, send, unprocessable } from './http-util.mjs';

const BINARY_SNIFF_BYTES = 8192;
const GREP_BATCH = 200;
/** The glob endpoint refuses larger `max_results`. */
const GLOB_MAX_RESULTS = 50_000;

/** The image's `error_type` of a failed file operation, by errno. */
const ERROR_TYPES = {
  ENOENT: 'not_found',
  EACCES: 'permission_denied',
  EPERM: 'permission_denied',
  ENOTDIR: 'invalid_target',
  EISDIR: 'invalid_target',
  EEXIST: 'already_exists',
  EINVAL: 'invalid_path',
  ENAMETOOLONG: 'invalid_path',
  EROFS: 'read_only_filesystem',
  ENOSPC: 'no_space_left',
  EILSEQ: 'decode_error',
};

/** The image's file-operation failure: HTTP 200, `success: false`, a FileOperationError payload. */
export function fileFailure(res, operation, filePath, err) {
  const errnoName = typeof err?.code === 'string' ? err.code : null;
  const message = errnoName
    ? `${errnoName}: ${err.message.replace(/^[A-Z]+: /, '')}`
    : String(err?.message ?? err);
  send(res, 200, {
    success: false,
    message,
    data: {
      path: filePath,
      operation,
      message,
      error_type: (errnoName && ERROR_TYPES[errnoName]) || 'io_error',
      retryable: false,
      errno: typeof err?.errno === 'number' ? Math.abs(err.errno) : null,
      errno_name: errnoName,
      exception_type: errnoName ? 'OSError' : 'Error',
    },
    hint: null,
  });
}

/** fnmatch-style basename matching (`*`, `?`, `[...]`), the way `find -name` matches. */
export function fnmatch(pattern) {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end === -1) re += '\\[';
      else {
        let body = pattern.slice(i + 1, end);
        if (body.startsWith('!')) body = `^${body.slice(1)}`;
        re += `[${body.replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  const compiled = new RegExp(`^${re}$`, 's');
  return (name) => compiled.test(name);
}

export function parseSize(text) {
  if (text === null || text === undefined) return 1024 * 1024;
  const m = /^(\d+)([KMG]?)B?$/i.exec(String(text).trim());
  if (!m) return 1024 * 1024;
  const unit = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3 }[m[2].toUpperCase()];
  return Number(m[1]) * unit;
}

/** Depth-first walk in name order; `visit` returns false to skip descending into a directory. */
export async function walk(root, visit, depth = 1) {
  const entries = await fs.readdir(root, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const full = path.join(root, entry.name);
    const descend = await visit(full, entry, depth);
    if (entry.isDirectory() && descend !== false) {
      try {
        await walk(full, visit, depth + 1);
      } catch (err) {
        if (err?.code !== 'EACCES' && err?.code !== 'ENOENT') throw err;
      }
    }
  }
}

export async function requireDirectory(p) {
  const info = await fs.stat(p);
  if (!info.isDirectory()) throw osError('ENOTDIR', `Not a directory: '${p}'`);
}

export async function isBinary(file) {
  const handle = await fs.open(file, 'r');
  try {
    const buf = Buffer.alloc(BINARY_SNIFF_BYTES);
    const { bytesRead } = await handle.read(buf, 0, BINARY_SNIFF_BYTES, 0);
    return buf.subarray(0, bytesRead).includes(0);
  } finally {
    await handle.close();
  }
}

/** The file endpoints, by method and path. */
export function createFileApi({ shellPromise }) {
  async function fileRead(res, body) {
    let file;
    try {
      file = requireAbsolute(body.file, 'file');
      let text;
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(await fs.readFile(file));
      } catch (err) {
        // Python's UnicodeDecodeError: the image answers `decode_error`.
        if (err instanceof TypeError) throw osError('EILSEQ', `cannot decode ${file} as UTF-8`);
        throw err;
      }
      let content = text;
      if (body.start_line !== undefined || body.end_line !== undefined) {
        // Python's readlines() slicing: lines keep their endings, bounds clamp.
        const lines = text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
        const start = body.start_line ?? 0;
        const end = body.end_line ?? lines.length;
        content = lines.slice(start, end).join('');
      }
      ok(res, { content, file });
    } catch (err) {
      fileFailure(res, 'read', body.file, err);
    }
  }

  async function fileWrite(res, body) {
    try {
      const file = requireAbsolute(body.file, 'file');
      if (typeof body.content !== 'string') return unprocessable(res, 'content is required');
      const data =
        body.encoding === 'base64'
          ? Buffer.from(body.content, 'base64')
          : Buffer.from(body.content, 'utf8');
      await fs.mkdir(path.dirname(file), { recursive: true });
      if (body.append) await fs.appendFile(file, data);
      else await fs.writeFile(file, data);
      ok(res, { file, bytes_written: data.length });
    } catch (err) {
      fileFailure(res, 'write', body.file, err);
    }
  }

  async function fileFind(res, body) {
    try {
      const root = requireAbsolute(body.path);
      await requireDirectory(root);
      // The image's find is a simple glob of the directory itself (not recursive), and it
      // returns directories as well as files.
      const matches = fnmatch(typeof body.glob === 'string' ? body.glob : '*');
      const entries = await fs.readdir(root, { withFileTypes: true });
      const files = entries
        .filter((entry) => matches(entry.name))
        .map((entry) => path.join(root, entry.name))
        .sort();
      ok(res, { path: root, files });
    } catch (err) {
      fileFailure(res, 'find', body.path, err);
    }
  }

  async function fileList(res, body) {
    try {
      const root = requireAbsolute(body.path);
      await requireDirectory(root);
      const showHidden = body.show_hidden ?? true;
      const maxDepth = body.recursive ? (body.max_depth ?? Infinity) : 1;
      const files = [];
      await walk(root, async (full, entry, depth) => {
        if (!showHidden && entry.name.startsWith('.')) return false;
        let size = null;
        let modified = null;
        try {
          const info = await fs.lstat(full);
          size = info.size;
          modified = info.mtime.toISOString();
        } catch {
          // vanished while listing
        }
        files.push({
          name: entry.name,
          path: full,
          is_directory: entry.isDirectory(),
          size: entry.isDirectory() ? null : size,
          modified_time: modified,
          permissions: null,
          extension: entry.isDirectory() ? null : path.extname(entry.name) || null,
        });
        return depth < maxDepth;
      });
      const directories = files.filter((f) => f.is_directory).length;
      ok(res, {
        path: root,
        files,
        total_count: files.length,
        directory_count: directories,
        file_count: files.length - directories,
      });
    } catch (err) {
      fileFailure(res, 'list', body.path, err);
    }
  }

  /** grep -n over a batch of files, parsed against the known names (a name may contain ':'). */
  async function grepBatch(shell, flags, pattern, files) {
    const args = [...flags, '-n', '-H', '-e', pattern, '--', ...files];
    const argv = shell.shArg ? ['grep', ...args] : args;
    const file = shell.shArg ? shell.commandShell : 'grep';
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c) => (out += c));
    child.stderr.setEncoding('utf8').on('data', (c) => (err += c));
    const code = await new Promise((resolve) => {
      child.once('close', resolve);
      child.once('error', () => resolve(2));
    });
    if (code === 2 && err.trim()) throw osError('EINVAL', `regex parse error: ${err.trim()}`);
    const byLength = [...files].sort((a, b) => b.length - a.length);
    const matches = [];
    for (const line of out.split('\n')) {
      if (line === '') continue;
      for (const f of byLength) {
        if (!line.startsWith(`${f}:`)) continue;
        const m = /^(\d+):/.exec(line.slice(f.length + 1));
        if (!m) continue;
        matches.push({
          file: f,
          line_number: Number(m[1]),
          line_content: line.slice(f.length + 1 + m[0].length),
        });
        break;
      }
    }
    return matches;
  }

  async function fileGrep(res, body) {
    try {
      const root = requireAbsolute(body.path);
      if (typeof body.pattern !== 'string') return unprocessable(res, 'pattern is required');
      const maxResults = Number(body.max_results) || 500;
      const maxSize = parseSize(body.max_file_size);
      const include = (body.include ?? []).map(fnmatch);
      const candidates = [];
      const consider = async (full) => {
        const info = await fs.stat(full);
        if (!info.isFile() || info.size > maxSize) return;
        if (include.length > 0 && !include.some((m) => m(path.basename(full)))) return;
        if (await isBinary(full)) return;
        candidates.push(full);
      };
      const rootInfo = await fs.stat(root);
      if (rootInfo.isDirectory()) {
        await walk(root, async (full, entry) => {
          if (entry.isFile()) await consider(full);
          return body.recursive ?? true;
        });
      } else {
        await consider(root);
      }
      const shell = await shellPromise;
      const flags = [body.fixed_strings ? '-F' : '-E'];
      if (body.case_insensitive) flags.push('-i');
      const matches = [];
      let truncated = false;
      for (let i = 0; i < candidates.length && !truncated; i += GREP_BATCH) {
        const found = await grepBatch(
          shell,
          flags,
          body.pattern,
          candidates.slice(i, i + GREP_BATCH),
        );
        for (const m of found) {
          if (matches.length >= maxResults) {
            truncated = true;
            break;
          }
          matches.push({ ...m, context_before: null, context_after: null });
        }
      }
      ok(res, {
        path: root,
        pattern: body.pattern,
        matches,
        match_count: matches.length,
        files_searched: candidates.length,
        files_matched: new Set(matches.map((m) => m.file)).size,
        truncated,
      });
    } catch (err) {
      fileFailure(res, 'grep', body.path, err);
    }
  }

  async function download(res, url) {
    const target = url.searchParams.get('path');
    if (!target) return unprocessable(res, 'path is required');
    let info;
    try {
      info = await fs.stat(target);
    } catch (err) {
      if (err?.code === 'ENOENT' || err?.code === 'ENOTDIR') {
        return notFound(res, `File not found: ${target}`);
      }
      return send(res, 500, { detail: `Cannot read ${target}: ${err.message}` });
    }
    if (!info.isFile()) return send(res, 400, { detail: `Not a file: ${target}` });
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': info.size,
      'content-disposition': `attachment; filename="${path.basename(target)}"`,
    });
    createReadStream(target)
      .on('error', () => res.destroy())
      .pipe(res);
  }

  /** Matches one path segment against one glob segment (`*`, `?`, `[...]`). */
  function segmentMatcher(segment) {
    return fnmatch(segment);
  }

  /**
   * The image's recursive glob (`POST /v1/file/glob`): the pattern is relative to `path`, `**`
   * spans zero or more directories, other segments match one name each; hidden names are skipped
   * unless `include_hidden`; `files_only` (default true) leaves directories out.
   */
  async function fileGlob(res, body) {
    try {
      const root = requireAbsolute(body.path ?? '/');
      await requireDirectory(root);
      if (typeof body.pattern !== 'string' || body.pattern === '') {
        return unprocessable(res, 'pattern is required');
      }
      const maxResults = Number(body.max_results ?? 1000);
      if (!Number.isInteger(maxResults) || maxResults < 1 || maxResults > GLOB_MAX_RESULTS) {
        return unprocessable(res, `max_results must be between 1 and ${GLOB_MAX_RESULTS}`);
      }
      const parts = body.pattern.split('/').filter((p) => p !== '');
      const compiled = parts.map((p) => (p === '**' ? '**' : segmentMatcher(p)));
      const excludes = (body.exclude ?? []).map(fnmatch);
      const includeHidden = body.include_hidden === true;
      const filesOnly = body.files_only ?? true;
      const matchFrom = (segments, at, i) => {
        if (i === compiled.length) return at === segments.length;
        const part = compiled[i];
        if (part === '**') {
          for (let skip = at; skip <= segments.length; skip++) {
            if (matchFrom(segments, skip, i + 1)) return true;
          }
          return false;
        }
        return at < segments.length && part(segments[at]) && matchFrom(segments, at + 1, i + 1);
      };
      const found = [];
      await walk(root, async (full, entry) => {
        if (!includeHidden && entry.name.startsWith('.')) return false;
        const rel = path.relative(root, full);
        if (excludes.some((m) => m(entry.name) || m(rel))) return false;
        if (entry.isDirectory() && filesOnly) return true;
        if (matchFrom(rel.split(path.sep), 0, 0)) {
          const info = await fs.lstat(full).catch(() => undefined);
          found.push({
            path: full,
            name: entry.name,
            is_directory: entry.isDirectory(),
            size: entry.isDirectory() ? null : (info?.size ?? null),
            modified_time: info ? info.mtime.toISOString() : null,
          });
        }
        return true;
      });
      found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      ok(res, {
        files: found.slice(0, maxResults),
        total_count: found.length,
        truncated: found.length > maxResults,
      });
    } catch (err) {
      fileFailure(res, 'glob', body.path, err);
    }
  }

  return {
    'POST /v1/file/read': fileRead,
    'POST /v1/file/write': fileWrite,
    'POST /v1/file/find': fileFind,
    'POST /v1/file/list': fileList,
    'POST /v1/file/grep': fileGrep,
    'POST /v1/file/glob': fileGlob,
    download,
  };
}

// @ts-check
'use strict';
// The search worker: every regular expression a search runs on content (local files, or lines a
// remote sandbox sent back) runs here, on a worker thread, never on the gateway's event loop. A
// pattern that backtracks catastrophically then only burns this thread until the caller's deadline
// terminates it; every other tenant's call keeps running. Plain CommonJS so the same file loads
// from the TypeScript sources (tests) and from both builds.
//
// Protocol: the parent posts `{ id, task }`, the worker answers `{ id, ok: true, value }` or
// `{ id, ok: false, message }`, one task at a time, in order; a file scan first sends
// `{ id, progress: index, value }` for each file with hits or an error, in file order.
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');

if (!parentPort) throw new Error('search-worker.cjs must run as a worker thread');

// O_NOFOLLOW: a file swapped for a symlink after the listing is refused instead of read through.
// O_NONBLOCK: one swapped for a FIFO cannot hang the read (the type check then skips it).
const OPEN_FLAGS =
  fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0);
const LINE_BREAK = /\r\n|\r|\n/;
const HAS_PROC_FD = process.platform === 'linux';
const DIRECTORY_FLAGS =
  fs.constants.O_RDONLY | (fs.constants.O_DIRECTORY ?? 0) | (fs.constants.O_NOFOLLOW ?? 0);

/** @type {Map<string, RegExp>} */
const compiled = new Map();
/** @param {{ source: string, flags: string }} spec */
function regexOf(spec) {
  const key = `${spec.flags}/${spec.source}`;
  let regex = compiled.get(key);
  if (!regex) {
    if (compiled.size > 64) compiled.clear();
    regex = new RegExp(spec.source, spec.flags);
    compiled.set(key, regex);
  }
  return regex;
}

/**
 * `true` when `line` has more than `max` code points. UTF-16 length bounds the count from above
 * and at most twice from below, so only lines between `max` and `2 × max` units are counted.
 * @param {string} line
 * @param {number} max
 */
function longerThan(line, max) {
  if (line.length <= max) return false;
  if (line.length > 2 * max) return true;
  let points = 0;
  for (let i = 0; i < line.length; i++) {
    const unit = line.charCodeAt(i);
    // A high surrogate followed by a low one is one code point.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < line.length) {
      const next = line.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    if (++points > max) return true;
  }
  return false;
}

/**
 * The directory a batch's files are opened through: its descriptor, verified to be the directory
 * the walk listed (`O_NOFOLLOW`, and its real path is the expected one inside the search root).
 * Files are then opened as `/proc/self/fd/N/name`, which the kernel resolves through the open
 * directory itself: a directory swapped for a link after the walk cannot redirect the open, and
 * the check costs one `readlink` per directory instead of one per file. Elsewhere files are
 * opened by path with `O_NOFOLLOW` (best-effort).
 * @param {string} dir
 * @param {any} task
 * @returns {{ fd: number, prefix: string } | string}
 */
function openDirectory(dir, task) {
  if (!HAS_PROC_FD) return { fd: -1, prefix: dir === '/' ? '/' : `${dir}/` };
  let fd = -1;
  try {
    fd = fs.openSync(dir, DIRECTORY_FLAGS);
    const real = fs.readlinkSync(`/proc/self/fd/${fd}`);
    const root = task.root;
    const inside =
      real === dir &&
      (!root || real === root || real.startsWith(root.endsWith('/') ? root : `${root}/`));
    if (!inside) {
      fs.closeSync(fd);
      return 'ESCAPED';
    }
    return { fd, prefix: `/proc/self/fd/${fd}/` };
  } catch (err) {
    if (fd >= 0) fs.closeSync(fd);
    return errorCode(err);
  }
}

/** @param {unknown} err */
function errorCode(err) {
  return String((err && /** @type {{ code?: unknown }} */ (err).code) || 'EIO');
}

/**
 * @param {string} openPath
 * @param {any} task
 * @returns {[number, string][] | string} line number and line text of each hit (at most
 *   `task.wanted`), or the error code of a file that could not be read
 */
function scanFile(openPath, task) {
  let fd = -1;
  try {
    fd = fs.openSync(openPath, OPEN_FLAGS);
    // One shared buffer, read up to one byte past the size limit: no `fstat` and no allocation per
    // file (most files of a search are small and do not match). The walk listed a regular file;
    // one swapped for a FIFO reads nothing (O_NONBLOCK), and the cap bounds the rest.
    const limit = task.maxFileSize + 1;
    const buffer = sharedBuffer(limit);
    // A short read of a regular file is its end (POSIX): one read call per file, not two.
    const filled = fs.readSync(fd, buffer, 0, limit, null);
    if (filled > task.maxFileSize) return [];
    return scanBytes(buffer.subarray(0, filled), task);
  } catch (err) {
    // Unreadable (gone, a link swapped in, permissions, a FIFO): skipped, and the parent logs it.
    return errorCode(err);
  } finally {
    if (fd >= 0) fs.closeSync(fd);
  }
}

/** @type {Buffer | undefined} */
let shared;
/** @param {number} size */
function sharedBuffer(size) {
  if (!shared || shared.length < size) shared = Buffer.allocUnsafe(size);
  return shared;
}

/**
 * @param {Buffer} bytes
 * @param {any} task
 * @returns {[number, string][]}
 */
function scanBytes(bytes, task) {
  if (bytes.subarray(0, task.sniffBytes).includes(0)) return [];
  // A necessary condition checked once per file: a literal every match must contain. Linear,
  // since a literal pattern cannot backtrack. An ASCII literal is tested on the bytes read as
  // Latin-1, which is exact (UTF-8 encodes ASCII as itself, and no other byte folds to ASCII)
  // and cheaper than decoding UTF-8 for a file that turns out not to match.
  if (task.literal && task.literalAscii && !regexOf(task.literal).test(bytes.toString('latin1'))) {
    return [];
  }
  const text = bytes.toString('utf8');
  if (task.literal && !task.literalAscii && !regexOf(task.literal).test(text)) return [];
  const regex = regexOf(task.regex);
  const lines = text.split(LINE_BREAK);
  const last = lines.length - 1;
  // A text ending in a line break leaves an empty final piece that is not a line.
  const count = lines[last] === '' ? last : lines.length;
  /** @type {[number, string][]} */
  const hits = [];
  for (let i = 0; i < count; i++) {
    const line = lines[i];
    // The length limit counts the line break, as the contract measures it.
    if (longerThan(line, task.maxLineLength - (i < last ? 1 : 0))) continue;
    if (!regex.test(line)) continue;
    hits.push([i + 1, line]);
    if (hits.length >= task.wanted) break;
  }
  return hits;
}

/**
 * The files of a scan, in order, each opened through its verified directory (see
 * `openDirectory`); one message per file with hits (or an error) as it is done.
 * @param {number} id
 * @param {any} task
 */
function scanFiles(id, task) {
  /** @type {string | undefined} */
  let dirPath;
  /** @type {{ fd: number, prefix: string } | string} */
  let dir = 'EIO';
  try {
    task.files.forEach((/** @type {string} */ file, /** @type {number} */ index) => {
      const cut = file.lastIndexOf('/');
      const parent = cut <= 0 ? '/' : file.slice(0, cut);
      if (parent !== dirPath) {
        if (typeof dir !== 'string' && dir.fd >= 0) fs.closeSync(dir.fd);
        dirPath = parent;
        dir = openDirectory(parent, task);
      }
      const value =
        typeof dir === 'string' ? dir : scanFile(dir.prefix + file.slice(cut + 1), task);
      // Files without hits send nothing: most files of a search, and a message each was the
      // larger part of the cost. What arrives is still in file order.
      if (typeof value === 'string' || value.length > 0) {
        parentPort.postMessage({ id, progress: index, value });
      }
    });
  } finally {
    if (typeof dir !== 'string' && dir.fd >= 0) fs.closeSync(dir.fd);
  }
}

/** Walks in progress, by id: the state a `walk-next` continues. */
const walks = new Map();

/** @type {Map<string, (name: string) => boolean>} */
const ignoreMatchers = new Map();
/** @param {{ names: string[], source: string, flags: string, fold: boolean }} spec */
function ignoreOf(spec) {
  const key = JSON.stringify(spec);
  let matcher = ignoreMatchers.get(key);
  if (!matcher) {
    const names = new Set(spec.names);
    const combined = new RegExp(spec.source, spec.flags);
    matcher = (name) => names.has(spec.fold ? name.toLowerCase() : name) || combined.test(name);
    ignoreMatchers.set(key, matcher);
  }
  return matcher;
}

/**
 * The sorted entries of `dir`, listed through a descriptor verified to be `dir` itself: a
 * directory swapped for a link after its parent was listed is refused (see `readVerifiedDirectory`
 * on the main thread, which this mirrors).
 * @param {string} dir
 */
function listVerified(dir) {
  let entries;
  if (HAS_PROC_FD) {
    const fd = fs.openSync(dir, DIRECTORY_FLAGS);
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) !== dir) {
        throw Object.assign(new Error('directory changed while listed'), { code: 'ELOOP' });
      }
      entries = fs.readdirSync(`/proc/self/fd/${fd}`, { withFileTypes: true });
    } finally {
      fs.closeSync(fd);
    }
  } else {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  }
  // Code-unit order, as `compareNames`.
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** @param {any} task */
function walkStart(task) {
  let entries;
  try {
    entries = listVerified(task.root);
  } catch (err) {
    return { error: errorCode(err) };
  }
  walks.set(task.walkId, {
    ignore: ignoreOf(task.ignore),
    stack: [{ dir: task.root, rel: '', entries, next: 0 }],
  });
  return { error: null };
}

/**
 * The next `task.max` entries of a walk, depth first with sorted listings: regular files and
 * directories only (links and special files are neither listed nor followed), ignored names
 * neither listed nor descended. `skipped` names the directories that could not be listed.
 * @param {any} task
 */
function walkNext(task) {
  const state = walks.get(task.walkId);
  /** @type {string[]} */
  const paths = [];
  /** @type {number[]} */
  const dirs = [];
  /** @type {[string, string][]} */
  const skipped = [];
  if (!state) return { paths, dirs: new Uint8Array(0), skipped, done: true };
  const stack = state.stack;
  while (stack.length > 0 && paths.length < task.max) {
    const frame = stack[stack.length - 1];
    const entry = frame.entries[frame.next++];
    if (entry === undefined) {
      stack.pop();
      continue;
    }
    const isDirectory = entry.isDirectory();
    if (!isDirectory && !entry.isFile()) continue;
    if (state.ignore(entry.name)) continue;
    const rel = frame.rel ? `${frame.rel}/${entry.name}` : entry.name;
    paths.push(rel);
    dirs.push(isDirectory ? 1 : 0);
    if (!isDirectory) continue;
    const dir = `${frame.dir === '/' ? '' : frame.dir}/${entry.name}`;
    try {
      stack.push({ dir, rel, entries: listVerified(dir), next: 0 });
    } catch (err) {
      skipped.push([dir, errorCode(err)]);
    }
  }
  const done = stack.length === 0;
  if (done) walks.delete(task.walkId);
  // Parallel arrays clone far cheaper than an array of pairs.
  return { paths, dirs: Uint8Array.from(dirs), skipped, done };
}

/**
 * @param {number} id
 * @param {any} task
 */
function run(id, task) {
  switch (task.kind) {
    case 'scan-files':
      // One message per file as it is done: what was scanned before a deadline still counts.
      scanFiles(id, task);
      return null;
    case 'walk-start':
      return walkStart(task);
    case 'walk-next':
      return walkNext(task);
    case 'walk-end':
      walks.delete(task.walkId);
      return null;
    case 'test-lines': {
      const regex = regexOf(task.regex);
      /** @type {number[]} */
      const hits = [];
      task.lines.forEach((/** @type {string} */ line, /** @type {number} */ i) => {
        if (!longerThan(line, task.maxLineLength - 1) && regex.test(line)) hits.push(i);
      });
      return hits;
    }
    default:
      throw new Error(`unknown search task ${String(task.kind)}`);
  }
}

parentPort.on('message', (/** @type {{ id: number, task: any }} */ message) => {
  try {
    parentPort.postMessage({ id: message.id, ok: true, value: run(message.id, message.task) });
  } catch (err) {
    parentPort.postMessage({
      id: message.id,
      ok: false,
      message: err instanceof Error ? err.message : String(err),
    });
  }
});

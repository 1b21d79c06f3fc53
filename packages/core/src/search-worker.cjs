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
// `{ id, progress: index, value }` for each file.
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');

if (!parentPort) throw new Error('search-worker.cjs must run as a worker thread');

// O_NOFOLLOW: a file swapped for a symlink after the listing is refused instead of read through.
// O_NONBLOCK: one swapped for a FIFO cannot hang the read (the type check then skips it).
const OPEN_FLAGS =
  fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0) | (fs.constants.O_NONBLOCK ?? 0);
const LINE_BREAK = /\r\n|\r|\n/;
const HAS_PROC_FD = process.platform === 'linux';

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
 * @param {string} file
 * @param {any} task
 * @returns {[number, string][] | string} line number and line text of each hit (at most
 *   `task.wanted`), or the error code of a file that could not be read
 */
function scanFile(file, task) {
  let fd = -1;
  try {
    fd = fs.openSync(file, OPEN_FLAGS);
    // What was opened must still lie in the search root: a directory on the way swapped for a
    // link after the walk listed it would otherwise be read through.
    if (HAS_PROC_FD && task.root) {
      const real = fs.readlinkSync(`/proc/self/fd/${fd}`);
      if (
        real !== task.root &&
        !real.startsWith(task.root.endsWith('/') ? task.root : `${task.root}/`)
      ) {
        return 'ESCAPED';
      }
    }
    const stats = fs.fstatSync(fd);
    if (!stats.isFile() || stats.size > task.maxFileSize) return [];
    // Read what fstat announced and no further: a file growing meanwhile cannot blow the bound.
    const buffer = Buffer.allocUnsafe(stats.size);
    let filled = 0;
    while (filled < stats.size) {
      const n = fs.readSync(fd, buffer, filled, stats.size - filled, filled);
      if (n === 0) break;
      filled += n;
    }
    const bytes = buffer.subarray(0, filled);
    if (bytes.subarray(0, task.sniffBytes).includes(0)) return [];
    const text = bytes.toString('utf8');
    // A necessary condition checked once per file: a literal every match must contain. Linear,
    // since a literal pattern cannot backtrack.
    if (task.literal && !regexOf(task.literal).test(text)) return [];
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
  } catch (err) {
    // Unreadable (gone, a link swapped in, permissions): skipped, and the parent logs it.
    return String((err && /** @type {{ code?: unknown }} */ (err).code) || 'EIO');
  } finally {
    if (fd >= 0) fs.closeSync(fd);
  }
}

/**
 * @param {number} id
 * @param {any} task
 */
function run(id, task) {
  switch (task.kind) {
    case 'scan-files':
      // One message per file as it is done: what was scanned before a deadline still counts.
      task.files.forEach((/** @type {string} */ file, /** @type {number} */ index) => {
        parentPort.postMessage({ id, progress: index, value: scanFile(file, task) });
      });
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

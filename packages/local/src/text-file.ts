import type { FileHandle } from 'node:fs/promises';
import { TextDecoder } from 'node:util';
import { InvalidArgumentError, SandboxFileError } from '@sbx/core';
import { notUtf8Error, toFileError } from './file-errors.js';

/**
 * Largest file `readFile` returns whole (16 MiB). A bigger one is refused with a hint to read a
 * line range, which streams and costs only the bytes up to its last line: memory stays
 * proportional to what is returned, not to the file.
 */
export const MAX_WHOLE_READ_BYTES = 16 * 1024 * 1024;

/** Python-compatible strict UTF-8: invalid bytes are an error, a BOM is kept as text. */
function strictDecoder(): TextDecoder {
  return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
}

/** Universal newlines: `\r\n` and a lone `\r` both read as `\n`. */
export function normalizeNewlines(text: string): string {
  return text.replace(/\r\n?/g, '\n');
}

/** A whole text file (an open, confined handle), strictly decoded, newlines normalised. */
export async function readWholeText(handle: FileHandle, shown: string): Promise<string> {
  let bytes: Buffer;
  try {
    const { size } = await handle.stat();
    if (size > MAX_WHOLE_READ_BYTES) throw tooLargeToReadWhole(shown, size);
    bytes = await handle.readFile();
    // It may have grown between the stat and the read.
    if (bytes.length > MAX_WHOLE_READ_BYTES) throw tooLargeToReadWhole(shown, bytes.length);
  } catch (err) {
    throw toFileError(err, shown, 'read');
  }
  try {
    return normalizeNewlines(strictDecoder().decode(bytes));
  } catch (err) {
    throw notUtf8Error(shown, 'read', err);
  }
}

export interface LineRange {
  startLine?: number | undefined;
  endLine?: number | undefined;
}

function checkLine(name: string, value: number | undefined): void {
  if (value !== undefined && !Number.isSafeInteger(value)) {
    throw new InvalidArgumentError(`${name} must be an integer, got ${value}`);
  }
}

const LINE_BREAK = /\r\n|\r|\n/g;

/**
 * Lines `startLine..endLine` (1-based, inclusive) joined with `\n`, read as a stream that stops
 * after `endLine`: a huge log costs only the bytes up to the last wanted line, and a tail that is
 * not valid UTF-8 does not matter if it is never reached. A range past the end gives `""`. A range
 * returns at most `MAX_WHOLE_READ_BYTES` characters, like a whole read (`EFBIG` past it).
 */
export async function readLineRange(
  handle: FileHandle,
  shown: string,
  range: LineRange,
): Promise<string> {
  checkLine('startLine', range.startLine);
  checkLine('endLine', range.endLine);
  const start = Math.max(range.startLine ?? 1, 1);
  const end = range.endLine ?? Number.POSITIVE_INFINITY;
  if (end < start) return '';

  const decoder = strictDecoder();
  const lines: string[] = [];
  // Characters of the range kept so far: an open range over a file the agent grew call by call
  // (start_line 1 of 300 MB of short lines) would otherwise hold the whole file.
  let kept = 0;
  let lineNo = 1;
  let current = '';
  // A chunk may end between `\r` and `\n`; the `\n` then must not count as another break.
  let pendingCR = false;
  let done = false;

  const consume = (text: string): void => {
    let from = 0;
    if (pendingCR && text.startsWith('\n')) from = 1;
    pendingCR = false;
    LINE_BREAK.lastIndex = from;
    for (let m = LINE_BREAK.exec(text); m && !done; m = LINE_BREAK.exec(text)) {
      if (lineNo >= start) {
        const line = current + text.slice(from, m.index);
        kept += line.length + 1;
        if (kept > MAX_WHOLE_READ_BYTES) throw rangeTooLarge(shown, start, lineNo);
        lines.push(line);
      }
      current = '';
      lineNo++;
      if (lineNo > end) done = true;
      from = m.index + m[0].length;
      if (m[0] === '\r' && from === text.length) pendingCR = true;
    }
    if (!done && lineNo >= start) {
      current += text.slice(from);
      // One endless line would otherwise hold the whole file in memory.
      if (kept + current.length > MAX_WHOLE_READ_BYTES && current.length <= MAX_WHOLE_READ_BYTES) {
        throw rangeTooLarge(shown, start, lineNo);
      }
      if (current.length > MAX_WHOLE_READ_BYTES) {
        throw new SandboxFileError(
          `Line ${lineNo} of ${shown} is longer than ${MAX_WHOLE_READ_BYTES} characters`,
          { path: shown, operation: 'read', kind: 'EFBIG' },
        );
      }
    }
  };

  // The handle stays open for the caller to close; a string of lines past `endLine` is never read.
  const stream = handle.createReadStream({ highWaterMark: 64 * 1024, start: 0, autoClose: false });
  try {
    for await (const chunk of stream) {
      let text: string;
      try {
        text = decoder.decode(chunk as Buffer, { stream: true });
      } catch (err) {
        throw notUtf8Error(shown, 'read', err);
      }
      consume(text);
      if (done) break;
    }
    if (!done) {
      let tail: string;
      try {
        tail = decoder.decode();
      } catch (err) {
        throw notUtf8Error(shown, 'read', err);
      }
      consume(tail);
      if (!done && current !== '' && lineNo >= start) lines.push(current);
    }
  } catch (err) {
    throw toFileError(err, shown, 'read');
  } finally {
    stream.destroy();
  }
  return lines.join('\n');
}

function rangeTooLarge(shown: string, start: number, lineNo: number): SandboxFileError {
  return new SandboxFileError(
    `Lines ${start} to ${lineNo} of ${shown} are more than ${MAX_WHOLE_READ_BYTES} characters; read a smaller range (start_line / end_line)`,
    { path: shown, operation: 'read', kind: 'EFBIG' },
  );
}

function tooLargeToReadWhole(shown: string, size: number): SandboxFileError {
  return new SandboxFileError(
    `File is too large to read whole (${size} bytes, at most ${MAX_WHOLE_READ_BYTES}): ${shown}. Read a line range (start_line / end_line) instead`,
    { path: shown, operation: 'read', kind: 'EFBIG' },
  );
}

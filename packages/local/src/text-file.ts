import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { TextDecoder } from 'node:util';
import { InvalidArgumentError } from '@sbx/core';
import { notUtf8Error, toFileError } from './file-errors.js';

/** Python-compatible strict UTF-8: invalid bytes are an error, a BOM is kept as text. */
function strictDecoder(): TextDecoder {
  return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
}

/** Universal newlines: `\r\n` and a lone `\r` both read as `\n`. */
export function normalizeNewlines(text: string): string {
  return text.replace(/\r\n?/g, '\n');
}

/** A whole text file, strictly decoded, newlines normalised. */
export async function readWholeText(hostPath: string, shown: string): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = await readFile(hostPath);
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
 * not valid UTF-8 does not matter if it is never reached. A range past the end gives `""`.
 */
export async function readLineRange(
  hostPath: string,
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
      if (lineNo >= start) lines.push(current + text.slice(from, m.index));
      current = '';
      lineNo++;
      if (lineNo > end) done = true;
      from = m.index + m[0].length;
      if (m[0] === '\r' && from === text.length) pendingCR = true;
    }
    if (!done && lineNo >= start) current += text.slice(from);
  };

  const stream = createReadStream(hostPath, { highWaterMark: 64 * 1024 });
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

import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { TextDecoder } from 'node:util';
import { ConfigError } from '../errors/errors.js';
import type { ConfigIssue } from '../errors/errors.js';
import { MAX_CONFIG_BYTES, tooLargeIssue } from './config-yaml.js';

function unreadable(shown: string, issue: ConfigIssue, cause?: unknown): ConfigError {
  return new ConfigError(
    [issue],
    `Cannot read sbx configuration file ${shown}`,
    cause === undefined ? {} : { cause },
  );
}

function errorCode(err: unknown): string {
  return String((err as { code?: unknown }).code ?? err);
}

/** Reads at most `limit` bytes; a longer file shows as `limit` bytes read plus one. */
async function readAtMost(handle: FileHandle, limit: number): Promise<Buffer> {
  const buffer = Buffer.alloc(limit + 1);
  let filled = 0;
  while (filled < buffer.length) {
    const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}

/**
 * The text of a configuration file, or a `ConfigError` naming the file. The file is opened
 * without blocking and must be a regular file (a FIFO would hang the start forever, a device such
 * as `/dev/zero` never ends); at most `MAX_CONFIG_BYTES` are read, whatever its size says (it may
 * grow, and `/proc` files say 0); the bytes must be UTF-8 (no silent replacement characters).
 */
export async function readConfigFile(file: string | URL, shown: string): Promise<string> {
  let handle: FileHandle;
  try {
    handle = await open(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (err) {
    const code = errorCode(err);
    const message = code === 'ENOENT' ? 'file not found' : `cannot read file (${code})`;
    throw unreadable(shown, { path: '', message }, err);
  }
  try {
    let bytes: Buffer;
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) throw unreadable(shown, { path: '', message: 'not a regular file' });
      if (stats.size > MAX_CONFIG_BYTES) throw unreadable(shown, tooLargeIssue(stats.size));
      bytes = await readAtMost(handle, MAX_CONFIG_BYTES);
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      throw unreadable(shown, { path: '', message: `cannot read file (${errorCode(err)})` }, err);
    }
    if (bytes.length > MAX_CONFIG_BYTES) throw unreadable(shown, tooLargeIssue(bytes.length));
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch (err) {
      throw unreadable(shown, { path: '', message: 'not valid UTF-8' }, err);
    }
  } finally {
    await handle.close();
  }
}

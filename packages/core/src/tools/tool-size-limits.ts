import { Buffer } from 'node:buffer';
import { effectiveWriteFileMaxBytes, type ToolConfig } from './tool-config.js';

/**
 * The most one tool call may write into a file or add to one, in UTF-8 bytes, whatever the
 * configuration (16 MiB): no model writes that much in one call, and past it a single call could
 * make the gateway hold hundreds of megabytes (a `replace_all` multiplies `new_str` by the number
 * of occurrences). A `write_file_max_bytes` of 0 or below lifts the configured limit to this one.
 */
export const MAX_TOOL_WRITE_BYTES = 16 * 1024 * 1024;

/**
 * The single-call byte limit every writing tool checks before it works: `write_file` content
 * (append included), `str_replace`'s `old_str` and `new_str`, and what one `str_replace` adds to a
 * file. The configured limit (`writeFileMaxBytes`, else `SBX_WRITE_FILE_MAX_BYTES`, default
 * 81920), at most `MAX_TOOL_WRITE_BYTES`.
 */
export function singleCallWriteLimit(config: Pick<ToolConfig, 'writeFileMaxBytes'>): number {
  const configured = effectiveWriteFileMaxBytes(config);
  return configured > 0 ? Math.min(configured, MAX_TOOL_WRITE_BYTES) : MAX_TOOL_WRITE_BYTES;
}

/** UTF-8 length of `text`, without encoding it. */
export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

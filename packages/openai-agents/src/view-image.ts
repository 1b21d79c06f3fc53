import {
  InvalidArgumentError,
  ensureSandboxInitialized,
  runToolInvocation,
  type ToolContext,
} from '@sbx/core';
import { guardFileToolPath } from '@sbx/core/internal';
import type { ToolOutputImage } from '@openai/agents';

/** Largest image `view_image` returns: the SDK's own bound (its local client's 10 MB). */
export const MAX_VIEW_IMAGE_BYTES = 10 * 1024 * 1024;

/** The formats recognised by their first bytes; anything else is refused, SVG included. */
const SIGNATURES: readonly (readonly [string, readonly (number | undefined)[]])[] = [
  ['image/png', [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
  ['image/jpeg', [0xff, 0xd8, 0xff]],
  ['image/gif', [0x47, 0x49, 0x46, 0x38]],
  // RIFF....WEBP
  [
    'image/webp',
    [0x52, 0x49, 0x46, 0x46, undefined, undefined, undefined, undefined, 0x57, 0x45, 0x42, 0x50],
  ],
];

/** The image type the bytes start with, or undefined. */
export function imageMediaType(bytes: Uint8Array): string | undefined {
  for (const [type, signature] of SIGNATURES) {
    if (signature.every((b, i) => b === undefined || bytes[i] === b)) return type;
  }
  return undefined;
}

/**
 * `view_image`: a PNG, JPEG, GIF or WebP file where `read_file` may read, as the SDK's image
 * output. The download is bounded by the provider's own cap on one file before this check; past
 * `MAX_VIEW_IMAGE_BYTES`, or in another format, it is refused in the words the SDK reports to the
 * model ("exceeds the 10 MB limit", "not a supported image").
 */
export function viewImage(context: ToolContext, path: string): Promise<ToolOutputImage> {
  return runToolInvocation(context, async () => {
    const sandbox = await ensureSandboxInitialized(context);
    await guardFileToolPath(context, sandbox, path, 'read');
    const bytes = await sandbox.downloadFile(path);
    if (bytes.byteLength > MAX_VIEW_IMAGE_BYTES) {
      throw new InvalidArgumentError(`Image file exceeds the 10 MB limit: ${path}`);
    }
    const mediaType = imageMediaType(bytes);
    if (mediaType === undefined) {
      throw new InvalidArgumentError(`${path} is not a supported image (PNG, JPEG, GIF, WebP)`);
    }
    return { type: 'image', image: { data: Uint8Array.from(bytes), mediaType } };
  });
}

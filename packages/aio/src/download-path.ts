import { SandboxPermissionError } from '@sbx/core';
import { VIRTUAL_PATH_PREFIX } from '@sbx/core/internal';
import type { Logger } from '@sbx/core';

/** Largest file `downloadFile` returns: 100 MiB (exactly 100 MiB is allowed). */
export const MAX_DOWNLOAD_BYTES = 100 * 1024 * 1024;

/**
 * Refuses a download path before any request: a `..` segment anywhere (after turning `\` into
 * `/`), or a path outside `/mnt/user-data`. Downloads serve uploads and outputs to the gateway;
 * nothing else in the container is the user's to fetch.
 */
export function checkDownloadPath(path: string, logger: Logger): void {
  const normalized = path.replace(/\\/g, '/');
  if (normalized.split('/').some((segment) => segment === '..')) {
    throw new SandboxPermissionError(`Access denied: path traversal detected in '${path}'`, {
      path,
      operation: 'download',
    });
  }
  const relative = normalized.replace(/^\/+/, '');
  const root = VIRTUAL_PATH_PREFIX.slice(1);
  if (relative !== root && !relative.startsWith(`${root}/`)) {
    logger.error('Refused download outside allowed directory', { path });
    throw new SandboxPermissionError(
      `Access denied: path must be under '${VIRTUAL_PATH_PREFIX}': '${path}'`,
      { path, operation: 'download' },
    );
  }
}

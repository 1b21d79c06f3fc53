import { InvalidArgumentError } from '@sbx/core';
import { assertSandboxFilePath } from '@sbx/core/provider-kit';

/**
 * Checks a path before it reaches the remote: non-empty, no `..` segment (also in the `\` form,
 * which some tools normalise to `/`), and absolute. The remote has no notion of the caller's working
 * directory, so a relative path would silently resolve against execd's; it is refused instead.
 *
 * @throws InvalidArgumentError for an empty or relative path
 * @throws SandboxPermissionError for a traversal
 */
export function checkRemotePath(path: string): void {
  assertSandboxFilePath(path);
  if (!path.startsWith('/')) {
    throw new InvalidArgumentError(
      `path must be absolute in an OpenSandbox sandbox, got '${path}'`,
    );
  }
}

import {
  InvalidArgumentError,
  SandboxFileError,
  ensureSandboxInitialized,
  fileOperationLock,
  runToolInvocation,
  type ToolContext,
} from '@sbx/core';
import { guardFileToolPath, normalizeToolPath } from '@sbx/core/internal';
import { posix } from 'node:path';

/** The environment variable the removal command reads its path from (never composed into it). */
const PATH_VARIABLE = 'SBX_APPLY_PATCH_DELETE';

/**
 * Removes one regular file of the workspace for `apply_patch` (a delete, or the old name of a
 * move). sbx's file API has no removal, so this runs `rm` in the sandbox — with the rights the
 * shell capability already gives the agent, nothing more — after the write check `write_file`
 * makes: the path must lie in `workspaceRoot`, and it reaches the command as a relative path in an
 * environment variable, never as part of the command line. `rm` without `-r` or `-f` refuses a
 * directory and a missing file.
 *
 * @throws InvalidArgumentError for a path outside the workspace, SandboxFileError when `rm` fails
 */
export function removeWorkspaceFile(
  context: ToolContext,
  workspaceRoot: string,
  path: string,
): Promise<void> {
  const relative = posix.relative(workspaceRoot, path);
  if (relative === '' || relative.startsWith('..') || posix.isAbsolute(relative)) {
    throw new InvalidArgumentError(`apply_patch removes files under ${workspaceRoot} only`);
  }
  return runToolInvocation(context, async () => {
    const sandbox = await ensureSandboxInitialized(context);
    await guardFileToolPath(context, sandbox, path, 'write');
    await fileOperationLock.runExclusive(sandbox.id, normalizeToolPath(path), async () => {
      const result = await sandbox.exec(`rm -- "./$${PATH_VARIABLE}"`, {
        cwd: workspaceRoot,
        env: { [PATH_VARIABLE]: relative },
      });
      if (result.exitCode !== 0) {
        const reason = result.stderr.trim().split('\n').at(-1)?.slice(0, 300) ?? '';
        throw new SandboxFileError(`cannot delete ${path}: ${reason || 'rm failed'}`, {
          path,
          operation: 'delete',
        });
      }
    });
  });
}

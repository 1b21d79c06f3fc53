import path from 'node:path';
import { InvalidArgumentError } from '../errors/errors.js';
import type { SkillCategory, ThreadDataPaths } from './virtual-paths.js';

/**
 * Where a host-backed provider keeps per-user and per-thread data below its base directory:
 *
 * ```
 * <base>/skills_view/public/                                   shared public skills view
 * <base>/users/<user>/skills_view/{custom,legacy,integrations}/ shared per-user skills views
 * <base>/users/<user>/threads/<thread>/user-data/{workspace,uploads,outputs}/
 * <base>/users/<user>/threads/<thread>/acp-workspace/
 * <base>/users/<user>/threads/<thread>/skills_view/            thread view of a policy-scoped run
 * ```
 *
 * User and thread ids become directory names, so each must be one safe path segment; anything that
 * could climb out of `<base>/users` (or out of the user's own directory) is refused up front.
 */
export interface ThreadLayout extends Required<ThreadDataPaths> {
  readonly threadDir: string;
  readonly userDataPath: string;
  /** Single skills root of a policy-scoped run (categories below it). */
  readonly threadSkillsViewPath: string;
}

const MAX_SEGMENT_LENGTH = 255;

/**
 * Throws `InvalidArgumentError` unless `value` is usable as one directory name: non-empty, at most
 * 255 characters, not `.` or `..`, and free of `/`, `\`, NUL and other control characters. User
 * ids additionally may not contain `:`, because sandbox ids like `local:<user>:<thread>` split at
 * the first colon.
 */
export function assertSafePathSegment(kind: 'userId' | 'threadId', value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidArgumentError(`Invalid ${kind}: must be a non-empty string`);
  }
  if (value.length > MAX_SEGMENT_LENGTH) {
    throw new InvalidArgumentError(`Invalid ${kind}: longer than ${MAX_SEGMENT_LENGTH} characters`);
  }
  if (value === '.' || value === '..') {
    throw new InvalidArgumentError(`Invalid ${kind}: '${value}' is not a directory name`);
  }
  // eslint-disable-next-line no-control-regex
  if (/[/\\\u0000-\u001f\u007f]/.test(value)) {
    throw new InvalidArgumentError(
      `Invalid ${kind}: must not contain '/', '\\', NUL or control characters`,
    );
  }
  if (kind === 'userId' && value.includes(':')) {
    throw new InvalidArgumentError(`Invalid userId: must not contain ':'`);
  }
  return value;
}

export function userDir(baseDir: string, userId: string): string {
  return path.join(baseDir, 'users', assertSafePathSegment('userId', userId));
}

export function threadLayout(baseDir: string, userId: string, threadId: string): ThreadLayout {
  const threadDir = path.join(
    userDir(baseDir, userId),
    'threads',
    assertSafePathSegment('threadId', threadId),
  );
  const userDataPath = path.join(threadDir, 'user-data');
  return {
    threadDir,
    userDataPath,
    workspacePath: path.join(userDataPath, 'workspace'),
    uploadsPath: path.join(userDataPath, 'uploads'),
    outputsPath: path.join(userDataPath, 'outputs'),
    acpWorkspacePath: path.join(threadDir, 'acp-workspace'),
    threadSkillsViewPath: path.join(threadDir, 'skills_view'),
  };
}

/** Host directory of a shared skills view category (`public` is global, the others per user). */
export function sharedSkillsViewPath(
  baseDir: string,
  userId: string,
  category: SkillCategory,
): string {
  return category === 'public'
    ? path.join(baseDir, 'skills_view', 'public')
    : path.join(userDir(baseDir, userId), 'skills_view', category);
}

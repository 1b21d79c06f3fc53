import path from 'node:path';
import { assertSafePathSegment } from '../identity/thread-id-rules.js';
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
 * User and thread ids become directory names, so each must be one safe path segment (the id rule of
 * `identity/thread-id-rules.ts`); anything that could climb out of `<base>/users` (or out of the
 * user's own directory) is refused up front.
 */
export interface ThreadLayout extends Required<ThreadDataPaths> {
  readonly threadDir: string;
  readonly userDataPath: string;
  /** Single skills root of a policy-scoped run (categories below it). */
  readonly threadSkillsViewPath: string;
}

// The id rule lives with the identities it protects; ids become directory names here.
export { assertSafePathSegment };

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

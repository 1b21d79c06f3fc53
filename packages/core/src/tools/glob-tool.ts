import { fileToolPathRefusal, maskHostPaths } from './local-sandbox-guard.js';
import { GLOB_RESULT_LIMIT, effectiveResultLimit, resolveToolConfig } from './tool-config.js';
import type { ToolContext } from './tool-context.js';
import { partialOf } from '../errors/error-inspection.js';
import type { GlobResult } from '../contract/sandbox.js';
import { runToolInvocation } from './tool-invocation.js';
import { sandboxForTool } from './tool-sandbox.js';
import { parseToolInput, type GlobInput } from './tool-schemas.js';
import { failureCodeOf, toolFailure } from './tool-result.js';
import { searchFailure } from './search-tool-failure.js';

export const GLOB_TRUNCATED_NOTICE =
  'Results truncated. Narrow the path or pattern to see fewer matches.';

export function formatGlobResult(
  root: string,
  paths: readonly string[],
  truncated: boolean,
): string {
  if (paths.length === 0) return `No files matched under ${root}`;
  const lines = [
    `Found ${paths.length} ${paths.length === 1 ? 'path' : 'paths'} under ${root}${truncated ? ` (showing first ${paths.length})` : ''}`,
    ...paths.map((p, i) => `${i + 1}. ${p}`),
  ];
  if (truncated) lines.push(GLOB_TRUNCATED_NOTICE);
  return lines.join('\n');
}

/** `glob`: paths below a directory matching a pattern, bounded by the effective result limit. */
export function globTool(context: ToolContext, input: GlobInput): Promise<string> {
  return runToolInvocation(context, async () => {
    const parsed = parseToolInput('glob', input);
    if (!parsed.ok) return parsed.error;
    const args = parsed.value;
    const config = resolveToolConfig(context.config);
    const acquired = await sandboxForTool(context);
    if (!acquired.ok) return acquired.error;
    const sandbox = acquired.sandbox;
    const refusal = await fileToolPathRefusal(context, sandbox, args.path, 'read');
    if (refusal) return maskHostPaths(context, sandbox, refusal);
    let result: string;
    try {
      const maxResults = effectiveResultLimit(
        args.max_results,
        config.globMaxResults,
        GLOB_RESULT_LIMIT,
      );
      const found = await sandbox.glob(args.path, args.pattern, {
        includeDirs: args.include_dirs,
        maxResults,
      });
      result = formatGlobResult(args.path, found.paths, found.truncated);
    } catch (err) {
      const partial = partialOf<GlobResult>(err);
      if (partial) {
        result = toolFailure(
          failureCodeOf(err),
          `Error: ${(err as Error).message}\n${formatGlobResult(args.path, partial.paths, true)}`,
        );
      } else {
        result = searchFailure(err, args.path, 'searching paths');
      }
    }
    return maskHostPaths(context, sandbox, result);
  });
}

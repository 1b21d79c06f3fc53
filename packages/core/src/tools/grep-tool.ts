import { InvalidArgumentError, isSbxError } from '../errors/errors.js';
import type { GrepMatch, GrepOptions, GrepResult } from '../contract/sandbox.js';
import { fileToolPathRefusal, maskHostPaths } from './local-sandbox-guard.js';
import { GREP_RESULT_LIMIT, effectiveResultLimit, resolveToolConfig } from './tool-config.js';
import type { ToolContext } from './tool-context.js';
import { partialOf } from '../errors/error-inspection.js';
import { runToolInvocation } from './tool-invocation.js';
import { sandboxForTool } from './tool-sandbox.js';
import { parseToolInput, type GrepInput } from './tool-schemas.js';
import { ToolErrorCode, failureCodeOf, toolFailure } from './tool-result.js';
import { searchFailure } from './search-tool-failure.js';

export const GREP_TRUNCATED_NOTICE = 'Results truncated. Narrow the path or add a glob filter.';

export function formatGrepResult(
  root: string,
  matches: readonly GrepMatch[],
  truncated: boolean,
): string {
  if (matches.length === 0) return `No matches found under ${root}`;
  const lines = [
    `Found ${matches.length} ${matches.length === 1 ? 'match' : 'matches'} under ${root}${truncated ? ` (showing first ${matches.length})` : ''}`,
    ...matches.map((m) => `${m.path}:${m.lineNumber}: ${m.line}`),
  ];
  if (truncated) lines.push(GREP_TRUNCATED_NOTICE);
  return lines.join('\n');
}

const INVALID_REGEX_PREFIX = 'Invalid regex pattern';

/** `grep`: matching lines of one file or of a directory tree. */
export function grepTool(context: ToolContext, input: GrepInput): Promise<string> {
  return runToolInvocation(context, async () => {
    const parsed = parseToolInput('grep', input);
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
      const options: GrepOptions = {
        literal: args.literal,
        caseSensitive: args.case_sensitive,
        maxResults: effectiveResultLimit(
          args.max_results,
          config.grepMaxResults,
          GREP_RESULT_LIMIT,
        ),
      };
      if (args.glob) options.glob = args.glob;
      const found = await sandbox.grep(args.path, args.pattern, options);
      result = formatGrepResult(args.path, found.matches, found.truncated);
    } catch (err) {
      const partial = partialOf<GrepResult>(err);
      if (partial) {
        result = toolFailure(
          failureCodeOf(err),
          `Error: ${(err as Error).message}\n${formatGrepResult(args.path, partial.matches, true)}`,
        );
      } else if (
        err instanceof InvalidArgumentError ||
        (isSbxError(err) && err.code === InvalidArgumentError.CODE)
      ) {
        // Sandboxes compile the pattern before any I/O and report a bad one as INVALID_ARGUMENT.
        result = toolFailure(
          ToolErrorCode.INVALID_PATTERN,
          err.message.startsWith(INVALID_REGEX_PREFIX)
            ? `Error: ${err.message}`
            : `Error: ${INVALID_REGEX_PREFIX}: ${err.message}`,
        );
      } else {
        result = searchFailure(err, args.path, 'searching file contents');
      }
    }
    return maskHostPaths(context, sandbox, result);
  });
}

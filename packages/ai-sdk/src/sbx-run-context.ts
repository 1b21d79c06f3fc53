import { InvalidArgumentError } from '@sbx/core';
import type { FlexibleSchema } from 'ai';
import type { RunIdentity } from '@sbx/core';

/**
 * The per-call tool context the sbx tools read: the conversation's thread and user. Each falls
 * back to the one the tool set was created with.
 */
export interface SbxRunContext {
  readonly threadId?: string | undefined;
  readonly userId?: string | undefined;
}

type Issue = { readonly message: string; readonly path?: readonly PropertyKey[] };

function shapeIssues(value: object): Issue[] {
  const issues: Issue[] = [];
  for (const key of ['threadId', 'userId'] as const) {
    const field: unknown = (value as Record<string, unknown>)[key];
    if (field !== undefined && typeof field !== 'string') {
      issues.push({ message: `${key} must be a string`, path: [key] });
    }
  }
  return issues;
}

/**
 * The tools' `contextSchema`: a Standard Schema of `SbxRunContext` (no context reads as `{}`),
 * checking the shape only (the ids pass sbx's id rule when a call uses them).
 */
export const sbxRunContextSchema = {
  '~standard': {
    version: 1,
    vendor: 'sbx',
    validate: (value: unknown) => {
      if (value === undefined || value === null) return { value: {} };
      if (typeof value !== 'object' || Array.isArray(value)) {
        return { issues: [{ message: 'expected { threadId?: string, userId?: string }' }] };
      }
      const issues = shapeIssues(value);
      if (issues.length > 0) return { issues };
      const { threadId, userId } = value as SbxRunContext;
      return { value: { threadId, userId } };
    },
  },
} as unknown as FlexibleSchema<SbxRunContext>;

/**
 * The identity a call's options carry: the tool's `context` (ai 7, `toolsContext` of
 * `generateText` / `streamText`), else `experimental_context` (how ai 6 passes one context to
 * every tool), read when it is an object.
 *
 * @throws InvalidArgumentError when its `threadId` or `userId` is there but not a string
 */
export function runIdentityOf(options: {
  readonly context?: unknown;
  readonly experimental_context?: unknown;
}): RunIdentity | undefined {
  const value = options.context ?? options.experimental_context;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const issues = shapeIssues(value);
  if (issues.length > 0) {
    throw new InvalidArgumentError(`sbx tool context: ${issues.map((i) => i.message).join('; ')}`);
  }
  const { threadId, userId } = value as SbxRunContext;
  return { threadId, userId };
}

/**
 * The `toolsContext` that gives every tool of `tools` the same thread and user:
 *
 *     await generateText({ model, tools, toolsContext: sbxToolsContext(tools, { threadId }) });
 */
export function sbxToolsContext<T extends object>(
  tools: T,
  context: SbxRunContext,
): { [K in keyof T]: SbxRunContext } {
  const out = {} as { [K in keyof T]: SbxRunContext };
  for (const name of Object.keys(tools) as (keyof T)[]) out[name] = context;
  return out;
}

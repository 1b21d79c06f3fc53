import type { z } from 'zod';
import { lazily, zod } from '../config/zod-runtime.js';
import type { Zod } from '../config/zod-runtime.js';
import { MAX_GLOB_PATTERN_LENGTH } from '../search/glob-match.js';
import { MAX_PATH_BYTES } from '../paths/path-limits.js';
import { ToolErrorCode, toolFailure } from './tool-result.js';

/**
 * Longest shell command accepted, in UTF-8 bytes: Linux refuses a longer single argument
 * (`MAX_ARG_STRLEN`) to `sh -c` anyway, so past it only a clear error is useful.
 */
export const MAX_COMMAND_BYTES = 128 * 1024;
/** Longest wait a yielded bash call or a process tool may ask for (10 minutes). */
export const MAX_YIELD_TIME_MS = 600_000;
/** Longest text one process_write sends. */
export const MAX_PROCESS_TOOL_INPUT_CHARS = 64 * 1024;
/** Longest grep pattern accepted, in characters. */
export const MAX_PATTERN_LENGTH = 4096;
const byteLength = (value: string) => Buffer.byteLength(value, 'utf8');

/**
 * Model-facing input schemas of the seven sandbox tools. Field names are the wire contract with the
 * model (snake_case). Every tool takes an optional `description`: a short human-readable progress
 * label for UIs. Execution never depends on it.
 */
function buildToolSchemas(z: Zod) {
  const description = z
    .string()
    .default('')
    .describe(
      'Short human-readable label of what this call does, shown to the user as progress. Optional; it does not affect execution.',
    );

  const nonBlank = (what: string, max?: number) =>
    (max === undefined ? z.string() : z.string().max(max)).refine(
      (value) => value.trim().length > 0,
      { message: `${what} must not be empty` },
    );

  const virtualPath = (what: string) =>
    nonBlank('path', MAX_PATH_BYTES)
      .refine(
        (value) => value.length * 3 <= MAX_PATH_BYTES || byteLength(value) <= MAX_PATH_BYTES,
        {
          message: `must be at most ${MAX_PATH_BYTES} bytes`,
          abort: true,
        },
      )
      .refine((value) => !value.includes('\0'), { message: 'must not contain a NUL byte' })
      .describe(`Absolute virtual path of the ${what}, e.g. /mnt/user-data/workspace/notes.md.`);

  const bashInputSchema = z.object({
    description,
    command: nonBlank('command')
      .refine((value) => byteLength(value) <= MAX_COMMAND_BYTES, {
        message: `must be at most ${MAX_COMMAND_BYTES} bytes`,
      })
      .describe(
        'The shell command to run. It starts in /mnt/user-data/workspace. Start long-lived processes (servers, watchers) in the background with output redirected to a file.',
      ),
    yield_time_ms: z
      .number()
      .int()
      .min(0)
      .max(MAX_YIELD_TIME_MS)
      .nullish()
      .describe(
        'Return after this many milliseconds even if the command is still running: its output so far and a process_id, with which process_output, process_write and process_kill reach it later. Omit to wait for the command to finish.',
      ),
  });

  const processId = z
    .string()
    .min(1)
    .max(64)
    .describe('The process_id a yielded bash call returned (see process_list).');
  const waitMs = (what: string) =>
    z.number().int().min(0).max(MAX_YIELD_TIME_MS).nullish().describe(what);

  const processOutputInputSchema = z.object({
    description,
    process_id: processId,
    wait_ms: waitMs(
      'Wait up to this many milliseconds for the process to end before reading (default 0: read at once).',
    ),
  });

  const processWriteInputSchema = z.object({
    description,
    process_id: processId,
    input: z
      .string()
      .max(MAX_PROCESS_TOOL_INPUT_CHARS)
      .describe('Text written to the process standard input; end it with "\\n" to press Enter.'),
    wait_ms: waitMs(
      'Wait up to this many milliseconds for the process to answer or end before reading its new output (default 1000).',
    ),
  });

  const processKillInputSchema = z.object({
    description,
    process_id: processId,
    signal: z
      .enum(['SIGTERM', 'SIGKILL', 'SIGINT', 'SIGHUP'])
      .default('SIGTERM')
      .describe('The signal to send (default SIGTERM; SIGKILL when it does not stop).'),
  });

  const processListInputSchema = z.object({ description });

  const lsInputSchema = z.object({
    description,
    path: virtualPath('directory to list'),
  });

  const globInputSchema = z.object({
    description,
    pattern: nonBlank('pattern', MAX_GLOB_PATTERN_LENGTH).describe(
      'Glob pattern relative to `path`. Without `/` it matches file names at any depth (`*.py`); with `/` it matches the whole path below `path`, so `src/*.ts` finds .ts files directly inside `path`/src and `**/src/*.ts` those inside any `src` directory.',
    ),
    path: virtualPath('directory to search below'),
    include_dirs: z
      .boolean()
      .default(false)
      .describe('Also return matching directories, not only files.'),
    max_results: z
      .number()
      .int()
      .default(200)
      .describe('Maximum number of paths to return (at most 1000; the operator may cap it lower).'),
  });

  const grepInputSchema = z.object({
    description,
    pattern: nonBlank('pattern', MAX_PATTERN_LENGTH).describe(
      'Regular expression searched line by line (case-insensitive unless case_sensitive is true).',
    ),
    path: virtualPath('file to search, or directory to search recursively'),
    glob: z
      .string()
      .max(MAX_GLOB_PATTERN_LENGTH)
      .nullish()
      .describe('Only search files whose path matches this glob pattern, e.g. `*.py`.'),
    literal: z
      .boolean()
      .default(false)
      .describe('Treat `pattern` as plain text instead of a regular expression.'),
    case_sensitive: z.boolean().default(false).describe('Match letter case exactly.'),
    max_results: z
      .number()
      .int()
      .default(100)
      .describe(
        'Maximum number of matching lines to return (at most 500; the operator may cap it lower).',
      ),
  });

  const readFileInputSchema = z.object({
    description,
    path: virtualPath('file to read'),
    start_line: z
      .number()
      .int()
      .nullish()
      .describe('First line to read, 1-based and inclusive. Omit to start at the beginning.'),
    end_line: z
      .number()
      .int()
      .nullish()
      .describe('Last line to read, 1-based and inclusive. Omit to read to the end.'),
  });

  const writeFileInputSchema = z.object({
    description,
    path: virtualPath('file to write'),
    content: z.string().describe('The text to write.'),
    append: z
      .boolean()
      .default(false)
      .describe(
        'Add `content` at the end of the file instead of replacing the file. Creates the file if it is missing.',
      ),
  });

  const strReplaceInputSchema = z.object({
    description,
    path: virtualPath('file to edit'),
    old_str: z
      .string()
      .describe(
        'The exact text to replace, including whitespace and indentation. It must occur exactly once unless replace_all is true.',
      ),
    new_str: z.string().describe('The replacement text.'),
    replace_all: z
      .boolean()
      .default(false)
      .describe('Replace every occurrence of `old_str` instead of requiring a unique match.'),
  });

  return {
    bash: bashInputSchema,
    ls: lsInputSchema,
    glob: globInputSchema,
    grep: grepInputSchema,
    read_file: readFileInputSchema,
    write_file: writeFileInputSchema,
    str_replace: strReplaceInputSchema,
    process_output: processOutputInputSchema,
    process_write: processWriteInputSchema,
    process_kill: processKillInputSchema,
    process_list: processListInputSchema,
  } as const;
}

type ToolSchemas = ReturnType<typeof buildToolSchemas>;

/** The seven schemas, built on first use (see `zod()`). */
export const toolInputSchemas: () => ToolSchemas = lazily(() => buildToolSchemas(zod()));

export type BashInput = z.input<ToolSchemas['bash']>;
export type LsInput = z.input<ToolSchemas['ls']>;
export type GlobInput = z.input<ToolSchemas['glob']>;
export type GrepInput = z.input<ToolSchemas['grep']>;
export type ReadFileInput = z.input<ToolSchemas['read_file']>;
export type WriteFileInput = z.input<ToolSchemas['write_file']>;
export type StrReplaceInput = z.input<ToolSchemas['str_replace']>;
export type ProcessOutputInput = z.input<ToolSchemas['process_output']>;
export type ProcessWriteInput = z.input<ToolSchemas['process_write']>;
export type ProcessKillInput = z.input<ToolSchemas['process_kill']>;
export type ProcessListInput = z.input<ToolSchemas['process_list']>;

export type ToolName = keyof ToolSchemas;

/** The seven tools offered by default (the reference's set). */
export const TOOL_NAMES: readonly ToolName[] = [
  'bash',
  'ls',
  'glob',
  'grep',
  'read_file',
  'write_file',
  'str_replace',
];

/**
 * The background-process tools, offered with bash's yield mode when a host opts in
 * (`processTools`): they reach what a yielded `bash` call left running.
 */
export const PROCESS_TOOL_NAMES: readonly ToolName[] = [
  'process_output',
  'process_write',
  'process_kill',
  'process_list',
];

/** Every tool `runTool` knows. */
export const ALL_TOOL_NAMES: readonly ToolName[] = [...TOOL_NAMES, ...PROCESS_TOOL_NAMES];

/**
 * The tool input schemas by name. Each property is a getter over `toolInputSchemas()`, so reading
 * one builds them (and loads zod) then, not when `@sbx/core` is imported.
 */
export const TOOL_INPUT_SCHEMAS: ToolSchemas = Object.freeze(
  Object.defineProperties(
    {},
    Object.fromEntries(
      ALL_TOOL_NAMES.map((name) => [
        name,
        { enumerable: true, get: () => toolInputSchemas()[name] },
      ]),
    ),
  ),
) as ToolSchemas;

export type ToolInputs = { [K in ToolName]: z.input<ToolSchemas[K]> };
export type ParsedToolInputs = { [K in ToolName]: z.output<ToolSchemas[K]> };

export function isToolName(value: unknown): value is ToolName {
  return typeof value === 'string' && (ALL_TOOL_NAMES as readonly string[]).includes(value);
}

/**
 * A top-level `null` argument means "omitted": strict function calling makes the model send every
 * field, optional ones as `null`, and a default-valued field (`description`, `include_dirs`) must
 * then take its default rather than fail as "expected string, received null".
 */
function withoutNulls(input: unknown): unknown {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return input;
  const entries = Object.entries(input as Record<string, unknown>);
  if (!entries.some(([, value]) => value === null)) return input;
  return Object.fromEntries(entries.filter(([, value]) => value !== null));
}

/**
 * Validates a tool call's arguments. On failure returns the model-facing error text naming every
 * bad field, so the model can correct the call.
 */
export function parseToolInput<K extends ToolName>(
  name: K,
  input: unknown,
): { ok: true; value: ParsedToolInputs[K] } | { ok: false; error: string } {
  const result = toolInputSchemas()[name].safeParse(withoutNulls(input ?? {}), {
    reportInput: true,
  });
  if (result.success) return { ok: true, value: result.data as ParsedToolInputs[K] };
  const problems = result.error.issues.map((issue) => {
    const field = issue.path.map(String).join('.');
    const message =
      issue.code === 'invalid_type' && issue.input === undefined
        ? 'required'
        : issue.message.replace(/^Invalid input: /, '');
    return field ? `${field}: ${message}` : message;
  });
  const error = `Error: Invalid arguments for ${name}: ${problems.join('; ')}`;
  return { ok: false, error: toolFailure(ToolErrorCode.INVALID_ARGUMENTS, error) };
}

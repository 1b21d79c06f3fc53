import { fileURLToPath } from 'node:url';
import type { z } from 'zod';
import type { SandboxConfig } from './config.js';
import { ConfigError } from '../errors/errors.js';
import type { ConfigIssue } from '../errors/errors.js';
import type { Env } from './config-input.js';
import {
  REFERENCE_FLAT_PROVIDER_KEYS,
  describeValue,
  normalizeSandboxInput,
} from './config-input.js';
import { closestKey } from './config-block.js';
import { readConfigFile } from './config-file.js';
import { parseConfigYaml } from './config-yaml.js';
import {
  createSandboxConfigSchema,
  sandboxConfigSchema,
  sandboxSectionInputSchema,
} from './config-section-schema.js';

export interface ParseSandboxConfigOptions {
  /** Environment for `$NAME` values and `SBX_HOME`. Default: `process.env`. */
  env?: Env;
  /** Base for a relative `base_dir`. Default: `process.cwd()`. */
  cwd?: string;
}

/** Where `loadSandboxConfig` reads from; a bare string is a file path unless it is YAML text. */
export type SandboxConfigSource = string | URL | { path: string | URL } | { yaml: string };

type ZodIssue = z.core.$ZodIssue;

function unknownKeyMessage(
  key: string,
  atSectionRoot: boolean,
  siblings: readonly string[],
): string {
  if (atSectionRoot) {
    const owners = Object.entries(REFERENCE_FLAT_PROVIDER_KEYS)
      .filter(([, keys]) => keys?.includes(key))
      .map(([block]) => block);
    if (owners.length > 0) {
      const where = owners.map((b) => `sandbox.${b}.${key}`).join(' or ');
      return `unknown key; in the reference layout this is a provider setting, in sbx it goes under ${where}`;
    }
  }
  const close = closestKey(key, siblings);
  return close ? `unknown key (did you mean "${close}"?)` : 'unknown key';
}

/** Keys the schema allows at `segments` (for did-you-mean), when that is a fixed object. */
function allowedKeysAt(segments: readonly PropertyKey[]): readonly string[] {
  let node: z.ZodType = sandboxSectionInputSchema();
  for (const seg of segments) {
    node = unwrap(node);
    const def = node._zod.def as {
      type: string;
      shape?: Record<string, z.ZodType>;
      element?: z.ZodType;
    };
    if (def.type === 'object' && def.shape && typeof seg === 'string' && def.shape[seg])
      node = def.shape[seg];
    else if (def.type === 'array' && def.element && typeof seg === 'number') node = def.element;
    else return [];
  }
  const def = unwrap(node)._zod.def as { type: string; shape?: Record<string, unknown> };
  return def.type === 'object' && def.shape ? Object.keys(def.shape) : [];
}

function unwrap(node: z.ZodType): z.ZodType {
  let n = node;
  for (;;) {
    const def = n._zod.def as { type: string; innerType?: z.ZodType; in?: z.ZodType };
    if (
      (def.type === 'optional' || def.type === 'default' || def.type === 'nullable') &&
      def.innerType
    ) {
      n = def.innerType;
    } else if (def.type === 'pipe' && def.in) n = def.in;
    else return n;
  }
}

const TYPE_WORDS: Readonly<Record<string, string>> = {
  object: 'a mapping',
  record: 'a mapping',
  array: 'a list',
};

function bound(issue: { inclusive?: boolean }, op: '>' | '<', value: unknown): string {
  return `${op}${issue.inclusive ? '=' : ''} ${String(value)}`;
}

function messageFor(issue: ZodIssue): string {
  const input = (issue as { input?: unknown }).input;
  switch (issue.code) {
    case 'invalid_type':
      return input === undefined
        ? `is required (${issue.expected})`
        : `expected ${TYPE_WORDS[issue.expected] ?? issue.expected}, got ${describeValue(input)}`;
    case 'too_small':
      if (issue.origin === 'string' && issue.minimum === 1) return 'must not be empty';
      return `must be ${bound(issue, '>', issue.minimum)}${input === undefined ? '' : `, got ${describeValue(input)}`}`;
    case 'too_big':
      return `must be ${bound(issue, '<', issue.maximum)}${input === undefined ? '' : `, got ${describeValue(input)}`}`;
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}, got ${describeValue(input)}`;
    case 'invalid_union':
      return `has an unsupported type (${describeValue(input)})`;
    default:
      return issue.message;
  }
}

function schemaIssues(
  issues: readonly ZodIssue[],
  userPath: (s: readonly (string | number)[]) => string,
): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  const segs = (p: readonly PropertyKey[]) => p.map((s) => (typeof s === 'symbol' ? String(s) : s));
  for (const issue of issues) {
    const at = segs(issue.path);
    if (issue.code === 'unrecognized_keys') {
      const siblings = allowedKeysAt(issue.path);
      for (const key of issue.keys) {
        out.push({
          path: userPath([...at, key]),
          message: unknownKeyMessage(key, at.length === 0, siblings),
        });
      }
    } else if (issue.code === 'invalid_key') {
      // A record key failed its check (e.g. an environment variable name): report the key itself.
      for (const inner of issue.issues) {
        out.push({
          path: userPath([...at, ...segs(inner.path)]),
          message: `key ${messageFor(inner)}`,
        });
      }
    } else {
      out.push({ path: userPath(at), message: messageFor(issue) });
    }
  }
  return out;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/**
 * Validates configuration given as an object: either the `sandbox:` section itself or a whole
 * document with a top-level `sandbox:` key. Returns a frozen camelCase `SandboxConfig`.
 *
 * @throws ConfigError listing every offending key path (snake_case, as written) and why
 */
export function parseSandboxConfig(
  input: unknown,
  options: ParseSandboxConfigOptions = {},
): SandboxConfig {
  return parseWithHeading(input, options, undefined);
}

function parseWithHeading(
  input: unknown,
  options: ParseSandboxConfigOptions,
  heading: string | undefined,
): SandboxConfig {
  const env = options.env ?? process.env;
  const normalized = normalizeSandboxInput(input, env);
  const schema =
    options.env || options.cwd ? createSandboxConfigSchema(options) : sandboxConfigSchema();
  const result = schema.safeParse(normalized.section, { reportInput: true });
  const issues = [...normalized.issues];
  if (!result.success) issues.push(...schemaIssues(result.error.issues, normalized.userPath));
  if (issues.length > 0 || !result.success) throw new ConfigError(issues, heading);
  return deepFreeze(result.data);
}

/**
 * Parses YAML text. Every refusal is a `ConfigError`: text over `MAX_CONFIG_BYTES`, syntax errors
 * and duplicate keys (with line and column), too many aliases, types sbx does not read.
 */
export function parseSandboxConfigYaml(
  text: string,
  options: ParseSandboxConfigOptions = {},
): SandboxConfig {
  return parseYamlWithHeading(text, options, undefined);
}

function parseYamlWithHeading(
  text: string,
  options: ParseSandboxConfigOptions,
  heading: string | undefined,
): SandboxConfig {
  return parseWithHeading(parseConfigYaml(text, heading), options, heading);
}

function isYamlText(s: string): boolean {
  return /[\r\n]/.test(s) || s.trimStart().startsWith('{');
}

/**
 * Loads configuration from a YAML file (read asynchronously) or YAML text. A string is YAML text
 * when it contains a line break or starts with `{`; otherwise it is a file path. Pass
 * `{ yaml }` / `{ path }` to say which explicitly.
 */
export async function loadSandboxConfig(
  source: SandboxConfigSource,
  options: ParseSandboxConfigOptions = {},
): Promise<SandboxConfig> {
  if (typeof source === 'object' && 'yaml' in source)
    return parseSandboxConfigYaml(source.yaml, options);
  if (typeof source === 'string' && isYamlText(source))
    return parseSandboxConfigYaml(source, options);
  const file = typeof source === 'string' || source instanceof URL ? source : source.path;
  const shown = file instanceof URL ? fileURLToPath(file) : file;
  const text = await readConfigFile(file, shown);
  return parseYamlWithHeading(text, options, `Invalid sbx configuration in ${shown}`);
}

import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import { ConfigError } from '../errors/errors.js';
import type { ConfigIssue } from '../errors/errors.js';
import { formatPath } from './config-input.js';

/**
 * Largest configuration accepted, as a file or as text, in UTF-8 bytes (1 MiB): a real file is a
 * few kilobytes, and the parser's time and memory grow with the text.
 */
export const MAX_CONFIG_BYTES = 1024 * 1024;

/**
 * Alias expansions one document may make. Anchors and merge keys of a deployment file stay far
 * below it; an alias bomb (each level a list of aliases of the level below) passes it at once.
 */
export const MAX_YAML_ALIAS_COUNT = 100;

// The YAML parser is loaded on the first parse, not with @sbx/core: most hosts configure sbx in
// code, and importing the parser costs tens of milliseconds of every process start.
const requireHere = createRequire(import.meta.url);
let yamlModule: typeof Yaml | undefined;
function yaml(): typeof Yaml {
  yamlModule ??= requireHere('yaml') as typeof Yaml;
  return yamlModule;
}

/** The issue of a configuration over `MAX_CONFIG_BYTES`. */
export function tooLargeIssue(bytes: number): ConfigIssue {
  return { path: '', message: `too large (${bytes} bytes, at most ${MAX_CONFIG_BYTES})` };
}

function utf8Length(text: string): number {
  // UTF-8 needs at most 3 bytes per UTF-16 unit, so short text needs no byte count.
  return text.length * 3 <= MAX_CONFIG_BYTES ? text.length : Buffer.byteLength(text, 'utf8');
}

/** Why `toJS` failed, said as a configuration problem. */
function conversionMessage(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  if (/excessive alias count/i.test(message)) {
    return `YAML: too many aliases (more than ${MAX_YAML_ALIAS_COUNT} alias expansions, as in an alias bomb)`;
  }
  if (err instanceof RangeError) {
    return `YAML: an alias refers to a node that contains it, or the document nests too deeply (${message})`;
  }
  return `YAML: ${message.split('\n')[0] ?? message}`;
}

/** What a YAML tag made of a value that is not plain data, said in the tag's words. */
function describeNonPlain(value: object): string {
  if (value instanceof Set) return 'a set (!!set)';
  if (value instanceof Map) return 'an ordered map (!!omap)';
  if (value instanceof Uint8Array) return 'binary data (!!binary)';
  if (value instanceof Date) return 'a timestamp (!!timestamp)';
  return `a ${value.constructor?.name ?? 'non-plain'} value`;
}

/**
 * Every place the converted document holds something other than mappings, lists and scalars
 * (YAML tags such as `!!set` or `!!binary`), a `__proto__` key, or itself (an alias inside its own
 * anchor converts to a cycle, on which every later walk would recurse until the stack overflows):
 * the schema would read a set as an empty mapping and drop a `__proto__` key without a word.
 * Iterative, each node entered once (aliases share nodes), so its cost is that of the document.
 */
function nonPlainIssues(root: unknown): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const done = new WeakSet<object>();
  const onPath = new WeakSet<object>();
  type Step = { value: unknown; at: (string | number)[] } | { leave: object };
  const stack: Step[] = [{ value: root, at: [] }];
  for (let step = stack.pop(); step; step = stack.pop()) {
    if ('leave' in step) {
      onPath.delete(step.leave);
      done.add(step.leave);
      continue;
    }
    const { value, at } = step;
    if (typeof value !== 'object' || value === null || done.has(value)) continue;
    if (onPath.has(value)) {
      issues.push({
        path: formatPath('', at),
        message: 'is an alias of a node that contains it (the document would be endless)',
      });
      continue;
    }
    const proto = Object.getPrototypeOf(value) as unknown;
    if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) {
      issues.push({
        path: formatPath('', at),
        message: `is ${describeNonPlain(value)}; sbx reads only mappings, lists and plain values`,
      });
      continue;
    }
    onPath.add(value);
    stack.push({ leave: value });
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], at: [...at, i] });
      continue;
    }
    for (const key of Object.keys(value).reverse()) {
      if (key === '__proto__') {
        issues.push({ path: formatPath('', [...at, key]), message: 'this key is not accepted' });
        continue;
      }
      stack.push({ value: (value as Record<string, unknown>)[key], at: [...at, key] });
    }
  }
  return issues;
}

/**
 * YAML text as plain data (mappings, lists, strings, numbers, booleans, null). Every way the text
 * can be refused is a `ConfigError` under `heading`: too large, a syntax error or duplicate key
 * (with line and column), too many aliases, an alias that cannot be resolved, or a value of a type
 * sbx does not read.
 */
export function parseConfigYaml(text: string, heading: string | undefined): unknown {
  const bytes = utf8Length(text);
  if (bytes > MAX_CONFIG_BYTES) throw new ConfigError([tooLargeIssue(bytes)], heading);
  // Merge keys (`<<: *base`) are common in deployment files and accepted by the reference loader.
  const doc = yaml().parseDocument(text, { merge: true, prettyErrors: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      doc.errors.map((e) => ({
        path: '',
        message: `YAML: ${e.message.split('\n')[0] ?? e.message}`,
      })),
      heading,
    );
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_YAML_ALIAS_COUNT });
  } catch (err) {
    throw new ConfigError([{ path: '', message: conversionMessage(err) }], heading, {
      cause: err,
    });
  }
  const issues = nonPlainIssues(value);
  if (issues.length > 0) throw new ConfigError(issues, heading);
  return value;
}

import {
  parseSandboxConfig,
  type ConfigIssue,
  type ParseSandboxConfigOptions,
  type SandboxConfig,
} from '@sbx/core';
import { configIssuesOf } from './command-result.js';

/**
 * Most rounds of dropping refused keys: each round drops at least one key of a document of at most
 * 1 MiB, and a refusal that drops nothing ends the search, so this only bounds a pathological file.
 */
const MAX_ROUNDS = 64;

/** One step of an issue path as core writes it: `.name` or `["odd key"]` (or `[0]`). */
function firstStep(path: string): { key: string; rest: string } | undefined {
  const ident = /^\.?([A-Za-z_][A-Za-z0-9_-]*)/.exec(path);
  if (ident) return { key: ident[1]!, rest: path.slice(ident[0].length) };
  const quoted = /^\[("(?:[^"\\]|\\.)*")\]/.exec(path);
  if (!quoted) return undefined;
  try {
    return { key: JSON.parse(quoted[1]!) as string, rest: path.slice(quoted[0].length) };
  } catch {
    return undefined;
  }
}

/**
 * Where in the document an issue's key was written: `['sandbox', key]` for a key of the sandbox
 * section (`sandbox.mounts[0].host_path` → `mounts`), `[key]` for a top-level key core reads
 * from outside it (`skills.path` → `skills`), `undefined` for the document as a whole.
 */
export function refusedKeyOf(path: string): readonly string[] | undefined {
  const first = firstStep(path);
  if (!first) return undefined;
  if (first.key !== 'sandbox') return [first.key];
  const second = firstStep(first.rest);
  return second ? ['sandbox', second.key] : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `document` without `keys`, and how many of them it had; copies only along the way. */
function withoutKeys(
  document: Record<string, unknown>,
  keys: readonly (readonly string[])[],
): { document: Record<string, unknown>; dropped: number } {
  const out: Record<string, unknown> = { ...document };
  // A document without a `sandbox` key is the section itself: its keys stand at the top.
  const hasSection = Object.prototype.hasOwnProperty.call(document, 'sandbox');
  const section = hasSection && isRecord(out.sandbox) ? { ...out.sandbox } : undefined;
  let dropped = 0;
  const drop = (from: Record<string, unknown>, key: string): void => {
    if (!Object.prototype.hasOwnProperty.call(from, key)) return;
    delete from[key];
    dropped++;
  };
  for (const key of keys) {
    if (key.length === 1) drop(out, key[0]!);
    else if (!hasSection) drop(out, key[1]!);
    else if (section) drop(section, key[1]!);
  }
  if (section) out.sandbox = section;
  return { document: out, dropped };
}

/**
 * The configuration `document` (parsed YAML) gives once the keys core refused are left out, so the
 * parts core passes on to other packages (provider blocks, `authorization`) are checked in the
 * same pass as core's own keys. `undefined` when no such configuration exists: the document as a
 * whole is refused (not a mapping), or a refusal names no key that could be left out.
 */
export function configWithoutRefusedKeys(
  document: unknown,
  issues: readonly ConfigIssue[],
  options: ParseSandboxConfigOptions,
): SandboxConfig | undefined {
  if (!isRecord(document)) return undefined;
  let current: Record<string, unknown> = document;
  let refused = issues;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const keys = refused.map((issue) => refusedKeyOf(issue.path));
    if (keys.length === 0 || keys.some((key) => key === undefined)) return undefined;
    const next = withoutKeys(current, keys as (readonly string[])[]);
    if (next.dropped === 0) return undefined;
    current = next.document;
    try {
      return parseSandboxConfig(current, options);
    } catch (err) {
      const found = configIssuesOf(err);
      if (!found) throw err;
      refused = found;
    }
  }
  return undefined;
}

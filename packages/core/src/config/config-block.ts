import type { ProviderBlockKey, SandboxConfig } from './config.js';
import { ConfigError, isSbxError, type ConfigIssue } from '../errors/errors.js';

/** Levenshtein distance, for did-you-mean on short config keys (never on agent input). */
export function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j] as number;
      row[j] = Math.min(
        (row[j] as number) + 1,
        (row[j - 1] as number) + 1,
        prev + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      prev = tmp;
    }
  }
  return row[b.length] as number;
}

/** The known key closest to `key` (at most two edits away), for "did you mean". */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  return known
    .map((candidate) => ({ candidate, distance: editDistance(key, candidate) }))
    .filter(({ distance }) => distance <= 2)
    .sort((x, y) => x.distance - y.distance)[0]?.candidate;
}

/**
 * One issue per key of a provider block that the provider does not know, worded as the top level's:
 * `unknown key (did you mean "template"?)`, else the known keys.
 */
export function unknownKeyIssues(
  blockPath: string,
  block: Readonly<Record<string, unknown>> | undefined,
  known: readonly string[],
): ConfigIssue[] {
  return Object.keys(block ?? {})
    .filter((key) => !known.includes(key))
    .map((key) => {
      const close = closestKey(key, known);
      return {
        path: `${blockPath}.${key}`,
        message: close
          ? `unknown key (did you mean "${close}"?)`
          : `unknown key (known: ${known.join(', ')})`,
      };
    });
}

/** The issues a settings resolver raises as a `ConfigError`; anything else is rethrown. */
export function collectConfigIssues(resolve: () => unknown): ConfigIssue[] {
  try {
    resolve();
    return [];
  } catch (err) {
    if (isSbxError(err) && err.code === ConfigError.CODE) {
      return [...((err as ConfigError).issues ?? [])];
    }
    throw err;
  }
}

/**
 * What a provider package exports as `validateConfigBlock`: every problem of its block (unknown
 * keys with did-you-mean, invalid values) as issues, without building the provider or touching
 * anything. `sbx config validate` calls it for every block the file has.
 */
export type ConfigBlockValidator = (
  config: SandboxConfig,
  env?: Readonly<Record<string, string | undefined>>,
) => readonly ConfigIssue[];

/** The package that owns each provider block (the one whose `validateConfigBlock` checks it). */
export const PROVIDER_BLOCK_PACKAGES: Readonly<
  Record<Exclude<ProviderBlockKey, 'provider_options'>, string>
> = {
  local: '@sbx/local',
  aio: '@sbx/aio',
  e2b: '@sbx/e2b',
  boxlite: '@sbx/boxlite',
  tenki: '@sbx/tenki',
  opensandbox: '@sbx/opensandbox',
  provisioner: '@sbx/provisioner',
};

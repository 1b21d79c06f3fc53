import { ConfigError } from '@sbx/core';
import type { ConfigIssue } from '@sbx/core';
import { z } from 'zod';
import { parseConfigYaml } from '@sbx/core/internal';

/** Which provider to build and what to pass its constructor. */
export interface AuthorizationProviderConfig {
  /**
   * `<npm package>#<ExportName>` (export defaults to the module's default export). Absent, or
   * `"@sbx/authz#RbacAuthorizationProvider"`, selects the built-in RBAC provider.
   */
  readonly use?: string | undefined;
  /** Passed verbatim as the provider's constructor argument (RBAC: `{ roles: ... }`). */
  readonly config: Readonly<Record<string, unknown>>;
}

/** The `authorization:` section, camelCase. Build it with `parseAuthorizationConfig` from YAML data. */
export interface AuthorizationConfig {
  /** Default false: every gate is a no-op and no provider is resolved. */
  readonly enabled: boolean;
  /** Default true: a provider that cannot decide means deny. False means allow (and a warning). */
  readonly failClosed: boolean;
  /** Default `"user"`: the role of a principal whose role is missing or empty. */
  readonly defaultRole: string;
  /** Required when `enabled` is true. */
  readonly provider?: AuthorizationProviderConfig | undefined;
}

export const DEFAULT_AUTHORIZATION_CONFIG: AuthorizationConfig = Object.freeze({
  enabled: false,
  failClosed: true,
  defaultRole: 'user',
});

const providerSchema = z
  .strictObject({
    use: z.string().trim().min(1, 'must be a non-empty string').optional(),
    config: z
      .record(z.string(), z.unknown())
      .nullish()
      .transform((v) => v ?? {}),
  })
  .transform((p): AuthorizationProviderConfig => ({
    ...(p.use === undefined ? {} : { use: p.use }),
    config: p.config,
  }));

/** Snake_case (YAML) input → camelCase `AuthorizationConfig`. */
export const authorizationConfigSchema = z
  .strictObject({
    enabled: z.boolean().default(false),
    fail_closed: z.boolean().default(true),
    default_role: z.string().trim().min(1, 'must be a non-empty string').default('user'),
    provider: providerSchema.nullish(),
  })
  .superRefine((c, ctx) => {
    if (c.enabled && !c.provider) {
      ctx.addIssue({
        code: 'custom',
        path: ['provider'],
        message:
          'authorization.enabled is true but no provider is configured; set authorization.provider (use + config)',
      });
    }
  })
  .transform((c): AuthorizationConfig => ({
    enabled: c.enabled,
    failClosed: c.fail_closed,
    defaultRole: c.default_role,
    ...(c.provider ? { provider: c.provider } : {}),
  }));

function formatPath(prefix: string, path: readonly PropertyKey[]): string {
  let out = prefix;
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out === '' ? String(seg) : `.${String(seg)}`;
  }
  return out;
}

function toIssues(error: z.ZodError, prefix: string): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const hint =
          key === 'fail_open'
            ? '; there is no fail_open key, write fail_closed: false'
            : key === 'failClosed' || key === 'defaultRole'
              ? '; configuration keys are snake_case'
              : '';
        issues.push({
          path: formatPath(prefix, [...issue.path, key]),
          message: `unknown key${hint}`,
        });
      }
      continue;
    }
    issues.push({ path: formatPath(prefix, issue.path), message: issue.message });
  }
  return issues;
}

/**
 * Validates the `authorization:` section as written in YAML (snake_case). `undefined`/`null` (a
 * config file without the section) gives the defaults, i.e. authorization disabled.
 *
 * @param keyPath prefix for issue paths in errors (default `authorization`)
 * @throws ConfigError listing every problem with its key path
 */
export function parseAuthorizationConfig(
  section: unknown,
  keyPath = 'authorization',
): AuthorizationConfig {
  const result = authorizationConfigSchema.safeParse(section ?? {});
  if (!result.success) {
    throw new ConfigError(toIssues(result.error, keyPath), 'Invalid authorization configuration');
  }
  return result.data;
}

/** Reads the `authorization` key of a whole application config document (parsed YAML/JSON). */
export function authorizationConfigFromDocument(document: unknown): AuthorizationConfig {
  if (document === undefined || document === null) return parseAuthorizationConfig(undefined);
  if (typeof document !== 'object' || Array.isArray(document)) {
    throw new ConfigError(
      [{ path: '', message: 'configuration document must be a mapping' }],
      'Invalid authorization configuration',
    );
  }
  return parseAuthorizationConfig((document as Record<string, unknown>).authorization);
}

/**
 * Parses YAML text of a whole application config and returns its authorization section. The text
 * is read by the same rules as the `sandbox:` section's (`parseConfigYaml`): at most 1 MiB, a
 * bounded number of alias expansions, plain data only, every refusal a `ConfigError`.
 */
export function parseAuthorizationConfigYaml(text: string): AuthorizationConfig {
  return authorizationConfigFromDocument(
    parseConfigYaml(text, 'Invalid authorization configuration'),
  );
}

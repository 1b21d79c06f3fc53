import { InvalidArgumentError } from '../errors/errors.js';

/**
 * Substrings that mark an environment variable name as secret-looking (checked on the upper-cased
 * name). `*PASS*` deliberately also catches `*_ASKPASS` helpers, `PGPASSFILE` and incidental names
 * such as `COMPASS_*`: stripping a benign variable is cheap, leaking a credential is not.
 */
export const SECRET_ENV_NAME_MARKERS: readonly string[] = Object.freeze([
  'KEY',
  'SECRET',
  'TOKEN',
  'PASS',
  'CREDENTIAL',
  'DSN',
]);

/**
 * Exact names that carry credentials without any marker substring (connection strings, PATs,
 * client auth, the SSH agent). Patterns beyond the markers: `*AUTH*`, `*WEBHOOK*`, `*_URI` and
 * `*_PWD` (but not `PWD` or `OLDPWD`, the shell's working directories), see `isSecretEnvName`.
 * There is intentionally no `*URL*` wildcard: benign service URLs are what skills rely on; a URL
 * carrying credentials (`scheme://user:pass@host`) is caught by its value instead.
 */
export const BLOCKED_ENV_NAMES: ReadonlySet<string> = new Set([
  'DATABASE_URL',
  'DATABASE_URI',
  'REDIS_URL',
  'MONGODB_URI',
  'MONGO_URL',
  'AMQP_URL',
  'RABBITMQ_URL',
  'POSTGRES_URL',
  'POSTGRESQL_URL',
  'MYSQL_URL',
  'CLICKHOUSE_URL',
  'CONNECTION_STRING',
  'CONN_STR',
  'GH_PAT',
  'GITHUB_PAT',
  'MYSQL_PWD',
  'REDISCLI_AUTH',
  'REDIS_AUTH',
  'PGSERVICEFILE',
  'SSH_AUTH_SOCK',
]);

/** Name patterns of the scrub that no marker substring covers (checked on the upper-cased name). */
const SECRET_NAME_PATTERNS: readonly RegExp[] = [/AUTH/, /WEBHOOK/, /_URI$/, /.+_PWD$/];

/** A value holding URL credentials: `scheme://user:password@` or `scheme://token@`. */
const CREDENTIAL_URL = /[a-z][a-z0-9+.-]*:\/\/[^\s/@]+@/i;

/**
 * The benign names the `allowlist` policy inherits, plus every `LC_*` locale variable. Anything
 * else a gateway process happens to carry stays out of the agent's commands.
 */
export const ALLOWED_ENV_NAMES: ReadonlySet<string> = new Set([
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LANGUAGE',
  'TERM',
  'COLORTERM',
  'NO_COLOR',
  'TZ',
  'TMPDIR',
  'TMP',
  'TEMP',
  'HOSTNAME',
  'VIRTUAL_ENV',
  'CONDA_PREFIX',
  'PYTHONIOENCODING',
  'PYTHONUNBUFFERED',
]);

/**
 * How a sandboxed subprocess inherits the host environment:
 * - `allowlist` (default): only `ALLOWED_ENV_NAMES`, `LC_*` and the names the configuration adds;
 *   fails safe, because a credential the list does not know about is simply not inherited.
 * - `scrub` (the reference's behaviour): everything except secret-looking names and values.
 */
export type EnvPolicyMode = 'allowlist' | 'scrub';
export const ENV_POLICY_MODES = ['allowlist', 'scrub'] as const;

/** Shortest injected value that output redaction replaces; shorter values collide with ordinary text. */
export const MIN_REDACTED_VALUE_LENGTH = 8;

/** What `redactSecrets` puts in place of an injected value. */
export const REDACTED_PLACEHOLDER = '[redacted]';

const POSIX_ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** True when `name` must not be inherited from the host environment (case-insensitive). */
export function isSecretEnvName(name: string): boolean {
  const upper = name.toUpperCase();
  if (BLOCKED_ENV_NAMES.has(upper)) return true;
  if (SECRET_ENV_NAME_MARKERS.some((marker) => upper.includes(marker))) return true;
  return SECRET_NAME_PATTERNS.some((pattern) => pattern.test(upper));
}

/** True when a variable's value carries credentials (a URL with user info). */
export function isSecretEnvValue(value: string): boolean {
  return CREDENTIAL_URL.test(value);
}

/** Python-style `repr` of a key, so error text reads the same for every provider. */
function reprKey(key: unknown): string {
  if (typeof key !== 'string') return String(key);
  const quote = key.includes("'") && !key.includes('"') ? '"' : "'";
  let out = '';
  for (const ch of key) {
    const cp = ch.codePointAt(0) ?? 0;
    if (ch === '\\') out += '\\\\';
    else if (ch === quote) out += `\\${quote}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${quote}${out}${quote}`;
}

/**
 * Validates a per-call environment overlay before anything runs. Keys must be POSIX names, because
 * providers that splice `export K=V` into a shell would otherwise execute whatever a key smuggles
 * in (`X;rm -rf /`). Values are free text, but must be strings without NUL (no OS can carry one).
 * `undefined`, `null` and `{}` pass.
 */
export function validateExtraEnv(env: Readonly<Record<string, unknown>> | null | undefined): void {
  if (env === undefined || env === null) return;
  if (typeof env !== 'object' || Array.isArray(env)) {
    throw new InvalidArgumentError(
      'extra_env must be a mapping of variable names to string values',
    );
  }
  const entries: [unknown, unknown][] =
    env instanceof Map ? [...(env as Map<unknown, unknown>).entries()] : Object.entries(env);
  for (const [key, value] of entries) {
    if (typeof key !== 'string' || !POSIX_ENV_NAME.test(key)) {
      throw new InvalidArgumentError(
        `extra_env key ${reprKey(key)} is not a valid POSIX environment variable name (must match ^[A-Za-z_][A-Za-z0-9_]*$)`,
      );
    }
    if (typeof value !== 'string') {
      throw new InvalidArgumentError(
        `extra_env value for ${reprKey(key)} must be a string, got ${value === null ? 'null' : typeof value}`,
      );
    }
    if (value.includes('\0')) {
      throw new InvalidArgumentError(
        `extra_env value for ${reprKey(key)} contains a NUL character`,
      );
    }
  }
}

export interface BuildSandboxEnvOptions {
  /** The environment to inherit from. Default `process.env`. */
  baseEnv?: Readonly<Record<string, string | undefined>>;
  /** Default `allowlist`. */
  mode?: EnvPolicyMode;
  /** Extra names the `allowlist` policy inherits (`sandbox.env_allow`). */
  allow?: readonly string[];
}

/**
 * The environment for a sandboxed subprocess: what the policy lets through of the host
 * environment (see `EnvPolicyMode`; both modes drop secret-looking names and credential-bearing
 * values), with the request's injected variables layered on top. Injection wins even for blocked
 * names — the caller chose to hand exactly that value to this one command — while the host's own
 * value of such a name never reaches it.
 */
export function buildSandboxEnv(
  injected?: Readonly<Record<string, string>> | null,
  options: BuildSandboxEnvOptions = {},
): Record<string, string> {
  validateExtraEnv(injected);
  const base = options.baseEnv ?? process.env;
  const env: Record<string, string> = {};
  const mode = options.mode ?? 'allowlist';
  const extra = new Set(options.allow ?? []);
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined || isSecretEnvName(name) || isSecretEnvValue(value)) continue;
    if (mode === 'allowlist' && !ALLOWED_ENV_NAMES.has(name) && !name.startsWith('LC_')) {
      if (!extra.has(name)) continue;
    }
    env[name] = value;
  }
  if (injected) Object.assign(env, injected);
  return env;
}

function injectedValues(
  injected: Readonly<Record<string, string>> | Iterable<string> | null | undefined,
): string[] {
  if (!injected) return [];
  const values: unknown[] =
    typeof (injected as Iterable<string>)[Symbol.iterator] === 'function'
      ? [...(injected as Iterable<string>)]
      : Object.values(injected);
  return values.filter((v): v is string => typeof v === 'string');
}

/**
 * The secrets of `env` as a line-at-a-time rewrite must redact them: each value, and each line of
 * a value that spans lines. Streamed output is rewritten a line at a time, so a multi-line value (a
 * PEM key) never appears whole in one piece; its lines of 8+ characters are redacted one by one
 * (but not a line of only whitespace, which `redactSecrets` leaves alone).
 */
export function secretsForLines(env: Readonly<Record<string, string>> | undefined): string[] {
  const secrets: string[] = [];
  for (const value of Object.values(env ?? {})) {
    secrets.push(value);
    if (/[\r\n]/.test(value)) secrets.push(...value.split(/\r?\n|\r/));
  }
  return secrets;
}

/** The smallest p such that `value[i] === value[i + p]` throughout (the prefix function's way). */
function smallestPeriod(value: string): number {
  const border = new Int32Array(value.length);
  for (let i = 1, k = 0; i < value.length; i++) {
    while (k > 0 && value.charCodeAt(i) !== value.charCodeAt(k)) k = border[k - 1]!;
    if (value.charCodeAt(i) === value.charCodeAt(k)) k++;
    border[i] = k;
  }
  return value.length - (value.length > 0 ? border[value.length - 1]! : 0);
}

/**
 * Replaces every occurrence of an injected value (8+ characters) in command output with
 * `[redacted]`. Occurrences are located in the original text first and overlapping ones are
 * merged, so two secrets that share characters are hidden completely instead of leaving the tail
 * of one visible after the other was replaced. Shorter values are left alone: masking `42` or
 * `true` everywhere would mangle output and reveal nothing secret; so are values of only
 * whitespace.
 */
export function redactSecrets(
  text: string,
  injected: Readonly<Record<string, string>> | Iterable<string> | null | undefined,
): string {
  const secrets = [
    // Nor a value of only whitespace (a blank line of a multi-line key): it reveals nothing, and
    // redacting it would mangle every indented line of output.
    ...new Set(
      injectedValues(injected).filter(
        (v) => v.length >= MIN_REDACTED_VALUE_LENGTH && v.trim() !== '',
      ),
    ),
  ];
  if (secrets.length === 0 || text.length === 0) return text;
  const spans: [number, number][] = [];
  for (const secret of secrets) {
    const period = smallestPeriod(secret);
    for (let at = text.indexOf(secret); at !== -1;) {
      // A secret that overlaps itself repeats wherever the text keeps its period: the whole run is
      // one span, found by one scan, not one search and one span per overlapping occurrence (the
      // secret's length per character of output). Any other occurrence starting inside the run
      // ends inside it too, so the search resumes at the run's last occurrence.
      let end = at + secret.length;
      if (period < secret.length) {
        while (end < text.length && text.charCodeAt(end) === text.charCodeAt(end - period)) end++;
      }
      const last = at + Math.floor((end - at - secret.length) / period) * period;
      spans.push([at, last + secret.length]);
      at = text.indexOf(secret, last + 1);
    }
  }
  if (spans.length === 0) return text;
  spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let out = '';
  let cursor = 0;
  let i = 0;
  while (i < spans.length) {
    const [start] = spans[i]!;
    let end = spans[i]![1];
    i++;
    // Merge spans that overlap (share at least one character); merely adjacent secrets keep one
    // placeholder each, which tells the reader two values were there.
    while (i < spans.length && spans[i]![0] < end) {
      end = Math.max(end, spans[i]![1]);
      i++;
    }
    out += text.slice(cursor, start) + REDACTED_PLACEHOLDER;
    cursor = end;
  }
  return out + text.slice(cursor);
}

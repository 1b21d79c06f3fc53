import type { ConfigIssue } from '../errors/errors.js';
import type { ProviderBlockKey } from './config.js';
import { PROVIDER_BLOCK_KEYS } from './config.js';
import { parseProviderSpecifier } from '../modules/provider-specifier.js';

/**
 * Turns what a user wrote into one plain `sandbox:` section the strict schema can judge, without
 * losing anything: every change made here is either documented compatibility with the reference
 * layout or reported as an issue. Paths are tracked so issues name keys where the user wrote them.
 */

export type Env = Readonly<Record<string, string | undefined>>;
type Json = Record<string, unknown>;
type PathSeg = string | number;

export interface NormalizedSection {
  section: Json;
  issues: ConfigIssue[];
  /** Maps a path inside the normalised section to the path the user wrote. */
  userPath(segments: readonly PathSeg[]): string;
}

const IDENT_RE = /^[A-Za-z_][A-Za-z0-9_-]*$/;

export function formatPath(root: string, segments: readonly PathSeg[]): string {
  let out = root;
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (IDENT_RE.test(s)) out += out === '' ? s : `.${s}`;
    else out += `[${JSON.stringify(s)}]`;
  }
  return out;
}

const isRecord = (v: unknown): v is Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reference class paths of the providers sbx re-implements, by module prefix and class. A module
 * match alone is not enough: `deerflow.community.aio_sandbox:AioSandbox` names the sandbox, not
 * the provider, and must not be silently turned into one.
 */
const REFERENCE_PROVIDERS: ReadonlyArray<{ module: string; cls: string; use: string }> = [
  { module: 'deerflow.sandbox.local', cls: 'LocalSandboxProvider', use: '@sbx/local' },
  { module: 'deerflow.community.aio_sandbox', cls: 'AioSandboxProvider', use: '@sbx/aio' },
  { module: 'deerflow.community.e2b_sandbox', cls: 'E2BSandboxProvider', use: '@sbx/e2b' },
  { module: 'deerflow.community.boxlite', cls: 'BoxliteProvider', use: '@sbx/boxlite' },
  { module: 'deerflow.community.tenki', cls: 'TenkiSandboxProvider', use: '@sbx/tenki' },
  { module: 'deerflow.community.opensandbox', cls: 'OpenSandboxProvider', use: '@sbx/opensandbox' },
];

const PY_CLASS_PATH_RE = /^[A-Za-z_][\w.]*:[A-Za-z_]\w*$/;

/** The sbx specifier for a reference `module:Class` path, or undefined when it is not one of ours. */
export function translateReferenceUse(use: string): string | undefined {
  const colon = use.lastIndexOf(':');
  const mod = use.slice(0, colon);
  const cls = use.slice(colon + 1);
  return REFERENCE_PROVIDERS.find(
    (p) => p.cls === cls && (mod === p.module || mod.startsWith(`${p.module}.`)),
  )?.use;
}

/**
 * Keys the reference reads from the flat `sandbox:` section for one provider only. In sbx they live
 * in that provider's block; when `use` names the provider they are moved there, otherwise they
 * are unknown keys and the error says where they belong.
 */
export const REFERENCE_FLAT_PROVIDER_KEYS: Readonly<
  Partial<Record<ProviderBlockKey, readonly string[]>>
> = {
  e2b: [
    'api_key',
    'template',
    'domain',
    'home_dir',
    'reconciliation_interval_seconds',
    'reconciliation_grace_seconds',
    'reconciliation_orphan_ttl_seconds',
    'reconciliation_max_pages',
    'reconciliation_max_items',
    'reconciliation_max_seconds',
  ],
  boxlite: ['memory_mib', 'cpus'],
  tenki: [
    'api_key',
    'base_url',
    'project_id',
    'workspace_id',
    'cpu_cores',
    'memory_mb',
    'max_duration',
    'sticky',
    'home_dir',
  ],
  opensandbox: [
    'api_key',
    'domain',
    'protocol',
    'request_timeout',
    'ready_timeout',
    'use_server_proxy',
    'sandbox_timeout',
  ],
};

const PACKAGE_BLOCK: Readonly<Record<string, ProviderBlockKey>> = {
  '@sbx/local': 'local',
  '@sbx/aio': 'aio',
  '@sbx/e2b': 'e2b',
  '@sbx/boxlite': 'boxlite',
  '@sbx/tenki': 'tenki',
  '@sbx/opensandbox': 'opensandbox',
};

/** The block a provider specifier reads its options from (`provider_options` for third parties). */
export function providerBlockFor(use: string): ProviderBlockKey | undefined {
  const spec = parseProviderSpecifier(use);
  if (!spec) return undefined;
  return PACKAGE_BLOCK[spec.packageName] ?? 'provider_options';
}

/** Blocks whose contents belong to other packages: structure is theirs, so nulls are kept. */
const OPEN_KEYS = new Set<string>([...PROVIDER_BLOCK_KEYS, 'authorization']);

/** A null (or empty YAML value) means "unset": removed from every object sbx owns. */
function stripNulls(value: unknown, inOpen: boolean, depth: number): unknown {
  if (Array.isArray(value)) return value.map((v) => stripNulls(v, inOpen, depth + 1));
  if (!isRecord(value)) return value;
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) {
    if (v === null && !inOpen) continue;
    if (depth === 0 && k === 'environment' && isRecord(v)) {
      // A container variable declared without a value is set to "", not dropped.
      out[k] = Object.fromEntries(Object.entries(v).map(([n, x]) => [n, x === null ? '' : x]));
      continue;
    }
    out[k] = stripNulls(v, inOpen || (depth === 0 && OPEN_KEYS.has(k)), depth + 1);
  }
  return out;
}

const ENV_REF_RE = /^\$([A-Za-z_][A-Za-z0-9_]*)$/;

/**
 * `$NAME` anywhere in the section is read from the environment; an unset variable is an error,
 * because a secret that silently becomes empty is worse than a refusal to start. `$$...` escapes a
 * literal leading `$`. `environment` values follow the reference's container-env rule instead:
 * `$NAME` unset reads as "".
 */
function interpolate(
  value: unknown,
  at: PathSeg[],
  env: Env,
  issues: Array<{ at: PathSeg[]; message: string }>,
): unknown {
  if (typeof value === 'string') {
    if (value.startsWith('$$')) return value.slice(1);
    const inEnvironment = at.length === 2 && at[0] === 'environment';
    if (inEnvironment && value.startsWith('$')) return env[value.slice(1)] ?? '';
    const ref = ENV_REF_RE.exec(value);
    if (!ref) return value;
    const name = ref[1] as string;
    const resolved = env[name];
    if (resolved === undefined) {
      issues.push({
        at,
        message: `environment variable ${name} (referenced as "${value}") is not set`,
      });
      return value;
    }
    return resolved;
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, [...at, i], env, issues));
  if (isRecord(value)) {
    const out: Json = {};
    for (const [k, v] of Object.entries(value)) out[k] = interpolate(v, [...at, k], env, issues);
    return out;
  }
  return value;
}

/** Reference top-level sections whose sandbox-relevant keys sbx reads from a whole config file. */
const LIFTED_TOP_LEVEL_KEYS: Readonly<Record<string, readonly string[]>> = {
  skills: ['container_path', 'path'],
  read_before_write: ['enabled'],
};

export function normalizeSandboxInput(input: unknown, env: Env): NormalizedSection {
  const issues: ConfigIssue[] = [];
  // [path inside the section, path the user wrote], longest match wins.
  const origins: Array<[string, string]> = [];
  const userPath = (segments: readonly PathSeg[]): string => {
    const p = formatPath('sandbox', segments);
    let best: [string, string] | undefined;
    for (const o of origins) {
      const [from] = o;
      const boundary = p.length === from.length || p[from.length] === '.' || p[from.length] === '[';
      if (p.startsWith(from) && boundary && (!best || from.length > best[0].length)) best = o;
    }
    return best ? best[1] + p.slice(best[0].length) : p;
  };
  const done = (section: Json): NormalizedSection => ({ section, issues, userPath });

  if (input === undefined || input === null) return done({});
  if (!isRecord(input)) {
    issues.push({
      path: '',
      message: `expected a mapping (the sandbox section, or a document with a "sandbox" key), got ${describeValue(input)}`,
    });
    return done({});
  }

  let section: Json;
  if (Object.prototype.hasOwnProperty.call(input, 'sandbox')) {
    // A whole application config file: `sandbox:` is ours, every other top-level key belongs to the
    // host application and is ignored, except the reference's homes of sandbox settings below.
    const raw = input.sandbox;
    if (raw !== null && raw !== undefined && !isRecord(raw)) {
      issues.push({ path: 'sandbox', message: `expected a mapping, got ${describeValue(raw)}` });
      return done({});
    }
    section = { ...(raw ?? {}) };
    liftTopLevel(input, section, issues, origins);
  } else {
    section = { ...input };
  }

  const envIssues: Array<{ at: PathSeg[]; message: string }> = [];
  section = stripNulls(section, false, 0) as Json;
  section = interpolate(section, [], env, envIssues) as Json;
  for (const e of envIssues) issues.push({ path: userPath(e.at), message: e.message });

  const use = section.use;
  if (typeof use === 'string' && PY_CLASS_PATH_RE.test(use)) {
    const translated = translateReferenceUse(use);
    if (translated) section.use = translated;
    else {
      issues.push({
        path: userPath(['use']),
        message: `"${use}" is a Python class path; sbx loads providers from npm packages: "<package>" or "<package>#<ExportName>"`,
      });
      delete section.use;
    }
  }

  const block = typeof section.use === 'string' ? providerBlockFor(section.use) : 'local';
  const flatKeys = block ? REFERENCE_FLAT_PROVIDER_KEYS[block] : undefined;
  if (block && flatKeys) {
    for (const key of flatKeys) {
      if (!(key in section)) continue;
      const target = section[block];
      if (target !== undefined && !isRecord(target)) continue; // the schema reports the bad block
      if (target && key in target) {
        issues.push({
          path: userPath([key]),
          message: `set both here and as ${userPath([block, key])}; keep one`,
        });
        delete section[key]; // reported once, not again as an unknown key
        continue;
      }
      section[block] = { ...(target ?? {}), [key]: section[key] };
      delete section[key];
      origins.push([formatPath('sandbox', [block, key]), formatPath('sandbox', [key])]);
    }
  }
  return done(section);
}

function liftTopLevel(
  doc: Json,
  section: Json,
  issues: ConfigIssue[],
  origins: Array<[string, string]>,
): void {
  for (const [top, keys] of Object.entries(LIFTED_TOP_LEVEL_KEYS)) {
    const src = doc[top];
    if (!isRecord(src)) continue;
    for (const key of keys) {
      if (!(key in src) || src[key] === null) continue;
      const existing = section[top];
      if (isRecord(existing) && key in existing && existing[key] !== null) {
        issues.push({
          path: formatPath('', [top, key]),
          message: `set both here and as ${formatPath('sandbox', [top, key])}; keep one`,
        });
        continue;
      }
      if (existing !== undefined && existing !== null && !isRecord(existing)) continue;
      section[top] = { ...(existing ?? {}), [key]: src[key] };
      origins.push([formatPath('sandbox', [top, key]), formatPath('', [top, key])]);
    }
  }

  const auth = doc.authorization;
  if (auth !== undefined && auth !== null) {
    if (section.authorization !== undefined && section.authorization !== null) {
      issues.push({
        path: 'authorization',
        message: 'set both here and as sandbox.authorization; keep one',
      });
    } else {
      section.authorization = auth;
      origins.push(['sandbox.authorization', 'authorization']);
    }
  }

  // The reference configures tool limits on entries of its top-level `tools:` list.
  const tools = doc.tools;
  if (!Array.isArray(tools)) return;
  tools.forEach((entry, index) => {
    if (!isRecord(entry)) return;
    const name = entry.name;
    if (
      (name !== 'glob' && name !== 'grep') ||
      !('max_results' in entry) ||
      entry.max_results === null
    )
      return;
    const existing = section.tools;
    if (existing !== undefined && existing !== null && !isRecord(existing)) return;
    const current = isRecord(existing) ? existing[name] : undefined;
    if (current !== undefined && current !== null && !isRecord(current)) return;
    if (isRecord(current) && 'max_results' in current && current.max_results !== null) {
      issues.push({
        path: formatPath('', ['tools', index, 'max_results']),
        message: `set both here and as sandbox.tools.${name}.max_results; keep one`,
      });
      return;
    }
    section.tools = {
      ...(existing ?? {}),
      [name]: { ...(current ?? {}), max_results: entry.max_results },
    };
    origins.push([
      formatPath('sandbox', ['tools', name, 'max_results']),
      formatPath('', ['tools', index, 'max_results']),
    ]);
  });
}

export function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'string')
    return `string ${JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}...` : v)}`;
  if (typeof v === 'object') return 'a mapping';
  return `${typeof v} ${String(v)}`;
}

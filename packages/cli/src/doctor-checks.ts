import { constants as fsConstants } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import {
  loadProviderClass,
  parseSandboxConfig,
  resolveOwnershipConfig,
  type ModuleImporter,
  type SandboxConfig,
} from '@sbx/core';
import { parseProviderSpecifier } from '@sbx/core/internal';
import { findShell, POSIX_SHELL_CANDIDATES } from '@sbx/local';
import { configFileOf, loadCliConfig, type CliConfigOptions } from './cli-config.js';
import { validateConfigFile } from './config-validate-command.js';
import type { CliIo } from './cli-io.js';
import { configIssuesOf } from './command-result.js';
import { type DockerEndpoint } from './docker-probe.js';
import { cliModuleDir, packageFinder, type PackageFinder } from './installed-packages.js';
import { pingRedis, redactRedisUrl } from './redis-probe.js';
import { describe, errorCode, portOf } from './doctor-probe.js';
import type { Check, ProbeContext } from './doctor-probe.js';
import { dockerChecks, kvmCheck } from './doctor-runtime-checks.js';
import {
  CONFINEMENT_GROUP,
  confinementChecks,
  defaultConfinementProber,
  type ConfinementProber,
} from './doctor-confinement-checks.js';

export type CheckStatus = 'ok' | 'fail' | 'skip';

/** One line of `sbx doctor`. */
export interface DoctorCheck {
  /** Stable identifier, e.g. `aio.docker`. */
  readonly id: string;
  /** `sbx`, a package name (`@sbx/aio`), or `ownership`. */
  readonly group: string;
  readonly title: string;
  readonly status: CheckStatus;
  /**
   * True when the configured setup depends on it (the configured provider's prerequisites, the
   * Redis ownership store when configured). Only a failed required check fails `sbx doctor`.
   */
  readonly required: boolean;
  readonly detail: string;
  /** What to do about a failure. */
  readonly fix?: string | undefined;
}

export interface DoctorReport {
  /** No required check failed. */
  readonly ok: boolean;
  readonly provider: string;
  /** The config file read, or `undefined` for built-in defaults. */
  readonly configFile: string | undefined;
  readonly checks: readonly DoctorCheck[];
}

export interface DoctorOptions {
  readonly io: CliIo;
  readonly config?: CliConfigOptions | undefined;
  /** Default: Node's lookup from the working directory and from this package's location. */
  readonly findPackage?: PackageFinder | undefined;
  /** Default: from `DOCKER_HOST`, else the default socket. */
  readonly dockerEndpoint?: DockerEndpoint | undefined;
  /** Default `/dev/kvm`. */
  readonly kvmPath?: string | undefined;
  readonly platform?: NodeJS.Platform | undefined;
  readonly arch?: string | undefined;
  /** Default: the running Node's version. */
  readonly nodeVersion?: string | undefined;
  /** Limit of each network probe. Default 3000 ms. */
  readonly timeoutMs?: number | undefined;
  /** Told before each slow probe (for a progress display). */
  readonly onProgress?: ((label: string) => void) | undefined;
  readonly signal?: AbortSignal | undefined;
  /** How the configured provider package is imported. */
  readonly importer?: ModuleImporter | undefined;
  /** How the host's confinement is probed. Default: `probeConfinementHost` of @sbx/local. */
  readonly confinementProbe?: ConfinementProber | undefined;
}

/** Provider packages sbx knows the prerequisites of, in display order. */
export const PROVIDER_PACKAGES = [
  '@sbx/local',
  '@sbx/aio',
  '@sbx/e2b',
  '@sbx/boxlite',
  '@sbx/tenki',
  '@sbx/opensandbox',
] as const;

export const OWNERSHIP_REDIS_PACKAGE = '@sbx/ownership-redis';

export { DEFAULT_AIO_IMAGE } from './doctor-probe.js';

/** Redis URL variables of the test services and of sbx's ownership store. */
export const REDIS_URL_ENVS = ['SBX_OWNERSHIP_REDIS_URL', 'SBX_REDIS_URL'] as const;

const MIN_NODE: readonly [number, number] = [20, 19];

function nodeCheck(version: string): Check {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number);
  const [needMajor, needMinor] = MIN_NODE;
  const ok = major > needMajor || (major === needMajor && minor >= needMinor);
  return {
    id: 'node',
    title: 'Node.js version',
    status: ok ? 'ok' : 'fail',
    detail: `v${version.replace(/^v/, '')} (sbx needs >= ${needMajor}.${needMinor})`,
    fix: ok ? undefined : `install Node.js ${needMajor}.${needMinor} or newer`,
  };
}

async function sdkCheck(ctx: ProbeContext, owner: string, sdk: string): Promise<Check> {
  const found = await ctx.findPackage(sdk);
  return {
    id: `${owner.replace(/^@sbx\//, '')}.sdk`,
    title: `${sdk} installed`,
    status: found ? 'ok' : 'fail',
    detail: found ? `${sdk} ${found.version ?? '(unknown version)'}` : 'not installed',
    fix: found ? undefined : `npm install ${sdk}   (an optional peer dependency of ${owner})`,
  };
}

/** Keys of a provider's config block as written (`sandbox.e2b.api_key`). */
function blockValue(block: Readonly<Record<string, unknown>> | undefined, key: string): unknown {
  return block?.[key];
}

function apiKeyCheck(
  ctx: ProbeContext,
  owner: string,
  block: 'e2b' | 'tenki' | 'opensandbox',
  envNames: readonly string[],
): Check {
  const id = `${owner.replace(/^@sbx\//, '')}.api-key`;
  const title = `${envNames[0] ?? 'API key'} set`;
  const configured = blockValue(ctx.config[block], 'api_key');
  if (typeof configured === 'string' && configured !== '') {
    return { id, title, status: 'ok', detail: `sandbox.${block}.api_key is set` };
  }
  const fromEnv = envNames.find((name) => (ctx.io.env[name] ?? '') !== '');
  if (fromEnv) return { id, title, status: 'ok', detail: `${fromEnv} is set` };
  return {
    id,
    title,
    status: 'fail',
    detail: `none of ${envNames.join(', ')} is set, nor sandbox.${block}.api_key`,
    fix: `export ${envNames[0] ?? 'API_KEY'}=<your key>   (or set sandbox.${block}.api_key in the config file)`,
  };
}

async function shellCheck(ctx: ProbeContext): Promise<Check> {
  const configured = blockValue(ctx.config.local, 'shell');
  const candidates = typeof configured === 'string' ? [configured] : POSIX_SHELL_CANDIDATES;
  try {
    const shell = await findShell(candidates, ctx.io.env.PATH);
    return { id: 'local.shell', title: 'POSIX shell', status: 'ok', detail: shell };
  } catch (err) {
    return {
      id: 'local.shell',
      title: 'POSIX shell',
      status: 'fail',
      detail: describe(err),
      fix: 'install a POSIX shell (sh, bash or zsh), or set sandbox.local.shell to one',
    };
  }
}

async function dataDirCheck(ctx: ProbeContext): Promise<Check> {
  const base = ctx.config.baseDir;
  // The provider creates the directory on first use: what matters is the nearest existing one.
  let dir = base;
  for (;;) {
    try {
      await access(dir, fsConstants.F_OK);
      break;
    } catch {
      const parent = path.dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  try {
    await access(dir, fsConstants.W_OK);
    return {
      id: 'local.data-dir',
      title: 'data directory writable',
      status: 'ok',
      detail: dir === base ? base : `${base} (will be created)`,
    };
  } catch (err) {
    return {
      id: 'local.data-dir',
      title: 'data directory writable',
      status: 'fail',
      detail: `${dir} is not writable (${errorCode(err) ?? describe(err)})`,
      fix: 'point SBX_HOME (or sandbox.base_dir) at a directory you can write to',
    };
  }
}

type ProviderProbe = (ctx: ProbeContext) => Promise<Check[]>;

/** What each provider package needs from this machine. */
const PROVIDER_PROBES: Readonly<Record<(typeof PROVIDER_PACKAGES)[number], ProviderProbe>> = {
  '@sbx/local': async (ctx) => Promise.all([shellCheck(ctx), dataDirCheck(ctx)]),
  '@sbx/aio': async (ctx) => [
    await sdkCheck(ctx, '@sbx/aio', 'dockerode'),
    ...(await dockerChecks(ctx)),
  ],
  '@sbx/e2b': async (ctx) => [
    await sdkCheck(ctx, '@sbx/e2b', 'e2b'),
    apiKeyCheck(ctx, '@sbx/e2b', 'e2b', ['E2B_API_KEY']),
  ],
  '@sbx/boxlite': async (ctx) => [
    await sdkCheck(ctx, '@sbx/boxlite', '@boxlite-ai/boxlite'),
    await kvmCheck(ctx),
  ],
  // Tenki has no npm SDK (the provider talks to its API through its own client).
  '@sbx/tenki': async (ctx) => [
    apiKeyCheck(ctx, '@sbx/tenki', 'tenki', ['TENKI_API_KEY', 'TENKI_AUTH_TOKEN']),
  ],
  '@sbx/opensandbox': async (ctx) => [
    await sdkCheck(ctx, '@sbx/opensandbox', '@alibaba-group/opensandbox'),
    apiKeyCheck(ctx, '@sbx/opensandbox', 'opensandbox', ['OPEN_SANDBOX_API_KEY']),
  ],
};

async function providerCheck(ctx: ProbeContext, packageName: string): Promise<Check> {
  const use = ctx.config.use;
  try {
    const loaded = await loadProviderClass(use, { importer: ctx.importer });
    const found = await ctx.findPackage(packageName);
    return {
      id: 'provider',
      title: 'provider loads',
      status: 'ok',
      detail: `${use} → ${loaded.exportName} (${loaded.kind})${found?.version ? `, ${packageName} ${found.version}` : ''}`,
    };
  } catch (err) {
    const missing = !(await ctx.findPackage(packageName));
    return {
      id: 'provider',
      title: 'provider loads',
      status: 'fail',
      detail: describe(err),
      fix: missing
        ? `npm install ${packageName}`
        : `check sandbox.use (${use}) against the exports of ${packageName}`,
    };
  }
}

async function ownershipChecks(
  ctx: ProbeContext,
): Promise<{ checks: Check[]; redisRequired: boolean }> {
  let redisUrl: string | undefined;
  let redisRequired = false;
  let source = '';
  try {
    const ownership = resolveOwnershipConfig(ctx.config, ctx.io.env);
    if (ownership.type === 'redis') {
      redisRequired = true;
      redisUrl = ownership.redisUrl;
      source = `ownership store (${ownership.redisUrlSource ?? ownership.source})`;
    }
  } catch (err) {
    return {
      checks: [
        {
          id: 'ownership.config',
          title: 'ownership store configuration',
          status: 'fail',
          detail: describe(err),
          fix: 'set SBX_OWNERSHIP_REDIS_URL (or sandbox.ownership.redis_url) to a redis:// URL',
        },
      ],
      redisRequired: true,
    };
  }
  if (!redisUrl) {
    const name = REDIS_URL_ENVS.find((n) => (ctx.io.env[n] ?? '') !== '');
    if (name) {
      redisUrl = ctx.io.env[name];
      source = `$${name}`;
    }
  }
  if (!redisUrl) {
    return {
      checks: [
        {
          id: 'ownership.redis',
          title: 'Redis reachable',
          status: 'skip',
          detail: 'ownership store is memory (single instance) and no Redis URL is set',
        },
      ],
      redisRequired: false,
    };
  }
  const shown = redactRedisUrl(redisUrl);
  ctx.onProgress(`pinging Redis at ${shown}`);
  try {
    const { rttMs } = await pingRedis(redisUrl, ctx.probeSignal());
    return {
      checks: [
        {
          id: 'ownership.redis',
          title: 'Redis reachable',
          status: 'ok',
          detail: `${shown} from ${source}: PONG in ${rttMs.toFixed(1)} ms`,
        },
      ],
      redisRequired,
    };
  } catch (err) {
    return {
      checks: [
        {
          id: 'ownership.redis',
          title: 'Redis reachable',
          status: 'fail',
          detail: `${shown} from ${source}: ${errorCode(err) ?? describe(err)}`,
          fix: `start Redis there (e.g. redis-server --port ${portOf(redisUrl)}), or point ${source.startsWith('$') ? source.slice(1) : 'SBX_OWNERSHIP_REDIS_URL / sandbox.ownership.redis_url'} at a running server`,
        },
      ],
      redisRequired,
    };
  }
}

/**
 * Runs every check `sbx doctor` shows: Node, the config, the configured provider, each installed
 * provider package's prerequisites (vendor SDK, Docker and image, API key, KVM), the local
 * provider's confinement (bubblewrap, namespaces, seccomp, cgroups, limits in force), and the Redis
 * the ownership store (or the environment) names. Probes of different groups run concurrently.
 */
export async function runDoctorChecks(options: DoctorOptions): Promise<DoctorReport> {
  const { io } = options;
  const checks: DoctorCheck[] = [];
  const add = (group: string, required: boolean, found: readonly Check[]): void => {
    for (const c of found) checks.push({ ...c, group, required });
  };
  add('sbx', true, [nodeCheck(options.nodeVersion ?? process.versions.node)]);

  let config: SandboxConfig | undefined;
  let configFile = configFileOf(options.config ?? {}, io);
  const configFailed = (detail: string): void => {
    add('sbx', true, [
      {
        id: 'config',
        title: 'configuration valid',
        status: 'fail',
        detail,
        fix: 'run sbx config validate <file> and correct the keys it lists',
      },
    ]);
  };
  try {
    // The file is checked exactly as `sbx config validate` checks it (core's keys, every provider
    // block, the authorization section, in one pass), so the two never disagree.
    const validation =
      configFile === undefined
        ? undefined
        : await validateConfigFile(configFile, { io, importer: options.importer });
    if (validation && !validation.valid) {
      configFailed(validation.issues.map((i) => `${i.path || '<root>'}: ${i.message}`).join('; '));
    } else {
      const loaded = await loadCliConfig(options.config ?? {}, io);
      config = loaded.config;
      configFile = loaded.file;
      const notChecked = validation?.warnings ?? [];
      add('sbx', true, [
        {
          id: 'config',
          title: 'configuration valid',
          status: 'ok',
          detail:
            (configFile ?? 'no config file: built-in defaults') +
            (notChecked.length > 0 ? ` (${notChecked.join('; ')})` : ''),
        },
      ]);
    }
  } catch (err) {
    const issues = configIssuesOf(err);
    configFailed(
      issues ? issues.map((i) => `${i.path || '<root>'}: ${i.message}`).join('; ') : describe(err),
    );
  }
  // The remaining checks still say something useful about the machine under the defaults.
  config ??= parseSandboxConfig({}, { env: io.env, cwd: io.cwd });

  const timeoutMs = options.timeoutMs ?? 3000;
  const ctx: ProbeContext = {
    io,
    config,
    findPackage: options.findPackage ?? packageFinder([io.cwd, cliModuleDir()]),
    dockerEndpoint: options.dockerEndpoint,
    kvmPath: options.kvmPath ?? '/dev/kvm',
    platform: options.platform ?? process.platform,
    arch: options.arch ?? process.arch,
    probeSignal: () =>
      options.signal
        ? AbortSignal.any([options.signal, AbortSignal.timeout(timeoutMs)])
        : AbortSignal.timeout(timeoutMs),
    onProgress: options.onProgress ?? (() => {}),
    importer: options.importer,
  };

  const configuredPackage = parseProviderSpecifier(config.use)?.packageName ?? config.use;
  const installed = await Promise.all(
    PROVIDER_PACKAGES.map(async (name) => ({
      name,
      present: name === configuredPackage || (await ctx.findPackage(name)) !== undefined,
    })),
  );
  // The configured provider first: its rows are the ones that decide the outcome.
  const groups = installed
    .filter((p) => p.present)
    .map((p) => p.name)
    .sort((a, b) => Number(b === configuredPackage) - Number(a === configuredPackage));

  const [provider, perPackage, ownership, redisPackage, confinement] = await Promise.all([
    providerCheck(ctx, configuredPackage),
    Promise.all(groups.map(async (name) => ({ name, checks: await PROVIDER_PROBES[name](ctx) }))),
    ownershipChecks(ctx),
    ctx.findPackage(OWNERSHIP_REDIS_PACKAGE),
    groups.includes('@sbx/local')
      ? confinementChecks(ctx, options.confinementProbe ?? defaultConfinementProber)
      : Promise.resolve([]),
  ]);
  add('sbx', true, [provider]);
  for (const { name, checks: found } of perPackage) {
    add(name, name === configuredPackage, found);
    // The local provider's confinement right after its own rows; required only where the
    // configuration demands it of the provider in use.
    if (name === '@sbx/local') {
      for (const c of confinement) {
        add(CONFINEMENT_GROUP, c.required && name === configuredPackage, [c.check]);
      }
    }
  }
  if (redisPackage || ownership.redisRequired) {
    const sdk = await sdkCheck(ctx, OWNERSHIP_REDIS_PACKAGE, 'ioredis');
    const packageRow: Check = {
      id: 'ownership-redis.package',
      title: `${OWNERSHIP_REDIS_PACKAGE} installed`,
      status: redisPackage ? 'ok' : 'fail',
      detail: redisPackage
        ? `${OWNERSHIP_REDIS_PACKAGE} ${redisPackage.version ?? ''}`.trim()
        : 'not installed',
      fix: redisPackage ? undefined : `npm install ${OWNERSHIP_REDIS_PACKAGE} ioredis`,
    };
    add(OWNERSHIP_REDIS_PACKAGE, ownership.redisRequired, [packageRow, sdk]);
  }
  add('ownership', ownership.redisRequired, ownership.checks);

  return {
    ok: !checks.some((c) => c.required && c.status === 'fail'),
    provider: config.use,
    configFile,
    checks,
  };
}

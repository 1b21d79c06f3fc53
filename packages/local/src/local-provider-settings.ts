import path from 'node:path';
import { ConfigError, DEFAULT_SKILLS_CONTAINER_PATH, assertSafePathSegment } from '@sbx/core';
import type { EnvPolicyMode, Logger } from '@sbx/core';
import {
  DEFAULT_USER_ID,
  HOST_SYSTEM_TREES,
  hostDataDirProblem,
  normalizeVirtualRoot,
} from '@sbx/core/internal';
import { canonicalPathSync } from './canonical-path.js';
import type { LocalProviderOptions } from './local-provider-options.js';
import {
  DEFAULT_MAX_CACHED_THREAD_SANDBOXES,
  DEFAULT_THREAD_MAX_AGE_DAYS,
  resolveLocalBlock,
} from './local-config-block.js';
import { DEFAULT_ISOLATION_MODE, type IsolationMode } from './confinement/isolation-mode.js';
import { sandboxOwnerFor, type SandboxOwner } from './confinement/sandbox-owner.js';
import { resolveConfinementLimits, type ConfinementLimits } from './confinement/cgroup-limits.js';

/** Environment variable naming the data directory when neither options nor config do. */
export const SBX_HOME_ENV = 'SBX_HOME';
export const DEFAULT_BASE_DIR_NAME = '.sbx';

/**
 * The local provider's settings, each resolved once from its sources in one order — constructor
 * option, then configuration, then environment, then default — and checked here, so the provider
 * never reads a raw option or config value again.
 */
export interface LocalProviderSettings {
  /** Canonical (no links): mount tables require a root to resolve to the directory it was built from. */
  readonly baseDir: string;
  readonly allowHostBash: boolean;
  readonly isolation: IsolationMode;
  /** Who confined commands run as; absent where the gateway is not root (they run as the gateway's user). */
  readonly owner: SandboxOwner | undefined;
  readonly limits: ConfinementLimits;
  readonly bashCommandTimeout: number | undefined;
  readonly searchTimeoutSeconds: number | undefined;
  readonly envPolicy: EnvPolicyMode | undefined;
  readonly envAllow: readonly string[] | undefined;
  readonly threadMaxAgeDays: number;
  readonly shell: string | undefined;
  readonly skillsContainerPath: string;
  readonly defaultUserId: string;
  readonly maxCachedThreads: number;
}

const consoleLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: (msg, fields) => console.warn(`[sbx/local] ${msg}`, fields ?? ''),
  error: (msg, fields) => console.error(`[sbx/local] ${msg}`, fields ?? ''),
};

/** The logger of a provider given none: warnings and errors still reach the operator. */
export function localProviderLogger(options: LocalProviderOptions): Logger {
  return options.logger ?? consoleLogger;
}

export function resolveLocalProviderSettings(options: LocalProviderOptions): LocalProviderSettings {
  const config = options.config ?? {};
  const env = options.env ?? process.env;
  const baseDir = canonicalPathSync(
    path.resolve(
      options.baseDir ??
        config.baseDir ??
        (env[SBX_HOME_ENV] || undefined) ??
        DEFAULT_BASE_DIR_NAME,
    ),
  );
  const baseDirProblem = hostDataDirProblem(baseDir);
  if (baseDirProblem) {
    throw new ConfigError([{ path: 'sandbox.base_dir', message: baseDirProblem }]);
  }
  const localBlock = resolveLocalBlock(config.local ?? {});
  const sandboxUid = options.sandboxUid ?? localBlock.sandboxUid;
  const sandboxGid = options.sandboxGid ?? localBlock.sandboxGid;
  const owner = sandboxOwnerFor(process.getuid?.(), {
    ...(sandboxUid !== undefined ? { uid: sandboxUid } : {}),
    ...(sandboxGid !== undefined ? { gid: sandboxGid } : {}),
  });
  const skillsContainerPath = normalizeVirtualRoot(
    options.skillsContainerPath ?? config.skills?.containerPath ?? DEFAULT_SKILLS_CONTAINER_PATH,
  );
  // A host-backed sandbox maps virtual paths onto the host: a skills root over a host system tree
  // would make every path below it look like a (mapped) virtual path to the tool layer.
  const systemTree = HOST_SYSTEM_TREES.find(
    (t) =>
      skillsContainerPath === t ||
      skillsContainerPath.startsWith(`${t}/`) ||
      skillsContainerPath === '/',
  );
  if (systemTree) {
    throw new ConfigError([
      {
        path: 'sandbox.skills.container_path',
        message: `must not overlap the host system directory ${systemTree} (the local provider maps it onto the host)`,
      },
    ]);
  }
  const maxCachedThreads =
    options.maxCachedThreads ?? localBlock.maxCachedThreads ?? DEFAULT_MAX_CACHED_THREAD_SANDBOXES;
  if (!Number.isSafeInteger(maxCachedThreads) || maxCachedThreads < 1) {
    throw new ConfigError([
      { path: 'maxCachedThreads', message: `must be a positive integer, got ${maxCachedThreads}` },
    ]);
  }
  return {
    baseDir,
    allowHostBash: options.allowHostBash ?? config.allowHostBash ?? false,
    isolation: options.isolation ?? localBlock.isolation ?? DEFAULT_ISOLATION_MODE,
    owner,
    limits: options.limits
      ? resolveConfinementLimits({ ...localBlock.limits, ...options.limits })
      : localBlock.limits,
    bashCommandTimeout: options.bashCommandTimeout ?? config.bashCommandTimeout,
    searchTimeoutSeconds: options.searchTimeoutSeconds ?? config.searchTimeoutSeconds,
    envPolicy: options.envPolicy ?? config.envPolicy,
    envAllow: options.envAllow ?? config.envAllow,
    threadMaxAgeDays: localBlock.threadMaxAgeDays ?? DEFAULT_THREAD_MAX_AGE_DAYS,
    shell: options.shell ?? localBlock.shell,
    skillsContainerPath,
    defaultUserId: assertSafePathSegment('userId', options.defaultUserId ?? DEFAULT_USER_ID),
    maxCachedThreads,
  };
}

import { createHash, randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { SandboxProviderEventEmitter } from '@sbx/core/internal';
import type { LRUCache } from 'lru-cache';
import type * as LruCacheModule from 'lru-cache';
import {
  AbortedError,
  ProviderClosedError,
  InvalidArgumentError,
  SandboxNotFoundError,
  SandboxProvider,
  SandboxRuntimeError,
  pathMapping,
  threadLayout,
} from '@sbx/core';
import {
  SKILL_CATEGORIES,
  VIRTUAL_ACP_WORKSPACE_PATH,
  VIRTUAL_OUTPUTS_PATH,
  VIRTUAL_PATH_PREFIX,
  VIRTUAL_UPLOADS_PATH,
  VIRTUAL_WORKSPACE_PATH,
  sharedSkillsViewPath,
} from '@sbx/core/internal';
import { localPauseRefusal, localSnapshotStore } from './local-snapshots.js';
import type {
  CheckpointConfig,
  SnapshotArchiveStore,
  SandboxLifecycleSupport,
  SnapshotRef,
  AcquirePath,
  SandboxProviderEventListener,
  SandboxProviderEvents,
  AcquireOptions,
  EnvPolicyMode,
  NetworkPolicy,
  SandboxSpecPolicy,
  SandboxSpecSupport,
  Logger,
  OrphanReapReport,
  PathMapping,
  ReapOrphansOptions,
  SkillsView,
  ThreadDataPaths,
  ThreadLayout,
} from '@sbx/core';
import { staticMappings } from './static-mappings.js';
import type { LocalProviderOptions } from './local-provider-options.js';
import { collectIdleThreads } from './thread-gc.js';
import { LocalSandbox } from './local-sandbox.js';
import { localSandboxId, localSandboxIdMode, type SkillsMode } from './local-sandbox-id.js';
import { LocalSandboxNetwork, localNetworkKey } from './local-sandbox-network.js';
import { CommandSessions } from './command-sessions.js';
import { type CommandMode, type IsolationMode } from './confinement/isolation-mode.js';
import { probeConfinement } from './confinement/bwrap-probe.js';
import { localProviderLogger, resolveLocalProviderSettings } from './local-provider-settings.js';
import type { ConfinementLimits } from './confinement/cgroup-limits.js';
import {
  ThreadConfinement,
  type ThreadConfinementLayout,
} from './confinement/thread-confinement.js';
import { chown } from 'node:fs/promises';

const requireHere = createRequire(import.meta.url);
let lruCacheModule: typeof LruCacheModule | undefined;
/** Loaded when the first provider is built, not when `@sbx/local` is imported. */
function lruCache(): typeof LruCacheModule {
  lruCacheModule ??= requireHere('lru-cache') as typeof LruCacheModule;
  return lruCacheModule;
}

/** Id of the sandbox handed to callers without a thread. */
export const GENERIC_LOCAL_SANDBOX_ID = 'local';
export { SBX_HOME_ENV, DEFAULT_BASE_DIR_NAME } from './local-provider-settings.js';

/** One configured extra mount (the `sandbox.mounts[]` entries of the configuration). */
interface ThreadEntry {
  readonly sandbox: LocalSandbox;
  readonly mode: SkillsMode;
  readonly userId: string;
  readonly threadId: string;
  readonly network: NetworkPolicy;
}

/**
 * Host-backed provider. `acquire()` without a thread returns the generic sandbox `local`; with a
 * thread, `local:<user>:<thread>`, whose mount table shows that thread's host directories at
 * `/mnt/user-data/{workspace,uploads,outputs}` and `/mnt/acp-workspace`, the skills views at
 * `/mnt/skills/...` (read-only) and the configured mounts. Per-thread sandboxes are kept in an LRU
 * cache (256 by default); an evicted one is rebuilt by the next `acquire` (its directories and files
 * stay on disk; only the memory of which files the agent wrote is lost).
 *
 * Not an isolation boundary: see `LocalSandbox`. While host bash is enabled the provider therefore
 * reports `supportsAgentSkillIsolation = false`, so an explicit agent skill policy fails closed.
 *
 * Kept here: the cache of per-thread sandboxes and the `SandboxProvider` contract over it. The
 * confinement of their commands is `ThreadConfinement`, the configured mounts `staticMappings`,
 * checkpoints `localSnapshotStore` (the snapshot methods below only find the thread).
 */
export class LocalSandboxProvider extends SandboxProvider implements SandboxProviderEvents {
  private readonly events = new SandboxProviderEventEmitter();
  readonly baseDir: string;
  readonly allowHostBash: boolean;
  readonly skillsContainerPath: string;
  readonly staticMappings: readonly PathMapping[];
  private readonly bashCommandTimeout: number | undefined;
  private readonly searchTimeoutSeconds: number | undefined;
  private readonly envPolicy: EnvPolicyMode | undefined;
  private readonly envAllow: readonly string[] | undefined;
  private readonly shell: string | undefined;
  private readonly threadMaxAgeDays: number;
  private readonly defaultUserId: string;
  private readonly logger: Logger;
  private readonly threads: LRUCache<string, ThreadEntry>;
  /** Set by `reset()` / `shutdown()`: no acquire is served again. */
  private retired = false;
  private readonly inflight = new Map<string, Promise<ThreadEntry>>();
  private genericSandbox: LocalSandbox | undefined;
  /** Tags the processes of this provider instance (see `process-reaper`). */
  private readonly processTag = randomUUID();
  /** The sessions its commands started, and the watchdog that ends them with the gateway. */
  private readonly commandSessions: CommandSessions;
  /** `sandbox.local.isolation` as configured (`auto` unless set). */
  readonly isolation: IsolationMode;
  /** Per-thread limits of confined commands (config, options, defaults). */
  readonly limits: ConfinementLimits;
  /** The command mode and the live namespace of each thread. */
  private readonly confinement: ThreadConfinement;
  /** What network policies it enforces, and how a confined sandbox gets out. */
  private readonly network: LocalSandboxNetwork;
  /** `sandbox.checkpoint`: the bounds of its snapshots and their life. */
  private readonly checkpointConfig: CheckpointConfig | undefined;

  constructor(options: LocalProviderOptions = {}) {
    super();
    if (process.platform === 'win32') {
      throw new SandboxRuntimeError(
        'LocalSandboxProvider does not support Windows hosts yet; run sbx under WSL or use a container provider',
      );
    }
    const config = options.config ?? {};
    const settings = resolveLocalProviderSettings(options);
    this.checkpointConfig = config.checkpoint;
    this.logger = localProviderLogger(options);
    this.commandSessions = new CommandSessions(this.processTag, this.logger);
    this.baseDir = settings.baseDir;
    this.allowHostBash = settings.allowHostBash;
    this.isolation = settings.isolation;
    this.limits = settings.limits;
    this.confinement = new ThreadConfinement({
      isolation: this.isolation,
      allowHostBash: this.allowHostBash,
      baseDir: this.baseDir,
      owner: settings.owner,
      limits: this.limits,
      tmpBytes: options.tmpBytes ?? this.limits.tmpBytes,
      probe: options.confinementProbe ?? probeConfinement,
      ...(options.seccompProgram ? { seccompProgram: options.seccompProgram } : {}),
      logger: this.logger,
    });
    this.network = new LocalSandboxNetwork(config.specPolicy, options.egress, () => this.confined);
    this.bashCommandTimeout = settings.bashCommandTimeout;
    this.searchTimeoutSeconds = settings.searchTimeoutSeconds;
    this.envPolicy = settings.envPolicy;
    this.envAllow = settings.envAllow;
    this.threadMaxAgeDays = settings.threadMaxAgeDays;
    this.shell = settings.shell;
    this.skillsContainerPath = settings.skillsContainerPath;
    this.defaultUserId = settings.defaultUserId;
    const max = settings.maxCachedThreads;
    this.threads = new (lruCache().LRUCache)<string, ThreadEntry>({
      max,
      // A confined thread evicted from the cache ends with its namespace: the cache's bound is
      // also the bound on live namespaces (and their processes and cgroups), so a tenant cannot
      // grow them by naming thread after thread.
      dispose: (_entry, id, reason) => {
        if (reason === 'evict') this.confinement.end(id, 'evicted from the cache');
      },
    });
    this.staticMappings = staticMappings({
      mounts: options.mounts ?? config.mounts ?? [],
      skillsContainerPath: this.skillsContainerPath,
      baseDir: this.baseDir,
      defaultUserId: this.defaultUserId,
      logger: this.logger,
    });
  }

  override get specSupport(): SandboxSpecSupport {
    return this.network.specSupport;
  }

  protected override get specPolicy(): SandboxSpecPolicy {
    return this.network.specPolicy;
  }

  /** How this provider's commands run, decided once at construction. */
  get commandMode(): CommandMode {
    return this.confinement.commandMode;
  }

  override get usesThreadDataMounts(): boolean {
    return true;
  }

  override get needsUploadPermissionAdjustment(): boolean {
    return false;
  }

  /**
   * A host shell can bypass every mount; a confined one sees only the sandbox's mounts (the
   * policy view for a policy-scoped run). So isolation holds unless commands run on the host.
   */
  override get supportsAgentSkillIsolation(): boolean {
    return this.commandMode.kind !== 'host';
  }

  /**
   * Host pid of the init of a sandbox's namespace while it runs (every process the thread
   * started lives in its pid namespace): for `sbx doctor` and tests.
   */
  confinedInitPid(sandboxId: string): number | undefined {
    return this.confinement.initPid(sandboxId);
  }

  /** Whether commands run confined (bubblewrap) in this provider. */
  get confined(): boolean {
    return this.commandMode.kind === 'confined';
  }

  /** Number of per-thread sandboxes currently cached (bounded by `maxCachedThreads`). */
  get cachedThreadCount(): number {
    return this.threads.size;
  }

  /** Host directories of one thread (what the tool layer needs as thread data). */
  threadLayout(userId: string | undefined, threadId: string): ThreadLayout {
    return threadLayout(this.baseDir, userId ?? this.defaultUserId, threadId);
  }

  /** `ThreadDataPaths` of a thread, for path validation and masking in the tool layer. */
  threadData(userId: string | undefined, threadId: string): ThreadDataPaths {
    const l = this.threadLayout(userId, threadId);
    return {
      workspacePath: l.workspacePath,
      uploadsPath: l.uploadsPath,
      outputsPath: l.outputsPath,
      acpWorkspacePath: l.acpWorkspacePath,
    };
  }

  /** Snapshot and fork by workspace checkpoint; pause and resume are refused (no freezer yet). */
  override get lifecycleSupport(): SandboxLifecycleSupport {
    return { pause: false, snapshot: true };
  }

  override async pause(_sandboxId: string): Promise<void> {
    throw localPauseRefusal('pause');
  }

  override async resume(_sandboxId: string): Promise<void> {
    throw localPauseRefusal('resume');
  }

  /** A workspace checkpoint of the thread of `sandboxId`, in `<base>/snapshots/`. */
  override async snapshot(sandboxId: string): Promise<SnapshotRef> {
    const entry = this.threads.get(sandboxId);
    if (!entry) throw new SandboxNotFoundError(undefined, sandboxId);
    return this.snapshotStore.create(this.threadLayout(entry.userId, entry.threadId));
  }

  private snapshotStoreInstance: SnapshotArchiveStore | undefined;

  /** The base dir's snapshot area (`<base>/snapshots`). */
  get snapshotStore(): SnapshotArchiveStore {
    this.snapshotStoreInstance ??= localSnapshotStore(
      this.baseDir,
      this.checkpointConfig,
      this.logger,
    );
    return this.snapshotStoreInstance;
  }

  override async acquire(options: AcquireOptions = {}): Promise<string> {
    this.admit(options);
    if (this.retired)
      throw new ProviderClosedError('LocalSandboxProvider has been reset or shut down');
    const { signal } = options;
    if (signal?.aborted) throw new AbortedError(undefined, { cause: signal.reason });
    const network = this.network.policyOf(options, this.constructor.name);
    if (options.threadId === undefined) {
      const reused = this.genericSandbox !== undefined;
      this.generic();
      return this.acquired(GENERIC_LOCAL_SANDBOX_ID, reused ? 'reuse' : 'create');
    }
    const userId = options.userId ?? this.defaultUserId;
    const layout = this.threadLayout(userId, options.threadId);
    const mode: SkillsMode = options.skillPolicy ? 'policy' : 'shared';
    const id = localSandboxId(userId, options.threadId, mode, localNetworkKey(network));
    const { fromSnapshot } = options;
    if (fromSnapshot && (this.threads.get(id) || this.inflight.has(`${mode}\0${id}`))) {
      throw new InvalidArgumentError('fromSnapshot needs a thread that has no sandbox yet');
    }
    if (this.threads.get(id)) return this.acquired(id, 'reuse');

    // Concurrent acquires of one thread share one creation, so they all get the same instance.
    const key = `${mode}\0${id}`;
    let pending = this.inflight.get(key);
    if (!pending) {
      const threadId = options.threadId;
      // A snapshot is restored before the sandbox exists: nothing runs on half-restored data.
      const restored = fromSnapshot
        ? this.snapshotStore.restore(fromSnapshot, layout)
        : Promise.resolve();
      pending = restored
        .then(() => this.createThreadSandbox(id, userId, threadId, layout, mode, network))
        .finally(() => {
          this.inflight.delete(key);
        });
      this.inflight.set(key, pending);
    }
    await pending;
    if (signal?.aborted) throw new AbortedError(undefined, { cause: signal.reason });
    return this.acquired(id, 'create');
  }

  /** Acquire paths, for instrumentation (`instrumentProvider`) and the host. */
  onEvent(listener: SandboxProviderEventListener): () => void {
    return this.events.onEvent(listener);
  }

  private acquired(sandboxId: string, path: AcquirePath): string {
    this.events.emit({ type: 'acquire', sandboxId, path });
    return sandboxId;
  }

  override get(sandboxId: string): LocalSandbox | undefined {
    if (sandboxId === GENERIC_LOCAL_SANDBOX_ID) return this.generic();
    if (!sandboxId.startsWith('local:')) return undefined;
    return this.threads.get(sandboxId)?.sandbox;
  }

  /**
   * Only the thread's own sandboxes (shared or policy-scoped) belong to it; the generic `local`
   * sandbox, which serves host paths unconfined, belongs to no thread.
   */
  override sandboxBelongsTo(
    sandboxId: string,
    identity: { userId?: string; threadId: string },
  ): boolean {
    const userId = identity.userId ?? this.defaultUserId;
    return localSandboxIdMode(sandboxId, userId, identity.threadId) !== undefined;
  }

  /**
   * A thread's policy-scoped sandbox (`local:<user>/policy:<thread>`) shows the policy's
   * projection, its plain one the shared categories; the ids say which even after the cache
   * evicted the sandbox or the provider restarted, so the tool layer can keep a policy run in its
   * view (see `SandboxProvider.skillsViewOf`).
   */
  override skillsViewOf(
    sandboxId: string,
    identity: { userId?: string; threadId: string },
  ): SkillsView | undefined {
    const userId = identity.userId ?? this.defaultUserId;
    return localSandboxIdMode(sandboxId, userId, identity.threadId);
  }

  /**
   * Ends what the sandbox's commands left running (background jobs, `setsid`, double forks) and
   * frees the output its ended processes kept; the sandbox itself (and what it remembers about
   * written files) stays cached.
   */
  override async release(sandboxId: string): Promise<void> {
    const cached =
      sandboxId === GENERIC_LOCAL_SANDBOX_ID
        ? this.genericSandbox
        : this.threads.peek(sandboxId)?.sandbox;
    const namespace = this.confinement.namespace(sandboxId);
    if (namespace) {
      // Confined: the namespace holds everything the thread started, cached or evicted.
      if (cached) await cached.processes.killRunning();
      // A cached sandbox's next command starts this namespace again: it stays tracked, so that
      // eviction and shutdown still end it (and close its egress attachment). An evicted one's is
      // forgotten; a rebuilt sandbox gets a new one.
      if (!cached) this.confinement.forget(sandboxId);
      await namespace.kill();
      return;
    }
    // A cached sandbox that ran no command since its last release left nothing to find; one no
    // longer cached (evicted) may have, so it is scanned for.
    if (cached) {
      // The turn's background processes end, and the output kept for ended ones is freed: a
      // cached sandbox must not hold it until the thread's next turn.
      await cached.processes.killRunning();
      if (cached.hasUnreapedCommands) await cached.killProcesses();
      return;
    }
    await this.commandSessions.reap(this.processTagOf(sandboxId));
  }

  /** The environment tag of one sandbox's processes: unique to this provider instance and id. */
  private processTagOf(sandboxId: string): string {
    return `${this.processTag}.${createHash('sha256').update(sandboxId).digest('hex').slice(0, 16)}`;
  }

  /**
   * `sbx gc` for the host provider: removes thread directories nothing changed in for
   * `sandbox.local.thread_max_age_days` (default 30), except threads this instance holds. A dry run
   * only reports them. (Each `sbx mcp` session, for one, makes a thread of its own.)
   */
  async reapOrphans(options: ReapOrphansOptions = {}): Promise<OrphanReapReport> {
    const inUse = new Set<string>();
    for (const entry of this.threads.values()) inUse.add(`local:${entry.userId}:${entry.threadId}`);
    return collectIdleThreads({
      baseDir: this.baseDir,
      maxAgeDays: this.threadMaxAgeDays,
      nowMs: Date.now(),
      inUse,
      dryRun: options.dryRun === true,
      signal: options.signal,
      logger: this.logger,
    });
  }

  /** Forgets every cached sandbox; files on disk are untouched. Idempotent. */
  /**
   * The reset contract (docs/architecture.md): stops background work (there is none), releases
   * what this instance holds (its cached sandboxes; the host directories stay, and a replacement
   * finds them again by thread) and refuses further use. Idempotent.
   */
  override async reset(): Promise<void> {
    this.retired = true;
    this.genericSandbox = undefined;
    this.threads.clear();
  }

  /**
   * `reset()`, then every process a sandbox of this instance started is killed (evicted ones
   * included: by their sessions and by the provider's tag), and the watchdog stops.
   */
  override async shutdown(): Promise<void> {
    await this.reset();
    await this.confinement.endAll();
    await this.commandSessions.reapAll();
  }

  private generic(): LocalSandbox {
    this.genericSandbox ??= new LocalSandbox(GENERIC_LOCAL_SANDBOX_ID, {
      mappings: this.staticMappings,
      ...this.sandboxOptions(GENERIC_LOCAL_SANDBOX_ID, {
        mappings: this.staticMappings,
        initCwd: '/tmp',
        ownedRoots: [],
      }),
      // The legacy thread-less sandbox serves host paths as given; the agent tools never use it
      // (they require thread data), so confinement is the per-thread sandboxes' job.
      confined: false,
    });
    return this.genericSandbox;
  }

  private sandboxOptions(
    sandboxId: string,
    layout: ThreadConfinementLayout,
    network?: { userId: string; threadId: string; policy: NetworkPolicy },
  ) {
    const egress =
      network &&
      this.network.opener(network.policy, {
        sandboxId,
        userId: network.userId,
        threadId: network.threadId,
        owner: this.confinement.owner,
      });
    const confinement = this.confinement.of(sandboxId, layout, egress);
    return {
      ...(confinement ? { confinement } : {}),
      processTags: { sandbox: this.processTagOf(sandboxId), provider: this.processTag },
      sessions: this.commandSessions.forSandbox(this.processTagOf(sandboxId)),
      allowHostBash: this.allowHostBash,
      bashCommandTimeout: this.bashCommandTimeout,
      searchTimeoutSeconds: this.searchTimeoutSeconds,
      envPolicy: this.envPolicy,
      envAllow: this.envAllow,
      shell: this.shell,
      logger: this.logger,
    };
  }

  private async createThreadSandbox(
    id: string,
    userId: string,
    threadId: string,
    layout: ThreadLayout,
    mode: SkillsMode,
    network: NetworkPolicy,
  ): Promise<ThreadEntry> {
    const skills = this.skillsContainerPath;
    const skillMappings: PathMapping[] =
      mode === 'policy'
        ? [pathMapping(skills, layout.threadSkillsViewPath, true)]
        : SKILL_CATEGORIES.map((category) =>
            pathMapping(
              `${skills}/${category}`,
              sharedSkillsViewPath(this.baseDir, userId, category),
              true,
            ),
          );
    const threadMappings: PathMapping[] = [
      pathMapping(VIRTUAL_PATH_PREFIX, layout.userDataPath),
      pathMapping(VIRTUAL_WORKSPACE_PATH, layout.workspacePath),
      pathMapping(VIRTUAL_UPLOADS_PATH, layout.uploadsPath),
      pathMapping(VIRTUAL_OUTPUTS_PATH, layout.outputsPath),
      pathMapping(VIRTUAL_ACP_WORKSPACE_PATH, layout.acpWorkspacePath),
    ];
    // Skills views are stable roots: skills appear and disappear below them without a rebuild.
    await Promise.all(
      [...threadMappings.slice(1), ...skillMappings].map((m) =>
        mkdir(m.hostPath, { recursive: true }),
      ),
    );
    // What the agent wrote is a fact about the thread's directories, shared by its shared and
    // policy-scoped sandboxes (and inherited by a rebuild after eviction).
    const previous =
      this.threads.peek(id) ??
      this.threads.peek(localSandboxId(userId, threadId, mode === 'policy' ? 'shared' : 'policy'));
    const customMounts = this.staticMappings.filter((m) => m.containerPath !== `${skills}/public`);
    const mappings = [...customMounts, ...skillMappings, ...threadMappings];
    const ownedRoots = threadMappings.map((m) => m.hostPath);
    const owner = this.confinement.owner;
    if (owner && this.commandMode.kind === 'confined') {
      // The confined user must write the thread's own directories (only their roots: what is
      // below them was made by the tools, which hand it over as they write, or by the sandbox).
      await Promise.all(ownedRoots.map((dir) => chown(dir, owner.uid, owner.gid)));
    }
    const sandbox = new LocalSandbox(id, {
      mappings,
      toolEnvironment: {
        threadData: {
          workspacePath: layout.workspacePath,
          uploadsPath: layout.uploadsPath,
          outputsPath: layout.outputsPath,
          acpWorkspacePath: layout.acpWorkspacePath,
        },
        skillsContainerPath: skills,
        ...(mode === 'policy' ? { skillsHostPath: layout.threadSkillsViewPath } : {}),
        customMounts: customMounts.map((m) => ({
          containerPath: m.containerPath,
          readOnly: m.readOnly,
        })),
      },
      ...this.sandboxOptions(
        id,
        { mappings, initCwd: VIRTUAL_WORKSPACE_PATH, ownedRoots },
        { userId, threadId, policy: network },
      ),
      agentWrittenPaths: previous?.sandbox.agentWrittenPaths,
    });
    const entry: ThreadEntry = { sandbox, mode, userId, threadId, network };
    this.threads.set(id, entry);
    return entry;
  }
}

/** Factory form for hosts that prefer functions over `new`. */
export function createLocalProvider(options: LocalProviderOptions = {}): LocalSandboxProvider {
  return new LocalSandboxProvider(options);
}

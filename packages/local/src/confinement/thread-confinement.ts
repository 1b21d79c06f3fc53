import path from 'node:path';
import type { EgressAttachment, Logger, PathMapping } from '@sbx/core';
import type { CommandMode, IsolationMode } from './isolation-mode.js';
import type { ConfinementProbe, ConfinementTools } from './bwrap-probe.js';
import { ConfinementUnavailableError } from './confinement-errors.js';
import type { SandboxOwner } from './sandbox-owner.js';
import { ThreadNamespace } from './thread-namespace.js';
import { buildMountPlan } from './mount-plan.js';
import { FIRST_SOURCE_FD, openMountSources } from './mount-sources.js';
import { openNamespaceEgress, type NamespaceEgress } from './namespace-egress.js';
import { grantTraversal } from './host-traversal.js';
import { namespaceLimits } from './namespace-limits.js';
import type { ConfinementLimits } from './cgroup-limits.js';
import { SeccompUnsupportedArchError, seccompProgram } from './seccomp-filter.js';
import { writeSandboxIdentityFiles } from './sandbox-identity-files.js';
import type { SandboxConfinement } from './sandbox-confinement.js';

/** What a sandbox's mount table and working directory are, as its confinement needs them. */
export interface ThreadConfinementLayout {
  readonly mappings: readonly PathMapping[];
  readonly initCwd: string;
  readonly ownedRoots: readonly string[];
}

export interface ThreadConfinementOptions {
  readonly isolation: IsolationMode;
  readonly allowHostBash: boolean;
  readonly baseDir: string;
  readonly owner: SandboxOwner | undefined;
  readonly limits: ConfinementLimits;
  readonly tmpBytes: number;
  readonly probe: (owner: SandboxOwner | undefined) => ConfinementProbe;
  readonly seccompProgram?: () => Buffer;
  readonly logger: Logger;
}

/**
 * How one provider's thread commands are confined: the command mode decided once, and the live
 * namespace of each sandbox id. The namespaces are kept apart from the provider's LRU cache: an
 * evicted thread's processes keep running until its release (as on the host), and a rebuilt
 * sandbox enters the same one.
 */
export class ThreadConfinement {
  /** How this provider's commands run, decided once at construction. */
  readonly commandMode: CommandMode;
  readonly owner: SandboxOwner | undefined;
  private readonly tools: ConfinementTools | undefined;
  private readonly seccomp: (() => Buffer) | undefined;
  private readonly namespaces = new Map<string, ThreadNamespace>();
  private identityFiles: Promise<Record<string, string>> | undefined;

  constructor(private readonly options: ThreadConfinementOptions) {
    this.owner = options.owner;
    const decided = this.decideCommandMode(options.probe);
    this.commandMode = decided.mode;
    this.tools = decided.tools;
    this.seccomp =
      this.commandMode.kind === 'confined' ? this.seccompFor(options.seccompProgram) : undefined;
  }

  /** Host pid of the init of a sandbox's namespace while it runs. */
  initPid(sandboxId: string): number | undefined {
    return this.namespaces.get(sandboxId)?.initPid;
  }

  /** The live namespace of a sandbox id, if it has one. */
  namespace(sandboxId: string): ThreadNamespace | undefined {
    return this.namespaces.get(sandboxId);
  }

  /** Forgets a sandbox id's namespace (the caller ends it); a later `of` builds a new one. */
  forget(sandboxId: string): void {
    this.namespaces.delete(sandboxId);
  }

  /** Ends a sandbox's namespace in the background (eviction), with a log line if that fails. */
  end(sandboxId: string, why: string): void {
    const namespace = this.namespaces.get(sandboxId);
    if (!namespace) return;
    this.namespaces.delete(sandboxId);
    namespace.kill().catch((error: unknown) => {
      this.options.logger.error(`A sandbox namespace ${why} could not be ended`, {
        sandboxId,
        error: error instanceof Error ? error.message : String(error),
      });
    });
  }

  /** Ends every namespace (shutdown). */
  async endAll(): Promise<void> {
    const namespaces = [...this.namespaces.values()];
    this.namespaces.clear();
    await Promise.all(namespaces.map((namespace) => namespace.kill()));
  }

  /**
   * `isolation` and `allowHostBash` together, and whether bubblewrap works here:
   *
   * - `none`: host bash when allowed, else off (the behaviour before confinement).
   * - `bwrap`: confined, or a `ConfinementUnavailableError` naming the cause and the fix;
   *   `allowHostBash` cannot widen it (a warning says it is ignored).
   * - `auto`: `allowHostBash` is an explicit request for the host and wins (a warning says
   *   commands are unconfined); otherwise confined where bubblewrap works, else bash off with a
   *   warning saying why. Never unconfined without `allowHostBash`.
   */
  private decideCommandMode(probeHost: (owner: SandboxOwner | undefined) => ConfinementProbe): {
    mode: CommandMode;
    tools?: ConfinementTools;
  } {
    const { isolation, allowHostBash, logger } = this.options;
    if (isolation === 'none') {
      return {
        mode: allowHostBash
          ? { kind: 'host' }
          : { kind: 'off', reason: 'isolation is none and allow_host_bash is off' },
      };
    }
    if (isolation === 'auto' && allowHostBash) {
      logger.warn(
        'allow_host_bash is on: commands run on the host as the gateway user, unconfined (set sandbox.local.isolation: bwrap to confine them)',
      );
      return { mode: { kind: 'host' } };
    }
    const probe = probeHost(this.owner);
    if (probe.ok) {
      if (allowHostBash) {
        logger.warn(
          'allow_host_bash is ignored: sandbox.local.isolation is bwrap, every command runs confined',
        );
      }
      return {
        mode: { kind: 'confined' },
        tools: { bwrap: probe.bwrap, nsenter: probe.nsenter, disableUserns: probe.disableUserns },
      };
    }
    if (isolation === 'bwrap') {
      throw new ConfinementUnavailableError(
        `sandbox.local.isolation is bwrap but commands cannot be confined here: ${probe.cause}. Fix: ${probe.fix}`,
        { details: { cause: probe.cause, fix: probe.fix } },
      );
    }
    const reason = `bubblewrap cannot confine commands here: ${probe.cause}. Fix: ${probe.fix}`;
    logger.warn(`bash is off (isolation auto): ${reason}`);
    return { mode: { kind: 'off', reason } };
  }

  /**
   * The namespace of a sandbox id (one per id, shared by every sandbox object of it). With
   * `egress`, each start of it opens an attachment (closed when that start ends) and the
   * namespace's way out is that attachment's socket, through a forwarder; without, it has
   * loopback only.
   */
  of(
    sandboxId: string,
    layout: ThreadConfinementLayout,
    egress?: () => Promise<EgressAttachment>,
  ): SandboxConfinement | undefined {
    const tools = this.tools;
    if (this.commandMode.kind !== 'confined' || !tools) return undefined;
    const { baseDir, logger } = this.options;
    let namespace = this.namespaces.get(sandboxId);
    if (!namespace) {
      const limits = namespaceLimits(sandboxId, this.options.limits, logger);
      namespace = new ThreadNamespace({
        bwrap: tools.bwrap,
        nsenter: tools.nsenter,
        disableUserns: tools.disableUserns,
        owner: this.owner,
        mountPlan: async () => {
          if (this.owner) {
            await grantTraversal(baseDir, [
              ...layout.mappings.map((m) => m.hostPath),
              path.join(baseDir, 'confinement', 'etc'),
            ]);
          }
          const { sources, handles } = await openMountSources(
            layout.mappings,
            await this.sandboxIdentityFiles(),
          );
          let network: NamespaceEgress | undefined;
          try {
            network = egress
              ? await openNamespaceEgress(egress, FIRST_SOURCE_FD + handles.length, logger)
              : undefined;
          } catch (error) {
            await Promise.all(handles.map((h) => h.close().catch(() => undefined)));
            throw error;
          }
          const args = buildMountPlan({
            sources,
            tmpBytes: this.options.tmpBytes,
            initCwd: layout.initCwd,
            ...(network ? { egressArgs: network.args } : {}),
          });
          if (!network) return { args, handles };
          return {
            args,
            handles: [...handles, ...network.handles],
            companion: network.companion,
            env: network.env,
            release: network.release,
          };
        },
        ...(this.seccomp ? { seccomp: this.seccomp } : {}),
        limits,
        logger,
        sandboxId,
      });
      this.namespaces.set(sandboxId, namespace);
    }
    return {
      namespace,
      initCwd: layout.initCwd,
      owner: this.owner,
      ownedRoots: layout.ownedRoots,
    };
  }

  /**
   * The seccomp program of every confined command, built once per provider for this machine's
   * architecture. An architecture the filter does not know runs with namespaces only, said once.
   */
  private seccompFor(given: (() => Buffer) | undefined): (() => Buffer) | undefined {
    if (given) return given;
    let program: Buffer;
    try {
      program = seccompProgram();
    } catch (error) {
      if (!SeccompUnsupportedArchError.is(error)) throw error;
      this.options.logger.warn(
        `Confined commands run without a seccomp filter: ${error.message} (namespaces, capabilities and limits still apply)`,
      );
      return undefined;
    }
    return () => program;
  }

  /** The synthesized `/etc/passwd` and friends, written once per provider. */
  private sandboxIdentityFiles(): Promise<Record<string, string>> {
    if (!this.identityFiles) {
      const uid = this.owner?.uid ?? process.getuid?.() ?? 0;
      const gid = this.owner?.gid ?? process.getgid?.() ?? 0;
      const pending = writeSandboxIdentityFiles(
        path.join(this.options.baseDir, 'confinement', `etc-${uid}-${gid}`),
        uid,
        gid,
      );
      pending.catch(() => {
        if (this.identityFiles === pending) this.identityFiles = undefined;
      });
      this.identityFiles = pending;
    }
    return this.identityFiles;
  }
}

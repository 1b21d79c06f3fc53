import { errorMessage, silentLogger, sleep, systemClock } from '@sbx/core';
import type { Clock, Logger } from '@sbx/core';
import type { CreateSandboxRequest } from './create-request.js';
import { isValidSandboxIdForPods } from './create-request.js';
import { createOrAwait, goneBy, isTerminating } from './create-or-await.js';
import type { KubeApi } from './kube-api.js';
import type { ObjectMeta } from './kube-objects.js';
import type {
  DeleteResponse,
  GarbageReport,
  ProvisionerBackend,
  SandboxResponse,
} from './provisioner-backend.js';
import { KubeApiError, ProvisionerHttpError, isKubeStatus } from './provisioner-errors.js';
import type { ProvisionerSettings } from './provisioner-settings.js';
import { SANDBOX_ID_LABEL } from './sandbox-objects.js';

export interface KubeSandboxBackendOptions {
  settings: ProvisionerSettings;
  kube: KubeApi;
  clock?: Clock;
  logger?: Logger;
  /**
   * Reads while waiting for the access URL (default 20), and the pause between them and between
   * the reads of a delete's wait (default 500 ms).
   */
  urlPolls?: number;
  pollIntervalMs?: number;
  /** Tries of one create or delete call on a transient answer (default 3). */
  transientAttempts?: number;
}

/** Answers worth repeating the same call for: throttling, an API server restarting, no answer. */
const TRANSIENT = new Set([0, 429, 500, 502, 503, 504]);

/** The API server's reason with its message, for an error the caller is shown. */
export function kubeReason(err: unknown): string {
  return err instanceof KubeApiError && err.reason
    ? `${err.reason}: ${errorMessage(err)}`
    : errorMessage(err);
}

/** One object the delete of a sandbox removes (a 404 counts as removed). */
export interface SandboxPart {
  what: string;
  remove: () => Promise<void>;
}

/**
 * What both backends share: the namespace, the single-flight create (concurrent creates of one id
 * in this process share one attempt, and the collector leaves an id being created alone), the
 * retry of transient answers, create-or-await with the caller's error, the bounded wait for an
 * access URL, and the delete that removes every part before it reports a partial cleanup. A
 * backend says what its objects are: how to create one, how to answer for one, what a delete
 * removes and which object's going means the sandbox is gone.
 */
export abstract class KubeSandboxBackend implements ProvisionerBackend {
  protected readonly settings: ProvisionerSettings;
  protected readonly kube: KubeApi;
  protected readonly clock: Clock;
  protected readonly logger: Logger;
  protected readonly pollIntervalMs: number;
  readonly #urlPolls: number;
  readonly #attempts: number;
  readonly #creating = new Map<string, Promise<SandboxResponse>>();

  /** The object whose reads name a failed `get` (`Service`, `Sandbox`). */
  protected abstract readonly answerSource: string;
  /** The object whose going ends a delete's wait, as logged (`pod`, `sandbox`). */
  protected abstract readonly primaryKind: string;

  constructor(options: KubeSandboxBackendOptions) {
    this.settings = options.settings;
    this.kube = options.kube;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.#urlPolls = options.urlPolls ?? 20;
    this.pollIntervalMs = options.pollIntervalMs ?? 500;
    this.#attempts = Math.max(1, options.transientAttempts ?? 3);
  }

  get namespace(): string {
    return this.settings.namespace;
  }

  /** Creates the namespace when it does not exist. */
  async ensureNamespace(): Promise<void> {
    const name = this.namespace;
    try {
      await this.kube.readNamespace(name);
      return;
    } catch (err) {
      if (!isKubeStatus(err, 404)) throw err;
    }
    try {
      await this.kube.createNamespace({
        metadata: {
          name,
          labels: { 'app.kubernetes.io/name': 'sbx', 'app.kubernetes.io/component': 'sandbox' },
        },
      });
      this.logger.info('created namespace', { namespace: name });
    } catch (err) {
      if (!isKubeStatus(err, 409)) throw err;
    }
  }

  create(request: CreateSandboxRequest): Promise<SandboxResponse> {
    const pending = this.#creating.get(request.sandboxId);
    if (pending) return pending;
    const attempt = this.createOnce(request).finally(() =>
      this.#creating.delete(request.sandboxId),
    );
    this.#creating.set(request.sandboxId, attempt);
    return attempt;
  }

  /** One create of a sandbox; `create` makes sure only one runs per id in this process. */
  protected abstract createOnce(request: CreateSandboxRequest): Promise<SandboxResponse>;

  /**
   * The answer for a sandbox with an access URL that is not being deleted; undefined otherwise.
   * @throws what the read of `answerSource` throws
   */
  protected abstract answer(id: string): Promise<SandboxResponse | undefined>;

  /** The objects a delete removes, in order. */
  protected abstract parts(id: string): SandboxPart[];

  /** Reads the object whose 404 means the sandbox is gone. */
  protected abstract readPrimary(id: string): Promise<unknown>;

  /**
   * The sandbox as it already is, or undefined. A read that fails is not a reason to refuse: the
   * create that follows tolerates what exists.
   */
  protected existing(id: string, read: () => Promise<SandboxResponse | undefined>) {
    return read().catch((err: unknown) => {
      this.logger.debug('fast-path read failed; creating', {
        sandboxId: id,
        error: errorMessage(err),
      });
      return undefined;
    });
  }

  /**
   * Creates one object or awaits the one being deleted (`createOrAwait`); any other failure is a
   * 500 naming the kind, after `undo` (best effort) when given.
   */
  protected async createPart(
    kind: string,
    name: string,
    create: () => Promise<unknown>,
    read: () => Promise<{ metadata?: { deletionTimestamp?: unknown } }>,
    undo?: () => Promise<void>,
  ): Promise<void> {
    try {
      await createOrAwait(
        {
          clock: this.clock,
          logger: this.logger,
          waitMs: this.settings.terminatingWaitMs,
          pollIntervalMs: this.pollIntervalMs,
          transient: (call) => this.transient(call),
        },
        kind,
        name,
        create,
        read,
      );
    } catch (err) {
      // Still being deleted: what exists stays for the retry (the collector takes it if none comes).
      if (err instanceof ProvisionerHttpError) throw err;
      await undo?.();
      throw new ProvisionerHttpError(500, `${kind} creation failed: ${kubeReason(err)}`, {
        cause: err,
      });
    }
  }

  /**
   * Reads until the sandbox has an access URL, bounded by `urlPolls`.
   * @throws ProvisionerHttpError 500 on a refusal of our credentials, or when no URL came in time
   */
  protected async awaitUrl(
    id: string,
    read: () => Promise<SandboxResponse | undefined>,
  ): Promise<SandboxResponse> {
    for (let poll = 0; poll < this.#urlPolls; poll++) {
      try {
        const answer = await read();
        if (answer !== undefined) return answer;
      } catch (err) {
        // Throttling and restarts pass; a refusal of our credentials will not.
        if (isKubeStatus(err, 401) || isKubeStatus(err, 403)) {
          throw new ProvisionerHttpError(
            500,
            `${this.answerSource} read failed: ${kubeReason(err)}`,
            {
              cause: err,
            },
          );
        }
        this.logger.debug('read failed while waiting for the access URL', {
          sandboxId: id,
          error: errorMessage(err),
        });
      }
      await sleep(this.pollIntervalMs, { clock: this.clock });
    }
    throw new ProvisionerHttpError(500, 'Service access URL was not available in time');
  }

  protected async transient<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        const status = err instanceof KubeApiError ? err.status : -1;
        if (!TRANSIENT.has(status) || attempt >= this.#attempts) throw err;
        await sleep(250 * 2 ** (attempt - 1), { clock: this.clock });
      }
    }
  }

  /** @throws ProvisionerHttpError 404 when the sandbox has no access URL or is being deleted */
  async get(id: string): Promise<SandboxResponse> {
    let answer: SandboxResponse | undefined;
    if (isValidSandboxIdForPods(id)) {
      try {
        answer = await this.answer(id);
      } catch (err) {
        throw new ProvisionerHttpError(
          503,
          `${this.answerSource} read failed: ${kubeReason(err)}`,
          {
            cause: err,
          },
        );
      }
    }
    if (answer === undefined) throw new ProvisionerHttpError(404, `Sandbox '${id}' not found`);
    return answer;
  }

  /**
   * Removes every part (either may already be gone), then waits, bounded by the settings' delete
   * timeout, for the primary object to be gone: a caller that recreates the sandbox right after
   * must not meet the terminating object's 409.
   *
   * @throws ProvisionerHttpError 500 "Partial cleanup" when a delete failed other than by 404
   */
  async delete(id: string): Promise<DeleteResponse> {
    if (!isValidSandboxIdForPods(id)) return { ok: true, sandbox_id: id, terminated: true };
    const failures: string[] = [];
    for (const { what, remove } of this.parts(id)) {
      try {
        await this.transient(remove);
      } catch (err) {
        if (!isKubeStatus(err, 404)) failures.push(`${what}: ${kubeReason(err)}`);
      }
    }
    if (failures.length > 0)
      throw new ProvisionerHttpError(500, `Partial cleanup: ${failures.join('; ')}`);
    const terminated = await goneBy(
      { clock: this.clock, pollIntervalMs: this.pollIntervalMs },
      () => this.readPrimary(id),
      this.clock.now() + this.settings.deleteTimeoutMs,
    );
    if (!terminated)
      this.logger.warn(`${this.primaryKind} still terminating after the delete wait`, {
        sandboxId: id,
      });
    return { ok: true, sandbox_id: id, terminated };
  }

  abstract list(): Promise<{ sandboxes: SandboxResponse[]; count: number }>;
  abstract collectGarbage(): Promise<GarbageReport>;

  /**
   * One collection pass: `orphans(what, objects, partners, remove, into)` deletes each object whose
   * sandbox id is not in `partners` (the other half is gone) and notes the id in `into`. It leaves
   * alone an object with no valid id, one being created by this process (its create may not have
   * reached the second half yet), one being deleted, and one younger than the grace (from the
   * pass's start). A failed delete is logged, not thrown: the next pass tries again.
   */
  protected collector(): (
    what: 'pod' | 'service' | 'networkpolicy',
    objects: readonly { metadata?: ObjectMeta }[],
    partners: ReadonlySet<string | undefined>,
    remove: (id: string) => Promise<void>,
    into: string[],
  ) => Promise<void> {
    const cutoff = this.clock.now() - this.settings.gcGraceMs;
    const collectable = (o: { metadata?: ObjectMeta }): string | undefined => {
      const id = o.metadata?.labels?.[SANDBOX_ID_LABEL];
      if (!id || !isValidSandboxIdForPods(id) || this.#creating.has(id)) return undefined;
      const created = o.metadata?.creationTimestamp;
      if (isTerminating(o) || (created !== undefined && new Date(created).getTime() > cutoff))
        return undefined;
      return id;
    };
    return async (what, objects, partners, remove, into) => {
      for (const o of objects) {
        const id = collectable(o);
        if (id === undefined || partners.has(id)) continue;
        await remove(id).then(
          () => into.push(id),
          (err: unknown) =>
            this.logger.warn(`could not collect a ${what}`, {
              sandboxId: id,
              error: errorMessage(err),
            }),
        );
      }
    };
  }
}

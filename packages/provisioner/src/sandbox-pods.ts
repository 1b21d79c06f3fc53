import { errorMessage, silentLogger, sleep, systemClock } from '@sbx/core';
import type { Clock, Logger } from '@sbx/core';
import type { CreateSandboxRequest } from './create-request.js';
import { createOrAwait, isTerminating } from './create-or-await.js';
import { isValidSandboxIdForPods } from './create-request.js';
import type { KubeApi } from './kube-api.js';
import type { ProvisionerBackend } from './provisioner-backend.js';
import type { Pod, Service } from './kube-objects.js';
import { KubeApiError, ProvisionerHttpError, isKubeStatus } from './provisioner-errors.js';
import type { ProvisionerSettings } from './provisioner-settings.js';
import {
  SANDBOX_ID_LABEL,
  sandboxSelector,
  accessUrl,
  podName,
  sandboxPod,
  sandboxService,
  serviceName,
} from './sandbox-objects.js';

/** What the API answers for one sandbox (`status` is the Pod phase, or `NotFound`). */
export interface SandboxResponse {
  sandbox_id: string;
  sandbox_url: string;
  status: string;
}

export interface DeleteResponse {
  ok: true;
  sandbox_id: string;
  /** False when the Pod was still terminating at the end of the delete's wait. */
  terminated: boolean;
}

export interface GarbageReport {
  /** Sandbox ids whose Pod was deleted because its Service was gone. */
  pods: string[];
  /** Sandbox ids whose Service was deleted because its Pod was gone. */
  services: string[];
}

export interface SandboxPodsOptions {
  settings: ProvisionerSettings;
  kube: KubeApi;
  clock?: Clock;
  logger?: Logger;
  /**
   * Service reads while waiting for the access URL (default 20), and the pause between them and
   * between the Pod reads of a delete's wait (default 500 ms).
   */
  urlPolls?: number;
  pollIntervalMs?: number;
  /** Tries of one create call on a transient answer (default 3). */
  transientAttempts?: number;
}

/** Answers worth repeating the same call for: throttling, an API server restarting, no answer. */
const TRANSIENT = new Set([0, 429, 500, 502, 503, 504]);

function kubeReason(err: unknown): string {
  return err instanceof KubeApiError && err.reason
    ? `${err.reason}: ${errorMessage(err)}`
    : errorMessage(err);
}

const terminating = isTerminating;

function createdAt(meta: { creationTimestamp?: string | Date } | undefined): number {
  const t = meta?.creationTimestamp;
  return t === undefined ? 0 : new Date(t).getTime();
}

/**
 * One Pod and one Service per sandbox, created idempotently: a create that finds a Service with an
 * access URL answers with it; a Pod or Service that already exists (a retry, a second provisioner
 * replica, a create that crashed half-way) is used as it is. Concurrent creates of one id in this
 * process share one attempt.
 */
export class SandboxPods implements ProvisionerBackend {
  readonly #settings: ProvisionerSettings;
  readonly #kube: KubeApi;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #urlPolls: number;
  readonly #pollIntervalMs: number;
  readonly #attempts: number;
  readonly #creating = new Map<string, Promise<SandboxResponse>>();

  constructor(options: SandboxPodsOptions) {
    this.#settings = options.settings;
    this.#kube = options.kube;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
    this.#urlPolls = options.urlPolls ?? 20;
    this.#pollIntervalMs = options.pollIntervalMs ?? 500;
    this.#attempts = Math.max(1, options.transientAttempts ?? 3);
  }

  get namespace(): string {
    return this.#settings.namespace;
  }

  /** Creates the namespace when it does not exist. */
  async ensureNamespace(): Promise<void> {
    const name = this.#settings.namespace;
    try {
      await this.#kube.readNamespace(name);
      return;
    } catch (err) {
      if (!isKubeStatus(err, 404)) throw err;
    }
    try {
      await this.#kube.createNamespace({
        metadata: {
          name,
          labels: { 'app.kubernetes.io/name': 'sbx', 'app.kubernetes.io/component': 'sandbox' },
        },
      });
      this.#logger.info('created namespace', { namespace: name });
    } catch (err) {
      if (!isKubeStatus(err, 409)) throw err;
    }
  }

  create(request: CreateSandboxRequest): Promise<SandboxResponse> {
    const pending = this.#creating.get(request.sandboxId);
    if (pending) return pending;
    const attempt = this.#create(request).finally(() => this.#creating.delete(request.sandboxId));
    this.#creating.set(request.sandboxId, attempt);
    return attempt;
  }

  async #create(request: CreateSandboxRequest): Promise<SandboxResponse> {
    const id = request.sandboxId;
    // Built first: a request that breaks a mount rule is refused before anything exists.
    const pod = sandboxPod(this.#settings, request);
    const service = sandboxService(this.#settings, id);
    // A read that fails is not a reason to refuse: the create below tolerates what exists.
    const existing = await this.#fastPath(id).catch((err: unknown) => {
      this.#logger.debug('fast-path read failed; creating', {
        sandboxId: id,
        error: errorMessage(err),
      });
      return undefined;
    });
    if (existing !== undefined) return existing;

    try {
      await this.#createOrAwait(
        'Pod',
        podName(id),
        () => this.#kube.createPod(this.namespace, pod),
        () => this.#kube.readPod(this.namespace, podName(id)),
      );
    } catch (err) {
      if (err instanceof ProvisionerHttpError) throw err;
      throw new ProvisionerHttpError(500, `Pod creation failed: ${kubeReason(err)}`, {
        cause: err,
      });
    }
    try {
      await this.#createOrAwait(
        'Service',
        serviceName(id),
        () => this.#kube.createService(this.namespace, service),
        () => this.#kube.readService(this.namespace, serviceName(id)),
      );
    } catch (err) {
      // Still being deleted: the Pod stays for the retry (the collector takes it if none comes).
      if (err instanceof ProvisionerHttpError) throw err;
      // A Pod nobody can reach is only a cost: remove it (best effort; the collector catches
      // what this misses).
      await this.#kube.deletePod(this.namespace, podName(id)).catch((cleanup: unknown) => {
        this.#logger.warn('could not delete the pod of a failed create', {
          sandboxId: id,
          error: errorMessage(cleanup),
        });
      });
      throw new ProvisionerHttpError(500, `Service creation failed: ${kubeReason(err)}`, {
        cause: err,
      });
    }
    for (let poll = 0; poll < this.#urlPolls; poll++) {
      try {
        const url = await this.#serviceUrl(id);
        if (url !== undefined)
          return { sandbox_id: id, sandbox_url: url, status: await this.#phase(id) };
      } catch (err) {
        // Throttling and restarts pass; a refusal of our credentials will not.
        if (isKubeStatus(err, 401) || isKubeStatus(err, 403)) {
          throw new ProvisionerHttpError(500, `Service read failed: ${kubeReason(err)}`, {
            cause: err,
          });
        }
        this.#logger.debug('service read failed while waiting for its URL', {
          sandboxId: id,
          error: errorMessage(err),
        });
      }
      await sleep(this.#pollIntervalMs, { clock: this.#clock });
    }
    throw new ProvisionerHttpError(500, 'Service access URL was not available in time');
  }

  #createOrAwait(
    kind: 'Pod' | 'Service',
    name: string,
    create: () => Promise<unknown>,
    read: () => Promise<Pod | Service>,
  ): Promise<void> {
    return createOrAwait(
      {
        clock: this.#clock,
        logger: this.#logger,
        waitMs: this.#settings.terminatingWaitMs,
        pollIntervalMs: this.#pollIntervalMs,
        transient: (call) => this.#transient(call),
      },
      kind,
      name,
      create,
      read,
    );
  }

  /**
   * The answer for a sandbox whose Service has an access URL and whose Pod exists, neither being
   * deleted; undefined otherwise (the create goes on and meets what exists).
   */
  async #fastPath(id: string): Promise<SandboxResponse | undefined> {
    const url = await this.#serviceUrl(id);
    if (url === undefined) return undefined;
    let pod: Pod;
    try {
      pod = await this.#kube.readPod(this.namespace, podName(id));
    } catch (err) {
      if (isKubeStatus(err, 404)) return undefined;
      throw err;
    }
    if (terminating(pod)) return undefined;
    return { sandbox_id: id, sandbox_url: url, status: pod.status?.phase ?? 'Unknown' };
  }

  async #transient<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        const status = err instanceof KubeApiError ? err.status : -1;
        if (!TRANSIENT.has(status) || attempt >= this.#attempts) throw err;
        await sleep(250 * 2 ** (attempt - 1), { clock: this.#clock });
      }
    }
  }

  /** The Service's access URL; undefined when it has none yet, is gone or is being deleted. */
  async #serviceUrl(id: string): Promise<string | undefined> {
    try {
      const service = await this.#kube.readService(this.namespace, serviceName(id));
      return terminating(service) ? undefined : accessUrl(this.#settings, service);
    } catch (err) {
      if (isKubeStatus(err, 404)) return undefined;
      throw err;
    }
  }

  /** The Pod phase; `Terminating` for a Pod being deleted (never `Running`: it is going). */
  async #phase(id: string): Promise<string> {
    try {
      const pod = await this.#kube.readPod(this.namespace, podName(id));
      return terminating(pod) ? 'Terminating' : (pod.status?.phase ?? 'Unknown');
    } catch (err) {
      // The API's answer for a sandbox whose Pod cannot be read (the reference's `NotFound`).
      if (!isKubeStatus(err, 404)) {
        this.#logger.debug('pod read failed', { sandboxId: id, error: errorMessage(err) });
      }
      return 'NotFound';
    }
  }

  /** @throws ProvisionerHttpError 404 when the sandbox has no Service with an access URL */
  async get(id: string): Promise<SandboxResponse> {
    let url: string | undefined;
    if (isValidSandboxIdForPods(id)) {
      try {
        url = await this.#serviceUrl(id);
      } catch (err) {
        throw new ProvisionerHttpError(503, `Service read failed: ${kubeReason(err)}`, {
          cause: err,
        });
      }
    }
    if (url === undefined) throw new ProvisionerHttpError(404, `Sandbox '${id}' not found`);
    const status = await this.#phase(id);
    // A sandbox being deleted is as good as gone: its URL is never handed out.
    if (status === 'Terminating') throw new ProvisionerHttpError(404, `Sandbox '${id}' not found`);
    return { sandbox_id: id, sandbox_url: url, status };
  }

  /**
   * Deletes the Service and the Pod (either may already be gone), then waits, bounded by the
   * settings' delete timeout, for the Pod to be gone: a caller that recreates the sandbox right
   * after must not meet the terminating Pod's 409.
   *
   * @throws ProvisionerHttpError 500 "Partial cleanup" when a delete failed other than by 404
   */
  async delete(id: string): Promise<DeleteResponse> {
    if (!isValidSandboxIdForPods(id)) return { ok: true, sandbox_id: id, terminated: true };
    const failures: string[] = [];
    const remove = async (what: string, call: () => Promise<void>) => {
      try {
        await this.#transient(call);
      } catch (err) {
        if (!isKubeStatus(err, 404)) failures.push(`${what}: ${kubeReason(err)}`);
      }
    };
    await remove('service', () => this.#kube.deleteService(this.namespace, serviceName(id)));
    await remove('pod', () => this.#kube.deletePod(this.namespace, podName(id)));
    if (failures.length > 0)
      throw new ProvisionerHttpError(500, `Partial cleanup: ${failures.join('; ')}`);
    const terminated = await this.#podGone(id);
    if (!terminated)
      this.#logger.warn('pod still terminating after the delete wait', { sandboxId: id });
    return { ok: true, sandbox_id: id, terminated };
  }

  async #podGone(id: string): Promise<boolean> {
    const deadline = this.#clock.now() + this.#settings.deleteTimeoutMs;
    for (;;) {
      try {
        await this.#kube.readPod(this.namespace, podName(id));
      } catch (err) {
        if (isKubeStatus(err, 404)) return true;
      }
      if (this.#clock.now() >= deadline) return false;
      await sleep(this.#pollIntervalMs, { clock: this.#clock });
    }
  }

  /** Every sandbox with a Service and an access URL; the phases come from one Pod list. */
  async list(): Promise<{ sandboxes: SandboxResponse[]; count: number }> {
    const [services, pods] = await Promise.all([
      this.#kube.listServices(this.namespace, sandboxSelector(this.#settings)),
      this.#kube.listPods(this.namespace, sandboxSelector(this.#settings)).catch((err: unknown) => {
        // The list still answers, with `NotFound` phases: it is what gateways reconcile from.
        this.#logger.warn('pod list failed; answering phases as NotFound', {
          error: errorMessage(err),
        });
        return { items: [] as Pod[] };
      }),
    ]);
    const phases = new Map(
      pods.items.map((p) => [
        p.metadata?.labels?.[SANDBOX_ID_LABEL],
        terminating(p) ? 'Terminating' : (p.status?.phase ?? 'Unknown'),
      ]),
    );
    const sandboxes: SandboxResponse[] = [];
    for (const service of services.items) {
      if (terminating(service)) continue;
      const id = service.metadata?.labels?.[SANDBOX_ID_LABEL];
      const url = accessUrl(this.#settings, service);
      if (!id || url === undefined) continue;
      const status = phases.get(id) ?? 'NotFound';
      // Going away: no gateway may adopt it or be handed its URL.
      if (status === 'Terminating') continue;
      sandboxes.push({ sandbox_id: id, sandbox_url: url, status });
    }
    return { sandboxes, count: sandboxes.length };
  }

  /**
   * Deletes the halves of sandboxes whose other half is gone: a Pod without its Service (a create
   * that died between the two, a Service deleted by hand) or a Service without its Pod. Anything
   * younger than the grace, or being created by this process, is left alone: its create may not
   * have reached the second half yet.
   */
  async collectGarbage(): Promise<GarbageReport> {
    const [pods, services] = await Promise.all([
      this.#kube.listPods(this.namespace, sandboxSelector(this.#settings)),
      this.#kube.listServices(this.namespace, sandboxSelector(this.#settings)),
    ]);
    const idOf = (o: Pod | Service) => o.metadata?.labels?.[SANDBOX_ID_LABEL];
    const podIds = new Set(pods.items.map(idOf));
    const serviceIds = new Set(services.items.map(idOf));
    const cutoff = this.#clock.now() - this.#settings.gcGraceMs;
    const collectable = (o: Pod | Service): string | undefined => {
      const id = idOf(o);
      if (!id || !isValidSandboxIdForPods(id) || this.#creating.has(id)) return undefined;
      if (o.metadata?.deletionTimestamp !== undefined || createdAt(o.metadata) > cutoff)
        return undefined;
      return id;
    };
    const report: GarbageReport = { pods: [], services: [] };
    for (const pod of pods.items) {
      const id = collectable(pod);
      if (id === undefined || serviceIds.has(id)) continue;
      await this.#kube.deletePod(this.namespace, podName(id)).then(
        () => report.pods.push(id),
        (err: unknown) =>
          this.#logger.warn('could not collect a pod', { sandboxId: id, error: errorMessage(err) }),
      );
    }
    for (const service of services.items) {
      const id = collectable(service);
      if (id === undefined || podIds.has(id)) continue;
      await this.#kube.deleteService(this.namespace, serviceName(id)).then(
        () => report.services.push(id),
        (err: unknown) =>
          this.#logger.warn('could not collect a service', {
            sandboxId: id,
            error: errorMessage(err),
          }),
      );
    }
    if (report.pods.length + report.services.length > 0)
      this.#logger.info('collected half-created sandboxes', { ...report });
    return report;
  }
}

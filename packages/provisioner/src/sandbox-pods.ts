import { errorMessage } from '@sbx/core';
import type { CreateSandboxRequest } from './create-request.js';
import { isTerminating } from './create-or-await.js';
import type { KubeNetworkPolicy, Pod, Service } from './kube-objects.js';
import { KubeSandboxBackend, kubeReason } from './kube-sandbox-backend.js';
import type { KubeSandboxBackendOptions, SandboxPart } from './kube-sandbox-backend.js';
import type { GarbageReport, SandboxResponse } from './provisioner-backend.js';
import { ProvisionerHttpError, isKubeStatus } from './provisioner-errors.js';
import { egressRoute } from './sandbox-egress-route.js';
import { networkPolicyName, sandboxNetworkPolicy } from './sandbox-network-policy.js';
import {
  SANDBOX_ID_LABEL,
  accessUrl,
  podName,
  sandboxPod,
  sandboxSelector,
  sandboxService,
  serviceName,
} from './sandbox-objects.js';

export type SandboxPodsOptions = KubeSandboxBackendOptions;

const terminating = isTerminating;

/**
 * Whether two policy specs say the same. Compared on what this package writes, as a server
 * returns it: an empty `egress` list comes back absent, key order is the server's.
 */
function sameSpec(a: KubeNetworkPolicy['spec'], b: KubeNetworkPolicy['spec']): boolean {
  const canon = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canon)
      : typeof v === 'object' && v !== null
        ? Object.fromEntries(
            Object.entries(v)
              .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
              .map(([k, w]) => [k, canon(w)]),
          )
        : v;
  const essence = (spec: KubeNetworkPolicy['spec']) =>
    JSON.stringify(
      canon({
        podSelector: spec.podSelector?.matchLabels ?? {},
        policyTypes: [...(spec.policyTypes ?? [])].sort(),
        egress: spec.egress ?? [],
      }),
    );
  return essence(a) === essence(b);
}

/**
 * One Pod and one Service per sandbox, created idempotently: a create that finds a Service with an
 * access URL answers with it; a Pod or Service that already exists (a retry, a second provisioner
 * replica, a create that crashed half-way) is used as it is. Concurrent creates of one id in this
 * process share one attempt.
 */
export class SandboxPods extends KubeSandboxBackend {
  protected readonly answerSource = 'Service';
  protected readonly primaryKind = 'pod';

  protected async createOnce(request: CreateSandboxRequest): Promise<SandboxResponse> {
    const id = request.sandboxId;
    // Built first: a request that breaks a mount rule is refused before anything exists.
    const route =
      request.networkMode === 'open' ? await egressRoute(this.kube, this.settings) : undefined;
    const pod = sandboxPod(this.settings, request, route);
    const service = sandboxService(this.settings, id);
    const policy = sandboxNetworkPolicy(this.settings, id, request.networkMode, route);
    const existing = await this.existing(id, () => this.#fastPath(id));
    if (existing !== undefined) {
      await this.#checkPolicy(id, policy);
      return existing;
    }

    // Before the Pod: a Pod never runs, even briefly, with egress its policy does not restrict.
    if (policy !== undefined) {
      await this.createPart(
        'NetworkPolicy',
        policy.metadata!.name!,
        () => this.kube.createNetworkPolicy(this.namespace, policy),
        () => this.kube.readNetworkPolicy(this.namespace, policy.metadata!.name!),
      );
    }
    await this.createPart(
      'Pod',
      podName(id),
      () => this.kube.createPod(this.namespace, pod),
      () => this.kube.readPod(this.namespace, podName(id)),
    );
    await this.createPart(
      'Service',
      serviceName(id),
      () => this.kube.createService(this.namespace, service),
      () => this.kube.readService(this.namespace, serviceName(id)),
      // A Pod nobody can reach is only a cost: remove it (best effort; the collector catches
      // what this misses).
      () =>
        this.kube.deletePod(this.namespace, podName(id)).catch((cleanup: unknown) => {
          this.logger.warn('could not delete the pod of a failed create', {
            sandboxId: id,
            error: errorMessage(cleanup),
          });
        }),
    );
    // A policy that already existed (a retry, a second replica) was used as it is: it must be
    // the one asked for, or this create would hand out a sandbox of another egress.
    await this.#checkPolicy(id, policy);
    return this.awaitUrl(id, async () => {
      const url = await this.#serviceUrl(id);
      return url === undefined
        ? undefined
        : { sandbox_id: id, sandbox_url: url, status: await this.#phase(id) };
    });
  }

  /**
   * Whether the sandbox's NetworkPolicy is `wanted` (none when undefined).
   * @throws ProvisionerHttpError 409 when the sandbox exists with another egress, 503 when the
   *   policy cannot be read
   */
  async #checkPolicy(id: string, wanted: KubeNetworkPolicy | undefined): Promise<void> {
    let found: KubeNetworkPolicy | undefined;
    try {
      found = await this.transient(() =>
        this.kube.readNetworkPolicy(this.namespace, networkPolicyName(id)),
      );
    } catch (err) {
      if (!isKubeStatus(err, 404)) {
        throw new ProvisionerHttpError(503, `NetworkPolicy read failed: ${kubeReason(err)}`, {
          cause: err,
        });
      }
    }
    const same =
      found === undefined || terminating(found)
        ? wanted === undefined
        : wanted !== undefined && sameSpec(found.spec, wanted.spec);
    if (!same) {
      throw new ProvisionerHttpError(
        409,
        `Sandbox '${id}' exists with another network policy; delete it first`,
      );
    }
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
      pod = await this.kube.readPod(this.namespace, podName(id));
    } catch (err) {
      if (isKubeStatus(err, 404)) return undefined;
      throw err;
    }
    if (terminating(pod)) return undefined;
    return { sandbox_id: id, sandbox_url: url, status: pod.status?.phase ?? 'Unknown' };
  }

  /** The Service's access URL; undefined when it has none yet, is gone or is being deleted. */
  async #serviceUrl(id: string): Promise<string | undefined> {
    try {
      const service = await this.kube.readService(this.namespace, serviceName(id));
      return terminating(service) ? undefined : accessUrl(this.settings, service);
    } catch (err) {
      if (isKubeStatus(err, 404)) return undefined;
      throw err;
    }
  }

  /** The Pod phase; `Terminating` for a Pod being deleted (never `Running`: it is going). */
  async #phase(id: string): Promise<string> {
    try {
      const pod = await this.kube.readPod(this.namespace, podName(id));
      return terminating(pod) ? 'Terminating' : (pod.status?.phase ?? 'Unknown');
    } catch (err) {
      // The API's answer for a sandbox whose Pod cannot be read (the reference's `NotFound`).
      if (!isKubeStatus(err, 404)) {
        this.logger.debug('pod read failed', { sandboxId: id, error: errorMessage(err) });
      }
      return 'NotFound';
    }
  }

  /** The Service's URL with the Pod's phase (`NotFound` when it cannot be read). */
  protected async answer(id: string): Promise<SandboxResponse | undefined> {
    const url = await this.#serviceUrl(id);
    if (url === undefined) return undefined;
    const status = await this.#phase(id);
    // A sandbox being deleted is as good as gone: its URL is never handed out.
    if (status === 'Terminating') return undefined;
    return { sandbox_id: id, sandbox_url: url, status };
  }

  protected parts(id: string): SandboxPart[] {
    return [
      { what: 'service', remove: () => this.kube.deleteService(this.namespace, serviceName(id)) },
      { what: 'pod', remove: () => this.kube.deletePod(this.namespace, podName(id)) },
      // After the Pod: while it may still run, its egress stays restricted.
      {
        what: 'networkpolicy',
        remove: () => this.kube.deleteNetworkPolicy(this.namespace, networkPolicyName(id)),
      },
    ];
  }

  protected readPrimary(id: string): Promise<Pod> {
    return this.kube.readPod(this.namespace, podName(id));
  }

  /** Every sandbox with a Service and an access URL; the phases come from one Pod list. */
  async list(): Promise<{ sandboxes: SandboxResponse[]; count: number }> {
    const [services, pods] = await Promise.all([
      this.kube.listServices(this.namespace, sandboxSelector(this.settings)),
      this.kube.listPods(this.namespace, sandboxSelector(this.settings)).catch((err: unknown) => {
        // The list still answers, with `NotFound` phases: it is what gateways reconcile from.
        this.logger.warn('pod list failed; answering phases as NotFound', {
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
      const url = accessUrl(this.settings, service);
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
    const [pods, services, policies] = await Promise.all([
      this.kube.listPods(this.namespace, sandboxSelector(this.settings)),
      this.kube.listServices(this.namespace, sandboxSelector(this.settings)),
      this.kube.listNetworkPolicies(this.namespace, sandboxSelector(this.settings)),
    ]);
    const idOf = (o: Pod | Service | KubeNetworkPolicy) => o.metadata?.labels?.[SANDBOX_ID_LABEL];
    const podIds = new Set(pods.items.map(idOf));
    const serviceIds = new Set(services.items.map(idOf));
    const orphans = this.collector();
    const report: GarbageReport = { pods: [], services: [] };
    await orphans(
      'pod',
      pods.items,
      serviceIds,
      (id) => this.kube.deletePod(this.namespace, podName(id)),
      report.pods,
    );
    await orphans(
      'service',
      services.items,
      podIds,
      (id) => this.kube.deleteService(this.namespace, serviceName(id)),
      report.services,
    );
    // A policy outlives its Pod only when a create failed between the two: nothing it restricts.
    const collectedPolicies: string[] = [];
    await orphans(
      'networkpolicy',
      policies.items,
      podIds,
      (id) => this.kube.deleteNetworkPolicy(this.namespace, networkPolicyName(id)),
      collectedPolicies,
    );
    if (collectedPolicies.length > 0)
      this.logger.info('collected network policies without a pod', {
        sandboxIds: collectedPolicies,
      });
    if (report.pods.length + report.services.length > 0)
      this.logger.info('collected half-created sandboxes', { ...report });
    return report;
  }
}

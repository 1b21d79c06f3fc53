import { AGENT_SANDBOX_GROUP } from './kube-api.js';
import type { CreateSandboxRequest } from './create-request.js';
import { isValidSandboxIdForPods } from './create-request.js';
import { isTerminating } from './create-or-await.js';
import type { AgentSandbox, Service } from './kube-objects.js';
import { KubeSandboxBackend } from './kube-sandbox-backend.js';
import type { KubeSandboxBackendOptions, SandboxPart } from './kube-sandbox-backend.js';
import type { GarbageReport, SandboxResponse } from './provisioner-backend.js';
import { ProvisionerHttpError, isKubeStatus } from './provisioner-errors.js';
import {
  SANDBOX_ID_LABEL,
  accessUrl,
  podName,
  sandboxLabels,
  sandboxPod,
  sandboxSelector,
  sandboxService,
  serviceName,
} from './sandbox-objects.js';

export type AgentSandboxesOptions = KubeSandboxBackendOptions;

/**
 * The API's `status` for a `Sandbox`, from its `Ready` condition (the controller's reasons):
 * Ready → `Running`; a failed or finished Pod, or an expired Sandbox → `Failed` / `Succeeded`;
 * being deleted → `Terminating`; anything else not ready yet → `Pending`.
 */
export function sandboxPhase(sandbox: AgentSandbox): string {
  if (isTerminating(sandbox)) return 'Terminating';
  const ready = sandbox.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status === 'True') return 'Running';
  switch (ready?.reason) {
    case 'PodFailed':
    case 'SandboxExpired':
      return 'Failed';
    case 'PodSucceeded':
      return 'Succeeded';
    case 'SandboxSuspended':
      return 'Suspended';
    default:
      return 'Pending';
  }
}

/**
 * Sandboxes as kubernetes-sigs/agent-sandbox `Sandbox` objects: sbx's Pod spec is the pod
 * template, the controller makes the Pod and a headless Service, a `shutdownTime` backstop expires
 * it even when no gateway is left, and `Ready` is the status. The URL is the controller's Service
 * (`status.serviceFQDN`) with `SANDBOX_SERVICE_TYPE=ClusterIP`; with `NodePort` sbx adds its own
 * NodePort Service, owned by the `Sandbox` (so the cluster deletes it with it).
 */
export class AgentSandboxes extends KubeSandboxBackend {
  protected readonly answerSource = 'Sandbox';
  protected readonly primaryKind = 'sandbox';

  get #version(): string {
    return this.settings.agentSandboxVersion;
  }

  /** The `Sandbox` object of a create: sbx's Pod spec and labels as its template. */
  sandboxObject(request: CreateSandboxRequest): AgentSandbox {
    const pod = sandboxPod(this.settings, request);
    const id = request.sandboxId;
    const after = this.settings.shutdownAfterSeconds;
    return {
      apiVersion: `${AGENT_SANDBOX_GROUP}/${this.#version}`,
      kind: 'Sandbox',
      metadata: {
        name: podName(id),
        namespace: this.namespace,
        labels: sandboxLabels(id, this.settings.compat),
      },
      spec: {
        podTemplate: { metadata: { labels: pod.metadata!.labels! }, spec: pod.spec! },
        service: true,
        ...(after > 0
          ? {
              // Whole seconds: the schema's date-time, as the API server writes it back.
              shutdownTime: new Date(Math.floor(this.clock.now() / 1000) * 1000 + after * 1000)
                .toISOString()
                .replace('.000Z', 'Z'),
              shutdownPolicy: 'Delete' as const,
            }
          : {}),
      },
    };
  }

  protected async createOnce(request: CreateSandboxRequest): Promise<SandboxResponse> {
    const id = request.sandboxId;
    if (request.networkMode !== 'open') {
      // No per-sandbox NetworkPolicy is made for a Sandbox: refused, never run unrestricted.
      throw new ProvisionerHttpError(422, [
        {
          loc: ['body', 'network_mode'],
          msg: `${request.networkMode} is enforced by the pods backend only (SANDBOX_BACKEND=pods)`,
        },
      ]);
    }
    const body = this.sandboxObject(request);
    const existing = await this.existing(id, () => this.answer(id));
    if (existing !== undefined) return existing;
    let created: AgentSandbox | undefined;
    await this.createPart(
      'Sandbox',
      podName(id),
      async () => {
        created = await this.kube.createSandbox(this.namespace, this.#version, body);
      },
      () => this.readPrimary(id),
    );
    if (this.settings.serviceType === 'NodePort') {
      const owner = created ?? (await this.readPrimary(id));
      await this.createPart(
        'Service',
        serviceName(id),
        () => this.kube.createService(this.namespace, this.#nodePortService(id, owner)),
        () => this.kube.readService(this.namespace, serviceName(id)),
      );
    }
    return this.awaitUrl(id, () => this.answer(id));
  }

  /** sbx's NodePort Service for the Sandbox's Pod, owned by the Sandbox. */
  #nodePortService(id: string, owner: AgentSandbox): Service {
    const service = sandboxService(this.settings, id);
    const uid = owner.metadata?.uid;
    if (uid) {
      service.metadata!.ownerReferences = [
        {
          apiVersion: `${AGENT_SANDBOX_GROUP}/${this.#version}`,
          kind: 'Sandbox',
          name: podName(id),
          uid,
          blockOwnerDeletion: false,
        },
      ];
    }
    return service;
  }

  /** The URL of the controller's Service, once it has reported it. */
  #controllerUrl(sandbox: AgentSandbox): string | undefined {
    const fqdn = sandbox.status?.serviceFQDN;
    return fqdn ? `http://${fqdn}:${this.settings.containerPort}` : undefined;
  }

  /** The URL of a Sandbox, or undefined while it has none. */
  async #url(id: string, sandbox: AgentSandbox): Promise<string | undefined> {
    if (this.settings.serviceType === 'ClusterIP') return this.#controllerUrl(sandbox);
    try {
      const service = await this.kube.readService(this.namespace, serviceName(id));
      return isTerminating(service) ? undefined : accessUrl(this.settings, service);
    } catch (err) {
      if (isKubeStatus(err, 404)) return undefined;
      throw err;
    }
  }

  /** The answer for a Sandbox with a URL that is not being deleted; undefined otherwise. */
  protected async answer(id: string): Promise<SandboxResponse | undefined> {
    let sandbox: AgentSandbox;
    try {
      sandbox = await this.readPrimary(id);
    } catch (err) {
      if (isKubeStatus(err, 404)) return undefined;
      throw err;
    }
    const status = sandboxPhase(sandbox);
    if (status === 'Terminating') return undefined;
    const url = await this.#url(id, sandbox);
    return url === undefined ? undefined : { sandbox_id: id, sandbox_url: url, status };
  }

  /**
   * sbx's NodePort Service, then the Sandbox (the cluster removes its Pod and the controller's
   * Service, which it owns); the delete waits for the Sandbox to be gone.
   */
  protected parts(id: string): SandboxPart[] {
    const sandbox: SandboxPart = {
      what: 'sandbox',
      remove: () => this.kube.deleteSandbox(this.namespace, this.#version, podName(id)),
    };
    if (this.settings.serviceType !== 'NodePort') return [sandbox];
    const service: SandboxPart = {
      what: 'service',
      remove: () => this.kube.deleteService(this.namespace, serviceName(id)),
    };
    return [service, sandbox];
  }

  protected readPrimary(id: string): Promise<AgentSandbox> {
    return this.kube.readSandbox(this.namespace, this.#version, podName(id));
  }

  async list(): Promise<{ sandboxes: SandboxResponse[]; count: number }> {
    const selector = sandboxSelector(this.settings);
    const [sandboxes, services] = await Promise.all([
      this.kube.listSandboxes(this.namespace, this.#version, selector),
      this.settings.serviceType === 'NodePort'
        ? this.kube.listServices(this.namespace, selector)
        : Promise.resolve({ items: [] as Service[] }),
    ]);
    const urls = new Map(
      services.items
        .filter((s) => !isTerminating(s))
        .map((s) => [s.metadata?.labels?.[SANDBOX_ID_LABEL], accessUrl(this.settings, s)]),
    );
    const out: SandboxResponse[] = [];
    for (const sandbox of sandboxes.items) {
      const id = sandbox.metadata?.labels?.[SANDBOX_ID_LABEL];
      if (!id || !isValidSandboxIdForPods(id)) continue;
      const status = sandboxPhase(sandbox);
      if (status === 'Terminating') continue;
      const url =
        this.settings.serviceType === 'ClusterIP' ? this.#controllerUrl(sandbox) : urls.get(id);
      if (url === undefined) continue;
      out.push({ sandbox_id: id, sandbox_url: url, status });
    }
    return { sandboxes: out, count: out.length };
  }

  /**
   * sbx's NodePort Services whose Sandbox is gone (the cluster's garbage collector normally
   * removes them with their owner; this catches one made without an owner). The Sandboxes
   * themselves need no collection: the controller keeps their Pods, and `shutdownTime` ends them.
   */
  async collectGarbage(): Promise<GarbageReport> {
    const report: GarbageReport = { pods: [], services: [] };
    if (this.settings.serviceType !== 'NodePort') return report;
    const selector = sandboxSelector(this.settings);
    const [sandboxes, services] = await Promise.all([
      this.kube.listSandboxes(this.namespace, this.#version, selector),
      this.kube.listServices(this.namespace, selector),
    ]);
    const ids = new Set(sandboxes.items.map((s) => s.metadata?.labels?.[SANDBOX_ID_LABEL]));
    await this.collector()(
      'service',
      services.items,
      ids,
      (id) => this.kube.deleteService(this.namespace, serviceName(id)),
      report.services,
    );
    return report;
  }
}

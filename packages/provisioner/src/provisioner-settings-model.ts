// What the provisioner's settings are: each setting with why it exists, the values an
// enumerated one takes, and the defaults. Where a value comes from is
// `provisioner-settings-names.ts`; how it is read and checked, `provisioner-setting-values.ts` and
// `provisioner-settings-checks.ts`; the layering, `provisioner-settings.ts`.

import type { CompatProfileName } from './compat-profiles.js';

export const SERVICE_TYPES = ['NodePort', 'ClusterIP'] as const;
/** How sandboxes are made: Pods and Services directly, or agent-sandbox `Sandbox` objects. */
export const BACKENDS = ['pods', 'agent-sandbox'] as const;
export type ProvisionerBackendName = (typeof BACKENDS)[number];
/** The `agents.x-k8s.io` versions whose `Sandbox` schema this package writes (their shared fields). */
export const AGENT_SANDBOX_VERSIONS = ['v1alpha1', 'v1beta1'] as const;
export type SandboxServiceType = (typeof SERVICE_TYPES)[number];

/** Kubernetes quantities (`100m`, `256Mi`), as they go into the Pod spec. */
export interface ResourceQuantities {
  cpu: string;
  memory: string;
  ephemeralStorage: string;
}

export interface ProvisionerSettings {
  /**
   * Whose labels, namespace, paths and PVC prefix: `sbx`, or `deer-flow` (the reference
   * provisioner's, to take over a running reference deployment). It sets the defaults of
   * `namespace`, `threadsHostPath` and `userDataPvcSubpathPrefix`, which may still be set.
   */
  compat: CompatProfileName;
  /**
   * `pods` (default): one Pod and one Service per sandbox. `agent-sandbox`: one
   * kubernetes-sigs/agent-sandbox `Sandbox` per sandbox (its controller makes the Pod and a
   * headless Service); the HTTP API is the same.
   */
  backend: ProvisionerBackendName;
  /** The `agents.x-k8s.io` version the `agent-sandbox` backend speaks. */
  agentSandboxVersion: (typeof AGENT_SANDBOX_VERSIONS)[number];
  /**
   * `agent-sandbox` backend: each `Sandbox` gets `shutdownTime` this long after its create, so the
   * controller removes it even when every gateway has crashed. 0: no shutdown time.
   */
  shutdownAfterSeconds: number;
  /** Namespace of the sandbox Pods and Services; created when missing. */
  namespace: string;
  /** Check (and create) the namespace at start-up; needs cluster-scoped namespace access. */
  ensureNamespace: boolean;
  /** Image of the sandbox container. */
  sandboxImage: string;
  /**
   * The former user-data directory (`<thread>/user-data`, not keyed by user). Its parent is the
   * host base when it is named `threads`; nothing is mounted from it any more, and nothing may be
   * mounted from it or above it as an extra mount.
   */
  threadsHostPath: string;
  /**
   * The host base: thread user data lives at `users/<user>/threads/<thread>/user-data` below it
   * (hostPath mode), extra mounts must lie under it, and skills views are read from it. Empty: the
   * parent of `threadsHostPath` when that is named `threads`, else none — then the user data must
   * be on a PVC (`userDataPvcName`) and every extra mount is refused.
   */
  hostBaseDir: string;
  skillsPvcName: string;
  /** `{user_id}` / `{thread_id}` are replaced; empty: the PVC is mounted at its root. */
  skillsPvcSubpathTemplate: string;
  userDataPvcName: string;
  /** First segment of every sub-path on the user-data PVC (`<prefix>/users/<u>/threads/<t>/...`). */
  userDataPvcSubpathPrefix: string;
  containerPort: number;
  serviceType: SandboxServiceType;
  /** Host part of NodePort access URLs. */
  nodeHost: string;
  kubeconfigPath: string;
  /** Overrides the kubeconfig's server (and then does not verify its TLS certificate). */
  apiServer: string | undefined;
  /** Required on every `/api/*` request; empty: every `/api/*` request is refused. */
  apiKey: string;
  larkCliInitImage: string;
  larkCliBrokerImage: string;
  larkBrokerDenySubcommands: string;
  requests: ResourceQuantities;
  limits: ResourceQuantities;
  /** The Pods' RuntimeClass (`gvisor`, `kata`: a sandboxing runtime); empty: the node's default. */
  runtimeClassName: string;
  /**
   * A hard bound on each Pod's life: after this many seconds the kubelet stops it (phase
   * `Failed`, reason `DeadlineExceeded`) whatever the gateways do. 0: no bound.
   */
  activeDeadlineSeconds: number;
  /** Run the sandbox container as this uid (and `runAsNonRoot`); undefined: the image's user. */
  runAsUser: number | undefined;
  runAsGroup: number | undefined;
  listenHost: string;
  listenPort: number;
  /** How long a delete waits for the Pod to be gone before answering. */
  deleteTimeoutMs: number;
  /**
   * How long a create that meets a Pod or Service still being deleted (409 on an object with a
   * `deletionTimestamp`) waits for it to go before answering 503 with `Retry-After`.
   */
  terminatingWaitMs: number;
  /**
   * The egress proxy sandboxes reach the outside through: `<service>:<port>`, a Service in the
   * sandbox namespace and its port. When set, each sandbox gets a NetworkPolicy letting it reach
   * only that Service's Pods (no DNS, nothing else), and `HTTP_PROXY`/`HTTPS_PROXY` naming the
   * Service's cluster IP. Empty: no proxy; sandboxes asking for `open` egress get no policy.
   */
  egressProxy: string;
  /** Garbage collection of half-created sandboxes; 0 disables it. */
  gcIntervalMs: number;
  /** A Pod without Service (or the reverse) younger than this is left alone: a create may be under way. */
  gcGraceMs: number;
}

export const DEFAULT_PROVISIONER_SETTINGS: Readonly<ProvisionerSettings> = Object.freeze({
  compat: 'sbx',
  backend: 'pods',
  agentSandboxVersion: 'v1alpha1',
  shutdownAfterSeconds: 86_400,
  namespace: 'sbx',
  ensureNamespace: true,
  sandboxImage: 'ghcr.io/agent-infra/sandbox:latest',
  threadsHostPath: '/var/lib/sbx/threads',
  hostBaseDir: '',
  skillsPvcName: '',
  skillsPvcSubpathTemplate: '',
  userDataPvcName: '',
  userDataPvcSubpathPrefix: 'sbx',
  containerPort: 8080,
  serviceType: 'NodePort',
  nodeHost: 'host.docker.internal',
  kubeconfigPath: '/root/.kube/config',
  apiServer: undefined,
  apiKey: '',
  larkCliInitImage: '',
  larkCliBrokerImage: '',
  larkBrokerDenySubcommands: '',
  requests: Object.freeze({ cpu: '100m', memory: '256Mi', ephemeralStorage: '500Mi' }),
  limits: Object.freeze({ cpu: '1000m', memory: '1Gi', ephemeralStorage: '500Mi' }),
  runtimeClassName: '',
  activeDeadlineSeconds: 0,
  runAsUser: undefined,
  runAsGroup: undefined,
  listenHost: '127.0.0.1',
  listenPort: 8002,
  deleteTimeoutMs: 10_000,
  terminatingWaitMs: 10_000,
  egressProxy: '',
  gcIntervalMs: 60_000,
  gcGraceMs: 120_000,
});

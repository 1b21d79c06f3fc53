import { stat } from 'node:fs/promises';
import { errorMessage, silentLogger, sleep, systemClock, loadOptionalDependency } from '@sbx/core';
import type { Clock, Logger } from '@sbx/core';
import type {
  AgentSandbox,
  Namespace,
  KubeNetworkPolicy,
  ObjectList,
  Pod,
  Service,
} from './kube-objects.js';
import { KubeApiError } from './provisioner-errors.js';

/**
 * The Kubernetes calls the provisioner makes, and nothing more: one namespace, Pods and Services
 * in it. Implemented over `@kubernetes/client-node` by {@link connectKubeApi}; a test may pass its
 * own. Every failure is a {@link KubeApiError} carrying the HTTP status (0: no answer).
 */
export interface KubeApi {
  readNamespace(name: string): Promise<Namespace>;
  createNamespace(body: Namespace): Promise<Namespace>;
  /** Deletes a namespace and everything in it (test clean-up; the provisioner never calls it). */
  deleteNamespace(name: string): Promise<void>;
  createPod(namespace: string, body: Pod): Promise<Pod>;
  readPod(namespace: string, name: string): Promise<Pod>;
  deletePod(namespace: string, name: string): Promise<void>;
  listPods(namespace: string, labelSelector: string): Promise<ObjectList<Pod>>;
  createService(namespace: string, body: Service): Promise<Service>;
  readService(namespace: string, name: string): Promise<Service>;
  deleteService(namespace: string, name: string): Promise<void>;
  listServices(namespace: string, labelSelector: string): Promise<ObjectList<Service>>;
  /** `networking.k8s.io/v1` NetworkPolicies: one per sandbox when egress is restricted. */
  createNetworkPolicy(namespace: string, body: KubeNetworkPolicy): Promise<KubeNetworkPolicy>;
  readNetworkPolicy(namespace: string, name: string): Promise<KubeNetworkPolicy>;
  deleteNetworkPolicy(namespace: string, name: string): Promise<void>;
  listNetworkPolicies(
    namespace: string,
    labelSelector: string,
  ): Promise<ObjectList<KubeNetworkPolicy>>;
  /** kubernetes-sigs/agent-sandbox `Sandbox` objects (`agents.x-k8s.io/<version>`). */
  createSandbox(namespace: string, version: string, body: AgentSandbox): Promise<AgentSandbox>;
  readSandbox(namespace: string, version: string, name: string): Promise<AgentSandbox>;
  deleteSandbox(namespace: string, version: string, name: string): Promise<void>;
  listSandboxes(
    namespace: string,
    version: string,
    labelSelector: string,
  ): Promise<ObjectList<AgentSandbox>>;
}

/** The API group of kubernetes-sigs/agent-sandbox's `Sandbox` resource, and its plural. */
export const AGENT_SANDBOX_GROUP = 'agents.x-k8s.io';
export const AGENT_SANDBOX_PLURAL = 'sandboxes';

const REQUIRED_BY = '@sbx/provisioner';

// Resolved from this package, where the client is a peer, not from @sbx/core (a strict installer
// such as pnpm lets each package see only its own dependencies).
const importFromHere = (specifier: string): Promise<unknown> => import(specifier);

/**
 * The RBAC a provisioner needs in its sandbox namespace: exactly the calls of {@link KubeApi}
 * (the deploy manifests' Role is checked against this). Reading and creating the namespace need
 * a cluster-scoped grant on top; a deployment that creates the namespace itself turns that
 * off (`K8S_ENSURE_NAMESPACE=false`).
 */
export const KUBE_PERMISSIONS: Readonly<Record<'pods' | 'services', readonly string[]>> = {
  pods: ['create', 'get', 'list', 'delete'],
  services: ['create', 'get', 'list', 'delete'],
};

/**
 * What the provisioner needs on top in the `networking.k8s.io` group, in the same namespace: the
 * per-sandbox NetworkPolicies (`deploy/kubernetes/role.yaml` is checked against this).
 */
export const NETWORKING_PERMISSIONS: Readonly<Record<'networkpolicies', readonly string[]>> = {
  networkpolicies: ['create', 'get', 'list', 'delete'],
};

/**
 * What the `agent-sandbox` backend needs on top, in the same namespace: its `Sandbox` objects
 * (`deploy/kubernetes/agent-sandbox/role.yaml` is checked against this). It still creates and
 * collects NodePort Services, which the base Role grants.
 */
export const AGENT_SANDBOX_PERMISSIONS: Readonly<Record<'sandboxes', readonly string[]>> = {
  sandboxes: ['create', 'get', 'list', 'delete'],
};

/** The parts of `@kubernetes/client-node` used here (its own types stay out of ours). */
interface ClientModule {
  KubeConfig: new () => KubeConfigLike;
  CoreV1Api: unknown;
  CustomObjectsApi: unknown;
  NetworkingV1Api: unknown;
}
interface KubeConfigLike {
  clusters: { name: string; server: string }[];
  users: unknown[];
  contexts: unknown[];
  currentContext: string;
  loadFromFile(file: string): void;
  loadFromCluster(): void;
  loadFromOptions(options: unknown): void;
  getCurrentCluster(): { name: string; server: string } | null;
  makeApiClient(api: unknown): CoreApiLike & CustomApiLike & NetworkingApiLike;
}
type Call = (params: Record<string, unknown>) => Promise<unknown>;
interface CoreApiLike {
  readNamespace: Call;
  createNamespace: Call;
  deleteNamespace: Call;
  createNamespacedPod: Call;
  readNamespacedPod: Call;
  deleteNamespacedPod: Call;
  listNamespacedPod: Call;
  createNamespacedService: Call;
  readNamespacedService: Call;
  deleteNamespacedService: Call;
  listNamespacedService: Call;
}
interface NetworkingApiLike {
  createNamespacedNetworkPolicy: Call;
  readNamespacedNetworkPolicy: Call;
  deleteNamespacedNetworkPolicy: Call;
  listNamespacedNetworkPolicy: Call;
}
interface CustomApiLike {
  createNamespacedCustomObject: Call;
  getNamespacedCustomObject: Call;
  deleteNamespacedCustomObject: Call;
  listNamespacedCustomObject: Call;
}

/** The client's `ApiException` (status `code`, JSON `body` text) or a transport error, as ours. */
export function toKubeApiError(err: unknown, what: string): KubeApiError {
  if (err instanceof KubeApiError) return err;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'number' && code >= 100) {
    const rawBody = (err as { body?: unknown }).body;
    let reason: string | undefined;
    let message: string | undefined;
    try {
      const parsed = (typeof rawBody === 'string' ? JSON.parse(rawBody) : rawBody) as {
        reason?: unknown;
        message?: unknown;
      };
      if (typeof parsed?.reason === 'string') reason = parsed.reason;
      if (typeof parsed?.message === 'string') message = parsed.message;
    } catch {
      // a body that is not a Status object: the status code says enough
    }
    return new KubeApiError(
      code,
      reason,
      `${what}: HTTP ${code}${reason ? ` ${reason}` : ''}${message ? `: ${message}` : ''}`,
      {
        cause: err,
      },
    );
  }
  return new KubeApiError(0, undefined, `${what}: ${errorMessage(err)}`, { cause: err });
}

function crd(namespace: string, version: string) {
  return { group: AGENT_SANDBOX_GROUP, version, namespace, plural: AGENT_SANDBOX_PLURAL };
}

function wrap(api: CoreApiLike, custom: CustomApiLike, net: NetworkingApiLike): KubeApi {
  const call = async <T>(what: string, fn: () => Promise<unknown>): Promise<T> => {
    try {
      return (await fn()) as T;
    } catch (err) {
      throw toKubeApiError(err, what);
    }
  };
  return {
    readNamespace: (name) => call(`read namespace ${name}`, () => api.readNamespace({ name })),
    createNamespace: (body) => call('create namespace', () => api.createNamespace({ body })),
    deleteNamespace: async (name) => {
      await call(`delete namespace ${name}`, () => api.deleteNamespace({ name }));
    },
    createPod: (namespace, body) =>
      call(`create pod ${body.metadata?.name}`, () => api.createNamespacedPod({ namespace, body })),
    readPod: (namespace, name) =>
      call(`read pod ${name}`, () => api.readNamespacedPod({ namespace, name })),
    deletePod: async (namespace, name) => {
      await call(`delete pod ${name}`, () => api.deleteNamespacedPod({ namespace, name }));
    },
    listPods: (namespace, labelSelector) =>
      call('list pods', () => api.listNamespacedPod({ namespace, labelSelector })),
    createService: (namespace, body) =>
      call(`create service ${body.metadata?.name}`, () =>
        api.createNamespacedService({ namespace, body }),
      ),
    readService: (namespace, name) =>
      call(`read service ${name}`, () => api.readNamespacedService({ namespace, name })),
    deleteService: async (namespace, name) => {
      await call(`delete service ${name}`, () => api.deleteNamespacedService({ namespace, name }));
    },
    listServices: (namespace, labelSelector) =>
      call('list services', () => api.listNamespacedService({ namespace, labelSelector })),
    createNetworkPolicy: (namespace, body) =>
      call(`create networkpolicy ${body.metadata?.name}`, () =>
        net.createNamespacedNetworkPolicy({ namespace, body }),
      ),
    readNetworkPolicy: (namespace, name) =>
      call(`read networkpolicy ${name}`, () =>
        net.readNamespacedNetworkPolicy({ namespace, name }),
      ),
    deleteNetworkPolicy: async (namespace, name) => {
      await call(`delete networkpolicy ${name}`, () =>
        net.deleteNamespacedNetworkPolicy({ namespace, name }),
      );
    },
    listNetworkPolicies: (namespace, labelSelector) =>
      call('list networkpolicies', () =>
        net.listNamespacedNetworkPolicy({ namespace, labelSelector }),
      ),
    createSandbox: (namespace, version, body) =>
      call(`create sandbox ${body.metadata?.name}`, () =>
        custom.createNamespacedCustomObject({ ...crd(namespace, version), body }),
      ),
    readSandbox: (namespace, version, name) =>
      call(`read sandbox ${name}`, () =>
        custom.getNamespacedCustomObject({ ...crd(namespace, version), name }),
      ),
    deleteSandbox: async (namespace, version, name) => {
      await call(`delete sandbox ${name}`, () =>
        custom.deleteNamespacedCustomObject({ ...crd(namespace, version), name }),
      );
    },
    listSandboxes: (namespace, version, labelSelector) =>
      call('list sandboxes', () =>
        custom.listNamespacedCustomObject({ ...crd(namespace, version), labelSelector }),
      ),
  };
}

export interface ConnectKubeOptions {
  /** The kubeconfig file; when it does not appear within `waitMs`, the in-cluster config is used. */
  kubeconfigPath: string;
  /** Replaces the configured server and turns off its TLS verification (a tunnel, a proxy). */
  apiServer?: string | undefined;
  /** How long to wait for the kubeconfig file to appear (a mounted Secret may come late). Default 30 s. */
  waitMs?: number;
  /** Default 2 s. */
  pollMs?: number;
  clock?: Clock;
  logger?: Logger;
  /** Where the in-cluster variables are read; default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
  /** For tests: how the client library is imported. */
  importer?: (specifier: string) => Promise<unknown>;
}

/**
 * Waits (bounded) for the kubeconfig file. A directory at that path is a mistake (a volume mounted
 * where the file should be), reported at once instead of after the wait.
 *
 * @returns true when the file is there, false when it never came (use the in-cluster config)
 * @throws KubeApiError when a directory is in the way
 */
export async function waitForKubeconfig(
  path: string,
  options: { waitMs?: number; pollMs?: number; clock?: Clock } = {},
): Promise<boolean> {
  const clock = options.clock ?? systemClock;
  const deadline = clock.now() + (options.waitMs ?? 30_000);
  for (;;) {
    try {
      const info = await stat(path);
      if (info.isDirectory()) {
        throw new KubeApiError(0, undefined, `kubeconfig path ${path} is a directory, not a file`);
      }
      return true;
    } catch (err) {
      if (err instanceof KubeApiError) throw err;
    }
    if (clock.now() >= deadline) return false;
    await sleep(options.pollMs ?? 2_000, { clock });
  }
}

/**
 * A {@link KubeApi} over `@kubernetes/client-node` (loaded on first use): from the kubeconfig
 * file when there is one, else the in-cluster service account.
 *
 * @throws MissingDependencyError when the client library is not installed
 * @throws KubeApiError when no configuration can be loaded
 */
export async function connectKubeApi(options: ConnectKubeOptions): Promise<KubeApi> {
  const logger = options.logger ?? silentLogger;
  const k8s = await loadOptionalDependency<ClientModule>(
    '@kubernetes/client-node',
    REQUIRED_BY,
    options.importer ?? importFromHere,
  );
  const present = await waitForKubeconfig(options.kubeconfigPath, options);
  const kc = new k8s.KubeConfig();
  if (present) {
    try {
      const info = await stat(options.kubeconfigPath);
      if (!info.isFile()) throw new Error('expected a file');
      kc.loadFromFile(options.kubeconfigPath);
    } catch (err) {
      throw new KubeApiError(
        0,
        undefined,
        `cannot load kubeconfig ${options.kubeconfigPath} (expected a file): ${errorMessage(err)}`,
        {
          cause: err,
        },
      );
    }
  } else {
    logger.info('no kubeconfig file, using the in-cluster configuration', {
      path: options.kubeconfigPath,
    });
    try {
      // The client builds a config even outside a cluster (with an undefined server) and fails
      // only at the first call; the service host variable is what every Pod is given.
      const env = options.env ?? process.env;
      if (!env.KUBERNETES_SERVICE_HOST) {
        throw new Error('KUBERNETES_SERVICE_HOST is not set (not running in a Pod)');
      }
      kc.loadFromCluster();
    } catch (err) {
      throw new KubeApiError(
        0,
        undefined,
        `no kubeconfig at ${options.kubeconfigPath} and no in-cluster configuration: ${errorMessage(err)}`,
        {
          cause: err,
        },
      );
    }
  }
  if (options.apiServer) {
    const current = kc.getCurrentCluster();
    kc.loadFromOptions({
      clusters: kc.clusters.map((c) =>
        c.name === current?.name ? { ...c, server: options.apiServer, skipTLSVerify: true } : c,
      ),
      users: kc.users,
      contexts: kc.contexts,
      currentContext: kc.currentContext,
    });
  }
  return wrap(
    kc.makeApiClient(k8s.CoreV1Api),
    kc.makeApiClient(k8s.CustomObjectsApi),
    kc.makeApiClient(k8s.NetworkingV1Api),
  );
}

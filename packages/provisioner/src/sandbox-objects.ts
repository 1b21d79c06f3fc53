import type { CreateSandboxRequest } from './create-request.js';
import type { Container, Pod, Probe, Service } from './kube-objects.js';
import type { ProvisionerSettings } from './provisioner-settings.js';
import { planSandboxVolumes } from './sandbox-volumes.js';
import { COMPAT } from './compat-profiles.js';
import type { CompatProfileName } from './compat-profiles.js';
import { containerSecurityContext, secureContainers } from './container-security.js';
import { egressProxyEnv } from './sandbox-egress-route.js';
import type { EgressRoute } from './sandbox-egress-route.js';

/**
 * The label every sandbox Pod and Service carries (sbx's profile); listing and garbage collection
 * select on it. With `SANDBOX_COMPAT=deer-flow` it is the reference's (`sandboxSelector`).
 */
export const SANDBOX_APP_LABEL = COMPAT.sbx.appLabel;
export const SANDBOX_ID_LABEL = 'sandbox-id';
export const HTTP_PORT_NAME = 'http';

export const podName = (sandboxId: string): string => `sandbox-${sandboxId}`;
export const serviceName = (sandboxId: string): string => `sandbox-${sandboxId}-svc`;

export function sandboxLabels(
  sandboxId: string,
  compat: CompatProfileName = 'sbx',
): Record<string, string> {
  return {
    app: COMPAT[compat].appLabel,
    [SANDBOX_ID_LABEL]: sandboxId,
    'app.kubernetes.io/name': COMPAT[compat].appName,
    'app.kubernetes.io/component': 'sandbox',
    'app.kubernetes.io/managed-by': 'sbx-provisioner',
  };
}

export const SANDBOX_SELECTOR = `app=${SANDBOX_APP_LABEL}`;

/** The label selector of the settings' sandboxes (the compatibility profile's `app` label). */
export function sandboxSelector(settings: Pick<ProvisionerSettings, 'compat'>): string {
  return `app=${COMPAT[settings.compat].appLabel}`;
}

function probe(initialDelaySeconds: number, periodSeconds: number): Probe {
  return {
    httpGet: { path: '/v1/sandbox', port: HTTP_PORT_NAME },
    initialDelaySeconds,
    periodSeconds,
    timeoutSeconds: 3,
    failureThreshold: 3,
  };
}

/**
 * The sandbox Pod. Beyond the reference: the container may not escalate privileges and runs under
 * the runtime's default seccomp profile; the Pod gets no service-account token (the agent inside
 * must not hold credentials for the Kubernetes API that runs it) and no service-link environment
 * (the names and addresses of every other Service in the namespace); resources come from the
 * settings; a uid can be set for images that run as non-root; and a deleted Pod gets 5 s, not
 * 30, before it is killed.
 */
export function sandboxPod(
  settings: ProvisionerSettings,
  request: CreateSandboxRequest,
  route?: EgressRoute,
): Pod {
  const plan = planSandboxVolumes(settings, request);
  const { requests, limits } = settings;
  const sandbox: Container = {
    name: 'sandbox',
    image: settings.sandboxImage,
    imagePullPolicy: 'IfNotPresent',
    ports: [{ name: HTTP_PORT_NAME, containerPort: settings.containerPort, protocol: 'TCP' }],
    readinessProbe: probe(5, 5),
    livenessProbe: probe(10, 10),
    resources: {
      requests: {
        cpu: requests.cpu,
        memory: requests.memory,
        'ephemeral-storage': requests.ephemeralStorage,
      },
      limits: {
        cpu: limits.cpu,
        memory: limits.memory,
        'ephemeral-storage': limits.ephemeralStorage,
      },
    },
    securityContext: containerSecurityContext(settings),
    volumeMounts: plan.mounts,
    ...(plan.env.length > 0 ? { env: plan.env } : {}),
  };
  const containers = [sandbox, ...plan.sidecars];
  secureContainers([...containers, ...plan.initContainers], settings);
  // Every container shares the Pod's NetworkPolicy: each is pointed at the proxy, or none is.
  if (route !== undefined && request.networkMode === 'open') {
    for (const c of [...containers, ...plan.initContainers]) {
      const names = new Set(egressProxyEnv(route).map((e) => e.name));
      c.env = [...(c.env ?? []).filter((e) => !names.has(e.name)), ...egressProxyEnv(route)];
    }
  }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podName(request.sandboxId),
      namespace: settings.namespace,
      labels: sandboxLabels(request.sandboxId, settings.compat),
    },
    spec: {
      containers,
      ...(plan.initContainers.length > 0 ? { initContainers: plan.initContainers } : {}),
      volumes: plan.volumes,
      restartPolicy: 'Always',
      // Nothing in a sandbox needs flushing on delete, and a delete waits for the Pod to be gone.
      terminationGracePeriodSeconds: 5,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      ...(settings.runtimeClassName !== '' ? { runtimeClassName: settings.runtimeClassName } : {}),
      // The backstop that holds when every gateway is gone: the kubelet ends the Pod.
      ...(settings.activeDeadlineSeconds > 0
        ? { activeDeadlineSeconds: settings.activeDeadlineSeconds }
        : {}),
      securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
    },
  };
}

export function sandboxService(settings: ProvisionerSettings, sandboxId: string): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: serviceName(sandboxId),
      namespace: settings.namespace,
      labels: sandboxLabels(sandboxId, settings.compat),
    },
    spec: {
      type: settings.serviceType,
      selector: { [SANDBOX_ID_LABEL]: sandboxId },
      ports: [
        {
          name: HTTP_PORT_NAME,
          port: settings.containerPort,
          targetPort: settings.containerPort,
          protocol: 'TCP',
        },
      ],
    },
  };
}

/**
 * How a gateway reaches the sandbox behind `service`: `http://<node host>:<node port>` (NodePort;
 * undefined until the port is assigned) or the Service's cluster DNS name (ClusterIP).
 */
export function accessUrl(settings: ProvisionerSettings, service: Service): string | undefined {
  const name = service.metadata?.name;
  if (!name) return undefined;
  if (settings.serviceType === 'ClusterIP') {
    return `http://${name}.${settings.namespace}.svc.cluster.local:${settings.containerPort}`;
  }
  const port = service.spec?.ports?.find((p) => p.name === HTTP_PORT_NAME)?.nodePort;
  return typeof port === 'number' && port > 0 ? `http://${settings.nodeHost}:${port}` : undefined;
}

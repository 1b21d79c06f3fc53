// Where a sandbox's egress goes when a proxy is configured: the proxy Service's cluster IP (what
// the sandbox is told, so it needs no DNS) and the Pods behind it on their port (what its
// NetworkPolicy lets it reach). Read from the Service at each create, so a proxy redeployed
// with other labels or ports is followed without a provisioner restart.

import { egressProxyRef } from './egress-proxy-setting.js';
import type { KubeApi } from './kube-api.js';
import { kubeReason } from './kube-sandbox-backend.js';
import { ProvisionerHttpError, isKubeStatus } from './provisioner-errors.js';
import type { ProvisionerSettings } from './provisioner-settings.js';

export interface EgressRoute {
  /** `http://<cluster IP>:<port>`, for `HTTP_PROXY` / `HTTPS_PROXY`. */
  proxyUrl: string;
  /** The proxy Service's selector: the NetworkPolicy's peer. */
  podLabels: Record<string, string>;
  /** The port on those Pods (the Service port's `targetPort`, a number or a port name). */
  podPort: number | string;
}

/**
 * The route to the configured proxy, or undefined when none is configured.
 *
 * @throws ProvisionerHttpError 503 when the Service cannot be read, or cannot carry the route (no
 *   cluster IP, no selector, no such port): a sandbox is never made with egress nobody restricts
 */
export async function egressRoute(
  kube: KubeApi,
  settings: ProvisionerSettings,
): Promise<EgressRoute | undefined> {
  const ref = egressProxyRef(settings.egressProxy);
  if (ref === undefined) return undefined;
  const unusable = (why: string, cause?: unknown) =>
    new ProvisionerHttpError(
      503,
      `egress proxy Service '${ref.service}' (SANDBOX_EGRESS_PROXY) ${why}`,
      cause === undefined ? {} : { cause },
    );
  let service;
  try {
    service = await kube.readService(settings.namespace, ref.service);
  } catch (err) {
    throw unusable(isKubeStatus(err, 404) ? 'not found' : `unreadable: ${kubeReason(err)}`, err);
  }
  const ip = service.spec?.clusterIP;
  if (ip === undefined || ip === '' || ip === 'None')
    throw unusable('has no cluster IP (a headless Service cannot be the proxy address)');
  const selector = service.spec?.selector ?? {};
  if (Object.keys(selector).length === 0)
    throw unusable('has no selector: its Pods cannot be named in a NetworkPolicy');
  const port = service.spec?.ports?.find((p) => p.port === ref.port);
  if (port === undefined) throw unusable(`has no port ${ref.port}`);
  const host = ip.includes(':') ? `[${ip}]` : ip;
  return {
    proxyUrl: `http://${host}:${ref.port}`,
    podLabels: { ...selector },
    podPort: port.targetPort ?? port.port,
  };
}

/**
 * The environment that points a sandbox's HTTP clients at the proxy (both spellings: tools read
 * either). Loopback stays direct: the sandbox's own servers are reached there.
 */
export function egressProxyEnv(route: EgressRoute): { name: string; value: string }[] {
  const noProxy = 'localhost,127.0.0.1,::1';
  return [
    ['HTTP_PROXY', route.proxyUrl],
    ['HTTPS_PROXY', route.proxyUrl],
    ['NO_PROXY', noProxy],
    ['http_proxy', route.proxyUrl],
    ['https_proxy', route.proxyUrl],
    ['no_proxy', noProxy],
  ].map(([name, value]) => ({ name: name!, value: value! }));
}

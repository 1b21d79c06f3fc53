import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorMessage, silentLogger, systemClock } from '@sbx/core';
import type { Clock, Logger } from '@sbx/core';
import { connectKubeApi } from './kube-api.js';
import type { KubeApi } from './kube-api.js';
import { createProvisionerHandler } from './provisioner-http.js';
import type { ProvisionerSettings } from './provisioner-settings.js';
import { resolveProvisionerSettings } from './provisioner-settings.js';
import { SandboxPods } from './sandbox-pods.js';
import { AgentSandboxes } from './agent-sandboxes.js';
import type { ProvisionerBackend } from './provisioner-backend.js';

export interface StartProvisionerOptions {
  /** Default: from the environment (`resolveProvisionerSettings({ env: process.env })`). */
  settings?: ProvisionerSettings;
  /** Default: `@kubernetes/client-node` configured from the settings' kubeconfig. */
  kube?: KubeApi;
  logger?: Logger;
  clock?: Clock;
  /** How `@kubernetes/client-node` is imported (a bundle passes the module it carries). */
  importer?: (specifier: string) => Promise<unknown>;
  /** Passed to the Service URL wait of each create (tests shorten it). */
  urlPolls?: number;
  pollIntervalMs?: number;
}

export interface RunningProvisioner {
  /** `http://<host>:<port>` the server listens on. */
  readonly url: string;
  readonly port: number;
  /** The backend of the settings (`SandboxPods` or `AgentSandboxes`). */
  readonly pods: ProvisionerBackend;
  readonly settings: ProvisionerSettings;
  /** Stops accepting requests, cuts open connections and stops the garbage collector. */
  close(): Promise<void>;
}

/**
 * Starts the provisioner: connects to Kubernetes, makes sure the namespace exists, serves the HTTP
 * API and, unless disabled, collects half-created sandboxes every `gcIntervalMs`.
 */
export async function startProvisioner(
  options: StartProvisionerOptions = {},
): Promise<RunningProvisioner> {
  const settings = options.settings ?? resolveProvisionerSettings({ env: process.env });
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? systemClock;
  if (settings.apiKey === '') {
    logger.warn('PROVISIONER_API_KEY is not set: every /api/* request will be refused');
  }
  const kube =
    options.kube ??
    (await connectKubeApi({
      kubeconfigPath: settings.kubeconfigPath,
      apiServer: settings.apiServer,
      logger,
      clock,
      ...(options.importer ? { importer: options.importer } : {}),
    }));
  const backendOptions = {
    settings,
    kube,
    clock,
    logger,
    ...(options.urlPolls !== undefined ? { urlPolls: options.urlPolls } : {}),
    ...(options.pollIntervalMs !== undefined ? { pollIntervalMs: options.pollIntervalMs } : {}),
  };
  const pods: ProvisionerBackend =
    settings.backend === 'agent-sandbox'
      ? new AgentSandboxes(backendOptions)
      : new SandboxPods(backendOptions);
  if (settings.ensureNamespace) await pods.ensureNamespace();
  const server = http.createServer(
    createProvisionerHandler({
      pods,
      apiKey: settings.apiKey,
      logger,
      capabilities: {
        lark_cli_init_image: settings.larkCliInitImage !== '',
        lark_cli_broker_image: settings.larkCliBrokerImage !== '',
        network_none: settings.backend === 'pods',
        egress_proxy: settings.backend === 'pods' && settings.egressProxy !== '',
      },
    }),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.listenPort, settings.listenHost, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let closed = false;
  let gcTimer: ReturnType<Clock['setTimeout']> | undefined;
  const scheduleGc = () => {
    if (closed || settings.gcIntervalMs <= 0) return;
    gcTimer = clock.setTimeout(async () => {
      try {
        await pods.collectGarbage();
      } catch (err) {
        logger.warn('garbage collection failed', { error: errorMessage(err) });
      }
      scheduleGc();
    }, settings.gcIntervalMs);
  };
  scheduleGc();
  const host = settings.listenHost.includes(':') ? `[${settings.listenHost}]` : settings.listenHost;
  logger.info('provisioner listening', {
    url: `http://${host}:${port}`,
    namespace: settings.namespace,
    backend: settings.backend,
  });
  return {
    url: `http://${host}:${port}`,
    port,
    pods,
    settings,
    async close() {
      closed = true;
      if (gcTimer !== undefined) clock.clearTimeout(gcTimer);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

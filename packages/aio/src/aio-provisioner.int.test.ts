import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { requireService, servicesRequired } from '@sbx/core/testing';
import { connectKubeApi, resolveProvisionerSettings, startProvisioner } from '@sbx/provisioner';
import { networkPolicyName } from '@sbx/provisioner';
import type { KubeApi, KubeNetworkPolicy, RunningProvisioner } from '@sbx/provisioner';
import { KubeStandin } from '@sbx/provisioner/testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startAioStandin } from '../../../tools/images/aio-standin/server.mjs';
import {
  WorkerInstance,
  buildWorker,
  freePort,
  startPrivateRedis,
} from './testing/multi-instance-support.js';
import type { PrivateRedis, WorkerError } from './testing/multi-instance-support.js';

// Many gateways on Kubernetes, end to end: gateway processes (the AIO provider with the remote
// backend and the Redis ownership store, on the real Redis) → the provisioner (@sbx/provisioner,
// through the real Kubernetes client) → the Kubernetes API stand-in, whose fake kubelet runs each
// Pod as an AIO stand-in server on its own 127.0.0.1 port with its own home directory.
//
// The real-cluster tier: with KUBECONFIG_E2E set (the kubeconfig of a real cluster whose node
// ports the gateways here can reach at SBX_E2E_NODE_HOST), the same suite runs against that
// cluster as well, with SBX_E2E_SANDBOX_IMAGE (default: the AIO image) and extra provisioner
// settings as JSON in SBX_E2E_PROVISIONER_ENV (the skills views must exist on the nodes, or set
// SKILLS_PVC_NAME), on the backends listed in SBX_E2E_BACKENDS (default `pods`; add
// `agent-sandbox` where its CRDs and controller are installed). Each test's namespace is deleted
// after it, and any left (a failed clean-up) after the suite, so a run leaves nothing behind. It
// never runs in CI here.
//
// Every suite runs on both provisioner backends: Pods and Services (SANDBOX_BACKEND=pods), and
// kubernetes-sigs/agent-sandbox Sandbox objects (SANDBOX_BACKEND=agent-sandbox).
const redisAvailable = await requireService('redis');
const redis: PrivateRedis | undefined = redisAvailable ? await startPrivateRedis() : undefined;
if (redisAvailable && !redis && servicesRequired()) {
  throw new Error('redis-server could not be started for the provisioner end-to-end tests');
}
const REAL_CLUSTER = process.env.KUBECONFIG_E2E;
if (!REAL_CLUSTER) {
  console.warn('[sbx] skipping the real-cluster provisioner tier: KUBECONFIG_E2E is not set');
}

/** Where the suite's Pods run, and what the suite may look at and do there. */
interface ClusterUnderTest {
  kubeconfig: string;
  nodeHost: string;
  env: Record<string, string>;
  podNames(namespace: string): Promise<string[]>;
  /** The sandboxes' Services that sbx made (a controller's own headless ones are not counted). */
  serviceCount(namespace: string): Promise<number>;
  /** The NetworkPolicies of a namespace, when the cluster can tell. */
  networkPolicies?(namespace: string): Promise<KubeNetworkPolicy[]>;
  /** Deletes a test's namespace and all in it. */
  deleteNamespace(namespace: string): Promise<void>;
  /** Pod creates the API served, when the cluster can tell. */
  podCreates?(): number;
  /** Holding Pods in Pending, when the cluster can be told to. */
  pauseKubelet?(): void;
  resumeKubelet?(): void;
  close(): Promise<void>;
}

const SBX_SERVICES = 'app=sbx-sandbox';
type Backend = 'pods' | 'agent-sandbox';

async function standinCluster(
  dir: string,
  homes: string[],
  backend: Backend,
): Promise<ClusterUnderTest> {
  const cluster = await KubeStandin.start({
    podServer: async () => {
      const home = await mkdtemp(path.join(dir, 'pod-home-'));
      homes.push(home);
      const aio = await startAioStandin({ homeDir: home });
      return { port: aio.port, close: () => aio.close() };
    },
  });
  const live = (ns: string) => cluster.pods(ns).filter((p) => !p.metadata?.deletionTimestamp);
  return {
    kubeconfig: await cluster.writeKubeconfig(dir),
    nodeHost: '127.0.0.1',
    env: {},
    podNames: async (ns) => live(ns).map((p) => p.metadata!.name!),
    serviceCount: async (ns) =>
      cluster.services(ns).filter((s) => s.metadata?.labels?.app === 'sbx-sandbox').length,
    networkPolicies: async (ns) => cluster.networkPolicies(ns),
    deleteNamespace: async () => {}, // the stand-in goes with the test
    // The agent-sandbox controller makes Pods without API calls: count the Sandboxes made.
    podCreates: () => cluster.calls('create', backend === 'pods' ? 'pods' : 'sandboxes').length,
    pauseKubelet: () => cluster.pauseKubelet(),
    resumeKubelet: () => cluster.resumeKubelet(),
    close: () => cluster.close(),
  };
}

async function realCluster(kubeconfig: string): Promise<ClusterUnderTest> {
  const kube: KubeApi = await connectKubeApi({ kubeconfigPath: kubeconfig, waitMs: 0 });
  const selector = SBX_SERVICES;
  return {
    kubeconfig,
    nodeHost: process.env.SBX_E2E_NODE_HOST ?? '127.0.0.1',
    env: {
      SANDBOX_IMAGE: process.env.SBX_E2E_SANDBOX_IMAGE ?? 'ghcr.io/agent-infra/sandbox:latest',
      ...(JSON.parse(process.env.SBX_E2E_PROVISIONER_ENV ?? '{}') as Record<string, string>),
    },
    podNames: async (ns) =>
      (await kube.listPods(ns, selector)).items
        .filter((p) => !p.metadata?.deletionTimestamp)
        .map((p) => p.metadata!.name!),
    serviceCount: async (ns) => (await kube.listServices(ns, selector)).items.length,
    deleteNamespace: async (ns) => {
      try {
        await kube.deleteNamespace(ns);
      } catch (err) {
        if ((err as { status?: number }).status !== 404) throw err;
      }
    },
    close: async () => {},
  };
}

const REAL_BACKENDS = (process.env.SBX_E2E_BACKENDS ?? 'pods').split(',').map((b) => b.trim());
const targets: {
  name: string;
  backend: Backend;
  enabled: boolean;
  make: (dir: string, homes: string[]) => Promise<ClusterUnderTest>;
}[] = (['pods', 'agent-sandbox'] as const).flatMap((backend) => [
  {
    name: `the stand-in cluster, SANDBOX_BACKEND=${backend}`,
    backend,
    enabled: true,
    make: (dir: string, homes: string[]) => standinCluster(dir, homes, backend),
  },
  {
    name: `a real cluster (KUBECONFIG_E2E), SANDBOX_BACKEND=${backend}`,
    backend,
    enabled: REAL_CLUSTER !== undefined && REAL_BACKENDS.includes(backend),
    make: () => realCluster(REAL_CLUSTER!),
  },
]);

const RENEWAL_SECONDS = 1;
const TTL_MS = 2_000;
const API_KEY = `e2e-${randomBytes(8).toString('hex')}`;
const T = (threadId: string) => ({ userId: 'u1', threadId });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  ms = 15_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

interface ReconcileSummary {
  adopted: string[];
  deferred: string[];
}

describe.each(targets)(
  'gateways → provisioner → Kubernetes on $name (real Redis)',
  ({ enabled, make, backend }) => {
    if (!enabled || !redis) {
      it.skip(redis ? 'needs KUBECONFIG_E2E' : 'needs Redis', () => {});
      return;
    }
    let worker: { file: string; dispose(): Promise<void> };
    let dir: string;
    let cluster: ClusterUnderTest;
    let provisioner: RunningProvisioner | undefined;
    let provisionerPort: number;
    let namespace: string;
    const homes: string[] = [];
    const live: WorkerInstance[] = [];
    /** Namespaces made and not yet deleted: the suite's afterAll deletes what a test's could not. */
    const leftNamespaces = new Map<string, ClusterUnderTest>();

    beforeAll(async () => {
      worker = await buildWorker();
    }, 120_000);
    afterAll(async () => {
      const failures: string[] = [];
      for (const [ns, owner] of leftNamespaces) {
        await owner.deleteNamespace(ns).then(
          () => leftNamespaces.delete(ns),
          (err: Error) => failures.push(`${ns}: ${err.message}`),
        );
      }
      await worker?.dispose();
      if (failures.length > 0) throw new Error(`namespaces left behind: ${failures.join('; ')}`);
    }, 120_000);

    beforeEach(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'sbx-prov-e2e-'));
      cluster = await make(dir, homes);
      provisionerPort = await freePort();
      namespace = `e2e-${randomBytes(3).toString('hex')}`;
      leftNamespaces.set(namespace, cluster);
      provisioner = await startTheProvisioner();
    });
    afterEach(async () => {
      try {
        await Promise.all(live.splice(0).map((w) => w.stop()));
        await provisioner?.close();
      } finally {
        // Even when stopping failed: the namespace (and every Pod in it) goes.
        const owner = leftNamespaces.get(namespace);
        if (owner) {
          await owner.deleteNamespace(namespace).then(
            () => leftNamespaces.delete(namespace),
            (err: Error) =>
              console.warn(`[sbx] namespace ${namespace} not deleted: ${err.message}`),
          );
        }
        await cluster.close();
        await rm(dir, { recursive: true, force: true });
      }
    }, 90_000);

    async function startTheProvisioner(): Promise<RunningProvisioner> {
      const settings = resolveProvisionerSettings({
        env: {
          ...cluster.env,
          KUBECONFIG_PATH: cluster.kubeconfig,
          K8S_NAMESPACE: namespace,
          NODE_HOST: cluster.nodeHost,
          PROVISIONER_API_KEY: API_KEY,
          PROVISIONER_PORT: String(provisionerPort),
          THREADS_HOST_PATH: path.join(dir, 'threads'),
          SANDBOX_GC_INTERVAL_SECONDS: '0',
          SANDBOX_BACKEND: backend,
        },
      });
      return startProvisioner({ settings, pollIntervalMs: 50 });
    }

    async function gateways(count: number): Promise<WorkerInstance[]> {
      const keyPrefix = `sbxprov-${randomBytes(4).toString('hex')}`;
      const started = await Promise.all(
        Array.from({ length: count }, () =>
          WorkerInstance.start(worker.file, {
            use: '@sbx/aio',
            provisioner_url: `http://127.0.0.1:${provisionerPort}`,
            provisioner_api_key: API_KEY,
            // The provisioner's host base: the gateway's extra mounts (the ACP workspace) lie under it.
            base_dir: dir,
            idle_timeout: 0,
            ownership: {
              type: 'redis',
              redis_url: redis!.url,
              renewal_interval_seconds: RENEWAL_SECONDS,
              ttl_multiplier: 2,
              key_prefix: keyPrefix,
            },
            warm_pool: { idle_check_interval_seconds: 3600 },
            aio: { reconciliation_interval_seconds: 3600 },
          }),
        ),
      );
      live.push(...started);
      return started;
    }

    const pods = () => cluster.podNames(namespace);
    const services = () => cluster.serviceCount(namespace);

    it('one thread’s turns land on both gateways and reuse one Pod', async () => {
      const [a, b] = await gateways(2);
      const id = await a!.call<string>('acquire', T('moving'));
      await a!.call('exec', { sandboxId: id, command: 'echo turn-1 > ~/marker' });
      await a!.call('release', { sandboxId: id });

      expect(await b!.call('acquire', T('moving'))).toBe(id);
      expect(await b!.call('exec', { sandboxId: id, command: 'cat ~/marker' })).toContain('turn-1');
      await b!.call('release', { sandboxId: id });
      expect(await a!.call('acquire', T('moving'))).toBe(id);
      expect(await a!.call('exec', { sandboxId: id, command: 'cat ~/marker' })).toContain('turn-1');

      expect(await pods()).toEqual([`sandbox-${id}`]);
      expect(await services()).toBe(1);
      if (cluster.podCreates) expect(cluster.podCreates()).toBe(1);
    }, 120_000);

    // The pods backend enforces mode none (`network_none`): the sandbox gets a NetworkPolicy with
    // no egress. The agent-sandbox backend does not: mode none is refused before any create.
    it('mode none is enforced with a no-egress NetworkPolicy where the provisioner can, else refused', async () => {
      const [a] = await gateways(1);
      const none = { network: { mode: 'none' } };
      if (backend === 'pods') {
        const id = await a!.call<string>('acquire', { ...T('no-egress'), spec: none });
        expect(await a!.call('exec', { sandboxId: id, command: 'echo up' })).toContain('up');
        const open = await a!.call<string>('acquire', T('open-egress'));
        expect(open).not.toBe(id);
        if (cluster.networkPolicies) {
          const policies = await cluster.networkPolicies(namespace);
          const mine = policies.find((p) => p.metadata?.name === networkPolicyName(id));
          expect(mine?.spec?.policyTypes).toEqual(['Egress']);
          expect(mine?.spec?.egress ?? []).toEqual([]);
          // Open egress without a proxy: no policy of its own.
          expect(policies.map((p) => p.metadata?.name)).not.toContain(networkPolicyName(open));
        }
      } else {
        const err = await a!
          .call('acquire', { ...T('no-egress'), spec: none })
          .catch((e: WorkerError) => e);
        expect((err as WorkerError).code).toBe('NETWORK_POLICY_UNENFORCEABLE');
        expect(await pods()).toEqual([]);
        if (cluster.networkPolicies) expect(await cluster.networkPolicies(namespace)).toEqual([]);
      }
      const allowlist = { network: { mode: 'allowlist', allow: ['example.com:443'] } };
      const refused = await a!
        .call('acquire', { ...T('allowlist'), spec: allowlist })
        .catch((e: WorkerError) => e);
      expect((refused as WorkerError).code).toBe('NETWORK_POLICY_UNENFORCEABLE');
    }, 120_000);

    it('a gateway killed mid-turn has its sandbox adopted by the other after one TTL, the Pod kept', async () => {
      const [a, b] = await gateways(2);
      const id = await a!.call<string>('acquire', T('crash'));
      await a!.call('exec', { sandboxId: id, command: 'echo before > ~/marker' });
      void a!.call('exec', { sandboxId: id, command: 'sleep 30' }).catch(() => undefined);
      await a!.kill();
      const killedAt = Date.now();

      expect((await b!.call<ReconcileSummary>('reconcile')).deferred).toContain(id);
      const adoptedAt = await until('adoption by the surviving gateway', async () =>
        (await b!.call<ReconcileSummary>('reconcile')).adopted.includes(id)
          ? Date.now()
          : undefined,
      );
      // Not before the dead gateway's lease has lapsed and a grace of one more TTL has passed.
      expect(adoptedAt - killedAt).toBeGreaterThanOrEqual(TTL_MS);
      expect(await b!.call('acquire', T('crash'))).toBe(id);
      expect(await b!.call('exec', { sandboxId: id, command: 'cat ~/marker' })).toContain('before');
      expect(await pods()).toEqual([`sandbox-${id}`]);
    }, 120_000);

    it('shutdown of every gateway leaks no Pod or Service', async () => {
      const [a, b] = await gateways(2);
      const one = await a!.call<string>('acquire', T('leak-1'));
      const two = await b!.call<string>('acquire', T('leak-2'));
      await b!.call('release', { sandboxId: two }); // warm on B
      expect((await pods()).sort()).toEqual([`sandbox-${one}`, `sandbox-${two}`].sort());
      await a!.stop();
      await b!.stop();
      await until(
        'every Pod to be gone',
        async () => ((await pods()).length === 0 ? true : undefined),
        60_000,
      );
      expect(await services()).toBe(0);
    }, 120_000);

    it('a provisioner restarted mid-create converges on one Pod and Service', async (ctx) => {
      if (!cluster.pauseKubelet || !cluster.resumeKubelet) {
        ctx.skip('the cluster cannot hold a Pod in Pending');
        return;
      }
      const [a] = await gateways(1);
      cluster.pauseKubelet(); // the create waits for the Service URL
      const first = a!.call<string>('acquire', T('restart')).then(
        (id) => ({ id }),
        (err: Error) => ({ error: err }),
      );
      await until('the Pod to be created', async () =>
        (await pods()).length === 1 ? true : undefined,
      );
      await provisioner!.close(); // the create in flight loses its provisioner
      provisioner = await startTheProvisioner();
      cluster.resumeKubelet();
      const outcome = await first;
      // The gateway lost its create (the connection was cut): a typed failure, and the thread's
      // next acquire finds what the first create left behind instead of making a second Pod.
      expect('error' in outcome && outcome.error.message).toMatch(/Provisioner create failed/);
      const id = await a!.call<string>('acquire', T('restart'));
      expect(await a!.call('exec', { sandboxId: id, command: 'echo converged' })).toContain(
        'converged',
      );
      expect(await pods()).toEqual([`sandbox-${id}`]);
      expect(await services()).toBe(1);
    }, 120_000);
  },
);

afterAll(async () => {
  await redis?.stop();
});

/**
 * The provisioner's cost over the Kubernetes API calls it makes, against the local Kubernetes
 * stand-in (this process; its kubelet starts each Pod as a minimal local server), through the real
 * @kubernetes/client-node:
 *
 * - lifecycle: create → ready → delete through the provisioner's HTTP API (POST, a readiness GET
 *   on the answered URL, DELETE with its wait for the Pod to be gone), against the same steps done
 *   with the bare client (read the Service, create Pod and Service, read the Service until it has
 *   a node port, read the Pod's phase, the readiness GET, delete both, read the Pod until 404);
 * - per request: GET /api/sandboxes/{id} (Service + Pod read) and GET /api/sandboxes (Service and
 *   Pod list, 20 sandboxes) against the same client calls.
 *
 * The provisioner and the bare client take turns sample by sample, so both see the same load; the
 * difference is the HTTP hop to the provisioner, its validation and JSON. Both poll every 20 ms.
 *
 * Run: `npm run bench -w @sbx/provisioner`. Writes bench/results/provisioner.{json,md}. Sample
 * counts: SBX_BENCH_LIFECYCLE (default 40), SBX_BENCH_REQUESTS (default 200).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  connectKubeApi,
  parseCreateRequest,
  podName,
  resolveProvisionerSettings,
  sandboxPod,
  sandboxService,
  serviceName,
  startProvisioner,
} from '../src/index.js';
import type { KubeApi } from '../src/index.js';
import { KubeStandin } from '../src/testing.js';
import {
  round2,
  summarize,
  timed,
  writeBenchResults,
  envCount,
} from '../../../tools/bench/bench-kit.js';

const LIFECYCLE = envCount('SBX_BENCH_LIFECYCLE', 40);
const REQUESTS = envCount('SBX_BENCH_REQUESTS', 200);
const POLL_MS = 20;
const KEY = 'bench-key';
const NS = 'bench';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const dir = await mkdtemp(join(tmpdir(), 'sbx-prov-bench-'));
const standin = await KubeStandin.start();
const kube: KubeApi = await connectKubeApi({
  kubeconfigPath: await standin.writeKubeconfig(dir),
  waitMs: 0,
});
const settings = resolveProvisionerSettings({
  env: {
    PROVISIONER_API_KEY: KEY,
    NODE_HOST: '127.0.0.1',
    PROVISIONER_PORT: '0',
    K8S_NAMESPACE: NS,
    SANDBOX_GC_INTERVAL_SECONDS: '0',
  },
});
const provisioner = await startProvisioner({ settings, kube, pollIntervalMs: POLL_MS });
const api = (method: string, route: string, body?: unknown) =>
  fetch(`${provisioner.url}${route}`, {
    method,
    headers: { 'x-api-key': KEY, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  }).then(async (r) => {
    const json = (await r.json()) as Record<string, unknown>;
    if (!r.ok) throw new Error(`${method} ${route}: ${r.status} ${JSON.stringify(json)}`);
    return json;
  });

async function viaProvisioner(id: string): Promise<void> {
  const created = await api('POST', '/api/sandboxes', { sandbox_id: id, thread_id: id });
  const ready = await fetch(`${String(created.sandbox_url)}/v1/sandbox`);
  await ready.arrayBuffer();
  await api('DELETE', `/api/sandboxes/${id}`);
}

const isNotFound = (err: unknown) => (err as { status?: number }).status === 404;

async function viaBareClient(id: string): Promise<void> {
  await kube.readService(NS, serviceName(id)).catch((err: unknown) => {
    if (!isNotFound(err)) throw err;
  });
  await kube.createPod(
    NS,
    sandboxPod(settings, parseCreateRequest({ sandbox_id: id, thread_id: id })),
  );
  await kube.createService(NS, sandboxService(settings, id));
  let port: number | undefined;
  for (;;) {
    const service = await kube.readService(NS, serviceName(id));
    port = service.spec?.ports?.[0]?.nodePort;
    if (port) break;
    await sleep(POLL_MS);
  }
  await kube.readPod(NS, podName(id));
  const ready = await fetch(`http://127.0.0.1:${port}/v1/sandbox`);
  await ready.arrayBuffer();
  await kube.deleteService(NS, serviceName(id));
  await kube.deletePod(NS, podName(id));
  for (;;) {
    try {
      await kube.readPod(NS, podName(id));
    } catch (err) {
      if (isNotFound(err)) break;
      throw err;
    }
    await sleep(POLL_MS);
  }
}

const lifecycle = { provisioner: [] as number[], bare: [] as number[] };
for (let i = 0; i < LIFECYCLE; i++) {
  lifecycle.provisioner.push((await timed(() => viaProvisioner(`lp${i}`)))[0]);
  lifecycle.bare.push((await timed(() => viaBareClient(`lb${i}`)))[0]);
}

// 20 live sandboxes for the read requests.
for (let i = 0; i < 20; i++) await api('POST', '/api/sandboxes', { sandbox_id: `keep${i}` });
const reads = {
  get: [] as number[],
  getBare: [] as number[],
  list: [] as number[],
  listBare: [] as number[],
};
for (let i = 0; i < REQUESTS; i++) {
  reads.get.push((await timed(() => api('GET', '/api/sandboxes/keep3')))[0]);
  reads.getBare.push(
    (
      await timed(async () => {
        await kube.readService(NS, serviceName('keep3'));
        await kube.readPod(NS, podName('keep3'));
      })
    )[0],
  );
  reads.list.push((await timed(() => api('GET', '/api/sandboxes')))[0]);
  reads.listBare.push(
    (
      await timed(() =>
        Promise.all([
          kube.listServices(NS, 'app=sbx-sandbox'),
          kube.listPods(NS, 'app=sbx-sandbox'),
        ]),
      )
    )[0],
  );
}

await provisioner.close();
await standin.close();
await rm(dir, { recursive: true, force: true });

const latency = [
  summarize('create → ready → delete (provisioner)', lifecycle.provisioner),
  summarize('bare client: create → ready → delete', lifecycle.bare),
  summarize('GET /api/sandboxes/{id}', reads.get),
  summarize('bare client: read Service + Pod', reads.getBare),
  summarize('GET /api/sandboxes (20)', reads.list),
  summarize('bare client: list Services + Pods', reads.listBare),
];
const [lp, lb, g, gb, l, lbare] = latency as [
  (typeof latency)[0],
  (typeof latency)[0],
  (typeof latency)[0],
  (typeof latency)[0],
  (typeof latency)[0],
  (typeof latency)[0],
];
const row = (benchmark: string, sbx: typeof lp, bare: typeof lp, baseline: string) => ({
  benchmark,
  sbx_ms: sbx.p50Ms,
  baseline,
  baseline_ms: bare.p50Ms,
  ratio: round2(sbx.p50Ms / bare.p50Ms),
  overhead_p50_ms: round2(sbx.p50Ms - bare.p50Ms),
  overhead_p95_ms: round2(sbx.p95Ms - bare.p95Ms),
  note: `p95 ${sbx.p95Ms} ms vs ${bare.p95Ms} ms, n=${sbx.samples}`,
});
const rows = [
  row('create → ready → delete', lp, lb, 'the same Kubernetes calls, bare client'),
  row('get one sandbox', g, gb, 'read Service + Pod, bare client'),
  row('list 20 sandboxes', l, lbare, 'list Services + Pods, bare client'),
];
const report = {
  package: '@sbx/provisioner',
  started: new Date().toISOString(),
  machine: {
    platform: process.platform,
    node: process.version,
    cpus: availableParallelism(),
    cpuModel: cpus()[0]?.model,
    loadavg: loadavg()[0],
  },
  rows,
  latency,
};
const markdown = [
  '## @sbx/provisioner: overhead over the Kubernetes calls it makes (stand-in cluster)',
  '',
  '| benchmark | provisioner p50 (ms) | bare client p50 (ms) | ratio | overhead p50 / p95 (ms) |',
  '|---|---|---|---|---|',
  ...rows.map(
    (r) =>
      `| ${r.benchmark} | ${r.sbx_ms} | ${r.baseline_ms} | ${r.ratio} | ${r.overhead_p50_ms} / ${r.overhead_p95_ms} |`,
  ),
  '',
].join('\n');
await writeBenchResults('provisioner', report, markdown);

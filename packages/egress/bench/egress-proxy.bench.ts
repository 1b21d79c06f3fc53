// The egress proxy against a direct connection, same run, loopback only: the added p50 latency of
// one plain-HTTP request (target: under 1 ms), the throughput of a CONNECT tunnel (target: at
// least half of direct), and one HTTPS request with a brokered credential through TLS
// interception against the same request over direct TLS. Writes bench/results/egress-proxy.json
// and .md.
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { request, createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { connect as tlsConnect } from 'node:tls';
import { Worker, isMainThread, parentPort } from 'node:worker_threads';
import { parseNetworkPolicy } from '@sbx/core';
import { EgressCertificateAuthority, EgressProxy } from '../src/index.js';

const LOOPBACK = '127.0.0.1';
const REQUESTS = 2_000;
const BULK_BYTES = 256 * 1024 * 1024;
const BULK_RUNS = 5;
/** TLS handshakes dominate these; fewer than the plain requests. */
const TLS_REQUESTS = 400;

async function repoRoot(): Promise<string> {
  let dir = process.cwd();
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      const parsed = JSON.parse(await readFile(manifest, 'utf8')) as { workspaces?: unknown };
      if (parsed.workspaces !== undefined) return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the repository root from ' + process.cwd());
    dir = parent;
  }
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

async function listen(
  server: ReturnType<typeof createServer> | ReturnType<typeof createHttpServer>,
) {
  server.listen(0, LOOPBACK);
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/** One GET with a fresh connection; `proxyPort` sends it through the proxy in absolute form. */
function get(port: number, proxyPort?: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(
      proxyPort === undefined
        ? { host: LOOPBACK, port, path: '/', agent: false }
        : {
            host: LOOPBACK,
            port: proxyPort,
            path: `http://bench.test:${port}/`,
            headers: { host: `bench.test:${port}` },
            agent: false,
          },
      (res) => {
        res.resume();
        res.on('end', resolve);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A real ClientHello for `bench.test`, sent first on every bulk connection. */
async function captureHello(): Promise<Buffer> {
  const server = createServer();
  const port = await listen(server);
  const captured = new Promise<Buffer>((resolve) =>
    server.once('connection', (socket) =>
      socket.once('data', (chunk: Buffer) => {
        resolve(chunk);
        socket.destroy();
      }),
    ),
  );
  const client = tlsConnect({
    host: LOOPBACK,
    port,
    servername: 'bench.test',
    rejectUnauthorized: false,
  });
  client.on('error', () => {});
  const hello = await captured;
  client.destroy();
  server.close();
  return hello;
}

/** Milliseconds to receive BULK_BYTES after sending `hello` on `socket`. */
function receiveBulk(socket: Socket, hello: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let received = 0;
    socket.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received >= BULK_BYTES) {
        resolve(performance.now() - started);
        socket.destroy();
      }
    });
    socket.on('error', reject);
    socket.write(hello);
  });
}

function tunnel(proxyPort: number, port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(proxyPort, LOOPBACK);
    socket.once('data', (chunk: Buffer) => {
      if (!chunk.toString('latin1').startsWith('HTTP/1.1 200'))
        reject(new Error('CONNECT refused'));
      else resolve(socket);
    });
    socket.on('error', reject);
    socket.write(`CONNECT bench.test:${port} HTTP/1.1\r\nHost: bench.test:${port}\r\n\r\n`);
  });
}

async function main(): Promise<void> {
  const http = createHttpServer((_req, res) => res.end('ok'));
  const httpPort = await listen(http);
  // Streams BULK_BYTES once the client's first bytes (the hello) arrive.
  const block = Buffer.alloc(64 * 1024, 7);
  const bulk = createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', () => {
      let sent = 0;
      const pump = () => {
        while (sent < BULK_BYTES) {
          sent += block.length;
          if (!socket.write(block)) return void socket.once('drain', pump);
        }
      };
      pump();
    });
  });
  const bulkPort = await listen(bulk);
  // The proxy runs on a thread of its own, as it runs beside (not inside) the client in production;
  // sharing the client's event loop would cap the tunnel at half of direct by construction.
  const worker = new Worker(new URL(import.meta.url));
  const [proxyPort] = (await once(worker, 'message')) as [number];

  const local = await startProxy();
  const sameThread = await latencies(httpPort, local.port);
  await local.close();
  const crossThread = await latencies(httpPort, proxyPort);
  const hello = await captureHello();
  const directBulk: number[] = [];
  const proxiedBulk: number[] = [];
  for (let i = 0; i < BULK_RUNS; i += 1) {
    directBulk.push(await receiveBulk(connect(bulkPort, LOOPBACK), hello));
    proxiedBulk.push(await receiveBulk(await tunnel(proxyPort, bulkPort), hello));
  }
  await worker.terminate();
  http.close();
  bulk.close();
  const intercepted = await interceptedLatencies();

  const mbps = (ms: number) => BULK_BYTES / 1024 / 1024 / (ms / 1000);
  const latencyRow = (label: string, m: { direct: number[]; proxied: number[] }) => {
    const p50Direct = median(m.direct);
    const p50Proxied = median(m.proxied);
    return {
      benchmark: `HTTP request through the proxy (p50, fresh connection; ${label})`,
      sbx_ms: Number(p50Proxied.toFixed(3)),
      baseline: 'direct',
      baseline_ms: Number(p50Direct.toFixed(3)),
      ratio: Number((p50Proxied / p50Direct).toFixed(2)),
      note: `added p50 ${(p50Proxied - p50Direct).toFixed(3)} ms (target < 1 ms); ${REQUESTS} requests each`,
    };
  };
  const bulkDirect = median(directBulk);
  const bulkProxied = median(proxiedBulk);
  const rows = [
    latencyRow("proxy on the client's thread", sameThread),
    latencyRow('proxy on a thread of its own', crossThread),
    {
      benchmark: 'CONNECT tunnel, 256 MiB download',
      sbx_ms: Number(bulkProxied.toFixed(1)),
      baseline: 'direct',
      baseline_ms: Number(bulkDirect.toFixed(1)),
      ratio: Number((bulkProxied / bulkDirect).toFixed(2)),
      note: `${mbps(bulkProxied).toFixed(0)} vs ${mbps(bulkDirect).toFixed(0)} MiB/s, throughput ratio ${(bulkDirect / bulkProxied).toFixed(2)} (target >= 0.5); median of ${BULK_RUNS}`,
    },
    {
      ...latencyRow('unused', intercepted),
      benchmark:
        "HTTPS request, brokered credential through TLS interception (p50, fresh connection; proxy on the client's thread)",
      baseline: 'direct TLS',
      note: `added p50 ${(median(intercepted.proxied) - median(intercepted.direct)).toFixed(3)} ms: a second TLS handshake (client to proxy) and the request read and re-written; ${TLS_REQUESTS} requests each`,
    },
  ];
  const report = {
    package: '@sbx/egress',
    started: new Date().toISOString(),
    machine: {
      platform: `${process.platform}-${process.arch}`,
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
    },
    rows,
  };
  const markdown = [
    '# @sbx/egress proxy vs direct (loopback)',
    '',
    '| benchmark | proxy | direct | ratio | note |',
    '| --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) => `| ${r.benchmark} | ${r.sbx_ms} ms | ${r.baseline_ms} ms | ${r.ratio} | ${r.note} |`,
    ),
    '',
  ].join('\n');
  const outDir = join(await repoRoot(), 'bench', 'results');
  await mkdir(outDir, { recursive: true });
  await writeFile(join(outDir, 'egress-proxy.json'), JSON.stringify(report, null, 2) + '\n');
  await writeFile(join(outDir, 'egress-proxy.md'), markdown);
  console.log(markdown);
}

/** One proxy with one sandbox listener on this thread. */
async function startProxy(): Promise<{ port: number; close: () => Promise<void> }> {
  const proxy = new EgressProxy({
    resolve: async () => [LOOPBACK],
    allowPrivate: (a) => a === LOOPBACK,
  });
  const listener = await proxy.openSandbox({
    sandboxId: 'bench',
    policy: parseNetworkPolicy({ mode: 'allowlist', allow: ['bench.test'] }),
    listen: { host: LOOPBACK, port: 0 },
  });
  return { port: (listener.address as { port: number }).port, close: () => proxy.close() };
}

/** One GET over TLS on `socket` (fresh), resolved when the server closes it. */
function tlsGet(
  socket: Socket | undefined,
  port: number,
  ca: string,
  authorization: string,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const tls = tlsConnect({
      ...(socket ? { socket } : { host: LOOPBACK, port }),
      servername: 'bench.test',
      ca,
    });
    tls.on('error', reject);
    tls.on('data', () => {});
    tls.on('close', () => resolve());
    tls.once('secureConnect', () =>
      tls.write(
        `GET / HTTP/1.1\r\nHost: bench.test:${port}\r\nAuthorization: Bearer ${authorization}\r\nConnection: close\r\n\r\n`,
      ),
    );
  });
}

/** Alternating direct TLS and intercepted requests (the placeholder swapped), same thread. */
async function interceptedLatencies(): Promise<{ direct: number[]; proxied: number[] }> {
  const [gatewayCa, upstreamCa] = await Promise.all([
    EgressCertificateAuthority.generate(),
    EgressCertificateAuthority.generate(),
  ]);
  const https = createHttpsServer(
    {
      SNICallback: (name, done) =>
        void upstreamCa.secureContextFor(name).then(
          (context) => done(null, context),
          (error: Error) => done(error),
        ),
    },
    (_req, res) => res.end('ok'),
  );
  const port = await listen(https as unknown as ReturnType<typeof createServer>);
  const secret = 'bench-secret-value';
  const proxy = new EgressProxy({
    resolve: async () => [LOOPBACK],
    allowPrivate: (a) => a === LOOPBACK,
    certificateAuthority: gatewayCa,
    upstreamCa: [upstreamCa.certificatePem],
    secretEnv: { BENCH_TOKEN: secret },
  });
  const listener = await proxy.openSandbox({
    sandboxId: 'bench-tls',
    policy: parseNetworkPolicy({
      mode: 'allowlist',
      allow: ['bench.test'],
      credentials: [
        {
          host: 'bench.test',
          header: 'authorization',
          source: { kind: 'env', name: 'BENCH_TOKEN' },
        },
      ],
    }),
    listen: { host: LOOPBACK, port: 0 },
  });
  const proxyPort = (listener.address as { port: number }).port;
  const placeholder = listener.placeholders[0]!.placeholder;
  const direct: number[] = [];
  const proxied: number[] = [];
  const timedGet = async (through: boolean) =>
    through
      ? tlsGet(await tunnel(proxyPort, port), port, gatewayCa.certificatePem, placeholder)
      : tlsGet(undefined, port, upstreamCa.certificatePem, secret);
  for (let i = 0; i < 40; i += 1) await timedGet(i % 2 === 1);
  for (let i = 0; i < TLS_REQUESTS; i += 1) {
    let t = performance.now();
    await timedGet(false);
    direct.push(performance.now() - t);
    t = performance.now();
    await timedGet(true);
    proxied.push(performance.now() - t);
  }
  await proxy.close();
  https.close();
  return { direct, proxied };
}

/** The worker: one proxy; posts its port. */
async function proxyThread(): Promise<void> {
  parentPort!.postMessage((await startProxy()).port);
}

/** Alternating direct and proxied requests, so both sides see the same machine load. */
async function latencies(
  httpPort: number,
  proxyPort: number,
): Promise<{ direct: number[]; proxied: number[] }> {
  const direct: number[] = [];
  const proxied: number[] = [];
  for (let i = 0; i < 200; i += 1) await get(httpPort, i % 2 ? proxyPort : undefined);
  for (let i = 0; i < REQUESTS; i += 1) {
    let t = performance.now();
    await get(httpPort);
    direct.push(performance.now() - t);
    t = performance.now();
    await get(httpPort, proxyPort);
    proxied.push(performance.now() - t);
  }
  return { direct, proxied };
}

(isMainThread ? main() : proxyThread()).catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});

import http from 'node:http';
import net from 'node:net';

export type ServiceName = 'redis' | 'docker';

export interface ServiceEnv {
  CI?: string | undefined;
  SBX_REQUIRE_SERVICES?: string | undefined;
  SBX_REDIS_URL?: string | undefined;
  DOCKER_HOST?: string | undefined;
}

/** True when services must be present: tests fail instead of skipping (CI and opted-in machines). */
export function servicesRequired(env: ServiceEnv = process.env): boolean {
  return env.CI === 'true' || env.SBX_REQUIRE_SERVICES === '1';
}

/** Where the service would be, from the environment the project's service scripts export. */
export function serviceAddress(
  name: ServiceName,
  env: ServiceEnv = process.env,
): string | undefined {
  if (name === 'redis') return env.SBX_REDIS_URL || undefined;
  return env.DOCKER_HOST || 'unix:///var/run/docker.sock';
}

type Endpoint = { path: string } | { host: string; port: number };

function redisEndpoint(address: string): Endpoint {
  const url = new URL(address);
  if (url.protocol !== 'redis:') {
    throw new Error(`SBX_REDIS_URL must be a redis:// URL, got ${url.protocol}//`);
  }
  // URL keeps the brackets of an IPv6 literal; net.connect wants the bare address.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1';
  return { host, port: Number(url.port || 6379) };
}

function dockerEndpoint(address: string): Endpoint {
  if (address.startsWith('unix://')) return { path: address.slice('unix://'.length) };
  const url = new URL(address.replace(/^tcp:/, 'http:'));
  if (url.protocol !== 'http:') {
    throw new Error(`DOCKER_HOST must be unix:// or tcp://, got ${address}`);
  }
  return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port || 2375) };
}

/**
 * Sends `PING` and waits for the first reply line. An open port is not enough: something else may
 * hold it (a stale port number after the server moved). `-NOAUTH` still proves a Redis is there;
 * the client authenticates with the credentials in the URL.
 */
function pingRedis(endpoint: Endpoint, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect(endpoint);
    let buffered = '';
    const done = (problem: string | undefined) => {
      socket.destroy();
      resolve(problem);
    };
    socket.setTimeout(timeoutMs, () => done(`no reply to PING within ${timeoutMs}ms`));
    socket.once('error', (err) => done(err.message));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      const end = buffered.indexOf('\r\n');
      if (end === -1) return;
      const line = buffered.slice(0, end);
      done(line === '+PONG' || line.startsWith('-NOAUTH') ? undefined : `PING answered ${line}`);
    });
    socket.once('end', () => done('connection closed before a reply to PING'));
  });
}

/** `GET /_ping`, which the Docker Engine API answers with `200 OK`. */
function pingDocker(endpoint: Endpoint, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const target = 'path' in endpoint ? { socketPath: endpoint.path } : endpoint;
    const req = http.get({ ...target, path: '/_ping', timeout: timeoutMs }, (res) => {
      res.resume();
      res.once('end', () =>
        resolve(res.statusCode === 200 ? undefined : `/_ping answered HTTP ${res.statusCode}`),
      );
      res.once('error', (err) => resolve(err.message));
    });
    req.once('timeout', () => {
      req.destroy();
      resolve(`no reply to /_ping within ${timeoutMs}ms`);
    });
    req.once('error', (err) => resolve(err.message));
  });
}

async function probe(
  name: ServiceName,
  address: string,
  timeoutMs: number,
): Promise<string | undefined> {
  let endpoint: Endpoint;
  try {
    endpoint = name === 'redis' ? redisEndpoint(address) : dockerEndpoint(address);
  } catch (err) {
    return (err as Error).message;
  }
  return name === 'redis' ? pingRedis(endpoint, timeoutMs) : pingDocker(endpoint, timeoutMs);
}

/**
 * Gate for integration tests (`*.int.test.ts`). Resolves to the service address when the service
 * answers its protocol's ping (Redis `PING`, Docker `GET /_ping`). When it does not: on CI
 * (`CI=true`) or with `SBX_REQUIRE_SERVICES=1` it throws, so the test file fails loudly; elsewhere
 * it prints the reason and resolves `undefined`, and the caller skips:
 *
 *   const redisUrl = await requireService('redis');
 *   describe.skipIf(!redisUrl)('redis store', () => { ... });
 */
export async function requireService(
  name: ServiceName,
  options: { env?: ServiceEnv; timeoutMs?: number; log?: (line: string) => void } = {},
): Promise<string | undefined> {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => console.warn(line));
  const address = serviceAddress(name, env);
  const hint =
    name === 'redis'
      ? 'start it with `source tools/services/start-redis.sh` (sets SBX_REDIS_URL)'
      : 'start it with `source tools/services/start-docker.sh` (sets DOCKER_HOST)';
  let reason: string | undefined;
  if (!address) {
    reason = `${name}: SBX_REDIS_URL is not set; ${hint}`;
  } else {
    const problem = await probe(name, address, options.timeoutMs ?? 1500);
    if (problem) reason = `${name}: nothing usable at ${address} (${problem}); ${hint}`;
  }
  if (!reason) return address;
  if (servicesRequired(env)) {
    throw new Error(`required service unavailable (CI=true or SBX_REQUIRE_SERVICES=1): ${reason}`);
  }
  log(`[sbx] skipping ${name} integration tests: ${reason}`);
  return undefined;
}

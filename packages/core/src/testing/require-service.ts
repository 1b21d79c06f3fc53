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

function probeTcp(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function probeUnix(path: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ path });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Where the service would be, from the environment the project's service scripts export. */
export function serviceAddress(name: ServiceName, env: ServiceEnv = process.env): string | undefined {
  if (name === 'redis') return env.SBX_REDIS_URL || undefined;
  return env.DOCKER_HOST || 'unix:///var/run/docker.sock';
}

async function reachable(name: ServiceName, address: string, timeoutMs: number): Promise<boolean> {
  if (name === 'redis') {
    const url = new URL(address);
    return probeTcp(url.hostname || '127.0.0.1', Number(url.port || 6379), timeoutMs);
  }
  if (address.startsWith('unix://')) return probeUnix(address.slice('unix://'.length), timeoutMs);
  const url = new URL(address.replace(/^tcp:/, 'http:'));
  return probeTcp(url.hostname, Number(url.port || 2375), timeoutMs);
}

/**
 * Gate for integration tests (`*.int.test.ts`). Resolves to the service address when it answers.
 * When it does not: on CI (`CI=true`) or with `SBX_REQUIRE_SERVICES=1` it throws, so the test file
 * fails loudly; elsewhere it prints the reason and resolves `undefined`, and the caller skips:
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
  if (!address) reason = `${name}: SBX_REDIS_URL is not set; ${hint}`;
  else if (!(await reachable(name, address, options.timeoutMs ?? 1500)))
    reason = `${name}: nothing answers at ${address}; ${hint}`;
  if (!reason) return address;
  if (servicesRequired(env)) {
    throw new Error(`required service unavailable (CI=true or SBX_REQUIRE_SERVICES=1): ${reason}`);
  }
  log(`[sbx] skipping ${name} integration tests: ${reason}`);
  return undefined;
}

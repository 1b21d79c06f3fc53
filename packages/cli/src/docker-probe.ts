import { request } from 'node:http';

/** How to reach the Docker Engine API. */
export type DockerEndpoint =
  | { readonly kind: 'socket'; readonly socketPath: string }
  | { readonly kind: 'tcp'; readonly host: string; readonly port: number; readonly tls: boolean };

export const DEFAULT_DOCKER_SOCKET = '/var/run/docker.sock';

/**
 * `DOCKER_HOST` as the docker CLI reads it (`unix:///path`, `tcp://host:port`), else the default
 * socket. `DOCKER_TLS_VERIFY` marks a TCP endpoint as TLS.
 *
 * @throws Error for a `DOCKER_HOST` this probe cannot use (another scheme, a malformed URL)
 */
export function dockerEndpointFrom(
  env: Readonly<Record<string, string | undefined>>,
): DockerEndpoint {
  const host = env.DOCKER_HOST?.trim();
  if (!host) return { kind: 'socket', socketPath: DEFAULT_DOCKER_SOCKET };
  if (host.startsWith('unix://'))
    return { kind: 'socket', socketPath: host.slice('unix://'.length) };
  if (host.startsWith('tcp://')) {
    const url = new URL(host.replace(/^tcp:/, 'http:'));
    const tls = Boolean(env.DOCKER_TLS_VERIFY && env.DOCKER_TLS_VERIFY !== '0');
    return { kind: 'tcp', host: url.hostname, port: Number(url.port || (tls ? 2376 : 2375)), tls };
  }
  throw new Error(`DOCKER_HOST=${host}: only unix:// and tcp:// endpoints can be probed`);
}

export function describeDockerEndpoint(endpoint: DockerEndpoint): string {
  return endpoint.kind === 'socket'
    ? `unix://${endpoint.socketPath}`
    : `tcp://${endpoint.host}:${endpoint.port}`;
}

interface DockerResponse {
  readonly status: number;
  readonly body: string;
}

/** One GET against the Engine API (plain HTTP over the socket or TCP). */
export function dockerGet(
  endpoint: DockerEndpoint,
  apiPath: string,
  signal: AbortSignal,
): Promise<DockerResponse> {
  if (endpoint.kind === 'tcp' && endpoint.tls) {
    return Promise.reject(
      new Error('TLS-protected Docker endpoints (DOCKER_TLS_VERIFY) are not probed'),
    );
  }
  return new Promise((resolve, reject) => {
    const target =
      endpoint.kind === 'socket'
        ? { socketPath: endpoint.socketPath }
        : { host: endpoint.host, port: endpoint.port };
    const req = request({ ...target, path: apiPath, method: 'GET', signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** The engine's version; rejects when the daemon cannot be reached or answers with an error. */
export async function dockerVersion(
  endpoint: DockerEndpoint,
  signal: AbortSignal,
): Promise<string> {
  const res = await dockerGet(endpoint, '/version', signal);
  if (res.status !== 200) throw new Error(`GET /version answered HTTP ${res.status}`);
  const parsed = JSON.parse(res.body) as { Version?: unknown };
  return typeof parsed.Version === 'string' ? parsed.Version : 'unknown version';
}

/** Whether the image exists locally (`docker image inspect`). */
export async function dockerImagePresent(
  endpoint: DockerEndpoint,
  image: string,
  signal: AbortSignal,
): Promise<boolean> {
  // The engine routes `/images/{name}/json` with slashes in the name left as they are.
  const res = await dockerGet(endpoint, `/images/${encodeURI(image)}/json`, signal);
  if (res.status === 200) return true;
  if (res.status === 404) return false;
  throw new Error(`GET /images/.../json answered HTTP ${res.status}`);
}

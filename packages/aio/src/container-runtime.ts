import { stat } from 'node:fs/promises';

export type ContainerRuntimeKind = 'docker' | 'podman';

/** Where the container engine's API was found. */
export interface DetectedRuntime {
  readonly kind: ContainerRuntimeKind;
  /** `unix:///path`, `tcp://host:port`, `ssh://...`, `npipe://...`. */
  readonly address: string;
  readonly source: 'DOCKER_HOST' | 'CONTAINER_HOST' | 'docker-socket' | 'podman-socket';
}

export interface RuntimeEnvironment {
  DOCKER_HOST?: string | undefined;
  CONTAINER_HOST?: string | undefined;
  XDG_RUNTIME_DIR?: string | undefined;
}

export interface RuntimeProbe {
  /** True when `path` exists and is a Unix socket. */
  isSocket(path: string): Promise<boolean>;
}

export const fsRuntimeProbe: RuntimeProbe = {
  async isSocket(path) {
    try {
      return (await stat(path)).isSocket();
    } catch {
      return false;
    }
  },
};

export const DOCKER_SOCKET_PATHS = ['/var/run/docker.sock', '/run/docker.sock'] as const;

function kindOf(address: string): ContainerRuntimeKind {
  return /podman/i.test(address) ? 'podman' : 'docker';
}

/**
 * Finds the container engine, in this order:
 * 1. `DOCKER_HOST` (a Podman socket there is reported as podman);
 * 2. `CONTAINER_HOST` (Podman's own variable);
 * 3. Docker's socket at `/var/run/docker.sock` or `/run/docker.sock`;
 * 4. Podman's socket: rootless `$XDG_RUNTIME_DIR/podman/podman.sock` (else
 *    `/run/user/<uid>/podman/podman.sock`), then rootful `/run/podman/podman.sock`.
 * Podman serves the Docker Engine API on its socket, so one client drives both. Undefined when
 * none is there. Pure apart from the `probe`, so it is tested with a fake file system.
 */
export async function detectContainerRuntime(
  options: { env?: RuntimeEnvironment; probe?: RuntimeProbe; uid?: number | undefined } = {},
): Promise<DetectedRuntime | undefined> {
  const env = options.env ?? process.env;
  const probe = options.probe ?? fsRuntimeProbe;
  const uid = options.uid ?? process.getuid?.();
  const dockerHost = env.DOCKER_HOST?.trim();
  if (dockerHost) return { kind: kindOf(dockerHost), address: dockerHost, source: 'DOCKER_HOST' };
  const containerHost = env.CONTAINER_HOST?.trim();
  if (containerHost) return { kind: 'podman', address: containerHost, source: 'CONTAINER_HOST' };
  for (const path of DOCKER_SOCKET_PATHS) {
    if (await probe.isSocket(path)) {
      return { kind: 'docker', address: `unix://${path}`, source: 'docker-socket' };
    }
  }
  const podmanSockets: string[] = [];
  if (env.XDG_RUNTIME_DIR) podmanSockets.push(`${env.XDG_RUNTIME_DIR}/podman/podman.sock`);
  else if (uid !== undefined && uid !== 0)
    podmanSockets.push(`/run/user/${uid}/podman/podman.sock`);
  podmanSockets.push('/run/podman/podman.sock');
  for (const path of podmanSockets) {
    if (await probe.isSocket(path)) {
      return { kind: 'podman', address: `unix://${path}`, source: 'podman-socket' };
    }
  }
  return undefined;
}

/** Construction options for a Docker Engine API client (dockerode) reaching `runtime`. */
export function dockerConnectionOptions(
  runtime: DetectedRuntime,
): { socketPath: string } | { host: string; port: number; protocol: 'http' | 'https' } | undefined {
  const address = runtime.address;
  if (address.startsWith('unix://')) return { socketPath: address.slice('unix://'.length) };
  if (
    address.startsWith('tcp://') ||
    address.startsWith('http://') ||
    address.startsWith('https://')
  ) {
    const url = new URL(address.replace(/^tcp:/, 'http:'));
    const tls = url.protocol === 'https:' || url.port === '2376';
    return {
      host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: Number(url.port || (tls ? 2376 : 2375)),
      protocol: tls ? 'https' : 'http',
    };
  }
  // ssh:// and npipe:// (and TLS client certificates) are left to the client's own handling of
  // DOCKER_HOST / DOCKER_CERT_PATH.
  return undefined;
}

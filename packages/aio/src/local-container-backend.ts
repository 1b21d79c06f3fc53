import type { LocalContainerBackendOptions } from './local-container-backend-options.js';
import {
  errorMessage,
  AbortedError,
  InvalidArgumentError,
  SandboxRuntimeError,
  silentLogger,
  loadOptionalDependency,
} from '@sbx/core';
import { DEFAULT_SKILLS_ROOT, interopDefault } from '@sbx/core/internal';
import type { Logger } from '@sbx/core';
import { detectContainerRuntime, dockerConnectionOptions } from './container-runtime.js';
import {
  AIO_CONTAINER_PORT,
  LABEL_MANAGED,
  LABEL_PORT,
  LABEL_SKILLS_ROOT,
  buildContainerSpec,
  describeContainerSpec,
} from './container-spec.js';
import type { ContainerNetworkMode } from './container-spec.js';
import { resolveDockerBindHost, resolveSandboxHost } from './docker-bind-host.js';
import { dockerErrorText, dockerStatusCode } from './docker-client.js';
import { awaitContainerRemoval } from './container-removal.js';
import type { DockerClient, DockerContainerSummary, DockerInspectInfo } from './docker-client.js';
import { PortAllocator } from './port-allocator.js';
import {
  CREATE_READY_TIMEOUT_MS,
  DISCOVER_READY_TIMEOUT_MS,
  waitForSandboxReady,
} from './readiness.js';
import type {
  BackendCallOptions,
  CreateSandboxRequest,
  SandboxBackend,
  SandboxHealth,
} from './sandbox-backend.js';
import { setContainerPaused } from './container-pause.js';
import { parseDockerTimestamp } from './sandbox-info.js';
import type { SandboxInfo } from './sandbox-info.js';
import { aioRequestHeaders } from './aio-http.js';
import { DEFAULT_CONTAINER_RESOURCES, type ContainerResources } from './container-profile.js';
import type { SandboxResources } from '@sbx/core';

/** The all-in-one sandbox image the reference configuration uses. Pinning a tag is advised. */
export const DEFAULT_AIO_IMAGE =
  'enterprise-public-cn-beijing.cr.volces.com/vefaas-public/all-in-one-sandbox:latest';
export const DEFAULT_CONTAINER_PREFIX = 'sbx-sandbox';
export const DEFAULT_BASE_PORT = 8080;
/** Whole-call bound of a stop; `docker stop` itself escalates to SIGKILL after its grace. */
export const DEFAULT_STOP_TIMEOUT_MS = 120_000;
export const DEFAULT_STOP_GRACE_SECONDS = 10;
export const DEFAULT_INSPECT_TIMEOUT_MS = 5_000;
export const DEFAULT_LIST_TIMEOUT_MS = 15_000;
const CREATE_ATTEMPTS = 10;

interface DockerodeConstructor {
  new (options?: Record<string, unknown>): DockerClient;
}

function withTimeout(ms: number, signal: AbortSignal | undefined): AbortSignal {
  const deadline = AbortSignal.timeout(ms);
  return signal ? AbortSignal.any([signal, deadline]) : deadline;
}

/**
 * True when an inspect failure says definitively that the container does not exist: HTTP 404
 * from the engine, or the CLI-style texts `No such container` / `No such object`, or a `not found`
 * that names the container. Anything else (daemon unreachable, credential helper missing, a
 * timeout) is not proof of absence.
 */
export function isDefinitelyMissing(err: unknown, containerName: string): boolean {
  if (dockerStatusCode(err) === 404) return true;
  const text = dockerErrorText(err).toLowerCase();
  if (text.includes('no such container') || text.includes('no such object')) return true;
  return (
    text.includes('not found') &&
    (text.includes(containerName.toLowerCase()) ||
      text.includes('container') ||
      text.includes('object'))
  );
}

/**
 * Sandboxes as local containers of the all-in-one image, through the Docker Engine API (dockerode,
 * an optional peer dependency loaded on first use). Works with Docker and with Podman's
 * Docker-compatible socket.
 *
 * One concept, kept whole: the `SandboxBackend` contract over the Docker Engine API (create with
 * its readiness wait and cleanup, destroy, inspect, discover, list). Its options, the container
 * spec, runtime detection, ports and readiness already live in their own files; what remains
 * shares the Docker client and the port allocator.
 */
export class LocalContainerBackend implements SandboxBackend {
  readonly kind = 'local' as const;
  readonly usesThreadDataMounts = true;
  readonly image: string;
  readonly containerPrefix: string;
  readonly network: ContainerNetworkMode;
  readonly basePort: number;
  readonly skillsRoot: string;
  private readonly options: LocalContainerBackendOptions;
  private readonly logger: Logger;
  private readonly sandboxHost: string;
  private readonly bindHost: string;
  private readonly ports: PortAllocator;
  private dockerPromise: Promise<DockerClient> | undefined;

  constructor(options: LocalContainerBackendOptions = {}) {
    this.options = options;
    this.image = options.image || DEFAULT_AIO_IMAGE;
    this.containerPrefix = options.containerPrefix || DEFAULT_CONTAINER_PREFIX;
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(this.containerPrefix)) {
      throw new InvalidArgumentError(
        `containerPrefix must be a valid container name prefix, got '${this.containerPrefix}'`,
      );
    }
    this.network = options.network ?? 'bridge';
    this.basePort = options.basePort || DEFAULT_BASE_PORT;
    this.skillsRoot = options.skillsRoot ?? DEFAULT_SKILLS_ROOT;
    this.logger = options.logger ?? silentLogger;
    const env = options.env ?? process.env;
    this.sandboxHost =
      this.network === 'host' ? '127.0.0.1' : resolveSandboxHost(options.sandboxHost, env);
    this.bindHost =
      this.network === 'host'
        ? '127.0.0.1'
        : resolveDockerBindHost({
            sandboxHost: this.sandboxHost,
            ...(options.bindHost === undefined ? {} : { bindHost: options.bindHost }),
            env,
            logger: this.logger,
          });
    this.ports = options.portAllocator ?? new PortAllocator(this.bindHost);
    if (options.docker) this.dockerPromise = Promise.resolve(options.docker);
  }

  /** `<prefix>-<sandboxId>`. */
  containerNameFor(sandboxId: string): string {
    return `${this.containerPrefix}-${sandboxId}`;
  }

  private docker(): Promise<DockerClient> {
    if (!this.dockerPromise) {
      const pending = (async () => {
        const mod = await loadOptionalDependency('dockerode', '@sbx/aio LocalContainerBackend');
        const Docker = interopDefault<DockerodeConstructor>(mod);
        const runtime =
          this.options.runtime ??
          (await detectContainerRuntime({ env: this.options.env ?? process.env }));
        if (!runtime) {
          throw new SandboxRuntimeError(
            'No container engine found: set DOCKER_HOST, or start Docker (/var/run/docker.sock) or Podman (podman.sock)',
          );
        }
        const connection = dockerConnectionOptions(runtime);
        // Without explicit options dockerode reads DOCKER_HOST / DOCKER_CERT_PATH itself.
        return connection ? new Docker(connection) : new Docker();
      })();
      pending.catch(() => {
        if (this.dockerPromise === pending) this.dockerPromise = undefined;
      });
      this.dockerPromise = pending;
    }
    return this.dockerPromise;
  }

  private urlFor(port: number): string {
    const host =
      this.sandboxHost.includes(':') && !this.sandboxHost.startsWith('[')
        ? `[${this.sandboxHost}]`
        : this.sandboxHost;
    return `http://${host}:${port}`;
  }

  private portOf(
    labels: Readonly<Record<string, string>> | null | undefined,
    published: number | undefined,
  ): number | undefined {
    const label = labels?.[LABEL_PORT];
    if (labels?.[LABEL_MANAGED] === 'true' && label && /^\d+$/.test(label)) return Number(label);
    return published;
  }

  async create(request: CreateSandboxRequest): Promise<SandboxInfo> {
    const docker = await this.docker();
    const name = this.containerNameFor(request.sandboxId);
    const mounts = [...(this.options.mounts ?? []), ...(request.extraMounts ?? [])];
    let start = this.basePort;
    for (let attempt = 0; attempt < CREATE_ATTEMPTS; attempt++) {
      if (request.signal?.aborted) {
        throw new AbortedError('Sandbox creation was aborted', { cause: request.signal.reason });
      }
      const port = await this.ports.reserve(start);
      const spec = buildContainerSpec({
        name,
        sandboxId: request.sandboxId,
        image: request.image ?? this.image,
        port,
        network: this.network,
        bindHost: this.bindHost,
        environment: this.options.environment ?? {},
        mounts,
        skillsRoot: this.skillsRoot,
        // The acquire's labels under sbx's own (buildContainerSpec writes those last).
        ...(this.options.labels || request.labels
          ? { extraLabels: { ...request.labels, ...this.options.labels } }
          : {}),
        ...(this.options.resources || request.resources
          ? { resources: mergeResources(this.options.resources, request.resources) }
          : {}),
        ...(this.options.security ? { security: this.options.security } : {}),
      });
      this.logger.info('Starting sandbox container', { command: describeContainerSpec(spec) });
      let containerId: string;
      try {
        const container = await docker.createContainer(spec);
        containerId = container.id;
        try {
          await container.start();
        } catch (err) {
          // A created-but-unstartable container would block the name for the next attempt.
          await container.remove({ force: true }).catch((removeErr: unknown) => {
            this.logger.warn('Could not remove a container that failed to start', {
              container: name,
              error: dockerErrorText(removeErr),
            });
          });
          throw err;
        }
      } catch (err) {
        this.ports.release(port);
        const text = dockerErrorText(err);
        if (text.includes('port is already allocated') || /address already in use/i.test(text)) {
          this.logger.warn('Sandbox port taken meanwhile; trying the next one', { port });
          start = port + 1;
          continue;
        }
        if (
          dockerStatusCode(err) === 409 ||
          /is already in use by container|conflict\. the container name/i.test(text)
        ) {
          const existing = await this.discover(request.sandboxId, { signal: request.signal });
          if (existing) return existing;
        }
        throw new SandboxRuntimeError(`Failed to start sandbox container: ${text}`, {
          cause: err,
          details: { container: name },
        });
      }
      const info: SandboxInfo = {
        sandboxId: request.sandboxId,
        sandboxUrl: this.urlFor(port),
        containerName: name,
        containerId,
        createdAt: Date.now() / 1000,
        skillsRoot: this.skillsRoot,
        managed: true,
      };
      await this.awaitReady(info, request.signal);
      return info;
    }
    throw new SandboxRuntimeError(
      'Could not start sandbox container: all candidate ports are already allocated by Docker',
    );
  }

  private async awaitReady(info: SandboxInfo, signal: AbortSignal | undefined): Promise<void> {
    const budget = this.options.readyTimeoutMs ?? CREATE_READY_TIMEOUT_MS;
    if (budget <= 0) return;
    let ready = false;
    try {
      ready = await waitForSandboxReady(info.sandboxUrl, {
        timeoutMs: budget,
        headers: aioRequestHeaders(this.options),
        ...(signal ? { signal } : {}),
        stillViable: async () => (await this.checkHealth(info)) !== 'dead',
      });
    } catch (err) {
      await this.destroyQuietly(info);
      throw err;
    }
    if (!ready) {
      await this.destroyQuietly(info);
      throw new SandboxRuntimeError(
        `Sandbox container ${info.containerName} did not answer GET /v1/sandbox within ${budget} ms`,
        { details: { sandbox_id: info.sandboxId, url: info.sandboxUrl } },
      );
    }
  }

  private async destroyQuietly(info: SandboxInfo): Promise<void> {
    try {
      await this.destroy(info);
    } catch (err) {
      this.logger.error('Could not stop a sandbox container that never became ready', {
        container: info.containerName,
        error: errorMessage(err),
      });
    }
  }

  async destroy(info: SandboxInfo, options: BackendCallOptions = {}): Promise<void> {
    const docker = await this.docker();
    const target = info.containerId ?? info.containerName ?? this.containerNameFor(info.sandboxId);
    const timeoutMs = this.options.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS;
    const signal = withTimeout(timeoutMs, options.signal);
    try {
      await docker.getContainer(target).stop({
        t: this.options.stopGraceSeconds ?? DEFAULT_STOP_GRACE_SECONDS,
        abortSignal: signal,
      });
    } catch (err) {
      const status = dockerStatusCode(err);
      if (status === 404 || status === 304 || isDefinitelyMissing(err, target)) {
        this.logger.debug('Sandbox container already stopped or gone', { container: target });
      } else if (signal.aborted) {
        if (options.signal?.aborted) {
          throw new AbortedError('Stopping the sandbox was aborted', {
            cause: options.signal.reason,
          });
        }
        this.logger.error('Timed out stopping sandbox container; it may still be running', {
          container: target,
          timeout_ms: timeoutMs,
        });
        throw new SandboxRuntimeError(
          `Timed out stopping container ${target} after ${timeoutMs} ms; it may still be running`,
          { cause: err, details: { sandbox_id: info.sandboxId } },
        );
      } else {
        throw new SandboxRuntimeError(
          `Failed to stop container ${target}: ${dockerErrorText(err)}`,
          {
            cause: err,
            details: { sandbox_id: info.sandboxId },
          },
        );
      }
    }
    await awaitContainerRemoval(
      docker,
      target,
      signal,
      (err) => isDefinitelyMissing(err, target),
      this.logger,
    );
    const port = Number(/:(\d+)\/?$/.exec(info.sandboxUrl)?.[1]);
    if (Number.isInteger(port) && port > 0) this.ports.release(port);
  }

  private async inspect(
    name: string,
    signal: AbortSignal | undefined,
  ): Promise<{ info: DockerInspectInfo } | { missing: true } | { error: unknown }> {
    const docker = await this.docker();
    const timeoutMs = this.options.inspectTimeoutMs ?? DEFAULT_INSPECT_TIMEOUT_MS;
    try {
      return {
        info: await docker
          .getContainer(name)
          .inspect({ abortSignal: withTimeout(timeoutMs, signal) }),
      };
    } catch (err) {
      if (isDefinitelyMissing(err, name)) return { missing: true };
      return { error: err };
    }
  }

  async checkHealth(info: SandboxInfo, options: BackendCallOptions = {}): Promise<SandboxHealth> {
    const name = info.containerName ?? info.containerId ?? this.containerNameFor(info.sandboxId);
    let result;
    try {
      result = await this.inspect(name, options.signal);
    } catch (err) {
      result = { error: err };
    }
    if ('missing' in result) return 'dead';
    if ('error' in result) {
      this.logger.warn('Could not check sandbox container health', {
        container: name,
        error: dockerErrorText(result.error),
      });
      return 'unknown';
    }
    return result.info.State?.Running === true ? 'alive' : 'dead';
  }

  async discover(sandboxId: string, options: BackendCallOptions = {}): Promise<SandboxInfo | null> {
    const name = this.containerNameFor(sandboxId);
    let result;
    try {
      result = await this.inspect(name, options.signal);
    } catch (err) {
      result = { error: err };
    }
    if ('missing' in result) return null;
    if ('error' in result) {
      this.logger.warn('Could not verify sandbox container; not adopting it', {
        container: name,
        error: dockerErrorText(result.error),
      });
      return null;
    }
    const inspected = result.info;
    if (inspected.State?.Running !== true) return null;
    const published =
      inspected.NetworkSettings?.Ports?.[`${AIO_CONTAINER_PORT}/tcp`]?.[0]?.HostPort;
    const port = this.portOf(inspected.Config?.Labels, published ? Number(published) : undefined);
    if (port === undefined || !Number.isInteger(port)) return null;
    const hostNetwork = inspected.HostConfig?.NetworkMode === 'host';
    const url = hostNetwork ? `http://127.0.0.1:${port}` : this.urlFor(port);
    // A paused container answers nothing until unpaused: reported as such (the acquire resumes it
    // and then waits for it), not waited for here until the readiness budget runs out.
    const paused = inspected.State?.Paused === true;
    if (!paused) {
      const ready = await waitForSandboxReady(url, {
        timeoutMs: this.options.discoverReadyTimeoutMs ?? DISCOVER_READY_TIMEOUT_MS,
        headers: aioRequestHeaders(this.options),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      if (!ready) return null;
    }
    const labels = inspected.Config?.Labels ?? {};
    return {
      sandboxId,
      sandboxUrl: url,
      containerName: name,
      containerId: inspected.Id,
      createdAt: parseDockerTimestamp(inspected.Created),
      ...(labels[LABEL_SKILLS_ROOT] ? { skillsRoot: labels[LABEL_SKILLS_ROOT] } : {}),
      ...userLabelsOf(labels),
      managed: labels[LABEL_MANAGED] === 'true',
      ...(paused ? { paused } : {}),
    };
  }

  /** `docker pause` of the sandbox's container; see `setContainerPaused`. */
  async pause(info: SandboxInfo, options: BackendCallOptions = {}): Promise<void> {
    await setContainerPaused(await this.docker(), this.targetOf(info), info, 'pause', {
      ...options,
      logger: this.logger,
    });
  }

  /** `docker unpause`; one not paused is fine (see `setContainerPaused`). */
  async unpause(info: SandboxInfo, options: BackendCallOptions = {}): Promise<void> {
    await setContainerPaused(await this.docker(), this.targetOf(info), info, 'unpause', {
      ...options,
      logger: this.logger,
    });
  }

  private targetOf(info: SandboxInfo): string {
    return info.containerId ?? info.containerName ?? this.containerNameFor(info.sandboxId);
  }

  private infoFromSummary(summary: DockerContainerSummary, name: string): SandboxInfo {
    const labels = summary.Labels ?? {};
    const published = summary.Ports?.find(
      (p) => p.PrivatePort === AIO_CONTAINER_PORT && p.PublicPort !== undefined,
    )?.PublicPort;
    const port = this.portOf(labels, published);
    const hostNetwork = summary.HostConfig?.NetworkMode === 'host';
    const url =
      port === undefined ? '' : hostNetwork ? `http://127.0.0.1:${port}` : this.urlFor(port);
    return {
      sandboxId: name.slice(this.containerPrefix.length + 1),
      sandboxUrl: url,
      containerName: name,
      containerId: summary.Id,
      createdAt: typeof summary.Created === 'number' ? summary.Created : 0,
      ...(labels[LABEL_SKILLS_ROOT] ? { skillsRoot: labels[LABEL_SKILLS_ROOT] } : {}),
      ...userLabelsOf(labels),
      managed: labels[LABEL_MANAGED] === 'true',
      ...(summary.State === 'paused' ? { paused: true } : {}),
    };
  }

  /**
   * Running containers named `<prefix>-...`: those sbx labelled (their port from the `sbx.port`
   * label) and unlabelled ones of the same prefix made by the reference implementation (their port
   * from the published 8080 mapping; `""` URL when none, so reconciliation can still adopt or
   * stop them). `[]` with a warning when the engine cannot be asked.
   */
  async listRunning(options: BackendCallOptions = {}): Promise<SandboxInfo[]> {
    const prefix = `${this.containerPrefix}-`;
    let summaries: DockerContainerSummary[];
    try {
      const docker = await this.docker();
      summaries = await docker.listContainers({
        all: false,
        // The engine's name filter is a substring match; the prefix test below is exact.
        filters: { name: [prefix] },
        abortSignal: withTimeout(
          this.options.listTimeoutMs ?? DEFAULT_LIST_TIMEOUT_MS,
          options.signal,
        ),
      });
    } catch (err) {
      this.logger.warn('Could not list sandbox containers', { error: dockerErrorText(err) });
      return [];
    }
    const out: SandboxInfo[] = [];
    for (const summary of summaries) {
      const name = (summary.Names ?? [])
        .map((n) => n.replace(/^\//, ''))
        .find((n) => n.startsWith(prefix) && n.length > prefix.length);
      if (name) out.push(this.infoFromSummary(summary, name));
    }
    return out;
  }
}

export type { LocalContainerBackendOptions } from './local-container-backend-options.js';

/** The labels an acquire's spec wrote (everything but sbx's own `sbx.*`, `sbx.dev/...` kept). */
function userLabelsOf(labels: Readonly<Record<string, string>>): {
  labels?: Record<string, string>;
} {
  const own = Object.entries(labels).filter(
    ([k]) => !k.startsWith('sbx.') || k.startsWith('sbx.dev/'),
  );
  return own.length > 0 ? { labels: Object.fromEntries(own) } : {};
}

/** The configured limits with an acquire's spec resources over them. */
function mergeResources(
  configured: ContainerResources | undefined,
  requested: SandboxResources | undefined,
): ContainerResources {
  const base = configured ?? DEFAULT_CONTAINER_RESOURCES;
  return {
    memoryMb: requested?.memoryMb ?? base.memoryMb,
    cpus: requested?.cpus ?? base.cpus,
    pids: requested?.pids ?? base.pids,
    ...((requested?.diskGb ?? base.diskGb) === undefined
      ? {}
      : { diskGb: requested?.diskGb ?? base.diskGb }),
  };
}

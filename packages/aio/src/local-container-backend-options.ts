import type { Logger } from '@sbx/core';
import type { ContainerResources, ContainerSecurityProfile } from './container-profile.js';
import type { DetectedRuntime } from './container-runtime.js';
import type { ContainerNetworkMode } from './container-spec.js';
import type { HostEnvironment } from './docker-bind-host.js';
import type { DockerClient } from './docker-client.js';
import type { PortAllocator } from './port-allocator.js';
import type { MountSpec } from './sandbox-backend.js';

export interface LocalContainerBackendOptions {
  /** Default: the all-in-one sandbox image of the reference configuration. */
  image?: string;
  /** First host port tried. Default 8080. */
  basePort?: number;
  /** Container names are `<prefix>-<sandboxId>`. Default `sbx-sandbox`. */
  containerPrefix?: string;
  /** Mounted into every sandbox, before the per-sandbox mounts. */
  mounts?: readonly MountSpec[];
  /** Environment of every sandbox container. */
  environment?: Readonly<Record<string, string>>;
  /** Limits of every container; default `DEFAULT_CONTAINER_RESOURCES`. */
  resources?: ContainerResources;
  /** Hardening of every container; default `DEFAULT_SECURITY_PROFILE`. */
  security?: ContainerSecurityProfile;
  /** Sent with readiness probes (the container's SANDBOX_API_KEY), with `headers`. */
  apiKey?: string;
  headers?: Readonly<Record<string, string>>;
  /** Default `bridge`. */
  network?: ContainerNetworkMode;
  /** URL host (bridge mode). Default `SBX_SANDBOX_HOST`, `DEER_FLOW_SANDBOX_HOST`, `localhost`. */
  sandboxHost?: string;
  /** Publish address (bridge mode). Default: derived from the sandbox host. */
  bindHost?: string;
  /** Recorded as the `sbx.skills-root` label. Default `/mnt/skills`. */
  skillsRoot?: string;
  /** Readiness budget after create; 0 skips the wait. Default 60 s. */
  readyTimeoutMs?: number;
  /** Readiness budget when discovering. Default 5 s. */
  discoverReadyTimeoutMs?: number;
  stopTimeoutMs?: number;
  stopGraceSeconds?: number;
  inspectTimeoutMs?: number;
  listTimeoutMs?: number;
  /** Labels added to every container this backend creates. */
  labels?: Readonly<Record<string, string>>;
  /** A ready Docker API client; otherwise dockerode is loaded and pointed at `runtime`. */
  docker?: DockerClient;
  /** Where the engine is; otherwise detected (`detectContainerRuntime`). */
  runtime?: DetectedRuntime;
  /** Environment for host resolution and runtime detection. Default `process.env`. */
  env?: HostEnvironment;
  logger?: Logger;
  /** Port search (tests inject one that avoids probing). */
  portAllocator?: PortAllocator;
}

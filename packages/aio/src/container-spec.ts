import { posix } from 'node:path';
import {
  DEFAULT_CONTAINER_RESOURCES,
  DEFAULT_SECURITY_PROFILE,
  profileHostConfig,
  type ContainerResources,
  type ContainerSecurityProfile,
} from './container-profile.js';
import { NO_SPEC_SUPPORT } from '@sbx/core/internal';
import type { NetworkPolicySupport, SandboxSpecSupport } from '@sbx/core';
import type { DockerCreateOptions } from './docker-client.js';
import type { MountSpec } from './sandbox-backend.js';

/** The port the all-in-one image listens on inside its container. */
export const AIO_CONTAINER_PORT = 8080;

/** Environment variable telling a host-network container which port to listen on. */
export const AIO_PORT_ENV = 'SBX_AIO_PORT';

export const LABEL_MANAGED = 'sbx.managed';
export const LABEL_SANDBOX_ID = 'sbx.sandbox-id';
export const LABEL_PORT = 'sbx.port';
export const LABEL_SKILLS_ROOT = 'sbx.skills-root';

/**
 * What an acquire's spec may ask of a sandbox: local containers honour its image (from
 * `sandbox.spec.images`), resources and labels; the provisioner API carries none of them, so a
 * remote backend refuses them, and enforces only the network policies its provisioner says it does
 * (`network`, learnt from its capabilities; absent: none).
 */
export function containerSpecSupport(
  kind: 'local' | 'remote',
  network?: NetworkPolicySupport,
): SandboxSpecSupport {
  if (kind !== 'local') return network ? { ...NO_SPEC_SUPPORT, network } : NO_SPEC_SUPPORT;
  return {
    image: true,
    resources: ['memoryMb', 'cpus', 'pids', 'diskGb'],
    timeout: false,
    labels: true,
  };
}

/**
 * `bridge`: the production shape, the image's port 8080 published on the bind host.
 * `host`: the container shares the host's network and is told its port through `SBX_AIO_PORT`;
 * it is reached on 127.0.0.1. Meant for images that honour the variable (the test stand-in);
 * the real all-in-one image always listens on 8080.
 */
export type ContainerNetworkMode = 'bridge' | 'host';

export interface ContainerSpecInput {
  name: string;
  sandboxId: string;
  image: string;
  port: number;
  network: ContainerNetworkMode;
  /** Address the port is published on (bridge mode); `[::1]` style brackets allowed. */
  bindHost: string;
  environment: Readonly<Record<string, string>>;
  /** Config mounts first, then per-sandbox mounts. */
  mounts: readonly MountSpec[];
  skillsRoot: string;
  extraLabels?: Readonly<Record<string, string>>;
  /** Limits; default `DEFAULT_CONTAINER_RESOURCES`. */
  resources?: ContainerResources;
  /** Hardening; default `DEFAULT_SECURITY_PROFILE`. */
  security?: ContainerSecurityProfile;
}

/**
 * The container to create, equivalent to
 * `docker run --rm -d --memory M --memory-swap M --cpus C --pids-limit P --cap-drop ALL
 *  --cap-add ... --security-opt no-new-privileges:true -p <bind>:<port>:8080 --name <name>
 *  -e K=V... --mount type=bind,src=..,dst=..[,readonly]... <image>` plus sbx's labels: the
 * engine's default seccomp profile applies unless the profile opts out. Bind mounts are
 * structured (`Mounts`), never `-v host:ctr` strings, so Windows drive letters stay intact.
 */
export function buildContainerSpec(input: ContainerSpecInput): DockerCreateOptions {
  const env = Object.entries(input.environment).map(([k, v]) => `${k}=${v}`);
  if (input.network === 'host') env.push(`${AIO_PORT_ENV}=${input.port}`);
  const spec: DockerCreateOptions = {
    name: input.name,
    Image: input.image,
    Env: env,
    Labels: {
      ...(input.extraLabels ?? {}),
      [LABEL_MANAGED]: 'true',
      [LABEL_SANDBOX_ID]: input.sandboxId,
      [LABEL_PORT]: String(input.port),
      [LABEL_SKILLS_ROOT]: input.skillsRoot,
    },
    HostConfig: {
      AutoRemove: true,
      ...profileHostConfig(
        input.resources ?? DEFAULT_CONTAINER_RESOURCES,
        input.security ?? DEFAULT_SECURITY_PROFILE,
      ),
      Mounts: input.mounts.map((m) => ({
        Type: 'bind',
        Source: m.hostPath,
        Target: posix.normalize(m.containerPath),
        ReadOnly: m.readOnly,
      })),
    },
  };
  const user = (input.security ?? DEFAULT_SECURITY_PROFILE).user;
  if (user) spec.User = user;
  if (input.network === 'host') {
    spec.HostConfig.NetworkMode = 'host';
  } else {
    const key = `${AIO_CONTAINER_PORT}/tcp`;
    spec.ExposedPorts = { [key]: {} };
    spec.HostConfig.PortBindings = {
      [key]: [{ HostIp: input.bindHost.replace(/^\[(.*)\]$/, '$1'), HostPort: String(input.port) }],
    };
  }
  return spec;
}

/**
 * The spec as the equivalent `docker run` line, for the log: environment values are replaced by
 * `<redacted>` (they may be credentials); names, mounts and ports are shown.
 */
export function describeContainerSpec(spec: DockerCreateOptions): string {
  const quote = (s: string) =>
    /^[A-Za-z0-9_./:=@,+<>[\]-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
  const h = spec.HostConfig;
  const args = ['docker', 'run', '--rm', '-d'];
  if (h.Memory !== undefined) args.push('--memory', `${h.Memory}b`);
  if (h.MemorySwap !== undefined) args.push('--memory-swap', `${h.MemorySwap}b`);
  if (h.NanoCpus !== undefined) args.push('--cpus', String(h.NanoCpus / 1e9));
  if (h.PidsLimit !== undefined) args.push('--pids-limit', String(h.PidsLimit));
  for (const cap of h.CapDrop ?? []) args.push('--cap-drop', cap);
  for (const cap of h.CapAdd ?? []) args.push('--cap-add', cap);
  for (const opt of h.SecurityOpt) args.push('--security-opt', opt);
  if (h.ReadonlyRootfs) args.push('--read-only');
  for (const [p, o] of Object.entries(h.Tmpfs ?? {})) args.push('--tmpfs', `${p}:${o}`);
  for (const [k, v] of Object.entries(h.StorageOpt ?? {})) args.push('--storage-opt', `${k}=${v}`);
  if (spec.User) args.push('--user', spec.User);
  if (h.NetworkMode === 'host') args.push('--network', 'host');
  for (const [key, bindings] of Object.entries(spec.HostConfig.PortBindings ?? {})) {
    for (const b of bindings) {
      const ip = b.HostIp && b.HostIp.includes(':') ? `[${b.HostIp}]` : b.HostIp;
      args.push('-p', `${ip ? `${ip}:` : ''}${b.HostPort}:${key.replace('/tcp', '')}`);
    }
  }
  args.push('--name', spec.name);
  for (const entry of spec.Env) {
    const eq = entry.indexOf('=');
    args.push('-e', eq === -1 ? entry : `${entry.slice(0, eq)}=<redacted>`);
  }
  for (const [k, v] of Object.entries(spec.Labels)) args.push('--label', `${k}=${v}`);
  for (const m of spec.HostConfig.Mounts) {
    args.push(
      '--mount',
      `type=bind,src=${m.Source},dst=${m.Target}${m.ReadOnly ? ',readonly' : ''}`,
    );
  }
  args.push(spec.Image);
  return args.map(quote).join(' ');
}

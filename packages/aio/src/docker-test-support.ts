import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import { requireService, servicesRequired } from '@sbx/core/testing';
import type { DockerClient } from './docker-client.js';
import { LocalContainerBackend } from './local-container-backend.js';
import type { LocalContainerBackendOptions } from './local-container-backend.js';

/** Test support for the Docker tier: a client for DOCKER_HOST and the local test images. */
export const AIO_STANDIN_IMAGE = 'sbx-test/aio-standin:1';
export const BUSYBOX_IMAGE = 'sbx-test/busybox:1';

export function dockerFor(address: string): Docker {
  if (address.startsWith('unix://')) return new Docker({ socketPath: address.slice(7) });
  const url = new URL(address.replace(/^tcp:/, 'http:'));
  return new Docker({ host: url.hostname, port: Number(url.port || 2375) });
}

/** The dockerode instance typed as the backend's client interface. */
export function asClient(docker: Docker): DockerClient {
  return docker as unknown as DockerClient;
}

/** True when every image is present; otherwise skips (or, when services are required, fails). */
export async function imagesPresent(docker: Docker, images: string[]): Promise<boolean> {
  for (const image of images) {
    try {
      await docker.getImage(image).inspect();
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode !== 404) throw err;
      const reason = `${image} is missing; build it with \`bash tools/images/build-images.sh\``;
      if (servicesRequired()) throw new Error(`required test image unavailable: ${reason}`);
      console.warn(`[sbx] skipping docker integration tests: ${reason}`);
      return false;
    }
  }
  return true;
}

/** A container-name prefix unique to this run, so parallel runs never see each other. */
export function runPrefix(tag: string): string {
  return `sbxit-${tag}-${randomBytes(4).toString('hex')}`;
}

/** Removes every container (running or not) whose name starts with `prefix-`. */
export async function removeByPrefix(docker: Docker, prefix: string): Promise<void> {
  const all = await docker.listContainers({ all: true, filters: { name: [`${prefix}-`] } });
  for (const c of all) {
    if (!(c.Names ?? []).some((n) => n.replace(/^\//, '').startsWith(`${prefix}-`))) continue;
    await docker
      .getContainer(c.Id)
      .remove({ force: true })
      .catch((err: { statusCode?: number }) => {
        if (err.statusCode !== 404 && err.statusCode !== 409) throw err;
      });
  }
}

/** The Docker tier's engine and whether the stand-in image is there (skip, or fail under CI). */
export async function standinDocker(): Promise<{ docker: Docker | undefined; ready: boolean }> {
  const host = await requireService('docker');
  const docker = host ? dockerFor(host) : undefined;
  return { docker, ready: docker ? await imagesPresent(docker, [AIO_STANDIN_IMAGE]) : false };
}

/** A backend for stand-in containers on the host network, under `prefix`, on a random port. */
export function standinBackend(
  docker: Docker,
  prefix: string,
  extra: Partial<LocalContainerBackendOptions> = {},
): LocalContainerBackend {
  return new LocalContainerBackend({
    docker: asClient(docker),
    image: AIO_STANDIN_IMAGE,
    containerPrefix: prefix,
    network: 'host',
    basePort: 20000 + Math.floor(Math.random() * 20000),
    ...extra,
  });
}

import { constants as fsConstants } from 'node:fs';
import { access } from 'node:fs/promises';
import { DEFAULT_AIO_IMAGE, describe, errorCode } from './doctor-probe.js';
import type { Check, ProbeContext } from './doctor-probe.js';
import {
  describeDockerEndpoint,
  dockerEndpointFrom,
  dockerImagePresent,
  dockerVersion,
  type DockerEndpoint,
} from './docker-probe.js';

// The checks of the container and VM runtimes the providers need: Docker (daemon, version, the
// AIO image) and KVM for BoxLite.

export async function dockerChecks(ctx: ProbeContext): Promise<Check[]> {
  const image = ctx.config.image ?? DEFAULT_AIO_IMAGE;
  if (ctx.config.provisionerUrl) {
    const detail = 'sandbox.provisioner_url is set: the provisioner starts the containers';
    return [
      { id: 'aio.docker', title: 'Docker reachable', status: 'skip', detail },
      { id: 'aio.image', title: 'sandbox image present', status: 'skip', detail },
    ];
  }
  let endpoint: DockerEndpoint;
  try {
    endpoint = ctx.dockerEndpoint ?? dockerEndpointFrom(ctx.io.env);
  } catch (err) {
    return [
      {
        id: 'aio.docker',
        title: 'Docker reachable',
        status: 'fail',
        detail: describe(err),
        fix: 'set DOCKER_HOST to unix:///var/run/docker.sock or tcp://<host>:2375, or unset it',
      },
      {
        id: 'aio.image',
        title: 'sandbox image present',
        status: 'skip',
        detail: 'Docker is not reachable',
      },
    ];
  }
  const where = describeDockerEndpoint(endpoint);
  ctx.onProgress(`checking Docker at ${where}`);
  let version: string;
  try {
    version = await dockerVersion(endpoint, ctx.probeSignal());
  } catch (err) {
    const code = errorCode(err);
    const fix =
      code === 'EACCES'
        ? 'give this user access to the Docker socket: sudo usermod -aG docker $USER, then log in again'
        : ctx.io.env.DOCKER_HOST
          ? `start the Docker daemon DOCKER_HOST=${ctx.io.env.DOCKER_HOST} names, or correct DOCKER_HOST`
          : 'start the Docker daemon (e.g. sudo systemctl start docker), or set DOCKER_HOST to where it listens';
    return [
      {
        id: 'aio.docker',
        title: 'Docker reachable',
        status: 'fail',
        detail: `${where}: ${code ?? describe(err)}`,
        fix,
      },
      {
        id: 'aio.image',
        title: 'sandbox image present',
        status: 'skip',
        detail: 'Docker is not reachable',
      },
    ];
  }
  const reachable: Check = {
    id: 'aio.docker',
    title: 'Docker reachable',
    status: 'ok',
    detail: `Docker ${version} at ${where}`,
  };
  ctx.onProgress(`looking for image ${image}`);
  try {
    const present = await dockerImagePresent(endpoint, image, ctx.probeSignal());
    return [
      reachable,
      {
        id: 'aio.image',
        title: 'sandbox image present',
        status: present ? 'ok' : 'fail',
        detail: present ? image : `${image} is not present`,
        fix: present
          ? undefined
          : `docker pull ${image}   (or set sandbox.image to an image you have)`,
      },
    ];
  } catch (err) {
    return [
      reachable,
      {
        id: 'aio.image',
        title: 'sandbox image present',
        status: 'fail',
        detail: `${image}: ${describe(err)}`,
        fix: `docker image inspect ${image} shows what the daemon says`,
      },
    ];
  }
}

export async function kvmCheck(ctx: ProbeContext): Promise<Check> {
  const id = 'boxlite.kvm';
  const title = `${ctx.kvmPath} usable`;
  if (ctx.platform === 'darwin') {
    return ctx.arch === 'arm64'
      ? { id, title, status: 'skip', detail: 'macOS on Apple silicon uses Hypervisor.framework' }
      : {
          id,
          title,
          status: 'fail',
          detail: 'BoxLite on macOS needs Apple silicon',
          fix: 'run BoxLite on Linux with KVM or on an Apple silicon Mac',
        };
  }
  if (ctx.platform !== 'linux') {
    return {
      id,
      title,
      status: 'fail',
      detail: `BoxLite does not run on ${ctx.platform}`,
      fix: 'run BoxLite on Linux with KVM or on an Apple silicon Mac',
    };
  }
  try {
    await access(ctx.kvmPath, fsConstants.R_OK | fsConstants.W_OK);
    return { id, title, status: 'ok', detail: `${ctx.kvmPath} is readable and writable` };
  } catch (err) {
    const code = errorCode(err);
    return {
      id,
      title,
      status: 'fail',
      detail: `${ctx.kvmPath}: ${code ?? describe(err)}`,
      fix:
        code === 'ENOENT'
          ? 'run on a host with hardware virtualisation (bare metal, or a VM with nested virtualisation) and load the kvm module (modprobe kvm_intel or kvm_amd)'
          : 'give this user access to KVM: sudo usermod -aG kvm $USER, then log in again',
    };
  }
}

/*
 * The part of the Docker Engine API client (dockerode) the local backend uses, typed here so the
 * package's public types do not depend on dockerode's type package. A dockerode instance fits.
 */

export interface DockerPortBinding {
  HostIp?: string;
  HostPort?: string;
}

export interface DockerMount {
  Type: 'bind';
  Source: string;
  Target: string;
  ReadOnly: boolean;
}

export interface DockerCreateOptions {
  name: string;
  Image: string;
  Env: string[];
  Labels: Record<string, string>;
  Cmd?: string[];
  User?: string;
  ExposedPorts?: Record<string, Record<string, never>>;
  HostConfig: {
    AutoRemove: boolean;
    SecurityOpt: string[];
    Mounts: DockerMount[];
    PortBindings?: Record<string, DockerPortBinding[]>;
    NetworkMode?: string;
    Memory?: number;
    MemorySwap?: number;
    NanoCpus?: number;
    PidsLimit?: number;
    CapDrop?: string[];
    CapAdd?: string[];
    ReadonlyRootfs?: boolean;
    Tmpfs?: Record<string, string>;
    StorageOpt?: Record<string, string>;
  };
}

export interface DockerInspectInfo {
  Id: string;
  Name?: string;
  Created?: string;
  State?: { Running?: boolean; Paused?: boolean; Status?: string };
  Config?: { Labels?: Record<string, string> | null };
  NetworkSettings?: { Ports?: Record<string, DockerPortBinding[] | null> | null } | null;
  HostConfig?: { NetworkMode?: string; AutoRemove?: boolean };
}

export interface DockerContainerSummary {
  Id: string;
  Names?: string[];
  Labels?: Record<string, string> | null;
  /** Epoch seconds. */
  Created?: number;
  State?: string;
  Ports?: { PrivatePort?: number; PublicPort?: number; Type?: string; IP?: string }[];
  HostConfig?: { NetworkMode?: string };
}

export interface DockerSignalOption {
  abortSignal?: AbortSignal;
}

export interface DockerContainerHandle {
  readonly id: string;
  start(options?: DockerSignalOption): Promise<unknown>;
  inspect(options?: DockerSignalOption): Promise<DockerInspectInfo>;
  stop(options?: DockerSignalOption & { t?: number }): Promise<unknown>;
  remove(options?: DockerSignalOption & { force?: boolean }): Promise<unknown>;
  pause(options?: DockerSignalOption): Promise<unknown>;
  unpause(options?: DockerSignalOption): Promise<unknown>;
}

export interface DockerClient {
  createContainer(
    options: DockerCreateOptions & DockerSignalOption,
  ): Promise<DockerContainerHandle>;
  getContainer(idOrName: string): DockerContainerHandle;
  listContainers(
    options?: DockerSignalOption & { all?: boolean; filters?: Record<string, string[]> },
  ): Promise<DockerContainerSummary[]>;
}

/** HTTP status of a failed Docker API call (dockerode puts it on `statusCode`). */
export function dockerStatusCode(err: unknown): number | undefined {
  const code = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

export function dockerErrorText(err: unknown): string {
  if (err instanceof Error) {
    const json = (err as { json?: { message?: unknown } }).json;
    if (json && typeof json.message === 'string') return json.message;
    return err.message;
  }
  return String(err);
}

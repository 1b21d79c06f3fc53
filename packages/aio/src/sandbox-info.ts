import { InvalidArgumentError } from '@sbx/core';

/** Where a sandbox runs and how to reach it. */
export interface SandboxInfo {
  readonly sandboxId: string;
  /** Base URL of the sandbox API; `""` when a listed container publishes no port. */
  readonly sandboxUrl: string;
  /** Local backend: the container's name (`<prefix>-<sandboxId>`). */
  readonly containerName?: string;
  /** Local backend: the container id, when known. */
  readonly containerId?: string;
  /** Epoch seconds; `0` means unknown age. */
  readonly createdAt: number;
  /** Skills root the sandbox was created with (container label), when known. */
  readonly skillsRoot?: string;
  /** Created by sbx (carries the `sbx.managed` label) rather than found by name only. */
  readonly managed?: boolean;
  /** The labels of the acquire spec it was created with (container labels other than sbx's). */
  readonly labels?: Readonly<Record<string, string>>;
  /**
   * Seen paused by the backend when this info was read (`discover`, `listRunning`): its processes
   * are suspended, so it answers nothing until unpaused. The container's own state is the record
   * every instance reads; this field is only what one reading saw.
   */
  readonly paused?: boolean;
}

/** The reference's persisted shape (`sandbox_id`, `sandbox_url`, ...). */
export interface SandboxInfoRecord {
  sandbox_id: string;
  sandbox_url: string;
  container_name: string | null;
  container_id: string | null;
  created_at: number;
}

export function sandboxInfoToRecord(info: SandboxInfo): SandboxInfoRecord {
  return {
    sandbox_id: info.sandboxId,
    sandbox_url: info.sandboxUrl,
    container_name: info.containerName ?? null,
    container_id: info.containerId ?? null,
    created_at: info.createdAt,
  };
}

/** Reads a persisted info; `base_url` is accepted for `sandbox_url`, `created_at` defaults to now. */
export function sandboxInfoFromRecord(
  record: Readonly<Record<string, unknown>>,
  now: () => number = Date.now,
): SandboxInfo {
  const id = record.sandbox_id;
  const url = record.sandbox_url ?? record.base_url;
  if (typeof id !== 'string' || id === '' || typeof url !== 'string') {
    throw new InvalidArgumentError('a sandbox info record needs string sandbox_id and sandbox_url');
  }
  const created = record.created_at;
  return {
    sandboxId: id,
    sandboxUrl: url,
    ...(typeof record.container_name === 'string' ? { containerName: record.container_name } : {}),
    ...(typeof record.container_id === 'string' ? { containerId: record.container_id } : {}),
    createdAt: typeof created === 'number' && Number.isFinite(created) ? created : now() / 1000,
  };
}

/**
 * Epoch seconds of a Docker timestamp (RFC 3339, up to nine fractional digits); `0` for an empty
 * or unreadable one, which callers read as "unknown age".
 */
export function parseDockerTimestamp(text: string | null | undefined): number {
  if (typeof text !== 'string' || text.trim() === '') return 0;
  const ms = Date.parse(text.trim());
  return Number.isFinite(ms) && ms > 0 ? ms / 1000 : 0;
}

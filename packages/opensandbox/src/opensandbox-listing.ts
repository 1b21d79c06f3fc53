import { throwIfAborted } from '@sbx/core';
import type { WarmPoolRegistry } from '@sbx/core/provider-kit';
import type { SandboxSummary } from '@sbx/core';
import type { OpenSandboxManager, OpenSandboxSandboxInfo } from './opensandbox-sdk.js';
import {
  LIST_PAGE_SIZE,
  OPENSANDBOX_METADATA,
  OPENSANDBOX_PROVIDER_TAG_VALUE,
} from './opensandbox-provider-types.js';
import type {
  ActiveSandbox,
  TrackedRemote,
  WarmOpenSandbox,
} from './opensandbox-provider-types.js';

/** Every page of the tagged sandboxes, once each (a sandbox may move between pages meanwhile). */
export async function listTaggedSandboxes(
  manager: OpenSandboxManager,
  signal: AbortSignal | undefined,
): Promise<OpenSandboxSandboxInfo[]> {
  const tag = { [OPENSANDBOX_METADATA.provider]: OPENSANDBOX_PROVIDER_TAG_VALUE };
  const found = new Map<string, OpenSandboxSandboxInfo>();
  for (let page = 1; ; page += 1) {
    const answer = await manager.listSandboxInfos({
      metadata: tag,
      page,
      pageSize: LIST_PAGE_SIZE,
    });
    throwIfAborted(signal);
    for (const info of answer.items) {
      // The server filters by the tag already; an untagged answer is never taken for ours.
      if (info.metadata?.[OPENSANDBOX_METADATA.provider] !== OPENSANDBOX_PROVIDER_TAG_VALUE) {
        continue;
      }
      if (!found.has(info.id)) found.set(info.id, info);
    }
    const more = answer.pagination;
    if (more === undefined || !more.hasNextPage || page >= more.totalPages) break;
    if (answer.items.length === 0) break;
  }
  return [...found.values()];
}

export function trackedByRemoteId(
  registry: WarmPoolRegistry<ActiveSandbox, WarmOpenSandbox>,
): Map<string, TrackedRemote> {
  const tracked = new Map<string, TrackedRemote>();
  for (const entry of registry.pool.entries()) {
    tracked.set(entry.value.sandbox.remoteId, {
      state: 'warm',
      identity: entry.value.identity,
      releasedAt: entry.releasedAt,
    });
  }
  for (const active of registry.active.values()) {
    tracked.set(active.sandbox.remoteId, { state: 'active', identity: active.identity });
  }
  return tracked;
}

export function summarizeSandbox(
  info: OpenSandboxSandboxInfo,
  tracked: TrackedRemote | undefined,
): SandboxSummary {
  const user = info.metadata?.[OPENSANDBOX_METADATA.user];
  const thread = info.metadata?.[OPENSANDBOX_METADATA.thread];
  const identity =
    tracked !== undefined
      ? tracked.identity
      : user !== undefined && thread !== undefined
        ? { userId: user, threadId: thread }
        : undefined;
  const updatedAt = isoTime(tracked?.releasedAt ?? info.createdAt.getTime());
  return {
    id: info.id,
    ...(identity === undefined ? {} : { userId: identity.userId, threadId: identity.threadId }),
    state: tracked?.state ?? info.status.state,
    ...(updatedAt === undefined ? {} : { updatedAt }),
    location: info.image?.uri ? `opensandbox:${info.image.uri}` : 'opensandbox',
  };
}

/** A time for a listing; `undefined` for one the server sent unreadable (it is only shown). */
function isoTime(ms: number): string | undefined {
  return Number.isFinite(ms) ? new Date(ms).toISOString() : undefined;
}

import { SandboxRuntimeError, throwIfAborted } from '@sbx/core';
import type { WarmPoolRegistry } from '@sbx/core/provider-kit';
import type { Logger, SandboxSummary } from '@sbx/core';
import type { OpenSandboxSettings } from './opensandbox-config.js';
import { connectionConfigFor } from './opensandbox-remote-options.js';
import { describeRemoteError } from './terminal-errors.js';
import type {
  OpenSandboxManager,
  OpenSandboxSandboxInfo,
  OpenSandboxSdk,
} from './opensandbox-sdk.js';
import { OPENSANDBOX_SDK_PACKAGE } from './opensandbox-sdk.js';
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

/**
 * `sbx ls` for OpenSandbox: every sandbox of the server tagged `deer_flow_provider: opensandbox`
 * (so also those other processes created), by its server id, with this instance's view (`active` /
 * `warm`) or else the server's state; the (user, thread) comes from this instance's registry or
 * the remote's own tags. Reads only: one lifecycle listing, through a manager whose transport is
 * closed after it; nothing is renewed, health-checked or deleted.
 */
export async function listOpenSandboxes(
  sdk: OpenSandboxSdk,
  context: {
    readonly settings: OpenSandboxSettings;
    readonly registry: WarmPoolRegistry<ActiveSandbox, WarmOpenSandbox>;
    readonly logger: Logger;
    readonly signal: AbortSignal | undefined;
  },
): Promise<SandboxSummary[]> {
  if (sdk.SandboxManager === undefined) {
    throw new SandboxRuntimeError(
      `The OpenSandbox SDK in use has no SandboxManager, which listing needs (${OPENSANDBOX_SDK_PACKAGE} >= 0.1.11 has it)`,
    );
  }
  const manager = sdk.SandboxManager.create({
    connectionConfig: connectionConfigFor(sdk, context.settings),
  });
  let infos: OpenSandboxSandboxInfo[];
  try {
    infos = await listTaggedSandboxes(manager, context.signal);
  } finally {
    await manager.close().catch((error: unknown) => {
      context.logger.debug('Closing the OpenSandbox listing transport failed', {
        error: describeRemoteError(error),
      });
    });
  }
  const tracked = trackedByRemoteId(context.registry);
  return infos.map((info) => summarizeSandbox(info, tracked.get(info.id)));
}

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

import type { SandboxSummary } from '@sbx/core';
import type { WarmPoolRegistry } from '@sbx/core/provider-kit';
import type { ActiveBox, WarmBox } from './boxlite-provider-types.js';
import type { BoxliteBoxSummary } from './boxlite-runtime.js';

/** A listed box, with this instance's view of it when it tracks it. */
export function boxSummary(
  registry: WarmPoolRegistry<ActiveBox, WarmBox>,
  id: string,
  info: BoxliteBoxSummary,
  location: string,
): SandboxSummary {
  const active = registry.active.get(id);
  const warm = active === undefined ? registry.pool.get(id) : undefined;
  const identity = active?.identity ?? warm?.value.identity;
  const updatedAt =
    warm !== undefined
      ? new Date(warm.releasedAt).toISOString()
      : (info.startedAt ?? info.createdAt);
  const state =
    active !== undefined
      ? 'active'
      : warm !== undefined
        ? 'warm'
        : (info.status ?? (info.running ? 'running' : 'stopped'));
  return {
    id,
    ...(identity === undefined ? {} : { userId: identity.userId, threadId: identity.threadId }),
    state,
    ...(updatedAt === undefined ? {} : { updatedAt }),
    location,
  };
}

/** The sandbox id a box name carries, or `undefined` for a box not named by this provider. */
export function sandboxIdOfBox(prefix: string, name: string | undefined): string | undefined {
  if (name === undefined || !name.startsWith(prefix) || name.length === prefix.length) {
    return undefined;
  }
  return name.slice(prefix.length);
}

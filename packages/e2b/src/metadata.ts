import type { E2BSandboxInfo } from './e2b-client.js';

/**
 * Tags every VM carries from creation, so any gateway can find, count and reap it. The names and
 * the provider value are those of the reference implementation's E2B provider, so sbx gateways and
 * reference gateways sharing one E2B account recognise each other's VMs.
 */
export const E2B_TAGS = {
  provider: 'deer_flow_provider',
  gateway: 'deer_flow_gateway',
  createdAt: 'deer_flow_created_at',
  user: 'deer_flow_user',
  thread: 'deer_flow_thread',
  capacityLedger: 'deer_flow_capacity_ledger',
  capacityReservation: 'deer_flow_capacity_reservation',
  /** sbx addition: the `skills.container_path` the VM was prepared for (absent = `/mnt/skills`). */
  skillsRoot: 'deer_flow_skills_root',
  /** sbx addition: the fingerprint of the acquire spec that changed the VM (its template). */
  spec: 'sbx_spec',
  /** sbx addition: the VM's idle timeout from its acquire spec, in seconds. */
  timeout: 'sbx_timeout_seconds',
} as const;

/** The idle timeout an acquire spec gave the VM (its tag), if any. */
export function specTimeoutOf(info: {
  metadata: Readonly<Record<string, string>>;
}): number | undefined {
  const seconds = Number(info.metadata[E2B_TAGS.timeout]);
  return Number.isFinite(seconds) && seconds > 0 ? seconds : undefined;
}

export const E2B_PROVIDER_TAG_VALUE = 'e2b_sandbox_provider';

export interface VmTagInput {
  ownerId: string;
  /** Wall-clock milliseconds. */
  nowMs: number;
  userId?: string;
  threadId?: string;
  ledgerKey?: string;
  reservationToken?: string;
  skillsRoot: string;
  defaultSkillsRoot: string;
  /** An acquire's spec labels (`sbx.dev/tenant`, ...). */
  labels?: Readonly<Record<string, string>>;
  /** The thread key's spec fingerprint (a VM made to a spec is found only by that spec). */
  spec?: string;
  /** The spec's idle timeout in seconds. */
  timeoutSeconds?: number;
}

export function buildVmMetadata(input: VmTagInput): Record<string, string> {
  const tags: Record<string, string> = {
    // An acquire's labels first: sbx's own tags below overwrite any of the same name.
    ...(input.labels ?? {}),
    [E2B_TAGS.provider]: E2B_PROVIDER_TAG_VALUE,
    [E2B_TAGS.gateway]: input.ownerId,
    // Seconds as decimal text, as the reference writes it; parsed back for orphan ages.
    [E2B_TAGS.createdAt]: String(input.nowMs / 1000),
  };
  if (input.threadId !== undefined && input.userId !== undefined) {
    tags[E2B_TAGS.user] = input.userId;
    tags[E2B_TAGS.thread] = input.threadId;
  }
  if (input.ledgerKey) tags[E2B_TAGS.capacityLedger] = input.ledgerKey;
  if (input.reservationToken) tags[E2B_TAGS.capacityReservation] = input.reservationToken;
  if (input.skillsRoot !== input.defaultSkillsRoot) tags[E2B_TAGS.skillsRoot] = input.skillsRoot;
  if (input.spec !== undefined) tags[E2B_TAGS.spec] = input.spec;
  else delete tags[E2B_TAGS.spec];
  if (input.timeoutSeconds !== undefined) tags[E2B_TAGS.timeout] = String(input.timeoutSeconds);
  else delete tags[E2B_TAGS.timeout];
  return tags;
}

/** The ledger filter: no ledger, an untagged (legacy) VM, or our own ledger key. */
export function belongsToLedger(info: E2BSandboxInfo, ledgerKey: string | undefined): boolean {
  if (ledgerKey === undefined) return true;
  const tag = info.metadata[E2B_TAGS.capacityLedger];
  return !tag || tag === ledgerKey;
}

export function skillsRootOf(info: E2BSandboxInfo, defaultRoot: string): string {
  return info.metadata[E2B_TAGS.skillsRoot] || defaultRoot;
}

/** Creation time in wall-clock ms from the tag, if it parses. */
export function createdAtMs(info: E2BSandboxInfo): number | undefined {
  const text = info.metadata[E2B_TAGS.createdAt];
  if (text === undefined || text.trim() === '') return undefined;
  const seconds = Number(text);
  return Number.isFinite(seconds) ? seconds * 1000 : undefined;
}

/** Discovery order: oldest creation tag first (compared as text, like the reference), then id. */
export function compareCandidates(a: E2BSandboxInfo, b: E2BSandboxInfo): number {
  const ca = a.metadata[E2B_TAGS.createdAt] ?? '';
  const cb = b.metadata[E2B_TAGS.createdAt] ?? '';
  if (ca !== cb) return ca < cb ? -1 : 1;
  return a.sandboxId < b.sandboxId ? -1 : a.sandboxId > b.sandboxId ? 1 : 0;
}

import { canonicalSkillsRoot, errorMessage } from '@sbx/core';
import {
  DEFAULT_SKILLS_ROOT,
  DEFAULT_USER_ID,
  PROVISIONER_THREAD_ID_PATTERN,
  PROVISIONER_USER_ID_PATTERN,
} from '@sbx/core/internal';
import { z } from 'zod';
import { ProvisionerHttpError } from './provisioner-errors.js';
import type { FieldProblem } from './provisioner-errors.js';

/**
 * Sandbox ids become object names: `sandbox-<id>` (Pod) and `sandbox-<id>-svc` (Service), and a
 * label value. A Service name is a DNS-1035 label of at most 63 characters, so an id is at most
 * 51 lower-case letters, digits and inner `-`. (The reference accepts any string here and lets the
 * Kubernetes API refuse it half-way through a create; refusing it up front leaves nothing behind.)
 */
export const SANDBOX_ID_PATTERN = /^[a-z0-9]([a-z0-9-]{0,49}[a-z0-9])?$/;

const PATH_MAX = 4096;

const mountSchema = z.object({
  host_path: z.string().min(1).max(PATH_MAX),
  container_path: z.string().min(1).max(PATH_MAX),
  read_only: z.boolean().default(false),
});

const requestSchema = z.object({
  sandbox_id: z
    .string()
    .regex(SANDBOX_ID_PATTERN, 'must be 1-51 lower-case letters, digits and inner "-"'),
  thread_id: z
    .string()
    .regex(PROVISIONER_THREAD_ID_PATTERN, 'must be 1-64 characters of [A-Za-z0-9_-]')
    .nullable()
    .default(null),
  user_id: z
    .string()
    .max(128)
    .regex(PROVISIONER_USER_ID_PATTERN, 'must be characters of [A-Za-z0-9_-]')
    .default(DEFAULT_USER_ID),
  // The list is bounded here only against memory; the mount rules refuse more than ten with a 400.
  extra_mounts: z.array(mountSchema).max(1000).default([]),
  include_legacy_skills: z.boolean().default(false),
  provision_lark_cli_runtime: z.boolean().default(false),
  provision_lark_cli_broker: z.boolean().default(false),
  skills_container_path: z.string().max(PATH_MAX).default(DEFAULT_SKILLS_ROOT),
  network_mode: z.enum(['none', 'allowlist', 'open']).default('open'),
});

/**
 * The egress a sandbox is created with: `none` (a NetworkPolicy allowing no egress) or `open`
 * (through the egress proxy when one is configured, else unrestricted). `allowlist` is refused:
 * the host rules are the proxy's own configuration, not something a create request can carry.
 */
export type SandboxEgressMode = 'none' | 'open';

export interface ExtraMountRequest {
  hostPath: string;
  containerPath: string;
  readOnly: boolean;
}

/** A validated `POST /api/sandboxes` body. */
export interface CreateSandboxRequest {
  sandboxId: string;
  /** The request's thread id, else the sandbox id (an anonymous sandbox is its own thread). */
  threadId: string;
  userId: string;
  extraMounts: ExtraMountRequest[];
  /** Accepted and ignored: the legacy skills mount is always present. */
  includeLegacySkills: boolean;
  provisionLarkCliRuntime: boolean;
  provisionLarkCliBroker: boolean;
  /** Canonical. */
  skillsRoot: string;
  networkMode: SandboxEgressMode;
}

export function isValidSandboxIdForPods(id: string): boolean {
  return SANDBOX_ID_PATTERN.test(id);
}

/**
 * Validates a create body. Unknown fields are ignored, as the reference API does (a newer gateway
 * may send fields this provisioner predates).
 *
 * @throws ProvisionerHttpError 422 listing every field problem
 */
export function parseCreateRequest(body: unknown): CreateSandboxRequest {
  const parsed = requestSchema.safeParse(body);
  if (!parsed.success) {
    const problems: FieldProblem[] = parsed.error.issues.map((issue) => ({
      loc: ['body', ...issue.path.map((p) => (typeof p === 'number' ? p : String(p)))],
      msg: issue.message,
    }));
    throw new ProvisionerHttpError(422, problems);
  }
  const r = parsed.data;
  if (r.network_mode === 'allowlist') {
    throw new ProvisionerHttpError(422, [
      {
        loc: ['body', 'network_mode'],
        msg: 'allowlist is not enforced per sandbox here: the egress proxy enforces its own configured policy; use none or open',
      },
    ]);
  }
  let skillsRoot: string;
  try {
    skillsRoot = canonicalSkillsRoot(r.skills_container_path);
  } catch (err) {
    throw new ProvisionerHttpError(422, [
      { loc: ['body', 'skills_container_path'], msg: errorMessage(err) },
    ]);
  }
  return {
    sandboxId: r.sandbox_id,
    threadId: r.thread_id ?? r.sandbox_id,
    userId: r.user_id,
    extraMounts: r.extra_mounts.map((m) => ({
      hostPath: m.host_path,
      containerPath: m.container_path,
      readOnly: m.read_only,
    })),
    includeLegacySkills: r.include_legacy_skills,
    provisionLarkCliRuntime: r.provision_lark_cli_runtime,
    provisionLarkCliBroker: r.provision_lark_cli_broker,
    skillsRoot,
    networkMode: r.network_mode,
  };
}

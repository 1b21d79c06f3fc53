import path from 'node:path';
import { createToolContext, ensureSandboxInitialized, isSbxError } from '@sbx/core';
import type { AgentSkillPolicy, ToolContext } from '@sbx/core';
import { describe, expect, it } from 'vitest';
import { harnessContext } from './aio-test-context.js';
import type { Harness } from './testing/provider-harness.js';

// A run under an explicit skill policy gets a container of its own whose skills mounts come from
// the thread's projection; every way the tool layer reaches the thread again must keep it there.

const POLICY: AgentSkillPolicy = { allowedSkills: ['allowed-skill'] };
const made = harnessContext();

/** A new instance, or a peer of `of`. */
function harness(of?: Harness): Promise<Harness> {
  return of ? made.peerOf(of) : made.harness();
}

/** Where the sandbox the run got takes its custom skills from. */
function customSkillsSource(h: Harness, sandboxId: string): string | undefined {
  const mounts = h.backend.containers.get(sandboxId)?.request?.extraMounts ?? [];
  return mounts.find((m) => m.containerPath === '/mnt/skills/custom')?.hostPath;
}

const policyView = (h: Harness) => path.join(h.baseDir, 'users/u1/threads/t/skills_view/custom');
const sharedView = (h: Harness) => path.join(h.baseDir, 'users/u1/skills_view/custom');

function context(h: Harness, sandboxId: string | undefined, withPolicy: boolean): ToolContext {
  return createToolContext({
    provider: h.provider,
    userId: 'u1',
    threadId: 't',
    state: sandboxId === undefined ? {} : { sandboxId },
    ...(withPolicy ? { skillPolicy: POLICY } : {}),
  });
}

describe('AIO: skill-policy isolation across re-acquisitions through the tool layer', () => {
  it('attack: a restart meets the persisted policy id; the run gets the policy view again', async () => {
    const first = await harness();
    const policyId = await first.provider.acquire({
      userId: 'u1',
      threadId: 't',
      skillPolicy: POLICY,
    });
    expect(customSkillsSource(first, policyId)).toBe(policyView(first));
    await first.provider.reset();
    const restarted = await harness(first);
    const ctx = context(restarted, policyId, true);
    const sandbox = await ensureSandboxInitialized(ctx);
    expect(customSkillsSource(restarted, sandbox.id)).toBe(policyView(first));
  });

  it('attack: a policy run given the persisted id of the thread’s live shared container does not reuse it', async () => {
    const h = await harness();
    const sharedId = await h.provider.acquire({ userId: 'u1', threadId: 't' });
    expect(customSkillsSource(h, sharedId)).toBe(sharedView(h));
    const ctx = context(h, sharedId, true);
    const sandbox = await ensureSandboxInitialized(ctx);
    expect(sandbox.id).not.toBe(sharedId);
    expect(customSkillsSource(h, sandbox.id)).toBe(policyView(h));
  });

  it('attack: a run without the policy whose persisted policy container is gone is refused, typed', async () => {
    const first = await harness();
    const policyId = await first.provider.acquire({
      userId: 'u1',
      threadId: 't',
      skillPolicy: POLICY,
    });
    await first.provider.reset();
    const restarted = await harness(first);
    const ctx = context(restarted, policyId, false);
    const error = await ensureSandboxInitialized(ctx).catch((e: unknown) => e);
    expect(isSbxError(error) && error.code).toBe('SKILL_POLICY_VIEW');
    const created = [...restarted.backend.containers.keys()].filter(
      (id) => customSkillsSource(restarted, id) === sharedView(restarted),
    );
    expect(created).toEqual([]);
  });
});

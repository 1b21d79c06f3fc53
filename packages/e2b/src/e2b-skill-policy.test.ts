import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createToolContext, ensureSandboxInitialized } from '@sbx/core';
import type { AgentSkillPolicy } from '@sbx/core';
import { sharedSkillsViewPath } from '@sbx/core/internal';
import { afterEach, describe, expect, it } from 'vitest';
import { makeHarness } from './test-support.js';
import type { Harness } from './test-support.js';

// E2B keeps one VM per thread; a policy run's VM gets no shared skills upload (the host syncs the
// projection into it). A VM the tool layer creates again for that run must not get them either.

const POLICY: AgentSkillPolicy = { allowedSkills: [] };
const FORBIDDEN = ['forbidden', 'skill'].join('-');
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function harness(options: Parameters<typeof makeHarness>[0] = {}): Promise<Harness> {
  const h = await makeHarness(options);
  cleanups.push(h.cleanup);
  return h;
}

describe('E2B: skill-policy isolation when the tool layer creates the VM again', () => {
  it('attack: the policy run’s VM is gone after a restart; the replacement gets no shared skills', async () => {
    const first = await harness();
    const view = path.join(sharedSkillsViewPath(first.baseDir, 'u1', 'custom'), FORBIDDEN);
    await mkdir(view, { recursive: true });
    await writeFile(path.join(view, 'SKILL.md'), 'not for this agent');
    const policyId = await first.provider.acquire({
      userId: 'u1',
      threadId: 't1',
      skillPolicy: POLICY,
    });
    await first.provider.reset();
    first.fake.reap(policyId);
    const restarted = await harness({
      fake: first.fake,
      baseDir: first.baseDir,
      ownership: first.ownership,
      clock: first.clock,
    });
    const ctx = createToolContext({
      provider: restarted.provider,
      userId: 'u1',
      threadId: 't1',
      state: { sandboxId: policyId },
      skillPolicy: POLICY,
    });
    const sandbox = await ensureSandboxInitialized(ctx);
    expect(sandbox.id).not.toBe(policyId);
    const seen = await sandbox.executeCommand(
      `test -e /mnt/skills/custom/${FORBIDDEN}/SKILL.md && echo leaked || echo closed`,
    );
    expect(seen).toBe('closed\n');
  });
});

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SandboxLeaseManager, createToolContext, isSbxError, runTool } from '@sbx/core';
import type { AgentSkillPolicy, ToolContext, ToolLeaseManager } from '@sbx/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalSandboxProvider } from './local-sandbox-provider.js';

// A policy run (a lead agent under an explicit skill policy) must only ever see its thread's
// projection at /mnt/skills, whatever acquires its thread again: the cache evicting it, a
// restart, a persisted id arriving with a tool call, a lease manager's replacement. The shared
// view holds a skill the policy does not allow; the projection holds one it does.

const POLICY: AgentSkillPolicy = { allowedSkills: ['allowed-skill'] };
const FORBIDDEN = ['forbidden', 'skill'].join('-');
let base: string;
const providers: LocalSandboxProvider[] = [];

function newProvider(maxCachedThreads = 1): LocalSandboxProvider {
  const provider = new LocalSandboxProvider({ baseDir: base, maxCachedThreads });
  providers.push(provider);
  return provider;
}

beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'sbx-skill-policy-'));
  // The shared view of user u (what a plain run sees) and the projection of thread t (the policy's).
  const shared = path.join(base, 'users/u/skills_view/custom', FORBIDDEN);
  const projected = path.join(base, 'users/u/threads/t/skills_view/custom/allowed-skill');
  for (const dir of [shared, projected]) {
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'SKILL.md'), `# ${path.basename(dir)}\n`);
  }
});
afterEach(async () => {
  for (const p of providers.splice(0)) await p.shutdown();
  await rm(base, { recursive: true, force: true });
});

/** What the run sees of the custom skills, through the agent's own tool. */
function skillsSeen(ctx: ToolContext): Promise<string> {
  return runTool('ls', { path: '/mnt/skills/custom' }, ctx);
}

/** The host's eager acquisition of a policy run, its id persisted for the tool calls. */
async function policyRun(provider: LocalSandboxProvider, withPolicy = true): Promise<ToolContext> {
  const id = await provider.acquire({ userId: 'u', threadId: 't', skillPolicy: POLICY });
  return createToolContext({
    provider,
    userId: 'u',
    threadId: 't',
    state: { sandboxId: id },
    ...(withPolicy ? { skillPolicy: POLICY } : {}),
  });
}

/** Evicts every cached thread sandbox (the cache holds one). */
async function evict(provider: LocalSandboxProvider): Promise<void> {
  await provider.acquire({ userId: 'someone-else', threadId: 'other' });
}

function expectPolicyView(seen: string): void {
  expect(seen).toContain('allowed-skill');
  expect(seen).not.toContain(FORBIDDEN);
}

describe('skill-policy isolation across every re-acquisition of a thread', () => {
  it('the policy run sees its projection (baseline)', async () => {
    const ctx = await policyRun(newProvider());
    expectPolicyView(await skillsSeen(ctx));
  });

  it('attack: the cache evicts the policy sandbox; the next tool call still sees the policy view', async () => {
    const provider = newProvider();
    const ctx = await policyRun(provider);
    expectPolicyView(await skillsSeen(ctx));
    await evict(provider);
    expect(provider.get(ctx.state.sandboxId!)).toBeUndefined();
    expectPolicyView(await skillsSeen(ctx));
  });

  it('attack: a restart (a new provider) meets the persisted policy id; the tool call sees the policy view', async () => {
    const first = newProvider();
    const ctx = await policyRun(first);
    await first.shutdown();
    const restarted = newProvider();
    const after = createToolContext({ ...ctx, provider: restarted, state: { ...ctx.state } });
    expectPolicyView(await skillsSeen(after));
  });

  it('attack: a policy run given the persisted id of the thread’s shared sandbox does not reuse it', async () => {
    const provider = newProvider(8);
    const sharedId = await provider.acquire({ userId: 'u', threadId: 't' });
    const ctx = createToolContext({
      provider,
      userId: 'u',
      threadId: 't',
      state: { sandboxId: sharedId },
      skillPolicy: POLICY,
    });
    expectPolicyView(await skillsSeen(ctx));
    expect(ctx.state.sandboxId).not.toBe(sharedId);
  });

  it('attack: a persisted policy id whose sandbox is gone, with a context that does not carry the policy, is a typed refusal, never the shared view', async () => {
    const provider = newProvider();
    const ctx = await policyRun(provider, false);
    expectPolicyView(await skillsSeen(ctx)); // live: its own (narrower) view is still fine
    await evict(provider);
    const seen = await skillsSeen(ctx);
    expect(seen).not.toContain(FORBIDDEN);
    expect(seen).toMatch(/^Error: .*skill policy/);
    let thrown: unknown;
    try {
      await (await import('@sbx/core')).ensureSandboxInitialized(ctx);
    } catch (err) {
      thrown = err;
    }
    expect(isSbxError(thrown) && thrown.code).toBe('SKILL_POLICY_VIEW');
  });

  it('attack: through a lease manager, the replacement of an evicted policy sandbox is the policy view', async () => {
    const provider = newProvider();
    const leaseManager = new SandboxLeaseManager(provider);
    const ctx = await policyRun(provider);
    const run = createToolContext({ ...ctx, leaseManager, leaseOwnerId: 'run:1' });
    expectPolicyView(await skillsSeen(run));
    await leaseManager.release('run:1');
    await evict(provider);
    expectPolicyView(await skillsSeen(run));
    await leaseManager.release('run:1');
  });

  it('attack: through a lease manager, a run without the policy whose policy sandbox is gone is refused before anything is bound', async () => {
    const provider = newProvider();
    const leaseManager = new SandboxLeaseManager(provider);
    const ctx = await policyRun(provider, false);
    await evict(provider);
    const run = createToolContext({ ...ctx, leaseManager, leaseOwnerId: 'run:2' });
    const seen = await skillsSeen(run);
    expect(seen).not.toContain(FORBIDDEN);
    expect(seen).toMatch(/^Error: .*skill policy/);
    expect(leaseManager.snapshot().bindings).toEqual({});
    // Refused before the lease manager could acquire a replacement: no shared sandbox was made.
    expect(provider.get('local:u:t')).toBeUndefined();
  });

  it('attack: the policy sandbox vanishing between the check and the lease manager’s reuse does not hand out a replacement of the shared view', async () => {
    const provider = newProvider();
    const real = new SandboxLeaseManager(provider);
    const ctx = await policyRun(provider, false);
    // The race, made deterministic: the cache evicts the sandbox right as the reuse starts.
    const racing: ToolLeaseManager = {
      acquire: (owner, request) => real.acquire(owner, request),
      release: (owner) => real.release(owner),
      reuseOrAcquire: async (owner, id, request) => {
        await evict(provider);
        return real.reuseOrAcquire(owner, id, request);
      },
    };
    const run = createToolContext({ ...ctx, leaseManager: racing, leaseOwnerId: 'run:3' });
    const seen = await skillsSeen(run);
    expect(seen).not.toContain(FORBIDDEN);
    expect(seen).toMatch(/^Error: .*skill policy/);
    // The replacement it bound was rolled back, and the run's state still names its own sandbox.
    expect(real.snapshot().bindings).toEqual({});
    expect(run.state.sandboxId).toBe(ctx.state.sandboxId);
  });

  it('attack: a custom acquisition strategy that drops the policy cannot hand the run the shared view', async () => {
    const provider = newProvider();
    const ctx = await policyRun(provider);
    await evict(provider);
    const careless = createToolContext({
      ...ctx,
      // A host strategy written before skill policies: acquires the plain view of the thread.
      acquireSandbox: (c, request) =>
        provider.acquire({ userId: request.userId, threadId: request.threadId }),
    });
    const seen = await skillsSeen(careless);
    expect(seen).not.toContain(FORBIDDEN);
    expect(seen).toMatch(/^Error: /);
  });
});

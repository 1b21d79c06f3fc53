import { describe, expect, it } from 'vitest';
import type { E2BSandboxInfo } from './e2b-client.js';
import { groupByThread, taggedThread, threadSeed } from './e2b-thread-key.js';
import { E2B_TAGS } from './metadata.js';

const info = (sandboxId: string, userId: string, threadId: string): E2BSandboxInfo => ({
  sandboxId,
  metadata: { [E2B_TAGS.user]: userId, [E2B_TAGS.thread]: threadId },
});

describe('the thread of a VM, read back from its tags', () => {
  // Built at run time: tags of ("acme:bob", "notes") hash like ("acme", "bob:notes").
  const colon = String.fromCharCode(58);

  it('attack: tags breaking the id rule name no thread, so such a VM is an orphan and never adopted', () => {
    const forged = [
      info('vm-1', `acme${colon}bob`, 'notes'),
      info('vm-2', 'acme', `bob${colon}notes`),
      info('vm-3', 'acme', '../notes'),
    ];
    for (const vm of forged) expect(taggedThread(vm)).toBeUndefined();
    const { groups, orphans } = groupByThread([...forged, info('vm-4', 'acme', 'notes')]);
    expect(orphans.map((o) => o.sandboxId)).toEqual(['vm-1', 'vm-2', 'vm-3']);
    expect(groups.map((g) => g.key)).toEqual([{ userId: 'acme', threadId: 'notes' }]);
  });

  it('the seed of a valid thread is the shared base token (compatibility vector)', () => {
    expect(threadSeed('/mnt/skills', { userId: 'u1', threadId: 't1' })).toBe('8294997b3cb95133');
  });
});

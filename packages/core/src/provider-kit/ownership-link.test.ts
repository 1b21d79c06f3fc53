import { describe, expect, it } from 'vitest';
import { MemoryOwnershipStore } from '../ownership/memory-ownership-store.js';
import { recordingLogger } from '../testing/recording-logger.js';
import { OwnershipLink } from './ownership-link.js';

describe('OwnershipLink', () => {
  it('builds one client once the store opens, and closes a store it owns', async () => {
    const store = new MemoryOwnershipStore({ ownerId: 'a' });
    let closed = 0;
    store.close = async () => {
      closed += 1;
    };
    const link = new OwnershipLink({
      store: Promise.resolve(store),
      ownsStore: true,
      renewalIntervalMs: 10,
      name: 'P',
    });
    expect(link.clientIfReady).toBeUndefined();
    expect(() => link.client).toThrow(/before it was ready/);
    const client = await link.ready();
    expect(link.client).toBe(client);
    expect(client.ownerId).toBe('a');
    await link.close(recordingLogger());
    expect(closed).toBe(1);
  });

  it('leaves a store it was handed open', async () => {
    const store = new MemoryOwnershipStore();
    let closed = 0;
    store.close = async () => {
      closed += 1;
    };
    const link = new OwnershipLink({
      store: Promise.resolve(store),
      ownsStore: false,
      renewalIntervalMs: 10,
      name: 'P',
    });
    await link.close(recordingLogger());
    expect(closed).toBe(0);
  });

  it('a store that failed to open: logged once, its cause given to every caller', async () => {
    const logger = recordingLogger();
    const link = new OwnershipLink({
      store: Promise.reject(new Error('redis refused')),
      ownsStore: true,
      renewalIntervalMs: 10,
      name: 'P',
      logger,
    });
    await link.settled();
    await expect(link.ready()).rejects.toThrow('redis refused');
    await expect(link.ready()).rejects.toThrow('redis refused');
    expect(await link.storeIfOpen()).toBeUndefined();
    expect(logger.lines.filter((l) => l.level === 'error')).toHaveLength(1);
    expect(logger.text('error')).toContain('P: the ownership store could not be created');
  });
});

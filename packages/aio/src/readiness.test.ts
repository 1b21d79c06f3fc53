import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AbortedError } from '@sbx/core';
import { ManualClock } from '@sbx/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { waitForSandboxReady } from './readiness.js';

const servers: http.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A server answering GET /v1/sandbox with the next status of `statuses` (the last repeats). */
async function scripted(statuses: number[], port = 0): Promise<{ url: string; hits: string[] }> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    res.writeHead(statuses[Math.min(hits.length - 1, statuses.length - 1)] ?? 200);
    res.end('{}');
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

async function untilTimer(clock: ManualClock): Promise<void> {
  for (let i = 0; i < 10_000 && clock.pendingTimers === 0; i++) {
    await new Promise((r) => setImmediate(r));
  }
  expect(clock.pendingTimers).toBe(1);
}

describe('waitForSandboxReady', () => {
  it('§9.2.27 answers true on the first 200', async () => {
    const { url, hits } = await scripted([200]);
    expect(await waitForSandboxReady(url, { timeoutMs: 5000 })).toBe(true);
    expect(hits).toEqual(['GET /v1/sandbox']);
  });

  it('§9.2.28 503 then 200: two GETs and exactly one pause of the poll interval', async () => {
    const clock = new ManualClock();
    const { url, hits } = await scripted([503, 200]);
    const waiting = waitForSandboxReady(url, { timeoutMs: 30_000, clock, initialDelayMs: 250 });
    await untilTimer(clock);
    expect(clock.nextDueAt()).toBe(250);
    await clock.advance(250);
    expect(await waiting).toBe(true);
    expect(hits).toHaveLength(2);
    expect(clock.pendingTimers).toBe(0);
  });

  it('§9.2.29 treats a refused connection as not ready and tries again', async () => {
    const clock = new ManualClock();
    const probe = await scripted([200]);
    const port = Number(new URL(probe.url).port);
    await new Promise((r) => servers.pop()!.close(r));
    const waiting = waitForSandboxReady(`http://127.0.0.1:${port}`, { timeoutMs: 30_000, clock });
    await untilTimer(clock);
    const { hits } = await scripted([200], port);
    await clock.advance(100);
    expect(await waiting).toBe(true);
    expect(hits).toHaveLength(1);
  });

  it('§9.2.30 clamps the pause to the time left and then gives up', async () => {
    const clock = new ManualClock();
    const { url } = await scripted([503]);
    const waiting = waitForSandboxReady(url, { timeoutMs: 150, clock, initialDelayMs: 1000 });
    await untilTimer(clock);
    expect(clock.nextDueAt()).toBe(150);
    await clock.advance(150);
    expect(await waiting).toBe(false);
  });

  it('stops early when the sandbox is no longer viable, and rejects when aborted', async () => {
    const { url } = await scripted([503]);
    expect(
      await waitForSandboxReady(url, { timeoutMs: 60_000, stillViable: async () => false }),
    ).toBe(false);
    const controller = new AbortController();
    const clock = new ManualClock();
    const waiting = waitForSandboxReady(url, {
      timeoutMs: 60_000,
      clock,
      signal: controller.signal,
    });
    await untilTimer(clock);
    controller.abort();
    await expect(waiting).rejects.toBeInstanceOf(AbortedError);
  });
});

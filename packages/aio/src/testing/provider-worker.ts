/**
 * One gateway instance of the multi-instance tests, run as its own Node process (the test bundles
 * this file). argv[2]: JSON `{ config: <sandbox section> }`. The provider is loaded the way a host
 * loads it (`use: "@sbx/aio"` through core's provider loader) with a Redis ownership store.
 *
 * Protocol: one JSON request per stdin line, `{ id, op, args }`; one JSON reply per stdout line,
 * `{ id, ok: true, value }` or `{ id, ok: false, error: { code, message } }`. Requests run
 * concurrently. Logs go to stderr.
 */
import { createInterface } from 'node:readline';
import {
  createOwnershipStore,
  isSbxError,
  loadProviderClass,
  parseSandboxConfig,
  resolveOwnershipConfig,
} from '@sbx/core';
import type { Logger, OwnershipRedisModule, SandboxSpec } from '@sbx/core';
import type { AioSandboxProvider } from '../aio-sandbox-provider.js';
import * as aio from '../index.js';

interface Request {
  id: number;
  op: string;
  args?: Record<string, unknown>;
}

const tag = `[aio-worker ${process.pid}]`;
const logger: Logger = {
  debug() {},
  info() {},
  warn: (msg, fields) =>
    process.stderr.write(`${tag} warn ${msg} ${JSON.stringify(fields ?? {})}\n`),
  error: (msg, fields) =>
    process.stderr.write(`${tag} error ${msg} ${JSON.stringify(fields ?? {})}\n`),
};

function reply(message: unknown): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

async function main(): Promise<void> {
  const { config: section } = JSON.parse(process.argv[2] ?? '{}') as { config: unknown };
  const config = parseSandboxConfig(section, { env: process.env });
  const store = await createOwnershipStore(resolveOwnershipConfig(config, {}), {
    logger,
    // A literal import, so the bundle carries the store (the lazy one resolves at run time).
    loadRedisModule: async () => (await import('@sbx/ownership-redis')) as OwnershipRedisModule,
  });
  const loaded = await loadProviderClass(config.use, { importer: async () => aio });
  const init = { config, logger, ownershipStore: store };
  const provider = (await loaded.create(init)) as AioSandboxProvider;
  await provider.ready();

  const sandbox = (id: unknown) => {
    const found = provider.get(String(id));
    if (!found) throw new Error(`no sandbox ${String(id)} in this instance`);
    return found;
  };
  const handlers: Record<string, (args: Record<string, unknown>) => Promise<unknown>> = {
    ownerId: () => provider.ownerId(),
    acquire: (a) =>
      provider.acquire({
        userId: a.userId as string,
        threadId: a.threadId as string,
        ...(a.spec !== undefined ? { spec: a.spec as SandboxSpec } : {}),
      }),
    exec: (a) => sandbox(a.sandboxId).executeCommand(String(a.command)),
    startProcess: async (a) => (await sandbox(a.sandboxId).processes.start(String(a.command))).id,
    processOutput: async (a) => {
      const handle = await sandbox(a.sandboxId).processes.get(String(a.processId));
      if (!handle) return null;
      const output = await handle.output();
      return { command: handle.command, text: output.text, status: output.status };
    },
    processWrite: async (a) => {
      const handle = await sandbox(a.sandboxId).processes.get(String(a.processId));
      await handle?.write(String(a.input));
      return handle !== undefined;
    },
    processKill: async (a) => {
      const handle = await sandbox(a.sandboxId).processes.get(String(a.processId));
      if (!handle) return null;
      await handle.kill('SIGKILL');
      return (await handle.wait()) ?? null;
    },
    write: (a) => sandbox(a.sandboxId).writeFile(String(a.path), String(a.content)),
    read: (a) => sandbox(a.sandboxId).readFile(String(a.path)),
    has: async (a) => provider.get(String(a.sandboxId)) !== undefined,
    release: (a) => provider.release(String(a.sandboxId)),
    destroy: (a) => provider.destroy(String(a.sandboxId)),
    snapshot: async () => provider.stateSnapshot(),
    reconcile: () => provider.reconcile(),
    renew: () => provider.renewLeases(),
    evictWarm: () => provider.evictOldestWarm(),
    shutdown: async () => {
      await provider.shutdown();
      await store.close();
    },
  };

  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    if (line.trim() === '') return;
    const request = JSON.parse(line) as Request;
    const handler = handlers[request.op];
    void (async () => {
      try {
        if (!handler) throw new Error(`unknown op ${request.op}`);
        const value = await handler(request.args ?? {});
        reply({ id: request.id, ok: true, value: value ?? null });
        if (request.op === 'shutdown') process.exit(0);
      } catch (err) {
        reply({
          id: request.id,
          ok: false,
          error: {
            code: isSbxError(err) ? err.code : 'ERROR',
            message: err instanceof Error ? err.message : String(err),
          },
        });
      }
    })();
  });
  reply({ id: 0, ok: true, value: 'ready' });
}

main().catch((err: unknown) => {
  process.stderr.write(
    `${tag} failed to start: ${err instanceof Error ? err.stack : String(err)}\n`,
  );
  process.exit(2);
});

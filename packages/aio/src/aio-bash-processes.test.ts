import { silentLogger } from '@sbx/core';
import type { LaunchedExit, ProcessSink } from '@sbx/core/provider-kit';
import { pausable } from '@sbx/core/testing';
import type { Pausable } from '@sbx/core/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AioApi } from './aio-api.js';
import type { AioBashApi } from './aio-bash-api.js';
import { AioBashLauncher } from './aio-bash-processes.js';
import { AioHttpClient } from './aio-http.js';
import { startStandin, type StandinFixture } from './aio-standin.fixture.js';

// Two clients of one container, each a launcher over its own HTTP client, against the stand-in in
// this process. Each client's bash API is wrapped so a test can hold its polls: the interleavings
// of the process lifetime across clients, without sleeps.

interface Client {
  launcher: AioBashLauncher;
  bash: Pausable<AioBashApi>;
  http: AioHttpClient;
}

function sink() {
  let out = '';
  const waiters: { text: string; resolve: () => void }[] = [];
  const s: ProcessSink = {
    stdout: (chunk) => {
      out += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      for (const w of waiters.splice(0)) {
        if (out.includes(w.text)) w.resolve();
        else waiters.push(w);
      }
    },
    stderr: () => {},
  };
  return {
    sink: s,
    text: () => out,
    until: (text: string) =>
      out.includes(text)
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiters.push({ text, resolve })),
  };
}

describe('background processes followed by two clients', () => {
  let standin: StandinFixture;
  const clients: Client[] = [];
  const client = (): Client => {
    const http = new AioHttpClient({ baseUrl: standin.url });
    const api = new AioApi(http);
    const bash = pausable(api.bash);
    const launcher = new AioBashLauncher({
      api: { bash: bash.proxy } as unknown as AioApi,
      logger: silentLogger,
      sandboxId: 'aio-two-clients',
      execDir: async (cwd) => cwd,
      closed: () => http.closed,
      pause: async () => {},
      attachable: true,
    });
    const c = { launcher, bash, http };
    clients.push(c);
    return c;
  };
  beforeEach(async () => {
    standin = await startStandin();
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) {
      await c.bash.releaseAll();
      await c.http.close();
    }
    await standin.close();
  });

  it('the starting client reports the exit code when another client saw the end first', async () => {
    const starter = client();
    const peer = client();
    const out = sink();
    starter.bash.pause('output'); // the starter's follower is between two polls
    const launched = await starter.launcher.launch(
      'read line; echo "got:$line"; exit 3',
      {},
      out.sink,
    );
    const id = launched.id!;
    const held = await starter.bash.nextCall('output');
    const attached = await peer.launcher.attach(id, sink().sink);
    expect(attached).toBeDefined();
    await attached!.write!('x\n');
    expect(await attached!.exited).toEqual({ exitCode: 3 });
    starter.bash.resume('output');
    await held.release();
    expect(await launched.exited).toEqual<LaunchedExit>({ exitCode: 3 });
    expect(out.text()).toBe('got:x\n');
    // The client that started the command closes its session, once it has its end.
    expect(standin.openBashSessionIds()).toEqual([]);
  });

  it('a detached follower stops polling and leaves the session to the client that follows it', async () => {
    const starter = client();
    const peer = client();
    const out = sink();
    const launched = await starter.launcher.launch(
      'read a; echo one; read b; echo two; exit 4',
      {},
      out.sink,
    );
    const attached = (await peer.launcher.attach(launched.id!, sink().sink))!;
    peer.bash.pause('output'); // the attached follower's next poll would be held here
    await attached.detach();
    await launched.write!('a\n'); // output arrives: the poll in flight returns
    const first = await Promise.race([
      attached.exited.then(() => 'ended' as const),
      peer.bash.nextCall('output').then(() => 'polled again' as const),
    ]);
    expect(first).toBe('ended');
    expect(await attached.exited).toEqual({ exitCode: null });
    await out.until('one');
    await launched.write!('b\n');
    expect(await launched.exited).toEqual({ exitCode: 4 });
    expect(out.text()).toBe('one\ntwo\n');
    expect(peer.bash.calls('closeSession')).toEqual([]);
    expect(standin.openBashSessionIds()).toEqual([]);
  });

  it('a named session whose command failed to start is closed', async () => {
    const c = client();
    standin.intercept((req) =>
      req.path === '/v1/bash/exec' ? { status: 500, body: { success: false } } : undefined,
    );
    await expect(c.launcher.launch('true', {}, sink().sink)).rejects.toThrow();
    standin.intercept(undefined);
    const [created] = standin.calls('/v1/bash/sessions/create');
    const id = (created!.body as { session_id: string }).session_id;
    expect(standin.calls(`/v1/bash/sessions/${id}/close`)).toHaveLength(1);
    expect(standin.openBashSessionIds()).toEqual([]);
  });
});

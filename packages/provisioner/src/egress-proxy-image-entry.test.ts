import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

// The in-cluster egress proxy's entry (deploy/docker/egress-proxy/entry.ts, what the image runs),
// started from its sources as a child process with the environment the Deployment gives it.

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const entry = path.join(root, 'deploy/docker/egress-proxy/entry.ts');
const tsx = path.join(root, 'node_modules/.bin/tsx');

let child: ChildProcess | undefined;
afterEach(() => {
  child?.kill('SIGKILL');
  child = undefined;
});

/** Starts the entry; resolves with its exit code, or the port once it logs that it listens. */
function startEntry(
  env: Record<string, string>,
): Promise<{ port?: number; code?: number; log: string }> {
  return new Promise((resolve) => {
    const proc = spawn(tsx, ['--conditions=@sbx/source', entry], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        SBX_EGRESS_LISTEN_HOST: '127.0.0.1',
        SBX_EGRESS_LISTEN_PORT: '0',
        ...env,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child = proc;
    let log = '';
    proc.stderr!.on('data', (chunk: Buffer) => {
      log += chunk.toString('utf8');
      const line = log.split('\n').find((l) => l.includes('egress proxy listening'));
      if (line) {
        const { address } = JSON.parse(line) as { address: { port: number } };
        resolve({ port: address.port, log });
      }
    });
    proc.once('exit', (code) => resolve({ code: code ?? -1, log }));
  });
}

function viaProxy(port: number, target: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'GET',
        path: target,
        headers: { host: new URL(target).host },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.once('error', reject);
    req.end();
  });
}

describe('the in-cluster egress proxy entry', () => {
  it('enforces SBX_EGRESS_POLICY: a host off the allow list and a private address are refused', async () => {
    const started = await startEntry({
      SBX_EGRESS_POLICY: JSON.stringify({ mode: 'allowlist', allow: ['example.com:443'] }),
    });
    expect(started.port, started.log).toBeGreaterThan(0);
    expect(await viaProxy(started.port!, 'http://not-allowed.test/')).toBe(403);
    // A cluster-internal address, built at run time: the proxy refuses private destinations.
    const internal = ['10', '96', '0', '1'].join('.');
    expect(await viaProxy(started.port!, `http://${internal}/`)).toBe(403);
  }, 60_000);

  it('refuses to start without a policy, with a malformed one, or with credentials', async () => {
    for (const policy of [
      undefined,
      '{"mode":"sideways"}',
      JSON.stringify({
        mode: 'open',
        credentials: [
          {
            host: 'api.example.com',
            header: 'authorization',
            source: { kind: 'env', name: 'TOKEN' },
          },
        ],
      }),
    ]) {
      const result = await startEntry(policy === undefined ? {} : { SBX_EGRESS_POLICY: policy });
      expect(result.code, result.log).toBe(1);
      expect(result.log).toMatch(/SBX_EGRESS_POLICY/);
    }
  }, 60_000);
});

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createAioStandin } from '../../../tools/images/aio-standin/server.mjs';
import { DEFAULT_SESSION_PREFIX } from './shell-sessions.js';
import type {
  AioStandinOptions,
  AioStandinRequest,
} from '../../../tools/images/aio-standin/server.mjs';

/**
 * Test support: the AIO stand-in server (tools/images/aio-standin/server.mjs) in this process, on
 * 127.0.0.1 with an ephemeral port and a fresh home directory. `intercept` lets a test answer a
 * request itself (a fault the real image can produce but the stand-in cannot be told to);
 * `concurrency` records the largest number of requests of the given kinds in flight at once.
 */
export interface Interception {
  status: number;
  body: unknown;
}

export type Interceptor = (req: {
  method: string;
  path: string;
  body: Record<string, unknown>;
}) => Interception | undefined;

export interface StandinFixture {
  url: string;
  home: string;
  requests: AioStandinRequest[];
  sessionIds(): string[];
  /** The client's default session (`sbx-default-…`), when one is live. */
  defaultSessionId(): string | undefined;
  /** Sessions the stand-in dropped to make room (its LRU eviction). */
  evictedSessionIds(): string[];
  /** bash/exec sessions not closed. */
  openBashSessionIds(): string[];
  /** Requests to `path` (and, optionally, `method`), in arrival order. */
  calls(path: string, method?: string): AioStandinRequest[];
  intercept(fn: Interceptor | undefined): void;
  /** Largest number of requests in flight at once among those `isLocked` selects. */
  maxConcurrent(): number;
  /** Open TCP connections to the server. */
  connections(): Promise<number>;
  close(): Promise<void>;
}

/** Requests that must run under the sandbox lock: default-session commands, bash/exec, downloads, writes. */
function isLocked(method: string, p: string, body: Record<string, unknown>): boolean {
  if (p === '/v1/shell/exec') {
    return body.id === undefined || String(body.id).startsWith(DEFAULT_SESSION_PREFIX);
  }
  return p === '/v1/bash/exec' || p === '/v1/file/download' || p === '/v1/file/write';
}

async function readJson(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  if (chunks.length === 0) return {};
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
}

export async function startStandin(options: AioStandinOptions = {}): Promise<StandinFixture> {
  const home = await mkdtemp(path.join(tmpdir(), 'sbx-aio-home-'));
  const standin = createAioStandin({ homeDir: home, ...options });
  let interceptor: Interceptor | undefined;
  let inFlight = 0;
  let max = 0;
  const server = http.createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const method = req.method ?? 'GET';
      // Re-serialised so the stand-in can read the body again after we looked at it.
      const body = method === 'POST' ? await readJson(req) : {};
      const locked = isLocked(method, url.pathname, body);
      if (locked) {
        inFlight += 1;
        max = Math.max(max, inFlight);
        res.once('close', () => {
          inFlight -= 1;
        });
      }
      const canned = interceptor?.({ method, path: url.pathname, body });
      if (canned) {
        standin.requests.push({ method, path: url.pathname, query: url.search, body });
        const text = JSON.stringify(canned.body);
        res.writeHead(canned.status, { 'content-type': 'application/json' });
        res.end(text);
        return;
      }
      const replay = Object.assign(
        (async function* () {
          if (method === 'POST') yield Buffer.from(JSON.stringify(body));
        })(),
        { method: req.method, url: req.url, headers: req.headers },
      );
      standin.handler(replay as unknown as http.IncomingMessage, res);
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    home,
    requests: standin.requests,
    sessionIds: () => standin.sessionIds(),
    defaultSessionId: () =>
      standin.sessionIds().find((id) => id.startsWith(DEFAULT_SESSION_PREFIX)),
    evictedSessionIds: () => standin.evictedSessionIds(),
    openBashSessionIds: () => standin.openBashSessionIds(),
    calls: (p, m) => standin.requests.filter((r) => r.path === p && (!m || r.method === m)),
    intercept(fn) {
      interceptor = fn;
    },
    maxConcurrent: () => max,
    connections: () =>
      new Promise((resolve, reject) =>
        server.getConnections((err, count) => (err ? reject(err) : resolve(count))),
      ),
    async close() {
      await standin.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(home, { recursive: true, force: true });
    },
  };
}

import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorMessage, silentLogger } from '@sbx/core';
import type { Logger } from '@sbx/core';
import { parseCreateRequest } from './create-request.js';
import { ProvisionerHttpError } from './provisioner-errors.js';
import type { ProvisionerBackend } from './provisioner-backend.js';

/** A create body larger than this is refused with 413 before it is parsed. */
export const MAX_REQUEST_BODY_BYTES = 64 * 1024;

export interface ProvisionerCapabilitiesResponse {
  lark_cli_init_image: boolean;
  lark_cli_broker_image: boolean;
  /**
   * `network_mode: none` is enforced: each such sandbox gets a NetworkPolicy allowing no egress
   * (pods backend; inert on a cluster whose network plugin ignores NetworkPolicy).
   */
  network_none: boolean;
  /**
   * `network_mode: open` goes through the configured egress proxy (`SANDBOX_EGRESS_PROXY`): a
   * NetworkPolicy allows nothing else. What the proxy lets through is its own configured policy.
   */
  egress_proxy: boolean;
}

export interface ProvisionerHandlerOptions {
  pods: ProvisionerBackend;
  /** Empty: every `/api/*` request is refused. */
  apiKey: string;
  capabilities: ProvisionerCapabilitiesResponse;
  logger?: Logger;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * Constant-time key check: both sides are hashed first, so neither the comparison's time nor an
 * early length mismatch tells a caller how much of a guess was right.
 */
export function apiKeyMatches(expected: string, presented: string | string[] | undefined): boolean {
  if (expected === '' || typeof presented !== 'string') return false;
  return timingSafeEqual(digest(expected), digest(presented));
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_REQUEST_BODY_BYTES) {
    throw new ProvisionerHttpError(413, `request body over ${MAX_REQUEST_BODY_BYTES} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_REQUEST_BODY_BYTES) {
      throw new ProvisionerHttpError(413, `request body over ${MAX_REQUEST_BODY_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ProvisionerHttpError(422, [{ loc: ['body'], msg: 'the body is not valid JSON' }]);
  }
}

const SANDBOX_PATH = /^\/api\/sandboxes\/([^/]+)$/;

/**
 * The provisioner's HTTP API as a `node:http` request handler:
 * `GET /health` (open), and under the API key `GET /api/capabilities`,
 * `POST|GET /api/sandboxes` and `GET|DELETE /api/sandboxes/{id}`. Errors answer
 * `{"detail": ...}` with the status the reference API uses (401 `Unauthorized` in plain text).
 */
export function createProvisionerHandler(
  options: ProvisionerHandlerOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  const logger = options.logger ?? silentLogger;
  const { pods } = options;

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://provisioner');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    if (path === '/health') {
      if (method !== 'GET') throw new ProvisionerHttpError(405, 'Method Not Allowed');
      return sendJson(res, 200, { status: 'ok' });
    }
    if (!path.startsWith('/api/')) throw new ProvisionerHttpError(404, 'Not Found');
    if (!apiKeyMatches(options.apiKey, req.headers['x-api-key'])) {
      res.writeHead(401, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('Unauthorized');
      return;
    }
    if (path === '/api/capabilities') {
      if (method !== 'GET') throw new ProvisionerHttpError(405, 'Method Not Allowed');
      return sendJson(res, 200, options.capabilities);
    }
    if (path === '/api/sandboxes') {
      if (method === 'GET') return sendJson(res, 200, await pods.list());
      if (method === 'POST') {
        const request = parseCreateRequest(await readJsonBody(req));
        return sendJson(res, 200, await pods.create(request));
      }
      throw new ProvisionerHttpError(405, 'Method Not Allowed');
    }
    const match = SANDBOX_PATH.exec(path);
    if (match) {
      let id: string;
      try {
        id = decodeURIComponent(match[1]!);
      } catch {
        throw new ProvisionerHttpError(404, 'Not Found');
      }
      if (method === 'GET') return sendJson(res, 200, await pods.get(id));
      if (method === 'DELETE') return sendJson(res, 200, await pods.delete(id));
      throw new ProvisionerHttpError(405, 'Method Not Allowed');
    }
    throw new ProvisionerHttpError(404, 'Not Found');
  }

  return (req, res) => {
    const started = Date.now();
    route(req, res).then(
      () =>
        logger.debug('request', {
          method: req.method,
          path: req.url,
          status: res.statusCode,
          ms: Date.now() - started,
        }),
      (err: unknown) => {
        if (err instanceof ProvisionerHttpError) {
          if (err.status >= 500)
            logger.warn('request failed', {
              method: req.method,
              path: req.url,
              error: err.message,
            });
          if (!res.headersSent)
            sendJson(
              res,
              err.status,
              { detail: err.detail },
              err.retryAfterSeconds !== undefined
                ? { 'retry-after': String(err.retryAfterSeconds) }
                : {},
            );
          else res.destroy();
          return;
        }
        logger.error('request failed unexpectedly', {
          method: req.method,
          path: req.url,
          error: errorMessage(err),
        });
        if (!res.headersSent)
          sendJson(res, 500, { detail: `internal error: ${errorMessage(err)}` });
        else res.destroy();
      },
    );
  };
}

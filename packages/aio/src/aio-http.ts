import { errorMessage, AbortedError } from '@sbx/core';
import { Agent, EnvHttpProxyAgent, interceptors, request } from 'undici';
import type { Dispatcher } from 'undici';
import { AioHttpError } from './aio-http-error.js';
import { shouldTrustEnvProxy } from './proxy-policy.js';

/** Per-request limit of the sandbox API: one command may legitimately run for ten minutes. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 600_000;

const SNIPPET = 500;
const MAX_REDIRECTS = 5;

export interface AioHttpClientOptions {
  /** `http(s)://host:port`, optionally with a path prefix. */
  baseUrl: string;
  /** Default per-request limit. Default 600 s. */
  timeoutMs?: number;
  /** Overrides `shouldTrustEnvProxy(baseUrl)`. */
  trustEnvProxy?: boolean;
  /** Sent with every request (e.g. `X-API-Key`). */
  headers?: Readonly<Record<string, string>>;
}

export interface AioRequestOptions {
  signal?: AbortSignal | undefined;
  timeoutMs?: number | undefined;
  /** Query parameters. */
  query?: Readonly<Record<string, string>>;
}

export interface JsonResponse {
  status: number;
  body: unknown;
}

export interface BytesOptions extends AioRequestOptions {
  /** Largest body accepted; a longer one is cut off and `tooLarge` thrown. */
  maxBytes: number;
  tooLarge: () => Error;
}

/**
 * A keep-alive HTTP client for one base URL. Destinations on this host or in this cluster are
 * reached directly and never through `HTTP(S)_PROXY` (see `shouldTrustEnvProxy`); others honour
 * the environment's proxies and `NO_PROXY`. Redirects are followed (at most 5). `close()` releases
 * the pooled sockets and is idempotent.
 */
export class AioHttpClient {
  readonly baseUrl: string;
  readonly trustEnvProxy: boolean;
  private readonly timeoutMs: number;
  private readonly headers: Readonly<Record<string, string>>;
  private dispatcher: Dispatcher | undefined;
  private closing: Promise<void> | undefined;

  constructor(options: AioHttpClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.trustEnvProxy = options.trustEnvProxy ?? shouldTrustEnvProxy(this.baseUrl);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.headers = options.headers ?? {};
    // Body and header timeouts are left to the per-request deadline (AbortSignal), which the
    // caller may stretch for a long command.
    const base = this.trustEnvProxy
      ? new EnvHttpProxyAgent({ headersTimeout: 0, bodyTimeout: 0 })
      : new Agent({ headersTimeout: 0, bodyTimeout: 0 });
    this.dispatcher = base.compose(interceptors.redirect({ maxRedirections: MAX_REDIRECTS }));
  }

  get closed(): boolean {
    return this.dispatcher === undefined;
  }

  private urlFor(path: string, query?: Readonly<Record<string, string>>): string {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query ?? {})) url.searchParams.set(k, v);
    return url.toString();
  }

  private begin(
    method: string,
    url: string,
    options: AioRequestOptions,
  ): { dispatcher: Dispatcher; signal: AbortSignal; fail: (err: unknown) => never } {
    const dispatcher = this.dispatcher;
    if (!dispatcher) {
      throw new AioHttpError(`HTTP client for ${this.baseUrl} is closed`, { method, url });
    }
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
    const fail = (err: unknown): never => {
      if (err instanceof AioHttpError) throw err;
      if (options.signal?.aborted) {
        throw new AbortedError(`${method} ${url} was aborted`, { cause: options.signal.reason });
      }
      if (deadline.aborted) {
        throw new AioHttpError(
          `${method} ${url} got no complete answer within ${timeoutMs} ms`,
          { method, url },
          { cause: err },
        );
      }
      const reason = errorMessage(err);
      throw new AioHttpError(`${method} ${url} failed: ${reason}`, { method, url }, { cause: err });
    };
    return { dispatcher, signal, fail };
  }

  /**
   * Sends a JSON request (body omitted when undefined) and parses the JSON answer. Any non-2xx
   * status, or a body that is not JSON, throws `AioHttpError`.
   */
  async json(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    body?: unknown,
    options: AioRequestOptions = {},
  ): Promise<JsonResponse> {
    const url = this.urlFor(path, options.query);
    const { dispatcher, signal, fail } = this.begin(method, url, options);
    try {
      const headers: Record<string, string> = { accept: 'application/json', ...this.headers };
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await request(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        dispatcher,
        signal,
      });
      const text = await res.body.text();
      if (res.statusCode < 200 || res.statusCode >= 300) {
        throw new AioHttpError(
          `${method} ${url} answered HTTP ${res.statusCode}: ${text.slice(0, SNIPPET)}`,
          { method, url, status: res.statusCode, responseText: text.slice(0, SNIPPET) },
        );
      }
      if (text.trim() === '') return { status: res.statusCode, body: null };
      try {
        return { status: res.statusCode, body: JSON.parse(text) as unknown };
      } catch (err) {
        throw new AioHttpError(
          `${method} ${url} answered a body that is not JSON: ${text.slice(0, SNIPPET)}`,
          { method, url, status: res.statusCode, responseText: text.slice(0, SNIPPET) },
          { cause: err },
        );
      }
    } catch (err) {
      return fail(err);
    }
  }

  /** Status code of a request whose body is read and discarded (readiness probes). */
  async probe(path: string, options: AioRequestOptions = {}): Promise<number> {
    const url = this.urlFor(path, options.query);
    const { dispatcher, signal, fail } = this.begin('GET', url, options);
    try {
      const res = await request(url, {
        method: 'GET',
        headers: { ...this.headers },
        dispatcher,
        signal,
      });
      await res.body.dump({ limit: 1024 * 1024 });
      return res.statusCode;
    } catch (err) {
      return fail(err);
    }
  }

  /** GET whose body is raw bytes, read as a stream and cut off past `maxBytes`. */
  async bytes(path: string, options: BytesOptions): Promise<Uint8Array> {
    const url = this.urlFor(path, options.query);
    const { dispatcher, signal, fail } = this.begin('GET', url, options);
    let oversize: Error | undefined;
    try {
      const res = await request(url, {
        method: 'GET',
        headers: { ...this.headers },
        dispatcher,
        signal,
      });
      if (res.statusCode < 200 || res.statusCode >= 300) {
        const text = await res.body.text();
        throw new AioHttpError(
          `GET ${url} answered HTTP ${res.statusCode}: ${text.slice(0, SNIPPET)}`,
          { method: 'GET', url, status: res.statusCode, responseText: text.slice(0, SNIPPET) },
        );
      }
      const chunks: Uint8Array[] = [];
      let total = 0;
      for await (const chunk of res.body) {
        const bytes = chunk as Uint8Array;
        total += bytes.length;
        if (total > options.maxBytes) {
          // Stop reading at once: the rest of a huge file must not cross the wire.
          oversize = options.tooLarge();
          res.body.destroy();
          throw oversize;
        }
        chunks.push(bytes);
      }
      return Buffer.concat(chunks, total);
    } catch (err) {
      if (oversize !== undefined && err === oversize) throw err;
      return fail(err);
    }
  }

  /** Releases the pooled sockets; requests still in flight fail. Idempotent. */
  close(): Promise<void> {
    if (!this.closing) {
      const dispatcher = this.dispatcher;
      this.dispatcher = undefined;
      this.closing = dispatcher ? dispatcher.destroy() : Promise.resolve();
    }
    return this.closing;
  }
}

/** The headers of every call: the caller's, then the API key. */
export function aioRequestHeaders(options: {
  apiKey?: string | undefined;
  headers?: Readonly<Record<string, string>> | undefined;
}): Record<string, string> {
  return {
    ...(options.headers ?? {}),
    ...(options.apiKey ? { 'X-AIO-API-Key': options.apiKey } : {}),
  };
}

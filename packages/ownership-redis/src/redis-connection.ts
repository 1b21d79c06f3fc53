import { InvalidArgumentError, silentLogger, loadOptionalDependency } from '@sbx/core';
import { interopDefault } from '@sbx/core/internal';
import type { Logger } from '@sbx/core';
import type { Redis, RedisOptions } from 'ioredis';

export const DEFAULT_COMMAND_TIMEOUT_MS = 5_000;

export interface RedisConnectionOptions {
  /** `redis://` or `rediss://` URL (database in the path). Ignored when `client` is given. */
  url?: string;
  /** An already-built ioredis client. It is shared, not owned: `close()` leaves it open. */
  client?: Redis;
  /**
   * Upper bound of every store call, connecting included (default 5000 ms). A call that cannot
   * answer within it fails with the store's backend error.
   */
  commandTimeoutMs?: number;
  /** Extra ioredis options for a client built here; they override the recommended ones. */
  redisOptions?: RedisOptions;
  logger?: Logger;
}

/**
 * ioredis settings under which every call either answers or fails within the bound, and no command
 * is ever executed later than the call that issued it gave up on it:
 *
 * - `lazyConnect`: construction never fails; an unreachable server surfaces at the first call.
 * - `enableOfflineQueue: false`: commands are never parked while disconnected. ioredis would send a
 *   parked command once the connection returns even after it timed out, so a "failed" destroy
 *   claim could land minutes later and strand a sandbox behind a stale `del:` marker. The store
 *   instead waits (within the bound) for the connection to be ready before sending.
 * - `autoResendUnfulfilledCommands: false` and `maxRetriesPerRequest: 0`: a command in flight when
 *   the connection drops fails at once instead of being replayed on the next connection.
 * - `commandTimeout` = `connectTimeout` = the bound; reconnects keep trying with a capped backoff so
 *   the store recovers by itself once the server is back.
 */
export function recommendedRedisOptions(
  commandTimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS,
): RedisOptions {
  return {
    lazyConnect: true,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    commandTimeout: commandTimeoutMs,
    connectTimeout: commandTimeoutMs,
    retryStrategy: (times: number) => Math.min(times * 100, 1_000),
  };
}

type RedisConstructor = new (url: string, options: RedisOptions) => Redis;

/**
 * One ioredis client plus the discipline the stores need from it: a bounded wait for readiness, a
 * bounded call, and an idempotent close that leaves a caller's client alone.
 */
export class RedisConnection {
  readonly client: Redis;
  readonly commandTimeoutMs: number;
  private readonly ownsClient: boolean;
  private readonly logger: Logger;
  private closing: Promise<void> | undefined;

  constructor(
    client: Redis,
    options: { ownsClient: boolean; commandTimeoutMs?: number; logger?: Logger },
  ) {
    this.client = client;
    this.ownsClient = options.ownsClient;
    this.commandTimeoutMs = options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    if (!Number.isFinite(this.commandTimeoutMs) || this.commandTimeoutMs <= 0) {
      throw new InvalidArgumentError(
        `commandTimeoutMs must be a positive number, got ${this.commandTimeoutMs}`,
      );
    }
    this.logger = options.logger ?? silentLogger;
    if (this.ownsClient) {
      // Without a listener ioredis prints every reconnect failure to the console; the store
      // reports failures through its own errors instead.
      client.on('error', (err: Error) =>
        this.logger.debug('redis connection error', { error: err.message }),
      );
    }
  }

  /** Builds a client from `options` (loading the optional `ioredis` peer) or wraps the given one. */
  static async open(options: RedisConnectionOptions, requiredBy: string): Promise<RedisConnection> {
    const commandTimeoutMs = options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    if (options.client) {
      return new RedisConnection(options.client, {
        ownsClient: false,
        commandTimeoutMs,
        logger: options.logger,
      });
    }
    if (!options.url) throw new InvalidArgumentError(`${requiredBy} needs a Redis url or client`);
    const url = options.url;
    if (!/^rediss?:\/\//.test(url)) {
      throw new InvalidArgumentError(`${requiredBy}: not a redis:// or rediss:// URL: ${url}`);
    }
    const mod = await loadOptionalDependency('ioredis', requiredBy);
    const RedisClass = interopDefault<RedisConstructor>(mod);
    const client = new RedisClass(url, {
      ...recommendedRedisOptions(commandTimeoutMs),
      ...options.redisOptions,
    });
    return new RedisConnection(client, {
      ownsClient: true,
      commandTimeoutMs,
      logger: options.logger,
    });
  }

  get closed(): boolean {
    return this.closing !== undefined;
  }

  /**
   * Runs `fn` once the client is ready, bounded as a whole by `commandTimeoutMs`. Never sends
   * anything while disconnected (see `recommendedRedisOptions`). Rejects with the raw cause; the
   * stores wrap it into their own error type.
   */
  async call<T>(fn: (client: Redis) => Promise<T>): Promise<T> {
    if (this.closing) throw new Error('the store is closed');
    const deadline = Date.now() + this.commandTimeoutMs;
    await this.ready(deadline);
    return withDeadline(fn(this.client), deadline, this.commandTimeoutMs);
  }

  private ready(deadline: number): Promise<void> {
    const c = this.client;
    if (c.status === 'ready') return Promise.resolve();
    if (c.status === 'end') return Promise.reject(new Error('the Redis connection is closed'));
    if (c.status === 'wait') {
      c.connect().catch(() => {
        // Reported through the 'error'/'end' events below; nothing to add here.
      });
    }
    return new Promise<void>((resolve, reject) => {
      const finish = (err?: Error) => {
        clearTimeout(timer);
        c.off('ready', onReady);
        c.off('error', onError);
        c.off('end', onEnd);
        if (err) reject(err);
        else resolve();
      };
      const onReady = () => finish();
      // Fail fast on a refused connection instead of idling until the deadline.
      const onError = (err: Error) => finish(err);
      const onEnd = () => finish(new Error('connection closed'));
      const timer = setTimeout(
        () =>
          finish(
            new Error(
              `not connected within ${this.commandTimeoutMs} ms (connection status: ${c.status})`,
            ),
          ),
        Math.max(0, deadline - Date.now()),
      );
      c.on('ready', onReady);
      c.on('error', onError);
      c.on('end', onEnd);
      if (c.status === 'ready') finish();
    });
  }

  /** Idempotent. A client built here is closed (QUIT, bounded, then disconnect); an injected one is not. */
  close(): Promise<void> {
    this.closing ??= this.ownsClient ? this.closeClient() : Promise.resolve();
    return this.closing;
  }

  private async closeClient(): Promise<void> {
    const c = this.client;
    if (c.status === 'ready') {
      try {
        await withDeadline(c.quit(), Date.now() + this.commandTimeoutMs, this.commandTimeoutMs);
      } catch (err) {
        this.logger.debug('redis QUIT failed; disconnecting', { error: (err as Error).message });
      }
    }
    c.disconnect(false);
  }
}

function withDeadline<T>(promise: Promise<T>, deadline: number, boundMs: number): Promise<T> {
  const remaining = deadline - Date.now();
  if (remaining <= 0) {
    promise.catch(() => {});
    return Promise.reject(new Error(`timed out after ${boundMs} ms`));
  }
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`timed out after ${boundMs} ms`));
    }, remaining);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

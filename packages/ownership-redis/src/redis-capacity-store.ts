import { errorMessage, CapacityBackendError, CapacityReserveOutcome, isSbxError } from '@sbx/core';
import {
  assertCapacityHardLimit,
  assertCapacityInventory,
  assertCapacitySandboxId,
  assertCapacityToken,
} from '@sbx/core/internal';
import type { CapacityInventory, CapacityStore, Logger } from '@sbx/core';
import type { Redis } from 'ioredis';
import { keyLayout } from './key-layout.js';
import type { KeyLayout, KeyLayoutOptions } from './key-layout.js';
import { RedisConnection } from './redis-connection.js';
import type { RedisConnectionOptions } from './redis-connection.js';
import { scriptCommand } from './script-commands.js';
import type { ScriptCommand } from './script-commands.js';

export interface RedisCapacityStoreOptions extends KeyLayoutOptions {
  /** This gateway's limit (replicas, plus burst under the `burst` policy). Integer ≥ 1. */
  hardLimit: number;
  /** Bound of every call, connecting included. Default 5000 ms. */
  commandTimeoutMs?: number;
  logger?: Logger;
}

export interface CreateRedisCapacityStoreOptions
  extends RedisCapacityStoreOptions, Omit<RedisConnectionOptions, 'commandTimeoutMs' | 'logger'> {}

const REQUIRED_BY = '@sbx/ownership-redis RedisCapacityStore';
const RESERVE_OUTCOMES = new Set<string>(Object.values(CapacityReserveOutcome));

/**
 * `CapacityStore` on one Redis hash (`<keyPrefix>:e2b-capacity`), every operation one call of one
 * Lua script, using the server's clock for reservation and missing-since times so gateways with
 * skewed clocks agree. Any failure, including a hard-limit mismatch between gateways, raises
 * `CapacityBackendError`: the caller refuses to create (fail closed).
 */
export class RedisCapacityStore implements CapacityStore {
  readonly hardLimit: number;
  readonly keys: KeyLayout;
  readonly connection: RedisConnection;
  private readonly limitText: string;
  private readonly script: ScriptCommand;

  /** Wraps an already-built ioredis client, which stays the caller's. */
  constructor(client: Redis | RedisConnection, options: RedisCapacityStoreOptions) {
    assertCapacityHardLimit(options.hardLimit);
    this.hardLimit = options.hardLimit;
    this.limitText = String(options.hardLimit);
    this.keys = keyLayout(options);
    this.connection =
      client instanceof RedisConnection
        ? client
        : new RedisConnection(client, {
            ownsClient: false,
            commandTimeoutMs: options.commandTimeoutMs,
            logger: options.logger,
          });
    this.script = scriptCommand(this.connection.client, 'capacity');
  }

  async revision(): Promise<number> {
    const reply = await this.run('revision', []);
    if (typeof reply === 'number' && Number.isSafeInteger(reply) && reply >= 0) return reply;
    throw this.unexpected('revision', reply);
  }

  async reserve(token: string): Promise<CapacityReserveOutcome> {
    assertCapacityToken(token);
    const reply = await this.run('reserve', [token]);
    if (typeof reply === 'string' && RESERVE_OUTCOMES.has(reply))
      return reply as CapacityReserveOutcome;
    throw this.unexpected('reserve', reply);
  }

  async track(sandboxId: string, token?: string): Promise<void> {
    assertCapacitySandboxId(sandboxId);
    this.ok('track', await this.run('track', [sandboxId, token ?? '']));
  }

  async release(sandboxId: string): Promise<void> {
    // An empty id names nothing; skipping it saves a round trip and matches the ledger's no-op.
    if (!sandboxId) return;
    this.ok('release', await this.run('release', [sandboxId]));
  }

  async reconcile(inventory: CapacityInventory): Promise<boolean> {
    assertCapacityInventory(inventory);
    const args: string[] = [
      String(inventory.expectedRevision),
      inventory.complete ? '1' : '0',
      String(Math.floor(inventory.maxAgeMs)),
    ];
    for (const entry of inventory.entries) args.push(entry.sandboxId, entry.reservationToken ?? '');
    const reply = await this.run('reconcile', args);
    if (reply === 'APPLIED') return true;
    if (reply === 'STALE') return false;
    throw this.unexpected('reconcile', reply);
  }

  /** Idempotent; closes the client only if the store built it. */
  async close(): Promise<void> {
    await this.connection.close();
  }

  private async run(operation: string, args: string[]): Promise<unknown> {
    try {
      return await this.connection.call(() =>
        this.script(1, this.keys.capacityKey, operation, this.limitText, ...args),
      );
    } catch (err) {
      if (isSbxError(err)) throw err;
      const message = errorMessage(err);
      throw new CapacityBackendError(`capacity ledger ${operation} failed in Redis: ${message}`, {
        cause: err,
        details: { operation, key: this.keys.capacityKey },
      });
    }
  }

  private ok(operation: string, reply: unknown): void {
    if (reply !== 'OK') throw this.unexpected(operation, reply);
  }

  private unexpected(operation: string, reply: unknown): CapacityBackendError {
    return new CapacityBackendError(
      `unexpected Redis reply to capacity ${operation}: ${JSON.stringify(reply)}`,
      { details: { operation, key: this.keys.capacityKey } },
    );
  }
}

/**
 * Builds a `RedisCapacityStore` from a URL (owning its ioredis client) or around an injected
 * `client`. Lazy: an unreachable server surfaces as `CapacityBackendError` on the first call.
 */
export async function createRedisCapacityStore(
  options: CreateRedisCapacityStoreOptions,
): Promise<RedisCapacityStore> {
  assertCapacityHardLimit(options.hardLimit);
  const connection = await RedisConnection.open(options, REQUIRED_BY);
  return new RedisCapacityStore(connection, options);
}

import { errorMessage, OwnershipBackendError, RenewOutcome, isSbxError } from '@sbx/core';
import { LeaseValue, createOwnerId, leaseTtlSeconds } from '@sbx/core/provider-kit';
import { assertLeaseOwnerId, assertLeaseSandboxId, leaseTtlMilliseconds } from '@sbx/core/internal';
import type { ClaimOptions, LeaseHolder, Logger, OwnershipStore } from '@sbx/core';
import type { Redis } from 'ioredis';
import { keyLayout } from './key-layout.js';
import type { KeyLayout, KeyLayoutOptions } from './key-layout.js';
import { RedisConnection } from './redis-connection.js';
import type { RedisConnectionOptions } from './redis-connection.js';
import { scriptCommand } from './script-commands.js';
import type { ScriptCommand } from './script-commands.js';

export interface RedisOwnershipStoreOptions extends KeyLayoutOptions {
  /** Defaults to `createOwnerId()` (`<hostname>:<uuid hex>`). */
  ownerId?: string;
  /** Lease TTL in seconds (renewal interval × multiplier). Default 120. */
  ttlSeconds?: number;
  /** Bound of every call, connecting included. Default 5000 ms. */
  commandTimeoutMs?: number;
  logger?: Logger;
  /**
   * Diagnostics only: a list key every mutating script appends a JSON record to
   * (`{op, key, owner, before, after, result}`), inside the same atomic call, giving a linearised
   * history of all operations. Used by the multi-process race test; leave unset in production.
   */
  historyKey?: string;
}

export interface CreateRedisOwnershipStoreOptions
  extends RedisOwnershipStoreOptions, Omit<RedisConnectionOptions, 'commandTimeoutMs' | 'logger'> {}

const REQUIRED_BY = '@sbx/ownership-redis RedisOwnershipStore';

/**
 * `OwnershipStore` on Redis: one string key per sandbox holding `own:<ownerId>` or
 * `del:<ownerId>` with a PX TTL; every read-modify-write is one Lua script, so the decision table
 * holds across any number of gateway processes. `supportsCrossProcess = true`.
 *
 * Every failure (unreachable, timeout, script error, unexpected reply) raises
 * `OwnershipBackendError`, meaning "unknown": a timed-out write may or may not have been applied.
 */
export class RedisOwnershipStore implements OwnershipStore {
  readonly ownerId: string;
  readonly supportsCrossProcess = true;
  readonly ttlSeconds: number;
  readonly keys: KeyLayout;
  readonly connection: RedisConnection;
  private readonly ttlMs: number;
  private readonly historyKey: string | undefined;
  private readonly takeScript: ScriptCommand;
  private readonly claimScript: ScriptCommand;
  private readonly renewScript: ScriptCommand;
  private readonly releaseScript: ScriptCommand;

  /**
   * Wraps an already-built ioredis client, which stays the caller's: `close()` does not close it.
   * Build it with `recommendedRedisOptions()` for bounded calls without late replays.
   */
  constructor(client: Redis | RedisConnection, options: RedisOwnershipStoreOptions = {}) {
    const ownerId = options.ownerId ?? createOwnerId();
    assertLeaseOwnerId(ownerId);
    this.ownerId = ownerId;
    this.ttlSeconds = options.ttlSeconds ?? leaseTtlSeconds();
    this.ttlMs = leaseTtlMilliseconds(this.ttlSeconds);
    this.keys = keyLayout(options);
    this.historyKey = options.historyKey;
    this.connection =
      client instanceof RedisConnection
        ? client
        : new RedisConnection(client, {
            ownsClient: false,
            commandTimeoutMs: options.commandTimeoutMs,
            logger: options.logger,
          });
    const c = this.connection.client;
    this.takeScript = scriptCommand(c, 'take');
    this.claimScript = scriptCommand(c, 'claim');
    this.renewScript = scriptCommand(c, 'renew');
    this.releaseScript = scriptCommand(c, 'release');
  }

  async take(sandboxId: string): Promise<boolean> {
    assertLeaseSandboxId(sandboxId);
    const reply = await this.run('take', sandboxId, () =>
      this.takeScript(...this.keysFor(sandboxId), this.ownerId, this.ttlMs),
    );
    return this.flag('take', sandboxId, reply);
  }

  async claim(sandboxId: string, options: ClaimOptions = {}): Promise<boolean> {
    assertLeaseSandboxId(sandboxId);
    const op = options.forDestroy ? 'claim (for destroy)' : 'claim';
    const reply = await this.run(op, sandboxId, () =>
      this.claimScript(
        ...this.keysFor(sandboxId),
        this.ownerId,
        this.ttlMs,
        options.forDestroy ? '1' : '0',
      ),
    );
    return this.flag(op, sandboxId, reply);
  }

  async renew(sandboxId: string): Promise<RenewOutcome> {
    assertLeaseSandboxId(sandboxId);
    const reply = await this.run('renew', sandboxId, () =>
      this.renewScript(...this.keysFor(sandboxId), this.ownerId, this.ttlMs),
    );
    if (reply === 1) return RenewOutcome.RENEWED;
    if (reply === -1) return RenewOutcome.LAPSED;
    if (reply === 0) return RenewOutcome.LOST;
    throw this.unexpected('renew', sandboxId, reply);
  }

  async release(sandboxId: string): Promise<void> {
    assertLeaseSandboxId(sandboxId);
    const reply = await this.run('release', sandboxId, () =>
      this.releaseScript(...this.keysFor(sandboxId), this.ownerId),
    );
    this.flag('release', sandboxId, reply);
  }

  /** A plain GET: a single read is atomic without a script. */
  async owner(sandboxId: string): Promise<LeaseHolder | undefined> {
    assertLeaseSandboxId(sandboxId);
    const raw = await this.run('read the owner of', sandboxId, (c) =>
      c.get(this.keys.leaseKey(sandboxId)),
    );
    if (raw === null) return undefined;
    const holder = LeaseValue.decode(raw);
    // Someone else's data under our key: report "unknown" rather than guess an owner, so adopt and
    // reap paths (which fail closed on errors) leave the sandbox alone.
    if (holder === undefined) {
      throw new OwnershipBackendError(
        `unrecognised lease value at ${this.keys.leaseKey(sandboxId)}: ${JSON.stringify(raw.slice(0, 80))}`,
        { details: { operation: 'owner', sandbox_id: sandboxId } },
      );
    }
    return holder;
  }

  /** Idempotent; closes the client only if the store built it. */
  async close(): Promise<void> {
    await this.connection.close();
  }

  private keysFor(sandboxId: string): [number, ...string[]] {
    const lease = this.keys.leaseKey(sandboxId);
    return this.historyKey === undefined ? [1, lease] : [2, lease, this.historyKey];
  }

  private async run<T>(
    operation: string,
    sandboxId: string,
    fn: (client: Redis) => Promise<T>,
  ): Promise<T> {
    try {
      return await this.connection.call(fn);
    } catch (err) {
      if (isSbxError(err)) throw err;
      const message = errorMessage(err);
      throw new OwnershipBackendError(
        `failed to ${operation} sandbox ${sandboxId} ownership in Redis: ${message}`,
        { cause: err, details: { operation, sandbox_id: sandboxId } },
      );
    }
  }

  private flag(operation: string, sandboxId: string, reply: unknown): boolean {
    if (reply === 1) return true;
    if (reply === 0) return false;
    throw this.unexpected(operation, sandboxId, reply);
  }

  private unexpected(operation: string, sandboxId: string, reply: unknown): OwnershipBackendError {
    return new OwnershipBackendError(
      `unexpected Redis reply to ${operation} for sandbox ${sandboxId}: ${JSON.stringify(reply)}`,
      { details: { operation, sandbox_id: sandboxId } },
    );
  }
}

/**
 * Builds a `RedisOwnershipStore` from a URL (creating and owning an ioredis client with
 * `recommendedRedisOptions`) or around an injected `client`. Connecting is lazy: an unreachable
 * server surfaces as `OwnershipBackendError` on the first call, not here.
 */
export async function createRedisOwnershipStore(
  options: CreateRedisOwnershipStoreOptions,
): Promise<RedisOwnershipStore> {
  const connection = await RedisConnection.open(options, REQUIRED_BY);
  return new RedisOwnershipStore(connection, options);
}

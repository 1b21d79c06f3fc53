// Public API of @sbx/ownership-redis.

// --- ownership lease store
export { RedisOwnershipStore, createRedisOwnershipStore } from './redis-ownership-store.js';
export type {
  RedisOwnershipStoreOptions,
  CreateRedisOwnershipStoreOptions,
} from './redis-ownership-store.js';

// --- capacity ledger
export { RedisCapacityStore, createRedisCapacityStore } from './redis-capacity-store.js';
export type {
  RedisCapacityStoreOptions,
  CreateRedisCapacityStoreOptions,
} from './redis-capacity-store.js';

// --- keys and connection
export { keyLayout, DEFAULT_KEY_PREFIX, DEERFLOW_KEY_PREFIX } from './key-layout.js';
export type { KeyLayout, KeyLayoutOptions, KeyCompat } from './key-layout.js';
export {
  RedisConnection,
  recommendedRedisOptions,
  DEFAULT_COMMAND_TIMEOUT_MS,
} from './redis-connection.js';
export type { RedisConnectionOptions } from './redis-connection.js';

// --- Lua sources (for inspection, redis-cli --eval, benchmarks)
export { LUA_SCRIPTS } from './lua-scripts.js';
export type { LuaScriptName } from './lua-scripts.js';

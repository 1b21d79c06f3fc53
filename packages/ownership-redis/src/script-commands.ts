import type { Redis } from 'ioredis';
import { LUA_SCRIPTS } from './lua-scripts.js';
import type { LuaScriptName } from './lua-scripts.js';

/** ioredis command names; namespaced so they cannot collide with a host's own commands. */
const COMMAND_NAMES: Record<LuaScriptName, string> = {
  take: 'sbxOwnershipTake',
  claim: 'sbxOwnershipClaim',
  renew: 'sbxOwnershipRenew',
  release: 'sbxOwnershipRelease',
  capacity: 'sbxCapacityLedger',
};

export type ScriptCommand = (
  numKeys: number,
  ...keysAndArgs: (string | number)[]
) => Promise<unknown>;

/**
 * Registers the scripts on the client once. ioredis sends EVAL the first time per connection and
 * EVALSHA afterwards, and re-sends EVAL when the server answers NOSCRIPT (script cache flushed or a
 * restarted server), so callers never manage SHAs themselves. The key count is passed per call,
 * which lets the diagnostics list ride along as an optional second key.
 */
export function scriptCommand(client: Redis, name: LuaScriptName): ScriptCommand {
  const commandName = COMMAND_NAMES[name];
  const table = client as unknown as Record<string, ScriptCommand | undefined>;
  if (typeof table[commandName] !== 'function') {
    client.defineCommand(commandName, { lua: LUA_SCRIPTS[name] });
  }
  const command = table[commandName];
  if (typeof command !== 'function')
    throw new Error(`could not register Lua command ${commandName}`);
  return command.bind(client);
}

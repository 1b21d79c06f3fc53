-- claim: the gate of every adopt/reap path. Succeeds only if the lease is absent or already ours.
-- With ARGV[3] == '1' the lease is written as `del:` (a stop is in progress; `take` is refused).
-- A non-destroy claim refuses our own `del:`: the stop it marks is already in flight, and
-- downgrading the marker to `own:` would let a `take` hand out a sandbox about to die.
--
-- KEYS[1] lease key
-- KEYS[2] optional: diagnostics list (tests only)
-- ARGV[1] owner id
-- ARGV[2] lease TTL in milliseconds
-- ARGV[3] '1' for a destroy claim, '0' otherwise
--
-- Returns 1 when the lease is now ours in the requested state (TTL reset), else 0.
local key = KEYS[1]
local destroy = ARGV[3] == '1'
local mine_own = 'own:' .. ARGV[1]
local mine_del = 'del:' .. ARGV[1]
local cur = redis.call('GET', key)
local result = 0
if cur == mine_del and not destroy then
  result = 0
elseif (not cur) or cur == mine_own or cur == mine_del then
  redis.call('SET', key, destroy and mine_del or mine_own, 'PX', ARGV[2])
  result = 1
end
if KEYS[2] then
  redis.call('RPUSH', KEYS[2], cjson.encode({
    op = destroy and 'claim-destroy' or 'claim', key = key, owner = ARGV[1], before = cur or '',
    after = redis.call('GET', key) or '', result = result,
  }))
end
return result

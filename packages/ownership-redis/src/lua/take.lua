-- take: the acquire path. Hands the lease to ARGV[1] from anyone except a teardown in progress,
-- because a sandbox is deterministic per (user, thread) and consecutive turns may land on any
-- instance; only a `del:` lease (a stop is underway) refuses, so a sandbox about to die is never
-- handed out again.
--
-- KEYS[1] lease key
-- KEYS[2] optional: diagnostics list; one JSON record per call is appended (tests only)
-- ARGV[1] owner id
-- ARGV[2] lease TTL in milliseconds
--
-- Returns 1 when the lease is now `own:<ARGV[1]>` (TTL reset), 0 when a `del:` lease refused it.
local key = KEYS[1]
local cur = redis.call('GET', key)
local result = 0
if not (cur and string.sub(cur, 1, 4) == 'del:') then
  redis.call('SET', key, 'own:' .. ARGV[1], 'PX', ARGV[2])
  result = 1
end
if KEYS[2] then
  redis.call('RPUSH', KEYS[2], cjson.encode({
    op = 'take', key = key, owner = ARGV[1], before = cur or '',
    after = redis.call('GET', key) or '', result = result,
  }))
end
return result

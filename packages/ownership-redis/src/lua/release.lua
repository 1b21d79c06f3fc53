-- release: drop our own lease, in either state. A peer's lease is never cleared: a release that
-- raced a takeover must not free a sandbox the new owner is using.
--
-- KEYS[1] lease key
-- KEYS[2] optional: diagnostics list (tests only)
-- ARGV[1] owner id
--
-- Returns 1 when our lease was deleted, else 0.
local key = KEYS[1]
local cur = redis.call('GET', key)
local result = 0
if cur == 'own:' .. ARGV[1] or cur == 'del:' .. ARGV[1] then
  redis.call('DEL', key)
  result = 1
end
if KEYS[2] then
  redis.call('RPUSH', KEYS[2], cjson.encode({
    op = 'release', key = key, owner = ARGV[1], before = cur or '',
    after = redis.call('GET', key) or '', result = result,
  }))
end
return result

-- renew: extend our own `own:` lease. Never (re-)acquires: an absent lease is reported as lapsed
-- so the caller re-establishes it with an ordinary claim, while a lease held by anyone else, or our
-- own teardown marker, is lost for good. Keeping "absent" apart from "someone else's" is what lets
-- every owner survive a Redis restart without persistence.
--
-- KEYS[1] lease key
-- KEYS[2] optional: diagnostics list (tests only)
-- ARGV[1] owner id
-- ARGV[2] lease TTL in milliseconds
--
-- Returns 1 (renewed), -1 (lapsed: absent), 0 (lost).
local key = KEYS[1]
local cur = redis.call('GET', key)
local result
if not cur then
  result = -1
elseif cur == 'own:' .. ARGV[1] then
  redis.call('PEXPIRE', key, ARGV[2])
  result = 1
else
  result = 0
end
if KEYS[2] then
  redis.call('RPUSH', KEYS[2], cjson.encode({
    op = 'renew', key = key, owner = ARGV[1], before = cur or '',
    after = redis.call('GET', key) or '', result = result,
  }))
end
return result

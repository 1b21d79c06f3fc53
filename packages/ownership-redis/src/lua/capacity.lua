-- The deployment-wide capacity ledger: one hash, every operation one atomic call.
--
-- Fields: meta:state (initializing | ready), meta:hard_limit, meta:revision, r:<token> (in-flight
-- create; value = server ms when reserved), s:<sandbox id> (tracked VM; '1', or 'm:<ms>' once a
-- complete inventory omitted it). Every r: and s: field holds one slot: usage = HLEN - 3.
--
-- KEYS[1] the ledger hash
-- ARGV[1] operation: revision | reserve | release | track | reconcile
-- ARGV[2] the caller's hard limit (text); must equal meta:hard_limit once the ledger exists
-- ARGV[3..] per operation, see below
local key = KEYS[1]
local op = ARGV[1]
local limit = ARGV[2]
local META_FIELDS = 3

local state = redis.call('HGET', key, 'meta:state')
local stored_limit = redis.call('HGET', key, 'meta:hard_limit')
-- Gateways that disagree about the limit must not silently share one ledger: fail every call.
if state and stored_limit ~= limit then
  return redis.error_reply('capacity ledger configuration mismatch: configured hard_limit=' ..
    limit .. ', ledger hard_limit=' .. tostring(stored_limit or '<missing>'))
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function revision()
  return tonumber(redis.call('HGET', key, 'meta:revision') or '0') or 0
end

local function bump()
  redis.call('HINCRBY', key, 'meta:revision', 1)
end

local function initialise()
  redis.call('HSET', key, 'meta:state', 'initializing', 'meta:hard_limit', limit,
    'meta:revision', '0')
  state = 'initializing'
end

-- Marks a VM present; true when that changed anything (absent, or carrying an m: marker).
local function mark_present(id)
  local field = 's:' .. id
  if redis.call('HGET', key, field) ~= '1' then
    redis.call('HSET', key, field, '1')
    return true
  end
  return false
end

-- revision: no ARGV. Reads only; never initialises.
if op == 'revision' then
  return revision()
end

-- reserve: ARGV[3] token. A missing or initializing ledger admits nothing (fail closed).
if op == 'reserve' then
  if state ~= 'ready' then return 'NOT_READY' end
  local field = 'r:' .. ARGV[3]
  if redis.call('HEXISTS', key, field) == 1 then return 'GRANTED' end
  if redis.call('HLEN', key) - META_FIELDS >= tonumber(limit) then return 'FULL' end
  redis.call('HSET', key, field, string.format('%d', now_ms()))
  bump()
  return 'GRANTED'
end

-- release: ARGV[3] sandbox id. Never touches reservations; a missing ledger stays missing.
if op == 'release' then
  if state and redis.call('HDEL', key, 's:' .. ARGV[3]) == 1 then bump() end
  return 'OK'
end

if op == 'reconcile' and not state and tonumber(ARGV[3]) ~= 0 then
  return 'STALE'
end
if not state then initialise() end

-- track: ARGV[3] sandbox id, ARGV[4] reservation token or ''. Never checks the limit: a VM that
-- exists must be counted even when it overflows.
if op == 'track' then
  local changed = false
  if ARGV[4] ~= '' and redis.call('HDEL', key, 'r:' .. ARGV[4]) == 1 then changed = true end
  if mark_present(ARGV[3]) then changed = true end
  if changed then bump() end
  return 'OK'
end

-- reconcile: ARGV[3] expected revision, ARGV[4] '1' if the inventory is complete, ARGV[5] max age
-- in ms, then (sandbox id, reservation token or '') pairs. Applied only if the revision still
-- matches (compare-and-set). Only a complete inventory marks, expires or flips the state.
if op == 'reconcile' then
  if revision() ~= tonumber(ARGV[3]) then return 'STALE' end
  local changed = false
  local listed = {}
  for i = 6, #ARGV, 2 do
    local id = ARGV[i]
    local token = ARGV[i + 1] or ''
    listed[id] = true
    if token ~= '' and redis.call('HDEL', key, 'r:' .. token) == 1 then changed = true end
    if mark_present(id) then changed = true end
  end
  if ARGV[4] == '1' then
    local now = now_ms()
    local stale_before = now - tonumber(ARGV[5])
    local all = redis.call('HGETALL', key)
    for i = 1, #all, 2 do
      local field, value = all[i], all[i + 1]
      local kind = string.sub(field, 1, 2)
      if kind == 's:' then
        if not listed[string.sub(field, 3)] then
          local since = nil
          if string.sub(value, 1, 2) == 'm:' then since = tonumber(string.sub(value, 3)) end
          if not since then
            -- First omission: keep the slot for one more max age; the listing may simply have
            -- missed a VM tracked after it was taken.
            redis.call('HSET', key, field, 'm:' .. string.format('%d', now))
            changed = true
          elseif since <= stale_before then
            redis.call('HDEL', key, field)
            changed = true
          end
        end
      elseif kind == 'r:' then
        local reserved_at = tonumber(value)
        if reserved_at and reserved_at <= stale_before then
          -- A create that never reached track() nor appeared in a listing: abandoned.
          redis.call('HDEL', key, field)
          changed = true
        end
      end
    end
    if state ~= 'ready' then
      redis.call('HSET', key, 'meta:state', 'ready')
      changed = true
    end
  end
  if changed then bump() end
  return 'APPLIED'
end

return redis.error_reply('unknown capacity operation: ' .. tostring(op))

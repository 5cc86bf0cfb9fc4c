-- required by: acquire release extend inspect leave
-- A prelude: put in front of every script whose first line names it in
-- "-- requires:" (lock/scripts/compose.rs assembles them). It comes after
-- holder.lua, queue.lua and reader_records.lua, whose functions it uses.
-- Shared holders (`--shared`, as flock -s): many readers at once, or one
-- writer. The writer is the lock KEYS[1] as ever; each reader is its token
-- in the sorted set KEYS[9], scored by when it lapses in this server's
-- clock (ms). A shared attempt takes a server when KEYS[1] is absent; an
-- exclusive one when KEYS[1] is absent and KEYS[9] holds no live member.
-- Both are decided inside one script, so this server's single-threaded
-- order never lets a reader and a writer both succeed here; each holds only
-- with a majority, and two majorities meet on a server (docs/safety.md).
-- The set's own expiry is kept at least its latest member's lapse, so that
-- it goes with its last reader and with the server's data (the restart
-- guard covers it as it covers the key).
-- A ticket in line (queue.lua) ends in SHARED_TICKET when its waiter is a
-- reader: a writer in line keeps new readers out (writer preference), and
-- when the line's head is a run of readers they all enter together.
-- A call that is no reader's gets only the exclusive attempt's half of
-- take_lock and lock_takeable (the `-- when shared:` blocks,
-- lock/scripts/compose.rs), and of the rest only what it uses.

local SHARED_TICKET = "-shared"

-- Whether `ticket` is a reader's.
local function is_shared_ticket(ticket)
  return ticket ~= nil and #ticket > #SHARED_TICKET
    and string.sub(ticket, -#SHARED_TICKET) == SHARED_TICKET
end

-- How many live readers hold KEYS[9], once lapsed ones are dropped (by
-- `now`, this server's clock in ms; without it every member counts, which
-- only ever keeps a writer out). 0 for a key of another type: not ours.
-- Only commands of the documented least-privileged ACL (docs/operations.md)
-- are used: TYPE first, so that a lock nobody takes shared costs nothing
-- more; ZRANGEBYSCORE and ZREM drop lapsed readers (64 at a time), ZCOUNT
-- counts the live ones.
local function live_readers(now)
  local kind = redis.call("TYPE", KEYS[9])["ok"]
  if kind ~= "zset" then
    return 0
  end
  if not now then
    return redis.call("ZCOUNT", KEYS[9], "-inf", "+inf")
  end
  local lapsed = redis.call("ZRANGEBYSCORE", KEYS[9], "-inf", now, "LIMIT", 0, 64)
  if #lapsed > 0 then
    redis.call("ZREM", KEYS[9], unpack(lapsed))
    forget_readers(lapsed)
  end
  return redis.call("ZCOUNT", KEYS[9], "(" .. now, "+inf")
end

-- Keeps the set alive for at least `ttl` ms from now.
local function readers_live_for(ttl)
  local left = redis.call("PTTL", KEYS[9])
  if left < ttl then
    redis.call("PEXPIRE", KEYS[9], ttl)
  end
  reader_records_follow()
end

-- The attempt itself, for acquire.lua: ARGV[9] is "1" for a shared one.
-- An exclusive attempt is SET NX PX with its holder record, unless live
-- readers hold the lock here; a shared one adds its token to KEYS[9] for
-- ARGV[2] ms, unless a writer (or any key) holds KEYS[1]. Returns whether
-- the attempt holds this server now.
local function take_lock(now)
  local ttl = tonumber(ARGV[2])
  -- when shared:
  if ARGV[9] == "1" then
    if not now then
      error({err = "ERR a shared lock needs TIME (this server's clock), which the ACL denies"})
    end
    local kind = redis.call("TYPE", KEYS[9])["ok"]
    if redis.call("TYPE", KEYS[1])["ok"] ~= "none" or (kind ~= "none" and kind ~= "zset") then
      return false
    end
    live_readers(now)
    redis.call("ZADD", KEYS[9], tonumber(now) + ttl, ARGV[1])
    write_reader_record(ARGV[4], false)
    readers_live_for(ttl)
    return true
  end
  -- end when
  if live_readers(now) == 0 and redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
    write_holder(ARGV[4], ttl, false)
    return true
  end
  return false
end

-- Whether take_lock(now) would take this server: KEYS[1] absent and, for
-- an exclusive attempt, no live reader, or for a shared one no key of
-- another type where the readers go. Writes nothing but the lapsed
-- readers' removal.
local function lock_takeable(now)
  if redis.call("TYPE", KEYS[1])["ok"] ~= "none" then
    return false
  end
  -- when shared:
  if ARGV[9] == "1" then
    local kind = redis.call("TYPE", KEYS[9])["ok"]
    return kind == "none" or kind == "zset"
  end
  -- end when
  return live_readers(now) == 0
end

-- For a shared attempt whose line has `first` at its head: the first
-- writer's ticket ahead of this caller's `ticket` (anywhere in line for a
-- caller without one), or nil when only readers are ahead: a run of
-- readers enters together. An exclusive attempt keeps `first`. A line too
-- long to read counts as a writer ahead: the line only ever keeps out.
local function first_writer(first, ticket)
  local ahead = redis.pcall("ZRANGE", KEYS[3], 0, 255)
  if type(ahead) ~= "table" or ahead.err then
    return first
  end
  for _, waiter in ipairs(ahead) do
    if waiter == ticket then
      return nil
    elseif not is_shared_ticket(waiter) then
      return waiter
    end
  end
  if #ahead > 255 then
    return first
  end
  return nil
end

local function writer_ahead(first, ticket)
  if ARGV[9] ~= "1" or first == nil then
    return first
  end
  return first_writer(first, ticket)
end

-- Whether the lock is free for a writer: no key, no live reader.
local function lock_free(now)
  return redis.call("TYPE", KEYS[1])["ok"] == "none" and live_readers(now) == 0
end

-- acquire.lua's reply when an exclusive attempt found live readers:
-- {"readers", how many, ms until the set lapses, clock}; nil otherwise.
local function readers_reply(now)
  if ARGV[9] == "1" or redis.call("TYPE", KEYS[1])["ok"] ~= "none" then
    return nil
  end
  local count = live_readers(now)
  if count == 0 then
    return nil
  end
  return {"readers", count, redis.call("PTTL", KEYS[9]), now}
end

-- Announces whose turn it is now to the waiters listening on `channel`.
-- The waiter first in line (first_in_line, queue.lua; now_ms from
-- holder.lua) alone may take the lock now: its ticket goes on that
-- waiter's own channel (`channel`, a NUL, its ticket), so that no other
-- waiter wakes. When the line's head is a reader, "shared<" and the first
-- writer's ticket (empty when none stands in line) go on `channel` itself,
-- where every waiter listens: every reader whose ticket sorts before it
-- may try now, so the whole run at the head enters together. Nobody in
-- line: "" there (everyone may try). pcall: announcing is an
-- optimisation, and an ACL without PUBLISH (or without the channel) must
-- not fail the caller.
local function announce(channel)
  local now = now_ms()
  local turn = (now and first_in_line(now)) or ""
  if is_shared_ticket(turn) then
    turn = "shared<" .. (first_writer(turn, "") or "")
  end
  if turn ~= "" and string.sub(turn, 1, 7) ~= "shared<" then
    redis.pcall("PUBLISH", channel .. "\0" .. turn, turn)
  else
    redis.pcall("PUBLISH", channel, turn)
  end
end

-- For release.lua and extend.lua, when KEYS[1] does not hold the token
-- ARGV[1] (`state`, from token_state): whether a reader's does. A lapsed
-- member is dropped and reads as gone. Returns "held", or `state`.
local function reader_state(state)
  if redis.pcall("TYPE", KEYS[9])["ok"] ~= "zset" then
    return state
  end
  local lapses = redis.call("ZSCORE", KEYS[9], ARGV[1])
  if not lapses then
    return state
  end
  local now = now_ms()
  if now and tonumber(lapses) <= tonumber(now) then
    redis.call("ZREM", KEYS[9], ARGV[1])
    forget_readers({ARGV[1]})
    return state
  end
  return "held"
end

-- Releases a reader's token (reader_state said "held") and announces it
-- on the channel ARGV[2] as release.lua does: 1.
local function release_reader()
  redis.call("ZREM", KEYS[9], ARGV[1])
  forget_readers({ARGV[1]})
  -- when announce:
  if ARGV[2] and ARGV[2] ~= "" then
    announce(ARGV[2])
  end
  -- end when
  return 1
end

-- Extends a reader's token to ARGV[2] ms from now, never shorter: 1.
-- Without this server's clock it cannot be rescored, and says so rather
-- than claim an extension it did not make.
local function extend_reader()
  local now = now_ms()
  if not now then
    return redis.error_reply("ERR a shared lock needs TIME (this server's clock), which the ACL denies")
  end
  local wanted = tonumber(ARGV[2])
  local lapses = tonumber(redis.call("ZSCORE", KEYS[9], ARGV[1]))
  local until_ms = tonumber(now) + wanted
  if until_ms > lapses then
    redis.call("ZADD", KEYS[9], "XX", until_ms, ARGV[1])
  end
  write_reader_record(ARGV[3], true)
  readers_live_for(wanted)
  return 1
end

-- For inspect.lua: {live readers, the set's PTTL, up to 16 of them as
-- token, lapse ms (from now) pairs, their records (reader_records.lua)}.
local function readers_seen(now, wanted)
  local count = live_readers(now)
  local seen = {}
  if count > 0 then
    local tokens = redis.call("ZRANGE", KEYS[9], 0, 15, "WITHSCORES")
    for i = 1, #tokens, 2 do
      if tokens[i] == wanted then
        wanted = nil
      end
      seen[#seen + 1] = tokens[i]
      seen[#seen + 1] = math.max(tonumber(tokens[i + 1]) - tonumber(now or 0), 0)
    end
    -- The one token asked after (a nested exec's), when the first 16 left
    -- it out, so that a reader among many still finds itself.
    local score = wanted and wanted ~= "" and redis.call("ZSCORE", KEYS[9], wanted)
    if score and tonumber(score) > tonumber(now or 0) then
      seen[#seen + 1] = wanted
      seen[#seen + 1] = tonumber(score) - tonumber(now or 0)
    end
  end
  return {count, redis.call("PTTL", KEYS[9]), seen, reader_records_of(seen)}
end

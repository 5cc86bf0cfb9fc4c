-- required by: acquire release extend inspect list force leave
-- A prelude: put in front of every script whose first line names it in
-- "-- requires:" (lock/scripts/compose.rs assembles them). It comes after
-- holder.lua, whose functions it uses, and before shared.lua, which calls
-- it.
-- Readers' holder records: what holder.lua keeps for a writer, kept for
-- each reader (--shared) in the hash KEYS[10] beside the readers set
-- KEYS[9]: one field per reader's token, "<since> <record>" as KEYS[2]
-- holds a writer's (<since> is this server's clock in ms when the reader
-- took the lock). A field goes whenever its token leaves the set
-- (released, lapsed and dropped, broken with release --force), and the
-- hash is given the set's remaining life whenever the set's changes, so
-- that it never outlives its readers. Information only, as a writer's
-- record: every call that writes is a pcall, and an ACL without the hash
-- commands leaves no record rather than failing the lock.

-- Whether KEYS[10] may be written or deleted: missing, or a hash. A key of
-- another type there is someone else's; left alone.
local function reader_records_writable()
  if not KEYS[10] then
    return false
  end
  local kind = redis.pcall("TYPE", KEYS[10])
  return type(kind) == "table" and (kind["ok"] == "none" or kind["ok"] == "hash")
end

-- The record of reader `token` in the hash `records_key`, or false (none,
-- not a hash, or longer than any record: LONGEST_RECORD, holder.lua).
local function reader_record(records_key, token)
  local length = redis.pcall("HSTRLEN", records_key, token)
  if type(length) == "number" and length > LONGEST_RECORD then
    return false
  end
  local record = redis.pcall("HGET", records_key, token)
  if type(record) ~= "string" then
    return false
  end
  return record
end

-- Writes the record `record` of the reader ARGV[1] (acquire's ARGV[4],
-- extend's ARGV[3]); keeps the time it was taken when `keep_since`. An
-- empty record writes nothing (nor does an ACL without TIME or HSET).
local function write_reader_record(record, keep_since)
  if not record or record == "" or not reader_records_writable() then
    return
  end
  local since = nil
  if keep_since then
    local old = reader_record(KEYS[10], ARGV[1])
    since = old and string.match(old, "^(%d+) ")
  end
  since = since or now_ms()
  if since then
    redis.pcall("HSET", KEYS[10], ARGV[1], since .. " " .. record)
  end
end

-- Drops the records of `tokens`, readers that left the set KEYS[9].
local function forget_readers(tokens)
  if #tokens > 0 and reader_records_writable() then
    redis.pcall("HDEL", KEYS[10], unpack(tokens))
  end
end

-- Gives the records the readers set's remaining life, or deletes them
-- with the set.
local function reader_records_follow()
  if not reader_records_writable() then
    return
  end
  local left = redis.call("PTTL", KEYS[9])
  if left > 0 then
    redis.pcall("PEXPIRE", KEYS[10], left)
  elseif left == -2 then
    redis.pcall("DEL", KEYS[10])
  end
end

-- For shared.lua's readers_seen(): the record of each reader in `seen`
-- (token, ms pairs), in its order, false where there is none.
local function reader_records_of(seen)
  local records = {}
  for i = 1, #seen, 2 do
    records[#records + 1] = KEYS[10] and reader_record(KEYS[10], seen[i]) or false
  end
  return records
end

-- For list.lua: the live readers of the set `readers_key` at `now` (this
-- server's clock in ms; without it every member counts), read without
-- writing: {count, {token, ms until it lapses, record or false, ...} for up
-- to 16 of them}. {0, {}} for a key that is no readers set. TYPE first,
-- so that a lock nobody takes shared costs one cheap call more.
local function readers_listed(readers_key, records_key, now)
  if redis.call("TYPE", readers_key)["ok"] ~= "zset" then
    return {0, {}}
  end
  local after = "(" .. (now or "-inf")
  local count = redis.call("ZCOUNT", readers_key, after, "+inf")
  local seen = {}
  if count > 0 then
    local tokens = redis.call("ZRANGEBYSCORE", readers_key, after, "+inf",
      "WITHSCORES", "LIMIT", 0, 16)
    for i = 1, #tokens, 2 do
      seen[#seen + 1] = tokens[i]
      seen[#seen + 1] = math.max(tonumber(tokens[i + 1]) - tonumber(now or 0), 0)
      seen[#seen + 1] = reader_record(records_key, tokens[i])
    end
  end
  return {count, seen}
end

-- For force.lua (release --force): breaks the readers KEYS[9] with their
-- records KEYS[10]: every one, or with --if-token (ARGV[2]) only that
-- token's. Who broke them (ARGV[5]) is kept at KEYS[7] for what was left
-- of the set's life, as for a writer. `now` is this server's clock in ms
-- (false without TIME: every member counts as live). Returns how many
-- live readers it removed.
local function break_readers(now)
  if redis.call("TYPE", KEYS[9])["ok"] ~= "zset" then
    return 0
  end
  local after = "(" .. (now or "-inf")
  local left = redis.call("PTTL", KEYS[9])
  local removed = 0
  if ARGV[2] ~= "" then
    local lapses = redis.call("ZSCORE", KEYS[9], ARGV[2])
    if lapses and (not now or tonumber(lapses) > tonumber(now)) then
      removed = 1
    end
    redis.call("ZREM", KEYS[9], ARGV[2])
    forget_readers({ARGV[2]})
  else
    removed = redis.call("ZCOUNT", KEYS[9], after, "+inf")
    redis.call("DEL", KEYS[9])
    if reader_records_writable() then
      redis.pcall("DEL", KEYS[10])
    end
  end
  if removed > 0 and ARGV[5] ~= "" and now and left > 0 then
    redis.pcall("SET", KEYS[7], now .. " " .. ARGV[5], "PX", left)
  end
  return removed
end

-- Compare-and-expire: push the expiry out to ARGV[2] ms from now, only while
-- the key still holds our token. Never shortens it: a process that extends
-- with a shorter TTL must not cut short a lease its supervisor relies on.
-- A missing key is never re-created: once it expired, it may already belong
-- to someone else on the other servers. Returns 1 if the token holds the key.
-- A key of another type is "not ours" (WRONGTYPE); any other error, such as
-- an ACL that denies GET, reaches the client: it must never read as "lost".
local value = redis.pcall("GET", KEYS[1])
if type(value) == "table" and value.err then
  if string.match(value.err, "^%-?WRONGTYPE") then
    return 0
  end
  return redis.error_reply(value.err)
end
if value ~= ARGV[1] then
  return 0
end
local wanted = tonumber(ARGV[2])
local left = redis.call("PTTL", KEYS[1])
if left >= 0 and left < wanted then
  redis.call("PEXPIRE", KEYS[1], wanted)
end
return 1

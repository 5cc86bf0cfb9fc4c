-- Compare-and-delete: remove the lock only while it still holds our token.
-- pcall, so that a key of another type answers "not ours" (WRONGTYPE), while
-- any other error, such as an ACL that denies GET, reaches the client: it
-- must never read as "not ours".
local value = redis.pcall("GET", KEYS[1])
if type(value) == "table" and value.err then
  if string.match(value.err, "^%-?WRONGTYPE") then
    return 0
  end
  return redis.error_reply(value.err)
end
if value == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0

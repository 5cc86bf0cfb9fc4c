-- Compare-and-delete: remove the lock, and its holder record, only while it
-- still holds our token. (holds_token comes from token.lua.)
local held = holds_token()
if type(held) == "table" then
  return held
end
if held then
  redis.call("DEL", KEYS[2])
  return redis.call("DEL", KEYS[1])
end
return 0

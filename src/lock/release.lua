-- Compare-and-delete: remove the lock, and its holder record, only while it
-- still holds our token. (holds_token comes from token.lua, record_writable
-- from holder.lua.)
local held = holds_token()
if type(held) == "table" then
  return held
end
if held then
  if record_writable() then
    redis.pcall("DEL", KEYS[2])
  end
  return redis.call("DEL", KEYS[1])
end
return 0

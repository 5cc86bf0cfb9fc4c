-- requires: holder
-- `exec --cancel-in-progress` (lock/cancel.rs): whether the holder of the
-- token ARGV[1] was asked to stop (cancel.lua wrote "TOKEN WHO" to
-- KEYS[1]). Returns WHO, or false.
local asked = redis.pcall("GET", KEYS[1])
if type(asked) ~= "string" then
  return false
end
local mine = ARGV[1] .. " "
if string.sub(asked, 1, #mine) ~= mine then
  return false
end
return string.sub(asked, #mine + 1)

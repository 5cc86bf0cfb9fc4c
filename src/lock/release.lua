-- Compare-and-delete: remove the lock only while it still holds our token.
-- pcall, so that a key of another type answers "not ours" instead of WRONGTYPE.
if redis.pcall("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0

-- Compare-and-expire: push the expiry out only while the key still holds our
-- token. A missing key is never re-created: once it expired, it may already
-- belong to someone else on the other servers.
if redis.pcall("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0

-- required by: release extend
-- A prelude: put in front of every script whose first line names it in
-- "-- requires:" (lock/scripts/source.rs assembles them).
-- Whether KEYS[1] holds the token ARGV[1]: true or false, or an error reply
-- to return. pcall, so that a key of another type is simply not ours
-- (WRONGTYPE), while any other error, such as an ACL that denies GET,
-- reaches the client: it must never read as "not ours".
-- STRLEN first, so that a value of another length (a hostile one of
-- megabytes) is never moved; when STRLEN fails (WRONGTYPE, or an ACL from
-- before redlock used it) GET decides, as it always did.
local function holds_token()
  local length = redis.pcall("STRLEN", KEYS[1])
  if type(length) == "number" and length ~= #ARGV[1] then
    return false
  end
  local value = redis.pcall("GET", KEYS[1])
  if type(value) == "table" and value.err then
    if string.match(value.err, "^%-?WRONGTYPE") then
      return false
    end
    return redis.error_reply(value.err)
  end
  return value == ARGV[1]
end


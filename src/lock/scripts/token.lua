-- required by: release extend raise_fence mark_done
-- A prelude: put in front of every script whose first line names it in
-- "-- requires:" (lock/scripts/compose.rs assembles them).
-- What KEYS[1] holds against the token ARGV[1]: "held" (the token), "gone"
-- (no key: it expired, or the server restarted or was flushed) or "taken"
-- (another value, or a key of another type), or an error reply to return.
-- pcall, so that a key of another type is simply not ours (WRONGTYPE),
-- while any other error, such as an ACL that denies GET, reaches the
-- client: it must never read as "not ours".
-- STRLEN first, so that a value of another length (a hostile one of
-- megabytes) is never moved; when STRLEN fails (WRONGTYPE, or an ACL from
-- before redlock used it) or says 0 (a missing key, or an empty value),
-- GET decides, as it always did.
local function token_state()
  local length = redis.pcall("STRLEN", KEYS[1])
  if type(length) == "number" and length > 0 and length ~= #ARGV[1] then
    return "taken"
  end
  local value = redis.pcall("GET", KEYS[1])
  if type(value) == "table" and value.err then
    if string.match(value.err, "^%-?WRONGTYPE") then
      return "taken"
    end
    return redis.error_reply(value.err)
  end
  if value == ARGV[1] then
    return "held"
  elseif value == false then
    return "gone"
  end
  return "taken"
end

-- The reply of release.lua and extend.lua when the token does not hold the
-- key: 0 when the key is gone, 2 when another value holds it
-- (lock/scripts/token.rs parses it).
local function not_held_reply(state)
  return state == "gone" and 0 or 2
end

-- required by: acquire inspect list
-- A prelude: put in front of every script whose first line names it in
-- "-- requires:" (lock/scripts/compose.rs assembles them).
-- `--supersede` (lock/supersede.rs): KEYS[12] is the hash of the
-- superseding waiters of the lock KEYS[1], ticket -> "w WHO" for one that
-- stands in line, "x WHO" for one superseded, WHO being the waiter that
-- superseded it. WHO is "ORDER KIND PID HOST": ORDER the waiter's place
-- among superseding waiters (its --serial, or when it arrived, in ms by the
-- servers' clocks), 20 digits so that text order is number order, KIND
-- "serial" or "arrival", then its pid and host. A "w" entry counts only
-- while its ticket stands in line (KEYS[4], queue.lua): a waiter that took
-- the lock, left or lapsed is no longer pending, and a holder is never
-- superseded. The hash lives SUPERSEDE_KEPT_MS after its last write, so
-- that a superseded waiter hears it on its next attempt. Like the line it
-- only ever keeps a caller out (it exits), so it cannot weaken mutual
-- exclusion.

local SUPERSEDE_KEPT_MS = 60000

-- "ORDER TICKET": how two superseding waiters compare, the ticket breaking
-- ties.
local function superseding_order(who, ticket)
  return string.sub(who, 1, 20) .. " " .. ticket
end

-- The superseding waiters in the hash `hash` whose tickets are still in
-- line at `now` (`lapses`: the line's lapse times, KEYS[4] of a lock's
-- script), but `ticket`, as {ticket, WHO}; with `tidy`, an entry whose
-- ticket left the line is dropped (status and list write nothing). Also
-- returns `ticket`'s own entry, or nil.
-- A superseding waiter (`tidy`) needs HGETALL: a server whose ACL denies it
-- fails the attempt aloud, where status and list see no superseder.
local function superseding_waiters(hash, lapses, ticket, now, tidy)
  local all = (tidy and redis.call or redis.pcall)("HGETALL", hash)
  if type(all) ~= "table" or all.err ~= nil then
    return {}, nil
  end
  local pending, own = {}, nil
  for i = 1, #all, 2 do
    local t, entry = all[i], all[i + 1]
    if t == ticket then
      own = entry
    elseif string.sub(entry, 1, 2) == "w " then
      local lapse = redis.pcall("ZSCORE", lapses, t)
      if type(lapse) ~= "string" or tonumber(lapse) <= now then
        if tidy then
          redis.pcall("HDEL", hash, t)
        end
      else
        pending[#pending + 1] = {t, string.sub(entry, 3)}
      end
    end
  end
  return pending, own
end

-- The attempt of the superseding waiter `ticket` (WHO `who`) at `now`:
-- {"superseded", WHO} when it was superseded, or a newer superseding
-- waiter stands in line (it leaves the line here); else nil, and every
-- older superseding waiter in line is superseded by it: marked, taken out
-- of line, and woken on its own channel (`channel` NUL ticket, as
-- announce in shared.lua names a waiter; "" for none) so that its next
-- attempt hears it at once.
local function supersede(ticket, who, channel, now)
  local pending, own = superseding_waiters(KEYS[12], KEYS[4], ticket, now, true)
  if own and string.sub(own, 1, 2) == "x " then
    leave_line(ticket)
    return {"superseded", string.sub(own, 3)}
  end
  local mine = superseding_order(who, ticket)
  for _, other in ipairs(pending) do
    if superseding_order(other[2], other[1]) > mine then
      redis.pcall("HSET", KEYS[12], ticket, "x " .. other[2])
      leave_line(ticket)
      return {"superseded", other[2]}
    end
  end
  for _, other in ipairs(pending) do
    redis.pcall("HSET", KEYS[12], other[1], "x " .. who)
    leave_line(other[1])
    if channel ~= "" then
      redis.pcall("PUBLISH", channel .. "\0" .. other[1], other[1])
    end
  end
  redis.pcall("HSET", KEYS[12], ticket, "w " .. who)
  redis.pcall("PEXPIRE", KEYS[12], SUPERSEDE_KEPT_MS)
  return nil
end

-- The superseding waiter in line with the highest order at `now`, as WHO,
-- or false: what status and list show (`hash` and `lapses` as for
-- superseding_waiters).
local function pending_superseder(hash, lapses, now)
  local pending = superseding_waiters(hash, lapses, "", now, false)
  local best, best_order = false, nil
  for _, other in ipairs(pending) do
    local order = superseding_order(other[2], other[1])
    if not best_order or order > best_order then
      best, best_order = other[2], order
    end
  end
  return best
end

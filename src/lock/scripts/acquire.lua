-- requires: guard holder queue fence reader_records shared limit supersede
-- Take the lock: SET key token NX PX ttl, unless others are in line before
-- the caller, or this server may have lost locks within the restart guard
-- (ARGV[3] ms, 0 turns it off; the marker is KEYS[6]), read only when the
-- lock is free for the caller; and write the holder
-- record ARGV[4] beside it. Deciding it here costs no extra round trip
-- (restart_guard comes from guard.lua, the holder functions from
-- holder.lua, the line from queue.lua).
-- ARGV[5] is the caller's ticket ("" for a caller that does not stand in
-- line: it takes the lock only when nobody does), ARGV[6] its score,
-- ARGV[7] how long a ticket stays without its waiter, which is also how
-- long the line may keep a free lock from callers in a row. ARGV[8] is "1"
-- for a fenced attempt (fence.lua), ARGV[9] "1" for a shared one
-- (shared.lua: the attempt adds its token to the readers KEYS[9]),
-- ARGV[10] a semaphore slot's K ("" or none for any other lock; its record
-- is KEYS[11]: limit.lua), ARGV[12] a superseding waiter's WHO and
-- ARGV[13] its wake-up channel (supersede.lua: "" for any other caller;
-- the hash is KEYS[12]), ARGV[14] the done mark's id for a run once per
-- period or key ("" for none; its mark is KEYS[13]: below), ARGV[15] the
-- request's deadline (below).
-- Returns 1 taken ({"taken", counter} when fenced: taken_reply, fence.lua)
-- (or already ours: a request retried after a dropped
-- connection may find its own SET done), {"restarting", ms until counted
-- again, clock} (restart_guard's), {"queued", waiters in line, clock,
-- the tickets ahead of the caller's (queue.lua's tickets_ahead)} when the
-- lock is free but others are first in line, or, when another value
-- holds it, {"held", occupant()}; {"late", clock} for a request that
-- arrived past its deadline; {"superseded", WHO} for a superseding
-- waiter that a newer one superseded (supersede.lua); the error "LIMIT …" when the servers
-- record another K for this slot's semaphore. The clock is this server's
-- in ms (false without TIME): a waiter takes its place in line by the
-- servers' clocks, not its own. lock/scripts/acquire.rs parses the reply.
-- A semaphore's slot (ARGV[10] is its K, limit.lua) is refused where the
-- servers record another K (an error reply: limit_conflict).
-- ARGV[15] is the last moment, on this server's clock in ms, at which the
-- caller still waits for this reply ("" for none; lock/server_clock.rs). A request that arrives later, held up in a
-- partition or behind a paused server, does nothing: its caller gave up on
-- it, and the compare-and-delete written behind it may never arrive.
local now = now_ms()
local not_after = tonumber(ARGV[15])
if not_after and now and tonumber(now) > not_after then
  return {"late", now}
end
-- A run once per period or key (`--once-per`, `--once`: lock/once.rs):
-- the done mark KEYS[13] is read in the same call as the SET NX below, so
-- a mark written on this server before this call is never missed. A mark
-- of this run's id answers {"done", mark, clock} and takes nothing, busy
-- lock or free: the caller skips if any server says so. So does a mark of
-- a later period of the same DUR and shift ("per:DUR:SHIFT:N", N larger):
-- a run that fixed its period before the edge and reached the lock after
-- the next period's run would run the job a second time in the servers'
-- current period, and its mark would replace the newer one.
-- when once:
if ARGV[14] ~= "" then
  local mark = redis.call("GET", KEYS[13])
  local done = mark and string.sub(mark, 1, #ARGV[14] + 1) == ARGV[14] .. "\0"
  local base, n = string.match(ARGV[14], "^(per:%d+:%d+:)(%d+)$")
  if mark and not done and base then
    local later = string.match(mark, "^per:%d+:%d+:(%d+)%z")
    done = later ~= nil and string.sub(mark, 1, #base) == base
      and tonumber(later) > tonumber(n)
  end
  if done then
    return {"done", mark, now}
  end
end
-- end when
-- A text without it must never be sent for a run once: it would take the
-- lock of a period done already. One line, as the plain acquire sends it.
-- unless once:
if ARGV[14] ~= "" then return redis.error_reply("ERR a run once sent without its code") end
-- end when
-- when limit:
local other_limit = limit_conflict(ARGV[10])
if other_limit then
  return other_limit
end
-- end when
-- A text without the slot's, the fence's or the readers' code must never
-- be sent for a call that uses it: it would skip the K check, answer
-- without the counter, or take a reader's attempt for nothing. Refuse
-- rather than fail open.
-- unless limit:
if ARGV[10] and ARGV[10] ~= "" then
  return redis.error_reply("ERR a slot's attempt sent without the slot's code")
end
-- end when
-- unless fence:
if ARGV[8] == "1" then
  return redis.error_reply("ERR a fenced attempt sent without the fence's code")
end
-- end when
-- unless shared:
if ARGV[9] == "1" then
  return redis.error_reply("ERR a shared attempt sent without the readers' code")
end
-- end when
-- A fenced attempt takes no server whose counter cannot be used: that
-- server's failure, before its key is written (fence_read's error).
-- when fence:
if ARGV[8] == "1" then
  local counter = fence_read()
  if type(counter) == "table" then
    return counter
  end
end
-- end when
local ticket = ARGV[5]
local linger = tonumber(ARGV[7])
-- A superseding waiter (`--supersede`) superseded here leaves the line and
-- takes nothing; one that is not supersedes the older ones (supersede.lua).
-- when supersede:
if ticket ~= "" and now then
  local superseded = supersede(ticket, ARGV[12], ARGV[13], tonumber(now))
  if superseded then
    return superseded
  end
end
-- end when
local first = nil
if now then
  -- when shared:
  first = writer_ahead(first_in_line(now), ticket)
  -- end when
  -- unless shared:
  first = first_in_line(now)
  -- end when
end
-- ARGV[11] is "1" when the caller's last attempt found the lock free on a
-- majority and no ticket ahead of its own standing on a majority of the
-- servers that answered: a server that names another first missed calls a
-- majority saw (it was cut off), and the caller takes the free lock here
-- too, first or not (lock/line.rs; the model is tests/models/line.rs).
if first ~= nil and first ~= ticket and lock_free(now)
  and (ARGV[11] == "1" or line_steps_aside(now, linger)) then
  first = nil
end
if first == nil or first == ticket then
  -- The restart guard (two INFO calls) is read only where the lock would
  -- be written: a busy lock, a caller not first in line and a retried
  -- request that finds its own token cost it nothing. A server counts
  -- only through a SET (or ZADD) made here or a token of ours it kept, and
  -- the guard stands in front of every such write; a marker written later
  -- only starts the guard later.
  local restarting = lock_takeable(now) and restart_guard(tonumber(ARGV[3]), KEYS[6], ARGV[#ARGV])
  if restarting then
    return restarting
  end
  local taken = take_lock(now)
  if taken then
    redis.pcall("DEL", KEYS[5])
    -- The waiter leaves the line where it takes the lock, which saves the
    -- winner a round: while its key is here nobody else can take this
    -- server, and if the attempt wins too few servers, the compare-and-
    -- delete that undoes it puts the ticket back in its place (release.lua)
    -- before the lock is free here again, so the servers' lines still
    -- agree (with 2 of 5 servers down, every live one must). A server that
    -- did not take it is left by the winner afterwards (lock/retry.rs).
    -- A reader stays in line until it leaves everywhere: its leaving is
    -- what wakes the readers behind it (leave.lua).
    if ticket ~= "" and ARGV[9] == "1" and now then
      stand_in_line(ticket, ARGV[6], tonumber(now), linger)
    elseif ticket ~= "" then
      leave_line(ticket)
    end
  end
  -- Taken here, or already ours.
  if taken or holds_value(KEYS[1], ARGV[1]) then
    -- when limit:
    limit_live_for(ARGV[10], tonumber(ARGV[2]))
    -- end when
    -- when fence:
    return taken_reply()
    -- end when
    -- unless fence:
    return 1
    -- end when
  end
end
if ticket ~= "" and now then
  stand_in_line(ticket, ARGV[6], tonumber(now), linger)
end
local seen = readers_reply(now) or occupant()
if seen[1] == "readers" then
  return seen
elseif seen[1] == "none" then
  return {"queued", waiters_in_line(now), now, tickets_ahead(ticket)}
end
return {"held", seen}

-- requires: holder queue reader_records shared
-- A waiter that got the lock, gave up or was interrupted leaves the line
-- (KEYS[3], KEYS[4]; ARGV[1] its ticket) at once, so that the next one does
-- not wait for its ticket to lapse. If the lock is free, the next waiter may
-- take it now: that is announced on the channel ARGV[2] as a release is,
-- naming the next waiter (pcall: announcing is an optimisation).
-- (leave_line comes from queue.lua, announce from shared.lua.)
-- Returns 1 (lock/scripts/leave.rs checks it).
leave_line(ARGV[1])
if ARGV[2] ~= "" and redis.call("TYPE", KEYS[1])["ok"] == "none" then
  announce(ARGV[2])
end
return 1

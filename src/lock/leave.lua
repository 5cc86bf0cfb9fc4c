-- A waiter that got the lock, gave up or was interrupted leaves the line
-- (KEYS[3], KEYS[4]; ARGV[1] its ticket) at once, so that the next one does
-- not wait for its ticket to lapse. (leave_line comes from queue.lua.)
leave_line(ARGV[1])
return 1

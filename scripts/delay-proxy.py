#!/usr/bin/env python3
"""A TCP proxy that adds a fixed delay, for scripts/bench.

    delay-proxy.py DELAY_MS LISTEN_PORT:UPSTREAM_PORT...

Listens on 127.0.0.1:LISTEN_PORT for each pair and forwards every connection
to 127.0.0.1:UPSTREAM_PORT. Every chunk read from the client is written
upstream DELAY_MS later, so each request/reply round trip costs DELAY_MS more,
as if the server were that far away; replies are passed back at once. Order
is kept: chunks of one connection are scheduled at increasing times on one
event loop. An end-of-file from either side is passed on (after the delay
towards the server), and the connection closes when both sides have ended.

Only the Python 3 standard library. It runs until it is killed.
"""

import asyncio
import sys


async def pipe(reader, writer, delay):
    """Copies reader to writer, each chunk `delay` seconds after it arrived."""
    loop = asyncio.get_running_loop()
    try:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            if delay:
                loop.call_at(loop.time() + delay, writer.write, chunk)
            else:
                writer.write(chunk)
        if delay:
            # Scheduled after the last chunk, so it cannot overtake it.
            await asyncio.sleep(delay)
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        writer.close()


async def serve(listen_port, upstream_port, delay):
    async def handle(client_reader, client_writer):
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            pipe(client_reader, up_writer, delay),  # requests: delayed
            pipe(up_reader, client_writer, 0),  # replies: at once
        )
        up_writer.close()
        client_writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", listen_port, backlog=1024)
    return server


async def main(argv):
    if len(argv) < 2:
        sys.exit("usage: delay-proxy.py DELAY_MS LISTEN_PORT:UPSTREAM_PORT...")
    delay = float(argv[0]) / 1000.0
    servers = []
    for pair in argv[1:]:
        listen, upstream = (int(port) for port in pair.split(":"))
        servers.append(await serve(listen, upstream, delay))
    await asyncio.gather(*(server.serve_forever() for server in servers))


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1:]))
    except KeyboardInterrupt:
        pass

"""tslog's sans-I/O protocol: record batches, frames, messages and error codes.

Nothing in this package touches sockets, files or asyncio; the broker and the client feed it
bytes and get bytes back.
"""

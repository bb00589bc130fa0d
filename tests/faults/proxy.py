"""A TCP proxy that stands in for an S3 endpoint's front door, so a test can take the endpoint down.

    python proxy.py LISTEN_PORT UPSTREAM_PORT [--die-on-put N --match TEXT]

Forwards every connection on 127.0.0.1:LISTEN_PORT to 127.0.0.1:UPSTREAM_PORT (the moto server)
and prints `ready` once it listens. With `--die-on-put N` it exits (os._exit, like a SIGKILL:
the kernel resets every open connection and the port refuses new ones) when the N-th request
whose first line is `PUT <path containing TEXT>` arrives, before forwarding it: the upload in
progress loses its endpoint between two objects. Started again on the same port, the endpoint is
back with every object moto already held.

Why a proxy and not moto itself: moto keeps its objects in memory, so killing its process would
lose every object (data loss, not an outage); and stopping a ThreadedMotoServer leaves its
listening socket and keep-alive connections open, so clients would hang instead of being refused.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import sys
import threading


def pump(src: socket.socket, dst: socket.socket, on_chunk=None) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if on_chunk is not None:
                on_chunk(data)
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("listen", type=int)
    parser.add_argument("upstream", type=int)
    parser.add_argument("--die-on-put", type=int, default=0)
    parser.add_argument("--match", default="")
    args = parser.parse_args()

    lock = threading.Lock()
    seen = [0]
    needle = args.match.encode()

    def watch(chunk: bytes) -> None:
        if not args.die_on_put or not chunk.startswith(b"PUT "):
            return
        path = chunk.split(b" ", 2)[1]
        if needle not in path:
            return
        with lock:
            seen[0] += 1
            if seen[0] >= args.die_on_put:
                sys.stdout.write(f"died on PUT {path.decode(errors='replace')}\n")
                sys.stdout.flush()
                os._exit(0)

    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", args.listen))
    server.listen(64)
    print("ready", flush=True)
    while True:
        client, _ = server.accept()
        try:
            upstream = socket.create_connection(("127.0.0.1", args.upstream))
        except OSError:
            client.close()
            continue
        threading.Thread(target=pump, args=(client, upstream, watch), daemon=True).start()
        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()


if __name__ == "__main__":
    main()

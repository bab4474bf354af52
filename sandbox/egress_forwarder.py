"""Inside a sandbox whose container may reach a list of domains: listen on the loopback at
`127.0.0.1:3128` (where `HTTP_PROXY` and `HTTPS_PROXY` point) and carry each connection to
the container's egress proxy through the Unix socket at `/mnt/egress/proxy.sock` (the only
way out of the sandbox's network namespace; `sandbox/egress_proxy.py` decides).

    python -I egress_forwarder.py     # returns once it listens; it goes on in the background

Standard library only: it runs with the sandbox's Python, isolated (`-I`).
"""

from __future__ import annotations

import os
import socket
import sys
import threading

LISTEN = ("127.0.0.1", 3128)
PROXY_SOCKET = "/mnt/egress/proxy.sock"


def _copy(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for each in (source, target):
            try:
                each.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _carry(client: socket.socket) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(PROXY_SOCKET)
    except OSError:
        client.close()
        return
    threading.Thread(target=_copy, args=(client, upstream), daemon=True).start()
    _copy(upstream, client)


def serve(listener: socket.socket) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_carry, args=(client,), daemon=True).start()


def listening() -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(LISTEN)
    listener.listen(64)
    return listener


if __name__ == "__main__":
    bound = listening()
    if os.fork() != 0:
        sys.exit(0)  # the caller goes on once it listens
    os.setsid()
    serve(bound)

"""A stand-in OTLP/HTTP collector for the bench: accepts every export and drops it.

    python -m bench.otlp_sink --port N

Prints the number of exports and their bytes when stopped (SIGTERM), so the bench can say
that traces were sent.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

received = {"exports": 0, "bytes": 0}


class Sink(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        received["exports"] += 1
        received["bytes"] += length
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802 - readiness
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    server = ThreadingHTTPServer(("127.0.0.1", port), Sink)

    def stopped(*_: object) -> None:
        print(json.dumps(received), flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stopped)
    server.serve_forever()


if __name__ == "__main__":
    main()

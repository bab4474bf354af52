"""Asks a server's `/livez` every 10 ms until SIGTERM, then prints each answer's time (ms) as a
JSON list. A process of its own, so that what the client under test spends (serialising a
large body, say) is not counted as the server's.

    python -m bench.livez_probe http://127.0.0.1:8000
"""

from __future__ import annotations

import json
import signal
import sys
import time

import httpx

EVERY_SECONDS = 0.01


def main() -> None:
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    times: list[float] = []
    with httpx.Client(base_url=sys.argv[1], timeout=60) as http:
        http.get("/livez").raise_for_status()
        print("ready", flush=True)
        while not stopping:
            began = time.perf_counter()
            answer = http.get("/livez")
            times.append((time.perf_counter() - began) * 1000)
            if answer.status_code != 200:
                print(json.dumps({"failed": answer.status_code}), flush=True)
                return
            time.sleep(EVERY_SECONDS)
    print(json.dumps(times), flush=True)


if __name__ == "__main__":
    main()

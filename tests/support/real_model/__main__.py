"""`python -m tests.support.real_model <gguf> <options as JSON>`: serve it until killed."""

from __future__ import annotations

import json
import signal
import sys
import threading

from tests.support.real_model import TEMPLATE


def main() -> None:
    import xllamacpp

    path, options = sys.argv[1], json.loads(sys.argv[2])
    params = xllamacpp.CommonParams()
    params.model.path = path
    params.model_alias = {"smollm2"}
    params.hostnames = ["127.0.0.1"]
    params.port = options["port"]
    params.n_parallel = options["slots"]
    params.n_ctx = options["context"] * options["slots"]  # the server splits it among its slots
    # One core: the suite runs two test processes on two cores, and a generation on both would
    # starve the other's timing-sensitive tests.
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.use_jinja = True
    params.chat_template = TEMPLATE.read_text()
    params.embedding = options["embedding"]
    server = xllamacpp.Server(params)
    print(f"serving {path} at {server.listening_address}", flush=True)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    stopped.wait()


if __name__ == "__main__":
    main()

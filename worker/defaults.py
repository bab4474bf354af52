"""The two defaults a command names before it reads the whole configuration.

`durable-responses keys` needs only the store's URL, and `--help` only the task queue's name;
importing `worker.settings` for them would load most of the project (0.7 s of CPU a call).
"""

from __future__ import annotations

import os

DEFAULT_TASK_QUEUE = "durable-responses"
DEFAULT_DATABASE_URL = "sqlite:///./.durable-responses/responses.db"


def database_url_from_env() -> str:
    """`$DATABASE_URL`, or the default store beside the working directory."""
    return os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL

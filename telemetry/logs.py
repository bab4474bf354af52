"""Logging for every role: plain lines (`LOG_FORMAT=text`, the default) or one JSON object a
line (`LOG_FORMAT=json`), no colour codes, and expected events as one calm line.

What is expected is not an error: a user's cancel, an upstream error that will be retried, a
tool server that failed a call. Temporal logs each failed activity attempt at WARNING with the
whole chained traceback (twice over); for failures of the kinds our activities raise on
purpose, `CalmActivityFailures` turns that into one line without the traceback. Anything else
(a bug) keeps its traceback, once.

Log records never carry user text (input, output, instructions, tool arguments) above DEBUG:
messages name responses by id and errors by kind; `tests/stack/test_telemetry.py` greps a whole run.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from typing import Any

LOG_FORMATS = ("text", "json")

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

CONTEXT_FIELDS = (
    "response_id",
    "trace_id",
    "method",
    "route",
    "status",
    "duration_ms",
    "error_code",
    "param",
    "key_id",
    "activity",
    "attempt",
)
"""Fields a record may carry (`extra=`) that the JSON format writes as its own keys."""

EXPECTED_FAILURES = {
    # ApplicationError type -> the level of its one line
    "CancelRequestedError": logging.INFO,
    "CapacityWaitError": logging.DEBUG,  # benign too: the SDK logs it at DEBUG, and counts no failure
    "RetryableUpstreamError": logging.WARNING,
    "McpUnreachableError": logging.WARNING,
    "McpServerError": logging.WARNING,
    "McpRejectedError": logging.INFO,
    "WebhookUndeliveredError": logging.WARNING,
    "WebhookRefusedError": logging.WARNING,
}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in CONTEXT_FIELDS:
            value = record.__dict__.get(field)
            if value is not None:
                entry[field] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class CalmActivityFailures(logging.Filter):
    """On Temporal's activity logger: an attempt that failed in an expected way is one line
    at its level (INFO for a cancel), naming the activity, the response and the error."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.exc_info or not record.getMessage().startswith("Completing activity as failed"):
            return True
        error = record.exc_info[1]
        kind = getattr(error, "type", None)
        if kind not in EXPECTED_FAILURES:
            return True
        details = record.__dict__.get("temporal_activity") or {}
        record.levelno = EXPECTED_FAILURES[kind]
        record.levelname = logging.getLevelName(record.levelno)
        record.msg = "%s attempt %s of %s ended: %s"
        record.args = (
            details.get("activity_type", "activity"),
            details.get("attempt", "?"),
            details.get("workflow_id", "?"),
            getattr(error, "message", error),
        )
        record.exc_info = None
        record.exc_text = None
        record.response_id = details.get("workflow_id")
        record.activity = details.get("activity_type")
        record.attempt = details.get("attempt")
        return record.levelno >= logging.getLogger(record.name).getEffectiveLevel()


class CalmLongWorkflowTasks(logging.Filter):
    """On Temporal Core's logger: a workflow task that runs past 5 s is how a long model call
    looks (its local activity holds the task open, heartbeating it), not a fault. Core's
    warning with its dozen payload counters becomes one INFO line."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "TMPRL1104" not in message:
            return True
        record.levelno, record.levelname = logging.INFO, "INFO"
        duration = re.search(r"'workflow_task_duration': (\d+)", message)
        seconds = f" ({int(duration.group(1)) / 1000:.1f} s)" if duration else ""
        record.msg, record.args = (
            "a workflow task ran past 5 s%s: a long model call holds it open, as expected",
            (seconds,),
        )
        return record.levelno >= logging.getLogger("temporalio.core").getEffectiveLevel()


QUIET_LOGGERS = ("httpx", "httpx2", "transitions", "mcp.server.streamable_http_manager", "aiohttp.access")
"""Libraries that log every request or state change at INFO."""


_json_lines = False


def configure_logging(level: str = "INFO", log_format: str = "text") -> None:
    """The root logger writes to stderr in `log_format`; call once, at start."""
    global _json_lines
    if log_format not in LOG_FORMATS:
        raise ValueError(f"LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, not {log_format!r}")
    _json_lines = log_format == "json"
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in QUIET_LOGGERS:
        logging.getLogger(noisy).setLevel(logging.WARNING)
    install_filters()


def say(line: str) -> None:
    """A line for the person at the terminal (as a Ctrl-C is answered): plain on stderr, or
    a log record when the logs are JSON, so that stream stays one object a line."""
    if _json_lines:
        logging.getLogger("durable_responses").warning("%s", line)
    else:
        print(line, file=sys.stderr, flush=True)


def install_filters() -> None:
    """The filters that keep expected events calm (also for tests, which log through pytest)."""
    activity_logger = logging.getLogger("temporalio.activity")
    if not any(isinstance(existing, CalmActivityFailures) for existing in activity_logger.filters):
        activity_logger.addFilter(CalmActivityFailures())
    core_logger = logging.getLogger("temporalio.core")
    if not any(isinstance(existing, CalmLongWorkflowTasks) for existing in core_logger.filters):
        core_logger.addFilter(CalmLongWorkflowTasks())

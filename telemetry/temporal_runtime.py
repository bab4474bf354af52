"""The Temporal runtime every client of this process uses: Temporal Core's own log lines go
through Python's logging (so they take `LOG_FORMAT` and carry no terminal colour codes),
at WARNING and above."""

from __future__ import annotations

import logging
from functools import lru_cache

from temporalio.runtime import LogForwardingConfig, LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

CORE_LOGGER = logging.getLogger("temporalio.core")


@lru_cache(maxsize=1)
def temporal_runtime() -> Runtime:
    forwarded = LoggingConfig(filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
                              forwarding=LogForwardingConfig(logger=CORE_LOGGER))
    return Runtime(telemetry=TelemetryConfig(logging=forwarded))

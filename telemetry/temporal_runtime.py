"""The Temporal runtime every client of this process uses.

- Temporal Core's own log lines go through Python's logging (so they take `LOG_FORMAT` and
  carry no terminal colour codes), at WARNING and above.
- Temporal's SDK metrics (workflow and activity task latencies, polls, failures, sticky cache,
  ...) are buffered by Core and moved into this process's Prometheus registry, so one scrape
  of `/metrics` has both ours and Temporal's. The buffer is drained every few seconds and at
  each scrape.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from temporalio.runtime import (
    BUFFERED_METRIC_KIND_COUNTER,
    BUFFERED_METRIC_KIND_GAUGE,
    LogForwardingConfig,
    LoggingConfig,
    MetricBuffer,
    MetricBufferDurationFormat,
    Runtime,
    TelemetryConfig,
    TelemetryFilter,
)

CORE_LOGGER = logging.getLogger("temporalio.core")
BUFFER_SIZE = 100_000
DRAIN_SECONDS = 5.0
MAX_CHILDREN_KEPT = 10_000

TEMPORAL_REGISTRY = CollectorRegistry(auto_describe=True)
"""Temporal's SDK metrics, as Prometheus metrics (scraped with ours)."""

_NAME = re.compile(r"[^a-zA-Z0-9_]")


class TemporalMetrics:
    """Moves buffered Core metric updates into Prometheus metrics made on first sight, with the
    label names of the first update (later updates fill a missing label with "")."""

    def __init__(self, buffer: MetricBuffer) -> None:
        self.buffer = buffer
        self._metrics: dict[str, tuple[Any, tuple[str, ...]]] = {}
        self._children: dict[tuple[int, int], tuple[Any, Any, Any]] = {}
        """The Prometheus child of a (metric, attribute set): the SDK hands the same objects
        again for the same ones, so their ids find it without reading the labels each time
        (the objects are kept with it, so an id is never reused while it is here)."""

    def drain(self) -> None:
        for update in self.buffer.retrieve_updates():
            child = self._child(update.metric, update.attributes)
            kind = update.metric.kind
            if kind == BUFFERED_METRIC_KIND_COUNTER:
                child.inc(update.value)
            elif kind == BUFFERED_METRIC_KIND_GAUGE:
                child.set(update.value)
            else:
                child.observe(update.value)

    def _child(self, source: Any, attributes: Mapping[str, Any]) -> Any:
        key = (id(source), id(attributes))
        known = self._children.get(key)
        if known is not None and known[0] is source and known[1] is attributes:
            return known[2]
        metric, labels = self._metric(source, attributes)
        child = metric.labels(*(str(attributes.get(label, "")) for label in labels)) if labels else metric
        if len(self._children) >= MAX_CHILDREN_KEPT:  # attribute sets made anew each time: keep few
            self._children.clear()
        self._children[key] = (source, attributes, child)
        return child

    def _metric(self, source: Any, attributes: Mapping[str, Any]) -> tuple[Any, tuple[str, ...]]:
        known = self._metrics.get(source.name)
        if known is not None:
            return known
        name = _NAME.sub("_", source.name)
        if not name.startswith("temporal_"):
            name = "temporal_" + name
        if source.kind != BUFFERED_METRIC_KIND_COUNTER and source.unit in ("s", "seconds", "duration"):
            name = name if name.endswith("_seconds") else name + "_seconds"
        labels = tuple(sorted(_NAME.sub("_", key) for key in attributes))
        help_text = source.description or source.name
        metric: Counter | Gauge | Histogram
        if source.kind == BUFFERED_METRIC_KIND_COUNTER:
            metric = Counter(name, help_text, labels, registry=TEMPORAL_REGISTRY)
        elif source.kind == BUFFERED_METRIC_KIND_GAUGE:
            metric = Gauge(name, help_text, labels, registry=TEMPORAL_REGISTRY)
        else:
            metric = Histogram(name, help_text, labels, registry=TEMPORAL_REGISTRY)
        self._metrics[source.name] = (metric, labels)
        return metric, labels


@lru_cache(maxsize=1)
def _telemetry() -> tuple[Runtime, TemporalMetrics]:
    buffer = MetricBuffer(BUFFER_SIZE, MetricBufferDurationFormat.SECONDS)
    forwarded = LoggingConfig(
        filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
        forwarding=LogForwardingConfig(logger=CORE_LOGGER),
    )
    runtime = Runtime(telemetry=TelemetryConfig(logging=forwarded, metrics=buffer))
    return runtime, TemporalMetrics(buffer)


def temporal_runtime() -> Runtime:
    runtime, metrics = _telemetry()
    _keep_draining(metrics)
    return runtime


def drain_temporal_metrics() -> None:
    if _telemetry.cache_info().currsize:
        _telemetry()[1].drain()


_drainers: dict[int, asyncio.Task[None]] = {}


def _keep_draining(metrics: TemporalMetrics) -> None:
    """Drain every few seconds on the running loop (once per loop), so the buffer never fills."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    task = _drainers.get(id(loop))
    if task is None or task.done():
        _drainers[id(loop)] = loop.create_task(_drain_forever(metrics))


async def _drain_forever(metrics: TemporalMetrics) -> None:
    while True:
        await asyncio.sleep(DRAIN_SECONDS)
        try:
            metrics.drain()
        except Exception as error:  # noqa: BLE001 - metrics must never stop the process
            logging.getLogger(__name__).warning("could not read Temporal's metrics: %s", error)

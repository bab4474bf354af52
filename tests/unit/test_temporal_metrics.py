"""Temporal's SDK metrics moved into Prometheus (`telemetry/temporal_runtime.py`): each update
reaches the child of its own metric and attribute set, however often the drain has seen them,
on a real runtime's metric buffer."""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from temporalio.runtime import MetricBuffer, MetricBufferDurationFormat, Runtime, TelemetryConfig

from telemetry import temporal_runtime
from telemetry.temporal_runtime import TemporalMetrics


def test_each_update_reaches_its_own_child_across_drains(monkeypatch) -> None:
    registry = CollectorRegistry(auto_describe=True)
    monkeypatch.setattr(temporal_runtime, "TEMPORAL_REGISTRY", registry)
    buffer = MetricBuffer(1000, MetricBufferDurationFormat.SECONDS)
    meter = Runtime(telemetry=TelemetryConfig(metrics=buffer)).metric_meter
    polls = meter.create_counter("test_polls", "polls")
    left = polls.with_additional_attributes({"queue": "left"})
    right = polls.with_additional_attributes({"queue": "right"})
    metrics = TemporalMetrics(buffer)
    for _ in range(3):
        left.add(2)
        right.add(5)
        metrics.drain()
    left.add(1)
    metrics.drain()
    assert _total(registry, "temporal_test_polls_total", "left") == 7
    assert _total(registry, "temporal_test_polls_total", "right") == 15


def test_a_full_cache_of_children_starts_again_and_counts_on(monkeypatch) -> None:
    registry = CollectorRegistry(auto_describe=True)
    monkeypatch.setattr(temporal_runtime, "TEMPORAL_REGISTRY", registry)
    monkeypatch.setattr(temporal_runtime, "MAX_CHILDREN_KEPT", 2)
    buffer = MetricBuffer(1000, MetricBufferDurationFormat.SECONDS)
    meter = Runtime(telemetry=TelemetryConfig(metrics=buffer)).metric_meter
    calls = meter.create_counter("test_calls", "calls")
    queues = [calls.with_additional_attributes({"queue": f"q{index}"}) for index in range(5)]
    metrics = TemporalMetrics(buffer)
    for _ in range(2):
        for queue in queues:
            queue.add(1)
        metrics.drain()
    assert [_total(registry, "temporal_test_calls_total", f"q{index}") for index in range(5)] == [2] * 5


def _total(registry: CollectorRegistry, name: str, queue: str) -> float:
    """The sample's value for one queue (Core adds labels of its own, `service_name`)."""
    return sum(
        sample.value
        for family in registry.collect()
        for sample in family.samples
        if sample.name == name and sample.labels.get("queue") == queue
    )

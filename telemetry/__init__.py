"""Seeing inside a running server: logs (`logs.py`), the access log (`access_log.py`),
Prometheus metrics (`metrics.py`) and Temporal's own telemetry (`temporal_runtime.py`)."""

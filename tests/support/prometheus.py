"""A server's `/metrics`, read as a test reads it: every sample by name and labels."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

Samples = dict[str, float]


async def scrape(base: str) -> Samples:
    """Every sample of `/metrics`, by name and labels (sorted), e.g. `name{a=1,b=2}`."""
    async with httpx.AsyncClient(timeout=10) as http:
        answer = await http.get(f"{base}/metrics")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            labels = ",".join(f"{key}={value}" for key, value in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}"] = sample.value
    return samples


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of a metric's samples whose labels include `labels`."""
    wanted = {f"{key}={value}" for key, value in labels.items()}
    found = 0.0
    for key, value in samples.items():
        sample_name, _, rest = key.partition("{")
        if sample_name == name and wanted <= set(rest.rstrip("}").split(",")):
            found += value
    return found


def moved(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return total(after, name, **labels) - total(before, name, **labels)

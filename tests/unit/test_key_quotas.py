"""`access/quotas.py`: a key's approval decisions are counted apart from its requests, so its
open responses never keep a decision out, yet a key cannot open decisions without bound."""

from __future__ import annotations

import pytest

from access.quotas import Quotas, QuotaSettings
from models.errors import RateLimitedError


def test_decisions_are_bounded_apart_from_requests() -> None:
    quotas = Quotas(QuotaSettings(max_in_flight_per_key=2))
    for _ in range(2):
        quotas.enter("key")
    with pytest.raises(RateLimitedError):
        quotas.enter("key")
    for _ in range(2):
        quotas.enter_decision("key")  # the key's open requests do not keep these out
    with pytest.raises(RateLimitedError, match="approval decisions"):
        quotas.enter_decision("key")  # but a key's slow decisions are bounded too
    quotas.leave_decision("key")
    quotas.enter_decision("key")
    quotas.enter_decision("other key")

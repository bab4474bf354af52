"""Which domains are public suffixes: names under which anyone may register one of their own
(`com`, `com.au`, `github.io`). Allowing one would allow every name under it, so a container's
`network_policy` may not list one (`models/containers.py`), and its egress proxy never honours
one (`sandbox/egress_proxy.py`). The list ships in `publicsuffixlist` (nothing is fetched at run
time); it is read once a process, when first asked (~30 ms, ~2 MB)."""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def _list() -> Any:
    from publicsuffixlist import PublicSuffixList

    # An unknown top-level name (`localhost`, `internal`) is no suffix anyone registers under.
    return PublicSuffixList(accept_unknown=False)


def is_public_suffix(domain: str) -> bool:
    return bool(_list().is_public(domain.lower().rstrip(".")))

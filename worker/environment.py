"""Typed values read from the environment, each refused at start-up with its variable named
(`StartupError`) when it cannot be what `worker/settings.py` needs."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from models.errors import StartupError
from sandbox.settings import SandboxSettingError, SandboxSettings
from web_search.provider import KEYED_PROVIDERS, PROVIDERS

Number = TypeVar("Number", int, float)


def _env_number(name: str, default: Number, parse: Callable[[str], Number], what: str) -> Number:
    value = os.environ.get(name)
    try:
        return parse(value) if value else default
    except ValueError:
        raise StartupError(f"{name} must be {what}, not {value!r}") from None


def env_float(name: str, default: float) -> float:
    return _env_number(name, default, float, "a number")


def env_int(name: str, default: int) -> int:
    return _env_number(name, default, int, "a whole number")


def env_list(name: str) -> list[str]:
    return [part.strip() for part in os.environ.get(name, "").split(",") if part.strip()]


def env_slots(name: str, default: int) -> int:
    """A count of slots: a whole number, at least 1 (a worker with none would take nothing)."""
    count = env_int(name, default)
    if count < 1:
        raise StartupError(f"{name} must be at least 1, not {count}")
    return count


def sandbox_from_env(database_url: object) -> SandboxSettings:
    """The sandbox settings; a SQLite store's directory holds the containers by default."""
    url = str(database_url or "")
    data_dir = Path(url.removeprefix("sqlite:///")).parent if url.startswith("sqlite:///") else None
    try:
        return SandboxSettings.from_env(data_dir)
    except SandboxSettingError as error:
        raise StartupError(str(error)) from None


def web_search_provider_from_env() -> str | None:
    name = os.environ.get("WEB_SEARCH_PROVIDER", "").strip().lower()
    if name == "":
        return None
    if name in ("off", "none"):
        return "off"
    if name not in PROVIDERS:
        raise StartupError(f"WEB_SEARCH_PROVIDER must be one of {', '.join(PROVIDERS)} (or off), not {name!r}")
    if name in KEYED_PROVIDERS and not os.environ.get("WEB_SEARCH_API_KEY"):
        raise StartupError(f"WEB_SEARCH_PROVIDER={name} needs its key in WEB_SEARCH_API_KEY")
    return name

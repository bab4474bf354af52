"""The model registry: which deployments serve which model names, read from a file in the
format users already keep for LiteLLM's proxy (`MODELS_FILE` / `--models-file`):

    model_list:
      - model_name: gpt-4o                      # what clients ask for
        litellm_params:
          model: openai/gpt-4o                  # <provider>/<name upstream>
          api_base: https://api.openai.com/v1   # an OpenAI-compatible chat-completions API
          api_key: os.environ/OPENAI_API_KEY    # or the key itself
          rpm: 500                              # requests a minute this deployment takes
          tpm: 200000                           # tokens a minute
          timeout: 600                          # seconds one call may take
        model_info:
          max_input_tokens: 128000
    router_settings:
      fallbacks: [{"gpt-4o": ["llama"]}]

Several entries with one `model_name` are deployments that share its load; `model_name: "*"`
serves any name not listed (its upstream name is the one asked for). Keys are ignored with one
warning naming them; a malformed file is a `StartupError` naming the entry and the field, never
a value (a value can be a key), in at most `MAX_MESSAGE_CHARS`. Without a file,
`INFERENCE_BASE_URL` is one deployment that serves every model name.

A deployment's key stays in this process: it is never logged, stored, put in history or
shown (`repr=False`; `Deployment.shown()` says which deployment without it).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from models.errors import StartupError
from upstream.known_models import KNOWN
from upstream.pacing import Limits

ANY_MODEL = "*"
DEFAULT_ID = "default"
"""The id of the one deployment there is without a models file."""
PROVIDER_BASES = {"openai": "https://api.openai.com/v1"}
"""Providers whose API has a well-known base; any other needs `api_base`."""
KNOWN_ENTRY_KEYS = {"model_name", "litellm_params", "model_info"}
KNOWN_PARAMS = {"model", "api_base", "api_key", "rpm", "tpm", "timeout"}
KNOWN_INFO = {"max_input_tokens", "id", "mode", "moderation_format"}
MODES = ("chat", "moderation")
MODERATION_FORMATS = ("openai", "llama_guard")
OPENAI_MODERATION_MODELS = frozenset(
    {"omni-moderation-latest", "omni-moderation-2024-09-26", "text-moderation-latest", "text-moderation-stable"}
)
"""OpenAI's moderation models: a `*` deployment serves them at its `/moderations`."""
KNOWN_TOP = {"model_list", "router_settings"}
KNOWN_ROUTER = {"fallbacks"}
MAX_DEPLOYMENTS = 1000
MAX_FILE_BYTES = 1024 * 1024
MAX_MESSAGE_CHARS = 500
SHOWN_NAME_CHARS = 80


@dataclass(frozen=True)
class Deployment:
    """One upstream that serves a model name: where, under which name, within which limits."""

    id: str
    """Stable across processes (the budget's key in the store, a metric label): the entry's
    `model_info.id`, else `<model_name>/<n>` (its place among the name's deployments)."""
    model_name: str
    upstream_model: str | None
    """The name sent upstream; None: the name the client asked for (a `*` entry, or no file)."""
    api_base: str
    api_key: str = field(default="", repr=False)
    rpm: float | None = None
    tpm: float | None = None
    timeout_seconds: float | None = None
    max_input_tokens: int | None = None
    provider: str = "openai"
    """The `<provider>/` of `litellm_params.model` (`/v1/models` says it as `owned_by`)."""
    mode: str = "chat"
    """`model_info.mode` (LiteLLM's field): `moderation` serves moderation checks only."""
    moderation_format: str = "openai"
    """How a moderation deployment is asked (`model_info.moderation_format`): `openai`, at its
    `/moderations`; `llama_guard`, Llama Guard's prompt at its chat completions."""

    def upstream_name(self, asked: str) -> str:
        return self.upstream_model or asked

    def budget_key(self, model: str) -> str:
        """Whose budget a call for `model` draws on: a named deployment's own; a `*` one keeps one
        per model name it serves, as providers limit each model on its own, for the names this
        process knows (`upstream/known_models.py`) and one for all others together, so made-up
        names make no rows (at most 200 characters)."""
        if self.model_name != ANY_MODEL:
            return self.id
        key = f"{self.id}:{KNOWN.shown(model)}"
        return key if len(key) <= 200 else f"{self.id}:#{hashlib.sha256(model.encode()).hexdigest()}"

    @property
    def described(self) -> str:
        """How a tenant's error names it: the one backend there is without a models file as
        "the inference backend", a deployment of the file by its id (never its URL)."""
        return "the inference backend" if self.id == DEFAULT_ID else f"deployment {self.id}"

    def shown_for(self, model: str) -> str:
        """Which deployment serves `model`, as the response's details say it: a named one by its
        id, a `*` one by its id and the model."""
        return self.id if self.model_name != ANY_MODEL else f"{self.id}:{model}"

    @property
    def configured_rate(self) -> float | None:
        """Requests a second the file allows, when it says."""
        return self.rpm / 60.0 if self.rpm else None

    @property
    def configured_token_rate(self) -> float | None:
        return self.tpm / 60.0 if self.tpm else None

    def limits(self) -> Limits:
        return Limits(rate=self.configured_rate, token_rate=self.configured_token_rate)


@dataclass(frozen=True)
class ModelRegistry:
    deployments: tuple[Deployment, ...]
    fallbacks: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    from_file: bool = False

    @classmethod
    def single(
        cls, api_base: str, api_key: str = "", timeout_seconds: float | None = None, max_input_tokens: int | None = None
    ) -> ModelRegistry:
        """No file: one deployment that serves every model name under the name asked for."""
        return cls(
            (
                Deployment(
                    id=DEFAULT_ID,
                    model_name=ANY_MODEL,
                    upstream_model=None,
                    api_base=api_base,
                    api_key=api_key,
                    timeout_seconds=timeout_seconds,
                    max_input_tokens=max_input_tokens,
                ),
            )
        )

    def serving(self, model: str) -> list[Deployment]:
        """The deployments that serve `model` (a listed name's own, else the `*` entry's)."""
        named = [deployment for deployment in self.deployments if deployment.model_name == model]
        return named or [deployment for deployment in self.deployments if deployment.model_name == ANY_MODEL]

    def knows(self, model: str) -> bool:
        return bool(self.serving(model))

    def names(self) -> list[str]:
        """The model names a client may ask for, as `/v1/models` lists them (not `*`)."""
        return list(dict.fromkeys(d.model_name for d in self.deployments if d.model_name != ANY_MODEL))

    @property
    def serves_any(self) -> bool:
        return any(deployment.model_name == ANY_MODEL for deployment in self.deployments)

    def moderation_deployments(self, model: str) -> list[Deployment]:
        """The deployments that classify for `model`: its entries with `mode: moderation`, else,
        for OpenAI's moderation model names, the `*` entry's (empty: not a moderation model)."""
        named = [deployment for deployment in self.deployments if deployment.model_name == model]
        if named:
            return [deployment for deployment in named if deployment.mode == "moderation"]
        if model in OPENAI_MODERATION_MODELS:
            return [deployment for deployment in self.deployments if deployment.model_name == ANY_MODEL]
        return []

    def fallbacks_of(self, model: str) -> list[str]:
        """The names a response for `model` fails over to, in order (each one known here)."""
        return [name for name in self.fallbacks.get(model, ()) if name != model and self.knows(name)]

    def context_window(self, model: str) -> int | None:
        windows = [d.max_input_tokens for d in self.serving(model) if d.max_input_tokens]
        return min(windows) if windows else None


def load_registry(path: str | Path, environ: Mapping[str, str] | None = None) -> tuple[ModelRegistry, list[str]]:
    """The registry in `path`, and the warnings to log (unknown keys, one line each)."""
    import yaml  # only a process given a file reads YAML

    where = str(path)
    try:
        with Path(path).open("rb") as file:
            raw = file.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise StartupError(f"cannot read the models file {where}: {error.strerror or error}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise StartupError(f"the models file {where} is larger than {MAX_FILE_BYTES // 1024} KiB")
    try:
        document = yaml.safe_load(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise StartupError(f"the models file {where} is not UTF-8 text") from None
    except yaml.YAMLError as error:
        # Where and what, never the line itself (it may hold a key).
        mark = getattr(error, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or "it cannot be read"
        raise StartupError(f"the models file {where} is not valid YAML{at}: {problem}"[:MAX_MESSAGE_CHARS]) from None
    try:
        return parse_registry(document, where, os.environ if environ is None else environ)
    except StartupError as error:
        raise StartupError(str(error)[:MAX_MESSAGE_CHARS]) from None


def parse_registry(document: Any, where: str, environ: Mapping[str, str]) -> tuple[ModelRegistry, list[str]]:
    if not isinstance(document, dict):
        raise StartupError(f"the models file {where} must be a mapping with a `model_list`")
    warnings = _unknown(document, KNOWN_TOP, f"models file {where}")
    entries = document.get("model_list")
    if not isinstance(entries, list) or not entries:
        raise StartupError(f"the models file {where} needs a non-empty `model_list`")
    if len(entries) > MAX_DEPLOYMENTS:
        raise StartupError(f"the models file {where} lists {len(entries)} deployments; at most {MAX_DEPLOYMENTS}")
    deployments: list[Deployment] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        deployment, entry_warnings = _deployment(entry, index, seen, environ)
        deployments.append(deployment)
        warnings.extend(entry_warnings)
    ids = [deployment.id for deployment in deployments]
    if len(set(ids)) != len(ids):
        duplicate = next(each for each in ids if ids.count(each) > 1)
        raise StartupError(f"model_list: two deployments have the id {duplicate!r}")
    registry = ModelRegistry(tuple(deployments), from_file=True)
    router = document.get("router_settings") or {}
    if not isinstance(router, dict):
        raise StartupError("router_settings must be a mapping")
    warnings.extend(_unknown(router, KNOWN_ROUTER, "router_settings"))
    fallbacks = _fallbacks(router.get("fallbacks"), registry)
    return ModelRegistry(tuple(deployments), fallbacks, from_file=True), warnings


def _deployment(
    entry: Any, index: int, seen: dict[str, int], environ: Mapping[str, str]
) -> tuple[Deployment, list[str]]:
    if not isinstance(entry, dict):
        raise StartupError(f"model_list[{index}] must be a mapping")
    name = entry.get("model_name")
    place = f"model_list[{index}]" + (f" ({name[:SHOWN_NAME_CHARS]})" if isinstance(name, str) else "")
    if not isinstance(name, str) or not name.strip():
        raise StartupError(f"{place}: `model_name` must be a non-empty string")
    params = entry.get("litellm_params")
    if not isinstance(params, dict):
        raise StartupError(f"{place}: `litellm_params` must be a mapping")
    info = entry.get("model_info") or {}
    if not isinstance(info, dict):
        raise StartupError(f"{place}: `model_info` must be a mapping")
    warnings = (
        _unknown(entry, KNOWN_ENTRY_KEYS, place)
        + _unknown(params, KNOWN_PARAMS, f"{place} litellm_params")
        + _unknown(info, KNOWN_INFO, f"{place} model_info")
    )
    model = params.get("model")
    if not isinstance(model, str) or not model.strip():
        raise StartupError(f'{place}: `litellm_params.model` must be "<provider>/<model name>"')
    provider, _, upstream = model.partition("/")
    if not upstream:
        provider, upstream = "openai", model
    api_base = params.get("api_base") or PROVIDER_BASES.get(provider)
    if not isinstance(api_base, str) or not api_base.startswith(("http://", "https://")):
        raise StartupError(
            f"{place}: `litellm_params.api_base` must be the http(s):// URL of an OpenAI-compatible "
            f"API (provider {_shown(provider)} has no default)"
        )
    if params.get("api_key") is not None and _has_credentials(api_base):
        raise StartupError(
            f"{place}: `litellm_params.api_base` holds credentials (user:password@) and `api_key` is set too: "
            "keep the key in `api_key` alone"
        )
    position = seen.get(name, 0)
    seen[name] = position + 1
    deployment_id = info.get("id", f"{name}/{position}")
    if not isinstance(deployment_id, str) or not deployment_id or len(deployment_id) > 200:
        raise StartupError(f"{place}: `model_info.id` must be a string of 1 to 200 characters")
    mode = info.get("mode", "chat")
    if mode not in MODES:
        raise StartupError(f"{place}: `model_info.mode` must be one of {', '.join(MODES)}")
    moderation_format = info.get("moderation_format", "openai")
    if moderation_format not in MODERATION_FORMATS:
        raise StartupError(f"{place}: `model_info.moderation_format` must be one of {', '.join(MODERATION_FORMATS)}")
    return Deployment(
        id=deployment_id,
        mode=mode,
        moderation_format=moderation_format,
        model_name=name,
        upstream_model=None if upstream == ANY_MODEL else upstream,
        api_base=api_base.rstrip("/"),
        api_key=_key(params.get("api_key"), place, environ),
        rpm=_positive(params.get("rpm"), "rpm", place),
        tpm=_positive(params.get("tpm"), "tpm", place),
        timeout_seconds=_positive(params.get("timeout"), "timeout", place),
        max_input_tokens=_whole(info.get("max_input_tokens"), "max_input_tokens", place),
        provider=provider,
    ), warnings


def _key(value: Any, place: str, environ: Mapping[str, str]) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise StartupError(f"{place}: `litellm_params.api_key` must be a string")
    if value.startswith("os.environ/"):
        variable = value.removeprefix("os.environ/")
        if variable not in environ:
            raise StartupError(
                f"{place}: `api_key` names the environment variable {_shown(variable)}, which is not set"
            )
        return environ[variable]
    return value


def _positive(value: Any, name: str, place: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        raise StartupError(f"{place}: `{name}` must be a positive number")
    return float(value)


def _whole(value: Any, name: str, place: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise StartupError(f"{place}: `model_info.{name}` must be a positive whole number")
    return value


def _fallbacks(value: Any, registry: ModelRegistry) -> dict[str, tuple[str, ...]]:
    """`[{"a": ["b", "c"]}, ...]`: a response for `a` whose deployments are down goes to `b`, then `c`."""
    if value is None:
        return {}
    if not isinstance(value, list):
        raise StartupError("router_settings.fallbacks must be a list of {model: [fallback, ...]}")
    fallbacks: dict[str, tuple[str, ...]] = {}
    for index, rule in enumerate(value):
        if not isinstance(rule, dict) or len(rule) != 1:
            raise StartupError(f"router_settings.fallbacks[{index}] must be one {{model: [fallback, ...]}}")
        ((model, targets),) = rule.items()
        if isinstance(targets, str):
            targets = [targets]
        if (
            not isinstance(model, str)
            or not isinstance(targets, list)
            or not all(isinstance(each, str) for each in targets)
        ):
            raise StartupError(f"router_settings.fallbacks[{index}]: the model and its fallbacks must be model names")
        unknown = [each for each in [model, *targets] if not registry.knows(each)]
        if unknown:
            raise StartupError(
                f"router_settings.fallbacks[{index}] ({_shown(model)}): no deployment serves "
                + ", ".join(_shown(each) for each in unknown[:5])
            )
        fallbacks[model] = tuple(targets)
    return fallbacks


def _unknown(mapping: Mapping[str, Any], known: Iterable[str], where: str) -> list[str]:
    extra = sorted(str(key)[:SHOWN_NAME_CHARS] for key in mapping if key not in known)
    more = f" and {len(extra) - 10} more" if len(extra) > 10 else ""
    return [f"{where}: ignoring {', '.join(extra[:10])}{more} (not used by durable-responses)"] if extra else []


def _shown(name: str) -> str:
    """A name (of a model, a provider, a variable) as a message shows it: quoted, cut short."""
    return repr(name if len(name) <= SHOWN_NAME_CHARS else name[:SHOWN_NAME_CHARS] + "…")


def _has_credentials(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return bool(parts.username or parts.password)

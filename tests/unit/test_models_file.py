"""The models file, pure: LiteLLM's config format read as it is, and any document either a
registry or one start-up error naming the entry."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.errors import StartupError
from upstream.registry import ANY_MODEL, load_registry, parse_registry

documents = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "model_list",
                    "model_name",
                    "litellm_params",
                    "model",
                    "api_base",
                    "api_key",
                    "rpm",
                    "tpm",
                    "timeout",
                    "model_info",
                    "max_input_tokens",
                    "router_settings",
                    "fallbacks",
                    "id",
                    "x",
                ]
            ),
            inner,
            max_size=6,
        )
    ),
    max_leaves=30,
)


def test_a_litellm_config_is_read_as_it_is():
    document = {
        "model_list": [
            {
                "model_name": "gpt-4o",
                "litellm_params": {
                    "model": "openai/gpt-4o",
                    "api_key": "os.environ/OPENAI_KEY",
                    "rpm": 600,
                    "tpm": 90000,
                    "timeout": 30,
                },
                "model_info": {"max_input_tokens": 128000},
            },
            {
                "model_name": "gpt-4o",
                "litellm_params": {"model": "openai/gpt-4o-mini", "api_base": "http://10.0.0.5:8000/v1"},
            },
            {
                "model_name": "llama",
                "litellm_params": {"model": "hosted_vllm/meta/llama-3", "api_base": "http://vllm:8000/v1/"},
            },
            {"model_name": "*", "litellm_params": {"model": "openai/*", "api_base": "http://ollama:11434/v1"}},
        ],
        "router_settings": {"fallbacks": [{"gpt-4o": ["llama"]}]},
    }
    registry, warnings = parse_registry(document, "models.yaml", {"OPENAI_KEY": "sk-secret"})
    assert warnings == []
    assert registry.names() == ["gpt-4o", "llama"] and registry.serves_any
    first, second = registry.serving("gpt-4o")
    assert (first.id, first.api_base, first.api_key, first.rpm, first.tpm, first.timeout_seconds) == (
        "gpt-4o/0",
        "https://api.openai.com/v1",
        "sk-secret",
        600,
        90000,
        30,
    )
    assert first.configured_rate == 10 and first.max_input_tokens == 128000
    assert "sk-secret" not in repr(first)
    assert (second.id, second.upstream_name("gpt-4o")) == ("gpt-4o/1", "gpt-4o-mini")
    (llama,) = registry.serving("llama")
    assert (llama.upstream_name("llama"), llama.api_base, llama.provider) == (
        "meta/llama-3",
        "http://vllm:8000/v1",
        "hosted_vllm",
    )
    (anything,) = registry.serving("qwen2.5")
    assert anything.model_name == ANY_MODEL and anything.upstream_name("qwen2.5") == "qwen2.5"
    assert registry.fallbacks_of("gpt-4o") == ["llama"] and registry.fallbacks_of("llama") == []
    assert registry.context_window("gpt-4o") == 128000


def test_unknown_keys_are_named_and_ignored():
    document = {
        "model_list": [
            {
                "model_name": "a",
                "litellm_params": {
                    "model": "openai/a",
                    "api_base": "http://x/v1",
                    "stream_timeout": 5,
                    "max_retries": 2,
                },
                "model_info": {"mode": "chat"},
                "tpm_limit": 1,
            }
        ],
        "litellm_settings": {"drop_params": True},
        "router_settings": {"routing_strategy": "simple-shuffle"},
    }
    registry, warnings = parse_registry(document, "m.yaml", {})
    assert registry.names() == ["a"]
    said = " ".join(warnings)
    for key in ("stream_timeout", "max_retries", "mode", "tpm_limit", "litellm_settings", "routing_strategy"):
        assert key in said


@pytest.mark.parametrize(
    ("document", "named"),
    [
        ({"model_list": [{"model_name": "a", "litellm_params": {"model": "vllm/a"}}]}, "model_list[0] (a)"),
        ({"model_list": [{"model_name": "a", "litellm_params": {"model": "openai/a", "rpm": -1}}]}, "rpm"),
        (
            {
                "model_list": [
                    {"model_name": "a", "litellm_params": {"model": "openai/a", "api_key": "os.environ/NOPE_X"}}
                ]
            },
            "NOPE_X",
        ),
        (
            {
                "model_list": [{"model_name": "a", "litellm_params": {"model": "openai/a"}}],
                "router_settings": {"fallbacks": [{"a": ["b"]}]},
            },
            "'b'",
        ),
        ({"model_list": []}, "model_list"),
        ({"model_list": [{"model_name": "", "litellm_params": {"model": "openai/a"}}]}, "model_name"),
        (
            {
                "model_list": [
                    {
                        "model_name": "a",
                        "litellm_params": {"model": "openai/a"},
                        "model_info": {"max_input_tokens": "lots"},
                    }
                ]
            },
            "max_input_tokens",
        ),
    ],
)
def test_a_malformed_file_is_one_line_naming_the_entry(document, named):
    with pytest.raises(StartupError) as raised:
        parse_registry(document, "m.yaml", {})
    message = str(raised.value)
    assert named in message and "\n" not in message


@given(documents)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_document_is_a_registry_or_one_startup_error(document):
    try:
        registry, warnings = parse_registry(document, "m.yaml", {"K": "v"})
    except StartupError as error:
        assert "\n" not in str(error)
        return
    assert registry.deployments and all(isinstance(line, str) for line in warnings)


SECRET = "sk-live-0123456789abcdef"


@pytest.mark.parametrize(
    "params",
    [
        {"model": "openai/a", "rpm": SECRET},
        {"model": "openai/a", "tpm": [SECRET]},
        {"model": "openai/a", "timeout": {"key": SECRET}},
        {"model": "openai/a", "api_key": [SECRET]},
        {"model": "openai/a", "api_base": SECRET},
    ],
)
def test_an_error_names_the_entry_and_the_field_but_never_the_value(params):
    with pytest.raises(StartupError) as raised:
        parse_registry({"model_list": [{"model_name": "a", "litellm_params": params}]}, "m.yaml", {})
    message = str(raised.value)
    assert "model_list[0] (a)" in message and SECRET not in message, message


def test_credentials_in_api_base_with_an_api_key_are_refused():
    entry = {
        "model_name": "a",
        "litellm_params": {"model": "openai/a", "api_base": "https://user:pw@host/v1", "api_key": "k"},
    }
    with pytest.raises(StartupError) as raised:
        parse_registry({"model_list": [entry]}, "m.yaml", {})
    assert "credentials" in str(raised.value) and "pw" not in str(raised.value)


def test_a_yaml_error_says_where_but_not_the_line(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text(f"model_list:\n  - model_name: a\n    litellm_params: {{api_key: {SECRET}: broken\n")
    with pytest.raises(StartupError) as raised:
        load_registry(path)
    message = str(raised.value)
    assert "line" in message and SECRET not in message and "\n" not in message, message


def test_a_file_of_aliases_makes_a_short_error(tmp_path):
    """364 bytes of nested aliases once made a 52 MB error message."""
    lines = ['a0: &a0 ["sk-live-x", "sk-live-x", "sk-live-x", "sk-live-x", "sk-live-x", "sk-live-x"]']
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 6)}]" for n in range(1, 9)]
    lines.append("model_list: [{model_name: a, litellm_params: {model: openai/a, rpm: *a8}}]")
    path = tmp_path / "models.yaml"
    path.write_text("\n".join(lines))
    with pytest.raises(StartupError) as raised:
        load_registry(path)
    assert len(str(raised.value)) <= 500 and "sk-live" not in str(raised.value)


@given(documents)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_error_is_short(document):
    try:
        parse_registry(document, "m.yaml", {"K": "v"})
    except StartupError as error:
        assert len(str(error)) <= 500

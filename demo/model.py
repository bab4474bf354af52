"""What the demo model says: a pure function of a chat-completions request.

It echoes the last user message; when the request offers tools and the message names one
(`roll_dice`, or `roll dice`), or `tool_choice` demands one, it calls it with arguments taken
from the message (numbers for numeric parameters, a quoted phrase or the rest of the message
for strings); after tool results it reports what each tool answered; asked to compact a
conversation, it lists what the user said, and it quotes such a summary when it finds one;
after a web or file search it names what it found, citing each result as `[n]`; told
`Use code: <Python>` (or `Use the shell: <command>`) it runs it with the hosted tool.
Which demo model a
request names decides only its pace and how it fails (`DEMO_MODELS`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from context.compaction import SUMMARY_PREFIX, is_summariser_request
from demo.json_answer import instance_of, of_type

DEMO_PREFIX = "demo/"
DEFAULT_DEMO_MODEL = "demo/echo"
DEMO_CONTEXT_WINDOW = 128_000
"""The tokens a demo model takes as input (as `GET /v1/models` would say of a real one): a real
model's, so Codex's default request (~11,700 tokens of instructions and tools) fits."""


@dataclass(frozen=True)
class DemoModel:
    name: str
    seconds_per_word: float
    first_word_seconds: float
    failure: Literal["none", "first_attempt", "always"]
    description: str


DEMO_MODELS = {
    model.name: model
    for model in (
        DemoModel("demo/echo", 0.04, 0.15, "none", "echoes your message word by word, calls the tools you name"),
        DemoModel("demo/slow", 1.0, 0.5, "none", "the same, one word a second: time to press Ctrl-C and restart"),
        DemoModel(
            "demo/flaky",
            0.04,
            0.15,
            "first_attempt",
            "the same, but the first attempt of each answer breaks halfway; the retry carries on",
        ),
        DemoModel("demo/fail", 0.0, 0.0, "always", "always fails with a 500, so you can watch the retries run out"),
    )
}


def served_model(requested: str) -> str:
    """The model a response names when the demo answers: a `demo/...` model as asked, any
    other name as `demo/echo`, so no response pretends a real model wrote it."""
    return requested if requested.startswith(DEMO_PREFIX) else DEFAULT_DEMO_MODEL


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass
class DemoReply:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str = "stop"

    def words(self) -> list[str]:
        """The text in the pieces it streams in: each word with the space after it."""
        return re.findall(r"\S+\s*", self.text)


def reply_to(body: dict[str, Any]) -> DemoReply:
    messages = [message for message in _list(body.get("messages")) if isinstance(message, dict)]
    if is_summariser_request(messages):
        return DemoReply(text=_summary(_text(messages[-1].get("content"))))
    results = _trailing_tool_results(messages)
    if results:
        return DemoReply(
            text=" ".join(
                _searched(answer)
                if answer.startswith(SEARCH_RESULTS)
                else _searched(answer, "your files")
                if answer.startswith(FILE_RESULTS)
                else f"The tool {name} answered: {_clip(answer)}."
                for name, answer in results
            )
        )
    said = _text(
        next((message.get("content") for message in reversed(messages) if message.get("role") == "user"), None)
    )
    tools = _functions(body)
    calls = _code_calls(said, tools) or _calls(
        said, tools, body.get("tool_choice"), body.get("parallel_tool_calls", True)
    )
    if calls:
        return DemoReply(tool_calls=calls, finish_reason="tool_calls")
    answer = _json_answer(body.get("response_format"), said)
    if answer is not None:
        return DemoReply(text=answer)
    text = f"You said: {said}" if said else "Hello! I am the demo model; say something and I will echo it."
    summary = next(
        (
            _text(message.get("content")).removeprefix(SUMMARY_PREFIX.strip()).strip()
            for message in messages
            if _text(message.get("content")).startswith(SUMMARY_PREFIX.strip())
        ),
        None,
    )
    if summary:
        text += f" (From the summary of our earlier messages: {_clip(summary, 300)})"
    if tools:
        text += f" (Name a tool and I will call it: {', '.join(tools)}.)"
    return _within_limit(DemoReply(text=text), body.get("max_completion_tokens") or body.get("max_tokens"))


SEARCH_RESULTS = "Web search results for "
"""How a web search's results open (`web_search/citations.py`): the demo model cites them."""
FILE_RESULTS = "File search results for "
"""How a file search's results open (`file_search/searching.py`): cited the same way."""


def _searched(results: str, where: str = "the web") -> str:
    """A search's results, cited the way a model cites them: each title (or file name) with its `[n]`."""
    found = re.findall(r"^\[(\d+)\] (.+)$", results, re.MULTILINE)
    if not found:
        return f"The search of {where} found nothing."
    return f"I searched {where} and found: " + "; ".join(f"{title} [{number}]" for number, title in found[:3]) + "."


def _summary(transcript: str) -> str:
    """A compaction's summary, the same for the same transcript: what the user said (each
    message's first words), and how many answers and tool results there were."""
    entries = transcript.split("\n\n")
    said = [_clip(entry.removeprefix("[user] "), 80) for entry in entries if entry.startswith("[user] ")]
    answers = sum(1 for entry in entries if entry.startswith("[assistant]"))
    results = sum(1 for entry in entries if entry.startswith("[tool result]"))
    heard = "; ".join(f'"{each}"' for each in said) or "nothing yet"
    return f"The user said: {heard}. The assistant answered {answers} times; tools answered {results} times."


def _json_answer(response_format: Any, said: str) -> str | None:
    """JSON that fits the requested format (`json_schema`, `json_object`), or None: prose."""
    if not isinstance(response_format, dict):
        return None
    if response_format.get("type") == "json_object":
        return json.dumps({"you_said": said})
    if response_format.get("type") == "json_schema":
        spec = response_format.get("json_schema")
        return json.dumps(instance_of(spec.get("schema") if isinstance(spec, dict) else None, said))
    return None


def _within_limit(reply: DemoReply, limit: Any) -> DemoReply:
    """A word is a token here: a reply longer than `max_output_tokens` is cut, as models do."""
    words = reply.words()
    if isinstance(limit, int) and 0 < limit < len(words):
        return DemoReply(text="".join(words[:limit]).rstrip(), finish_reason="length")
    return reply


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        return " ".join(
            part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        ).strip()
    return ""


def _clip(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _trailing_tool_results(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The tool results after the last assistant message, with the names of their calls."""
    results: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.insert(0, message)
    if not results:
        return []
    calls: dict[str, str] = {}
    for message in messages:
        for call in _list(message.get("tool_calls")):
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(call.get("id"), str) and isinstance(function.get("name"), str):
                calls[call["id"]] = function["name"]
    return [(calls.get(_string(result.get("tool_call_id")), "?"), _text(result.get("content"))) for result in results]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _functions(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The offered functions by name, with their JSON schemas."""
    functions = {}
    for tool in _list(body.get("tools")):
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str) and function["name"].strip():
            parameters = function.get("parameters")
            functions[function["name"]] = parameters if isinstance(parameters, dict) else {}
    return functions


def _mentioned(name: str, said: str) -> int | None:
    """Where the message names a tool (`weather`, `roll_dice` or `roll dice`; for an MCP tool
    shown as `label__tool`, its own name will do), or None."""
    lowered = said.lower()
    for form in {name, name.split("__")[-1]}:
        for spelling in {form.lower(), form.lower().replace("_", " ")}:
            found = re.search(rf"(?<![\w]){re.escape(spelling)}(?![\w])", lowered)
            if found:
                return found.start()
    return None


def _calls(said: str, tools: dict[str, dict[str, Any]], choice: Any, parallel: Any) -> list[ToolCall]:
    if not tools or choice == "none":
        return []
    if isinstance(choice, dict):
        function = choice.get("function")
        forced = function.get("name") if isinstance(function, dict) else None
        names = [forced] if isinstance(forced, str) and forced in tools else []
    else:
        places = {name: place for name in tools if (place := _mentioned(name, said)) is not None}
        names = sorted(places, key=places.__getitem__)
        if not names and choice == "required":
            names = [next(iter(tools))]
    if parallel is False:
        names = names[:1]
    return [ToolCall(name, _arguments(tools[name], said, name)) for name in names]


CODE_ASKED = re.compile(r"\buse (code|the shell)\s*:\s*", re.IGNORECASE)


def _code_calls(said: str, tools: dict[str, dict[str, Any]]) -> list[ToolCall]:
    """`Use code: <Python>` calls `code_interpreter` with it, `Use the shell: <command>` the
    `shell` (or Codex's `exec_command`) when the request offers them: everything after the colon,
    as it was written."""
    asked = CODE_ASKED.search(said)
    if asked is None:
        return []
    source = said[asked.end() :].strip()
    if asked.group(1).lower() == "code" and "code_interpreter" in tools:
        return [ToolCall("code_interpreter", {"code": source})]
    if asked.group(1).lower() != "the shell":
        return []
    if "exec_command" in tools:  # Codex's own shell tool
        return [ToolCall("exec_command", {"cmd": source})]
    parameters = tools.get("shell", {}).get("properties") or {}
    if "commands" in parameters:  # the hosted shell
        return [ToolCall("shell", {"commands": [source]})]
    if "command" in parameters:  # a client's shell that takes an argv
        return [ToolCall("shell", {"command": ["bash", "-lc", source]})]
    return []


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_QUOTED = re.compile(r"[\"“']([^\"”']+)[\"”']")


def _arguments(schema: dict[str, Any], said: str, name: str) -> dict[str, Any]:
    """Arguments for a call, from the message: numbers in order for numeric parameters, a
    quoted phrase (or the words after the tool's name) for strings, `true` for booleans."""
    properties = of_type(schema, "properties", dict, {})
    required = {key for key in _list(schema.get("required")) if isinstance(key, str)}
    numbers = iter(_NUMBER.findall(said))
    quoted = _QUOTED.search(said)
    place = _mentioned(name, said)
    after = said[place:].split(None, 1)[1] if place is not None and len(said[place:].split(None, 1)) > 1 else ""
    phrase = quoted.group(1) if quoted else (_NUMBER.sub("", after).strip(" .,:;!?") or said)
    arguments: dict[str, Any] = {}
    for key, spec in properties.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if isinstance(spec, dict) and spec.get("enum") and isinstance(spec["enum"], list):
            value: Any = spec["enum"][0]
        elif kind in ("integer", "number"):
            number = next(numbers, None)
            value = (
                (int(float(number)) if kind == "integer" else float(number))
                if number is not None
                else spec.get("default", 1 if key in required else None)
            )
        elif kind == "string":
            value = phrase
        elif kind == "boolean":
            value = spec.get("default", True)
        elif kind == "array":
            value = [] if key in required else None
        elif kind == "object":
            value = {} if key in required else None
        else:
            value = phrase if key in required else None
        if value is not None:
            arguments[key] = value
    return arguments

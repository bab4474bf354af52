"""Pure: the demo model's answer to `text.format` json_schema (`response_format` upstream): a
value that fits the schema, so `client.responses.parse(text_format=...)` works against the demo
with nothing configured.

Every property is given (as OpenAI's strict schemas require), strings say what the user said,
numbers sit at their minimum (or 0), arrays hold the items they must, the first of an `enum`,
`anyOf` or `oneOf` is taken, `$ref`s are followed into `$defs`. A schema that refers to itself
is followed `MAX_DEPTH` deep, where the value is null (or empty) and stops; the whole answer is
at most `MAX_NODES` values, so a hostile schema costs a bounded amount of work.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")
D = TypeVar("D")

MAX_DEPTH = 12
MAX_NODES = 2_000
STRING_FORMATS = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00",
    "email": "demo@example.com",
    "uri": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
}


class _Budget:
    def __init__(self) -> None:
        self.left = MAX_NODES

    def spend(self) -> bool:
        self.left -= 1
        return self.left >= 0


def instance_of(schema: Any, said: str) -> Any:
    """A value that fits `schema` (a JSON Schema as `response_format.json_schema.schema`)."""
    root = schema if isinstance(schema, dict) else {}
    return _value(root, root, said[:200], 0, _Budget())


def _resolved(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while isinstance(schema.get("$ref"), str) and seen < MAX_DEPTH:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/") if schema["$ref"].startswith("#") else []:
            target = target.get(part) if isinstance(target, dict) else None
        schema = target if isinstance(target, dict) else {}
        seen += 1
    return schema


def _value(schema: dict[str, Any], root: dict[str, Any], said: str, depth: int, budget: _Budget) -> Any:
    schema = _resolved(schema, root)
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds] if isinstance(kinds, str) else []
    kinds = [kind for kind in kinds if isinstance(kind, str)]  # a schema may say anything
    if not budget.spend() or depth >= MAX_DEPTH:  # a schema that refers to itself ends here
        return None if "null" in kinds or not kinds else {"object": {}, "array": [], "string": ""}.get(kinds[0], 0)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        given = schema.get(key)
        options = [option for option in given if isinstance(option, dict)] if isinstance(given, list) else []
        if options:
            usable = [option for option in options if _resolved(option, root).get("type") != "null"]
            return _value((usable or options)[0], root, said, depth + 1, budget)
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            if isinstance(part, dict):
                merged |= _resolved(part, root)
        rest = {key: value for key, value in schema.items() if key != "allOf"}
        return _value(merged | rest, root, said, depth + 1, budget)
    kind = next((each for each in kinds if each != "null"), None) or ("object" if "properties" in schema else None)
    match kind:
        case "object":
            properties = of_type(schema, "properties", dict, {})
            return {
                name: _value(spec if isinstance(spec, dict) else {}, root, said, depth + 1, budget)
                for name, spec in properties.items()
            }
        case "array":
            items = of_type(schema, "items", dict, {})
            count = of_type(schema, "minItems", int, 0)
            return [_value(items, root, said, depth + 1, budget) for _ in range(min(max(count, 0), 16))]
        case "string":
            text = STRING_FORMATS.get(str(schema.get("format")), said or "demo")
            least = of_type(schema, "minLength", int, 0)
            most = of_type(schema, "maxLength", int, None)
            text = text.ljust(min(max(least, 0), 10_000), ".")
            return text[:most] if most is not None and most >= 0 else text
        case "integer" | "number":
            low = schema.get("minimum", schema.get("exclusiveMinimum"))
            value = low if isinstance(low, (int, float)) and not isinstance(low, bool) else 0
            if "exclusiveMinimum" in schema and value == schema.get("exclusiveMinimum"):
                value += 1
            return int(value) if kind == "integer" else float(value)
        case "boolean":
            return True
    return None


def of_type(schema: dict[str, Any], key: str, kind: type[T], default: D) -> T | D:
    """`schema[key]` when it is a `kind`, else `default` (a client's schema may hold anything)."""
    value = schema.get(key)
    return value if isinstance(value, kind) else default

"""The demo's moderation classifier: deterministic, in the package, nothing downloaded.

A category is found when the text holds one of its words or phrases (whole words, any case);
a found category scores 0.96, any other 0.0. Linear in the text: one pass of one regular
expression. It answers the demo backend's `/moderations` (`demo/backend.py`), so `dev` shows
moderation end to end; it is no substitute for a real classifier.
"""

from __future__ import annotations

import re

from models.moderation import CATEGORIES, InputType, ModerationResult, applicable_types

FOUND_SCORE = 0.96

LEXICON: dict[str, tuple[str, ...]] = {
    "violence": ("kill", "murder", "stab", "shoot", "massacre"),
    "violence/graphic": ("gore", "dismember", "mutilate"),
    "harassment": ("idiot", "moron", "imbecile"),
    "harassment/threatening": ("i will hurt you", "you will pay for this"),
    "hate": ("subhuman", "vermin"),
    "illicit": ("shoplift", "counterfeit money", "launder money"),
    "illicit/violent": ("build a bomb", "make a weapon"),
    "self-harm": ("self-harm", "suicide"),
    "self-harm/intent": ("kill myself", "end my life"),
    "self-harm/instructions": ("how to self-harm",),
    "sexual": ("porn", "pornographic"),
}
"""What the demo looks for, by category (no category of minors: the demo never lists such)."""

_PHRASES = sorted({phrase for phrases in LEXICON.values() for phrase in phrases}, key=len, reverse=True)
_PATTERN = re.compile(r"(?<!\w)(" + "|".join(re.escape(phrase) for phrase in _PHRASES) + r")(?!\w)", re.IGNORECASE)
_CATEGORIES_OF: dict[str, list[str]] = {}
for _category, _phrases in LEXICON.items():
    for _phrase in _phrases:
        _CATEGORIES_OF.setdefault(_phrase, []).append(_category)


def found_in(text: str) -> set[str]:
    """The categories whose words the text holds."""
    found: set[str] = set()
    for match in _PATTERN.finditer(text):
        found.update(_CATEGORIES_OF.get(match.group(1).lower(), ()))
    return found


def classify(text: str, model: str, *, has_image: bool = False) -> ModerationResult:
    """One result for one input (its images are not looked at: their categories score 0)."""
    found = found_in(text)
    kinds: tuple[InputType, ...] = ("text", "image") if has_image else ("text",)
    return ModerationResult(
        model=model,
        flagged=bool(found),
        categories={name: name in found for name in CATEGORIES},
        category_scores={name: FOUND_SCORE if name in found else 0.0 for name in CATEGORIES},
        category_applied_input_types={name: applicable_types(name, kinds) for name in CATEGORIES},
    )


def moderations_answer(body: dict[str, object]) -> dict[str, object]:
    """A `/moderations` answer in OpenAI's shape, for a body in OpenAI's shape: a string, a list
    of strings (a result each), or a list of text and image parts (one result)."""
    model = str(body.get("model") or "omni-moderation-latest")
    given = body.get("input")
    subjects: list[tuple[str, bool]]
    if isinstance(given, str):
        subjects = [(given, False)]
    elif isinstance(given, list) and all(isinstance(each, str) for each in given):
        subjects = [(str(each), False) for each in given]
    elif isinstance(given, list):
        parts = [each for each in given if isinstance(each, dict)]
        text = " ".join(str(part.get("text") or "") for part in parts if part.get("type") == "text")
        subjects = [(text, any(part.get("type") == "image_url" for part in parts))]
    else:
        subjects = [("", False)]
    return {
        "id": "modr-demo",
        "model": model,
        "results": [classify(text, model, has_image=image).to_wire() for text, image in subjects],
    }

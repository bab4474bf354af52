"""Llama Guard (3 or 4) as a moderation model on any chat-completions backend.

The text is put in Llama Guard's classifier prompt and the model answers `safe`, or `unsafe`
and on the next line the hazard categories it found (`S1,S10`). Those are mapped onto OpenAI's
category names (`HAZARDS`, the table in `docs/guardrails.md`); a hazard with no OpenAI
counterpart flags the result without a category. Llama Guard gives no scores: a found
category scores 1.0. An answer that is neither is an error, never taken as safe.
"""

from __future__ import annotations

import re

from models.moderation import CATEGORIES, ModerationResult, applicable_types

HAZARDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "S1": ("Violent Crimes", ("violence", "illicit/violent")),
    "S2": ("Non-Violent Crimes", ("illicit",)),
    "S3": ("Sex-Related Crimes", ("sexual", "illicit")),
    "S4": ("Child Sexual Exploitation", ("sexual/minors",)),
    "S5": ("Defamation", ("harassment",)),
    "S6": ("Specialized Advice", ()),
    "S7": ("Privacy", ()),
    "S8": ("Intellectual Property", ()),
    "S9": ("Indiscriminate Weapons", ("illicit/violent", "violence")),
    "S10": ("Hate", ("hate",)),
    "S11": ("Suicide & Self-Harm", ("self-harm",)),
    "S12": ("Sexual Content", ("sexual",)),
    "S13": ("Elections", ()),
    "S14": ("Code Interpreter Abuse", ()),
}
"""Llama Guard 3's hazard categories (Llama Guard 4 keeps S1-S14), and OpenAI's names for them."""

ANSWER_TOKENS = 24
"""Enough for `unsafe` and every category."""


class MalformedVerdictError(ValueError):
    """Llama Guard answered something that is neither `safe` nor `unsafe` with categories."""


def classifier_prompt(text: str, role: str = "User") -> str:
    """Llama Guard's task: the hazard list, the text as the last turn of `role`, the format."""
    categories = "\n".join(f"{code}: {name}." for code, (name, _) in HAZARDS.items())
    return (
        f"Task: Check if there is unsafe content in '{role}' messages in conversations according to our "
        "safety policy with the below categories.\n\n"
        f"<BEGIN UNSAFE CONTENT CATEGORIES>\n{categories}\n<END UNSAFE CONTENT CATEGORIES>\n\n"
        f"<BEGIN CONVERSATION>\n\n{role}: {text}\n\n<END CONVERSATION>\n\n"
        f"Provide your safety assessment for ONLY THE LAST {role} message in the above conversation:\n"
        " - First line must read 'safe' or 'unsafe'.\n"
        " - If unsafe, a second line must include a comma-separated list of violated categories."
    )


_CODE = re.compile(r"S(\d{1,2})")


def parse_verdict(answer: str, model: str) -> ModerationResult:
    """`safe` -> nothing found; `unsafe` [+ categories] -> flagged; else `MalformedVerdictError`."""
    lines = [line.strip() for line in answer.strip().splitlines() if line.strip()]
    if not lines:
        raise MalformedVerdictError("Llama Guard gave an empty answer")
    head = lines[0].lower()
    if head == "safe" and len(lines) == 1:
        return ModerationResult.clean(model)
    if head != "unsafe" or len(lines) > 2:
        raise MalformedVerdictError(f"Llama Guard answered {answer.strip()[:80]!r}, not 'safe' or 'unsafe'")
    codes: list[str] = []
    for part in lines[1].split(",") if len(lines) == 2 else []:
        match = _CODE.fullmatch(part.strip().upper())
        if match is None or f"S{int(match.group(1))}" not in HAZARDS:
            raise MalformedVerdictError(f"Llama Guard named an unknown category {part.strip()[:20]!r}")
        codes.append(f"S{int(match.group(1))}")
    found = {name for code in codes for name in HAZARDS[code][1]}
    return ModerationResult(
        model=model,
        flagged=True,
        categories={name: name in found for name in CATEGORIES},
        category_scores={name: 1.0 if name in found else 0.0 for name in CATEGORIES},
        category_applied_input_types={name: applicable_types(name, ("text",)) for name in CATEGORIES},
    )

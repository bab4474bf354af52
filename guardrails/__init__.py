"""Guardrails: the checks a response's input and output pass through (`docs/guardrails.md`).

The seam has two places, and a guardrail is a module behind them:
- **input**, before a turn's model call: `workflows/moderation.py` runs the `moderate_input`
  activity (`activities/moderation.py`) on what is new to the model in that turn (the request's
  input on the first, tools' results on each after), and the workflow ends the response
  `incomplete` / `content_filter` when it blocks;
- **output**, between the stream assembler and the event log: `HeldOutput` (`held_output.py`)
  releases streamed text window by window as each passes, so nothing a check has not passed
  reaches the client, the event log or a webhook.

Moderation is the guardrail there is: `Moderator` (`moderator.py`) classifies with a moderation
deployment of the model registry (OpenAI's `/moderations`, or Llama Guard on a chat backend:
`llama_guard.py`); the demo backend classifies with `demo/keyword_moderation.py`.
"""

"""The upstream: which deployments serve a model (`registry.py`), and how fast each may be
called (`pacing.py`, pure; `gate.py`, the worker's side; `upstream/budgets.py`, the budget
every worker shares)."""

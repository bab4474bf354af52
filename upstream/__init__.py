"""The upstream: which deployments serve a model (`registry.py`), how many tokens its window
takes (`windows.py`), and how fast each may be called (`pacing.py`, pure; `gate.py`, the
worker's side; `budgets.py`, the budget every worker shares, in the store)."""

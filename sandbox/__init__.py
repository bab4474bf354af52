"""Processes that run with limits: what a process may spend (`limits.py`) and how one is run,
fed and stopped (`process.py`). A file's reader uses them today; sandboxed code will too."""

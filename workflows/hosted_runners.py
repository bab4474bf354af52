"""Each hosted tool's runner (`workflows/hosted_calls.py`), by its call item's type: what the
workflow runs for a call of a tool that `models/hosted_tools.py` records."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.hosted_tools import CODE_INTERPRETER, FILE_SEARCH, SHELL, WEB_SEARCH
    from workflows.code_interpreter_call import code_interpreter
    from workflows.file_search_call import file_search
    from workflows.hosted_calls import Runner
    from workflows.shell_call import shell
    from workflows.web_search_call import web_search

RUNNERS: dict[str, Runner] = {
    WEB_SEARCH.item_type: web_search,
    FILE_SEARCH.item_type: file_search,
    CODE_INTERPRETER.item_type: code_interpreter,
    SHELL.item_type: shell,
}

"""The command line that runs one of this project's modules in a process of its own (a file's
reader, a command's launcher, a container's egress proxy) with this process's interpreter and
this process's code.

`python -m` puts the working directory first on the module path, so a child started from a
directory that holds a package of the same name (another checkout of this project, say) would
run that code instead, beside a worker running its own. `-P` (Python 3.11) leaves the working
directory out; `PYTHONPATH` still counts, as it does for this process.
"""

from __future__ import annotations

import sys


def module_command(module: str, *arguments: str) -> list[str]:
    return [sys.executable, "-P", "-m", module, *arguments]

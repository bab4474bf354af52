"""Items of the tools that run code or commands: `code_interpreter` and `shell` in a container
here, and the client's `shell`, `local_shell` and `apply_patch` calls with the outputs it sends
back (`models/client_tools.py`). The unions of `models/items.py` hold them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from models.wire import ItemId, ListedAsSent, SearchCall, WireModel


class CodeInterpreterLogs(WireModel):
    type: Literal["logs"] = "logs"
    logs: str


class CodeInterpreterImage(WireModel):
    type: Literal["image"] = "image"
    url: str


CodeInterpreterOutput = Annotated[CodeInterpreterLogs | CodeInterpreterImage, Field(discriminator="type")]
CodeStatus = Literal["in_progress", "interpreting", "completed", "failed", "incomplete"]


class CodeInterpreterCallItem(SearchCall, WireModel):
    """Code the model ran in its container (`sandbox/`): its `outputs` (what it printed, the
    figures it drew) when the request's `include` asks for them."""

    type: Literal["code_interpreter_call"] = "code_interpreter_call"
    id: str
    code: str | None = None
    container_id: str
    outputs: list[CodeInterpreterOutput] | None = None
    status: CodeStatus = "in_progress"


class ShellAction(WireModel):
    commands: list[str]
    timeout_ms: int | None = None
    max_output_length: int | None = None


class ShellEnvironment(WireModel):
    type: Literal["container_reference"] = "container_reference"
    container_id: str


class LocalEnvironment(WireModel):
    type: Literal["local"] = "local"


ShellStatus = Literal["in_progress", "completed", "incomplete"]


class ShellCallItem(SearchCall, WireModel):
    """Commands the model ran in its container (`sandbox/`), one after the other; what they
    printed is the `shell_call_output` item after it. Or, in a `local` environment, commands
    for the client to run (`models/client_tools.py`): its `shell_call_output` comes back as
    input."""

    type: Literal["shell_call"] = "shell_call"
    id: str
    call_id: str
    action: ShellAction
    environment: Annotated[ShellEnvironment | LocalEnvironment, Field(discriminator="type")] | None = None
    status: ShellStatus = "in_progress"

    @property
    def container_id(self) -> str:
        return self.environment.container_id if isinstance(self.environment, ShellEnvironment) else ""

    @property
    def runs_here(self) -> bool:
        """Whether this server runs it (in a container), not the client."""
        return isinstance(self.environment, ShellEnvironment)

    @property
    def chat_call_id(self) -> str:
        return self.call_id


class ShellExit(WireModel):
    type: Literal["exit"] = "exit"
    exit_code: int


class ShellTimeout(WireModel):
    type: Literal["timeout"] = "timeout"


class ShellCommandOutput(WireModel):
    stdout: str
    stderr: str
    outcome: Annotated[ShellExit | ShellTimeout, Field(discriminator="type")]


class ShellCallOutputItem(WireModel):
    """What each command of a `shell_call` printed, and how it ended. A command whose end is
    unknown (its container's host was lost) is missing, and the item is `incomplete`."""

    type: Literal["shell_call_output"] = "shell_call_output"
    id: str
    call_id: str
    output: list[ShellCommandOutput] = Field(default_factory=list)
    max_output_length: int | None = None
    status: ShellStatus = "in_progress"


class LocalShellAction(WireModel):
    type: Literal["exec"] = "exec"
    command: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    timeout_ms: int | None = None
    user: str | None = None
    working_directory: str | None = None


class LocalShellCallItem(WireModel):
    """A command for the client to run (`local_shell`); its `local_shell_call_output` comes
    back as input."""

    type: Literal["local_shell_call"] = "local_shell_call"
    id: str
    call_id: str
    action: LocalShellAction
    status: ShellStatus = "completed"


class ApplyPatchCreate(WireModel):
    type: Literal["create_file"]
    path: str
    diff: str


class ApplyPatchUpdate(WireModel):
    type: Literal["update_file"]
    path: str
    diff: str


class ApplyPatchDelete(WireModel):
    type: Literal["delete_file"]
    path: str


ApplyPatchOperation = Annotated[ApplyPatchCreate | ApplyPatchUpdate | ApplyPatchDelete, Field(discriminator="type")]


class ApplyPatchCallItem(WireModel):
    """A file change for the client to make (`apply_patch`); its `apply_patch_call_output`
    comes back as input."""

    type: Literal["apply_patch_call"] = "apply_patch_call"
    id: str
    call_id: str
    operation: ApplyPatchOperation
    status: Literal["in_progress", "completed"] = "completed"


# Calls the client ran, and what they returned, as a client sends them back.


class ShellCallInput(ListedAsSent):
    type: Literal["shell_call"]
    id: ItemId | None = None
    call_id: ItemId
    action: ShellAction
    environment: Annotated[ShellEnvironment | LocalEnvironment, Field(discriminator="type")] | None = None
    status: ShellStatus | None = None


class ShellCallOutputInput(ListedAsSent):
    type: Literal["shell_call_output"]
    id: ItemId | None = None
    call_id: ItemId
    output: list[ShellCommandOutput]
    max_output_length: int | None = None
    status: ShellStatus | None = None


class LocalShellCallInput(ListedAsSent):
    type: Literal["local_shell_call"]
    id: ItemId | None = None
    call_id: ItemId
    action: LocalShellAction
    status: ShellStatus | None = None


class LocalShellCallOutputInput(ListedAsSent):
    """`id` is the call's `call_id` (as OpenAI has it)."""

    type: Literal["local_shell_call_output"]
    id: ItemId
    output: str
    status: ShellStatus | None = None

    @property
    def call_id(self) -> str:
        return self.id

    def as_listed(self, item_id: str) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class ApplyPatchCallInput(ListedAsSent):
    type: Literal["apply_patch_call"]
    id: ItemId | None = None
    call_id: ItemId
    operation: ApplyPatchOperation
    status: Literal["in_progress", "completed"] | None = None


class ApplyPatchCallOutputInput(ListedAsSent):
    type: Literal["apply_patch_call_output"]
    id: ItemId | None = None
    call_id: ItemId
    status: Literal["completed", "failed"]
    output: str | None = None

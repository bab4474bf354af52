"""Tool definitions and `tool_choice`, discriminated on `type`.

The client's own tools: `function`, `custom` (freeform text input, such as Codex's
`apply_patch`) and `namespace` (functions and custom tools grouped under a name); the
model calls them and the client runs them. `mcp` tools run here, and so does `web_search`
when a search provider is configured (`web_search/`; without one it is accepted and not offered).
`tool_search` is accepted and left out of what the model sees: every function is offered at
once, so nothing is deferred to a search.

`McpTool` is OpenAI's remote MCP tool. Its `headers` and `authorization` are secrets: the
API takes them out (`McpTool.secrets`) and keeps them sealed in the store, and everything
that is stored, logged or sent to Temporal carries the tool `redacted()`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationInfo, field_validator, model_validator

from models.containers import FileIds as ContainerFileIds
from models.containers import MemoryLimit, NetworkPolicy
from models.file_search import MAX_RESULTS, Filters, RankingOptions
from models.wire import WireModel

TOOL_NAME = r"^[a-zA-Z0-9_-]+$"
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
"""Characters no header value may hold (a tab may)."""


class FunctionTool(WireModel):
    type: Literal["function"]
    name: str = Field(min_length=1, max_length=128, pattern=TOOL_NAME)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: StrictBool | None = None


class TextInputFormat(WireModel):
    type: Literal["text"]


class GrammarInputFormat(WireModel):
    type: Literal["grammar"]
    syntax: Literal["lark", "regex"]
    definition: str


class CustomTool(WireModel):
    """A tool whose input is free text rather than JSON arguments."""

    type: Literal["custom"]
    name: str = Field(min_length=1, max_length=128, pattern=TOOL_NAME)
    description: str | None = None
    format: Annotated[TextInputFormat | GrammarInputFormat, Field(discriminator="type")] | None = None


NamespacedTool = Annotated[FunctionTool | CustomTool, Field(discriminator="type")]


class NamespaceTool(WireModel):
    """Function and custom tools grouped under a name; their calls carry `namespace`."""

    type: Literal["namespace"]
    name: str = Field(min_length=1, max_length=64, pattern=TOOL_NAME)
    description: str | None = None
    tools: list[NamespacedTool] = Field(min_length=1)


class WebSearchFilters(WireModel):
    allowed_domains: list[str] | None = Field(default=None, max_length=100)


class WebSearchLocation(WireModel):
    type: Literal["approximate"] = "approximate"
    country: str | None = Field(default=None, max_length=2)
    city: str | None = None
    region: str | None = None
    timezone: str | None = None


class WebSearchTool(WireModel):
    """Offered to the model as a `web_search(query)` function when the server has a search
    provider (`web_search/`); accepted and not offered when it has none (the start-up log says so)."""

    type: Literal["web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11"]
    filters: WebSearchFilters | None = None
    search_context_size: Literal["low", "medium", "high"] | None = None
    user_location: WebSearchLocation | None = None

    def allowed_domains(self) -> tuple[str, ...]:
        domains = (self.filters.allowed_domains or []) if self.filters else []
        return tuple(domain.lower().removeprefix("https://").removeprefix("http://").strip("/") for domain in domains)


class FileSearchTool(WireModel):
    """Offered to the model as a `file_search(query)` function over the request's vector
    stores (`file_search/`)."""

    type: Literal["file_search"]
    vector_store_ids: list[Annotated[str, Field(min_length=1, max_length=80)]] = Field(min_length=1, max_length=10)
    max_num_results: int | None = Field(default=None, ge=1, le=MAX_RESULTS)
    ranking_options: RankingOptions | None = None
    filters: Filters | None = None


class CodeInterpreterAutoContainer(WireModel):
    """A container made for the response (`container: {"type": "auto", ...}`)."""

    type: Literal["auto"]
    memory_limit: MemoryLimit | None = None
    file_ids: ContainerFileIds | None = None
    network_policy: NetworkPolicy | None = None


class CodeInterpreterTool(WireModel):
    """Offered to the model as a `code_interpreter(code)` function whose calls run in a
    container (`sandbox/`), when the server runs code; accepted and not offered when it does
    not. The API turns `"auto"` into a container made for the response: from then on
    `container` is that container's id (`response_service/preparation.py`)."""

    type: Literal["code_interpreter"]
    container: Annotated[str, Field(min_length=1, max_length=80)] | CodeInterpreterAutoContainer

    @property
    def container_id(self) -> str:
        """The container's id, once the API has given it one."""
        return self.container if isinstance(self.container, str) and self.container != "auto" else ""

    @property
    def auto(self) -> CodeInterpreterAutoContainer | None:
        """What a container made for the response is asked to be (`"auto"` asks nothing)."""
        if self.container == "auto":
            return CodeInterpreterAutoContainer(type="auto")
        return self.container if isinstance(self.container, CodeInterpreterAutoContainer) else None


class ShellContainerAuto(WireModel):
    """A container made for the response (`environment: {"type": "container_auto", ...}`)."""

    type: Literal["container_auto"]
    memory_limit: MemoryLimit | None = None
    file_ids: ContainerFileIds | None = None
    network_policy: NetworkPolicy | None = None
    skills: None = None


class ShellContainerReference(WireModel):
    type: Literal["container_reference"]
    container_id: Annotated[str, Field(min_length=1, max_length=80)]


class ShellLocalEnvironment(WireModel):
    type: Literal["local"]
    skills: None = None


class ShellTool(WireModel):
    """The shell: offered to the model as a `shell(commands, timeout_ms, max_output_length)`
    function. In a container (`container_auto`, `container_reference`) its calls run here
    (`sandbox/`), when the server runs code: the API turns `container_auto` into a container
    made for the response, from then on a `container_reference` (`response_service/code_containers.py`).
    In a `local` environment, or none, its calls go back to the client as `shell_call` items
    (`models/client_tools.py`)."""

    type: Literal["shell"]
    environment: (
        Annotated[ShellContainerAuto | ShellContainerReference | ShellLocalEnvironment, Field(discriminator="type")]
        | None
    ) = None
    allowed_callers: list[Literal["direct", "programmatic"]] | None = None

    @property
    def container_id(self) -> str:
        """The container's id, once the API has given it one."""
        return self.environment.container_id if isinstance(self.environment, ShellContainerReference) else ""

    @property
    def runs_here(self) -> bool:
        return isinstance(self.environment, (ShellContainerAuto, ShellContainerReference))


class LocalShellTool(WireModel):
    """Offered as a `local_shell(command, ...)` function whose calls go back to the client as
    `local_shell_call` items (`models/client_tools.py`)."""

    type: Literal["local_shell"]


class ApplyPatchTool(WireModel):
    """Offered as an `apply_patch(type, path, diff)` function whose calls go back to the client
    as `apply_patch_call` items (`models/client_tools.py`)."""

    type: Literal["apply_patch"]
    allowed_callers: list[Literal["direct", "programmatic"]] | None = None


class ToolSearchTool(WireModel):
    """Accepted, and not offered to the model: every function is offered at once."""

    type: Literal["tool_search"]


class McpToolFilter(BaseModel):
    """Which of a server's tools a rule names: by name, by MCP's `readOnlyHint`, or both
    (then a tool must match both). A filter that names nothing matches nothing."""

    model_config = ConfigDict(extra="forbid")
    tool_names: list[str] | None = None
    read_only: StrictBool | None = None

    def matches(self, name: str, read_only: bool) -> bool:
        if self.tool_names is None and self.read_only is None:
            return False
        by_name = self.tool_names is None or name in self.tool_names
        by_hint = self.read_only is None or self.read_only == read_only
        return by_name and by_hint


class McpApprovalFilter(BaseModel):
    model_config = ConfigDict(extra="forbid")
    always: McpToolFilter | None = None
    never: McpToolFilter | None = None


class McpSecrets(BaseModel):
    """What a client sends an MCP server to authenticate; never stored or logged in clear."""

    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    authorization: str | None = Field(default=None, repr=False)

    def http_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self.authorization:
            headers["Authorization"] = f"Bearer {self.authorization}"
        return headers


class McpTool(WireModel):
    type: Literal["mcp"]
    server_label: str = Field(min_length=1, max_length=64, pattern=r"^[a-zA-Z0-9_-]+$")
    server_url: str | None = None
    server_description: str | None = None
    headers: dict[str, str] | None = Field(default=None, repr=False)
    authorization: str | None = Field(default=None, repr=False)
    allowed_tools: list[str] | McpToolFilter | None = None
    require_approval: Literal["always", "never"] | McpApprovalFilter | None = None
    connector_id: str | None = None
    tunnel_id: str | None = None

    @field_validator("server_url")
    @classmethod
    def _plain_http_url(cls, url: str | None, info: ValidationInfo) -> str | None:
        label = info.data.get("server_label", "")
        parts = urlsplit(url or "")
        if parts.scheme not in ("http", "https") or not parts.hostname or len(url or "") > 2048:
            raise ValueError(f"MCP server '{label}' needs a `server_url`: an http:// or https:// URL")
        if parts.username is not None or parts.password is not None:
            raise ValueError(
                f"the `server_url` of MCP server '{label}' carries credentials; send them in "
                "`headers` or `authorization` instead, where they are kept secret"
            )
        return url

    @field_validator("headers")
    @classmethod
    def _sendable_headers(cls, headers: dict[str, str] | None, info: ValidationInfo) -> dict[str, str] | None:
        """Values are never quoted back: they are secrets, and one with a newline is a mistake."""
        label = info.data.get("server_label", "")
        for name, value in (headers or {}).items():
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError(f"header names of MCP server '{label}' must be HTTP tokens")
            if _CONTROL.search(value):
                raise ValueError(
                    f"the value of header '{name}' of MCP server '{label}' holds a control character (CR, LF, NUL, ...)"
                )
        return headers

    @field_validator("authorization")
    @classmethod
    def _sendable_authorization(cls, authorization: str | None, info: ValidationInfo) -> str | None:
        if authorization is not None and _CONTROL.search(authorization):
            raise ValueError(
                f"the `authorization` of MCP server '{info.data.get('server_label', '')}' holds a "
                "control character (CR, LF, NUL, ...)"
            )
        return authorization

    @model_validator(mode="after")
    def _needs_a_server_url(self) -> McpTool:
        if self.connector_id is not None or self.tunnel_id is not None:
            raise ValueError(
                "connectors and MCP tunnels are OpenAI-hosted services; give the server's `server_url` instead"
            )
        if self.server_url is None:
            raise ValueError(f"MCP server '{self.server_label}' needs a `server_url`: an http:// or https:// URL")
        return self

    def allows(self, name: str, read_only: bool) -> bool:
        """Whether `allowed_tools` lets the model see this tool."""
        match self.allowed_tools:
            case None:
                return True
            case list() as names:
                return name in names
            case McpToolFilter() as rule:
                return rule.matches(name, read_only)
        return False

    def requires_approval(self, name: str, read_only: bool) -> bool:
        """OpenAI's default is "always". With a filter, a tool named by `always` needs
        approval and one named by `never` does not; a tool named by neither needs it unless
        the filter has only an `always` rule."""
        match self.require_approval:
            case None | "always":
                return True
            case "never":
                return False
            case McpApprovalFilter(always=always, never=never):
                if always is not None and always.matches(name, read_only):
                    return True
                if never is not None and never.matches(name, read_only):
                    return False
                return never is not None or always is None
        return True

    def secrets(self) -> McpSecrets | None:
        if not self.headers and not self.authorization:
            return None
        return McpSecrets(headers=self.headers or {}, authorization=self.authorization)

    def redacted(self) -> McpTool:
        return self.model_copy(update={"headers": None, "authorization": None})


Tool = Annotated[
    FunctionTool
    | CustomTool
    | NamespaceTool
    | McpTool
    | WebSearchTool
    | FileSearchTool
    | CodeInterpreterTool
    | ShellTool
    | LocalShellTool
    | ApplyPatchTool
    | ToolSearchTool,
    Field(discriminator="type"),
]


class ToolChoiceFunction(WireModel):
    type: Literal["function"]
    name: str
    namespace: str | None = None


class ToolChoiceCustom(WireModel):
    type: Literal["custom"]
    name: str
    namespace: str | None = None


class ToolChoiceMcp(WireModel):
    type: Literal["mcp"]
    server_label: str
    name: str | None = None


ToolChoiceMode = Literal["none", "auto", "required"]
ToolChoice = (
    ToolChoiceMode | Annotated[ToolChoiceFunction | ToolChoiceCustom | ToolChoiceMcp, Field(discriminator="type")]
)

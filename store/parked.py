"""Heavy fields of items that travel through Temporal as stubs (`models/history_budget.py`),
kept by response id, item id and field name until the response ends."""

from __future__ import annotations

from typing import Any

from models.history_budget import ToolResult, call_result_text
from models.mcp import McpFunction
from store.codec import dumps, loads
from store.database import Database, Transaction

Parked = dict[str, dict[str, Any]]
"""Item id -> {field name: JSON value}."""


class ParkedFields:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def put(self, response_id: str, parked: Parked) -> None:
        if parked:
            async with self.db.write() as transaction:
                await self.put_in(transaction, response_id, parked)

    @staticmethod
    async def put_in(transaction: Transaction, response_id: str, parked: Parked) -> None:
        """Idempotent: a step that runs again parks the same fields again."""
        await transaction.run_many(
            "INSERT INTO parked_fields (response_id, item_id, field, value) "
            "VALUES (:response_id, :item_id, :field, :value) "
            "ON CONFLICT (response_id, item_id, field) DO UPDATE SET value = excluded.value",
            [
                {"response_id": response_id, "item_id": item_id, "field": field, "value": dumps(value)}
                for item_id, fields in parked.items()
                for field, value in fields.items()
            ],
        )

    async def get(self, response_id: str, item_ids: list[str]) -> Parked:
        if not item_ids:
            return {}
        async with self.db.read() as transaction:
            return await self.get_in(transaction, response_id, item_ids)

    @staticmethod
    async def get_in(transaction: Transaction, response_id: str, item_ids: list[str]) -> Parked:
        rows = await transaction.all(
            "SELECT item_id, field, value FROM parked_fields WHERE response_id = :id AND item_id IN (:items)",
            id=response_id,
            items=item_ids,
        )
        parked: Parked = {}
        for row in rows:
            parked.setdefault(row["item_id"], {})[row["field"]] = loads(row["value"])
        return parked

    async def whole_functions(self, response_id: str, functions: list[McpFunction]) -> list[McpFunction]:
        """MCP functions to offer, those of a listing that travelled as a stub with their
        descriptions and parameters read back from where they are parked."""
        listing_ids = sorted({function.parked_in for function in functions if function.parked_in})
        if not listing_ids:
            return functions
        parked = await self.get(response_id, listing_ids)
        tools = {
            (listing_id, tool["name"]): tool
            for listing_id, fields in parked.items()
            for tool in fields.get("tools", [])
        }
        whole = []
        for function in functions:
            tool = tools.get((function.parked_in or "", function.tool_name))
            if tool is not None:
                function = function.model_copy(
                    update={"description": tool.get("description"), "parameters": tool.get("input_schema") or {}}
                )
            whole.append(function)
        return whole

    async def tool_texts(self, response_id: str, results: dict[str, ToolResult]) -> dict[str, str]:
        """What the model is told each tool returned (by chat tool-call id, in order), with
        the results of calls whose fields are parked read from here."""
        parked = await self.get(
            response_id, sorted({result.parked_in for result in results.values() if result.parked_in is not None})
        )
        return {
            chat_id: result.text if result.parked_in is None else call_result_text(parked.get(result.parked_in, {}))
            for chat_id, result in results.items()
        }

"""The approvals inbox in a real browser (`tests/support/browser.py`: headless Chromium through
Selenium): it lists what waits, approves, denies with a reason, follows decisions made
elsewhere and new requests live, works on a phone-sized screen from the keyboard, and asks
for a key where keys are needed. The last test is the whole story through every process.

The API of the session stack runs in the test's event loop, so every browser call (blocking)
runs in a thread of its own while the loop serves the page's requests."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.support.browser import browser
from tests.support.keys import make_key
from tests.support.mcp_servers import McpTestServer
from tests.support.processes import kill, spawn_api, spawn_worker
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, Stack, running_stack
from tests.support.waiting import eventually, until_awaiting_approval, until_terminal
from tests.support.webhook_receiver import SECRET, Receiver


def _tools(mcp_server: McpTestServer) -> list[dict[str, Any]]:
    return [{"type": "mcp", "server_label": "tools", "server_url": mcp_server.url, "require_approval": "always"}]


def _card_text(driver: Any, request_id: str) -> str | None:
    try:
        cards = driver.find_elements(By.CSS_SELECTOR, f'li.request[data-id="{request_id}"]')
        return cards[0].text if cards else None
    except StaleElementReferenceException:  # removed between finding and reading it
        return None


async def shown(driver: Any, request_id: str, what: str, seconds: float = 10) -> str:
    return await eventually(
        lambda: asyncio.to_thread(_card_text, driver, request_id), what, seconds=seconds, poll_seconds=0.02
    )


async def gone(driver: Any, request_id: str, what: str) -> None:
    async def absent() -> bool:
        return await asyncio.to_thread(_card_text, driver, request_id) is None

    await eventually(absent, what)


def _click(driver: Any, request_id: str, button: str, reason: str = "") -> None:
    card = driver.find_element(By.CSS_SELECTOR, f'li.request[data-id="{request_id}"]')
    if reason:
        card.find_element(By.CSS_SELECTOR, "input.reason").send_keys(reason)
    card.find_element(By.CSS_SELECTOR, f"button.{button}").click()


async def _waiting(
    sdk: openai.AsyncOpenAI,
    backend: ScriptedBackend,
    mcp_server: McpTestServer,
    model: str,
    ask: str,
    arguments: dict[str, Any],
    answer: str,
) -> tuple[str, str]:
    backend.script(model, [Reply(tool_calls=[("delete_file", arguments)]), Reply(text=answer)])
    response = await sdk.responses.create(model=model, input=ask, tools=_tools(mcp_server), background=True)
    request = (await until_awaiting_approval(sdk, response.id)).output[-1]
    return response.id, request.id


@pytest.mark.one_store
async def test_the_inbox_shows_invisible_and_direction_changing_characters_escaped(
    stack: Stack,
    sdk: openai.AsyncOpenAI,
    backend: ScriptedBackend,
    mcp_server: McpTestServer,
    model: str,
):
    """A right-to-left override can make `/etc/passwd` read as something harmless, and a
    zero-width space hides in plain sight: the card shows each as an escape, and says so."""
    path = "/tmp/\u202eft.txt\u200b/../../etc/passwd"
    _response, request = await _waiting(sdk, backend, mcp_server, model, "tidy up", {"path": path}, "done")
    with browser() as driver:
        await asyncio.to_thread(driver.get, stack.base_url.removesuffix("/v1") + "/inbox")
        card = await shown(driver, request, "the request's card")
    assert "\\u{202E}" in card and "\\u{200B}" in card, card
    assert "\u202e" not in card and "\u200b" not in card
    assert "2 invisible or direction-changing characters" in card


@pytest.mark.one_store
async def test_the_inbox_lists_what_waits_approves_and_denies_with_a_reason(
    stack: Stack,
    sdk: openai.AsyncOpenAI,
    backend: ScriptedBackend,
    mcp_server: McpTestServer,
    model: str,
    tmp_path: Path,
):
    approved_response, approved = await _waiting(
        sdk,
        backend,
        mcp_server,
        f"{model}-a",
        "please delete the report",
        {"path": f"/tmp/{model}-report.txt"},
        "deleted",
    )
    denied_response, denied = await _waiting(
        sdk, backend, mcp_server, f"{model}-b", "clean up <b>everything</b>", {"path": "/etc/passwd"}, "I will not"
    )
    with browser() as driver:
        await asyncio.to_thread(driver.get, stack.base_url.removesuffix("/v1") + "/inbox")
        card = await shown(driver, approved, "the first request's card")
        assert "delete_file on tools" in card and f"Model {model}-a" in card and "please delete the report" in card
        assert f'{{\n  "path": "/tmp/{model}-report.txt"\n}}' in card  # pretty-printed
        card = await shown(driver, denied, "the second request's card")
        assert "clean up <b>everything</b>" in card  # shown as text, never as HTML
        await asyncio.to_thread(driver.save_screenshot, str(tmp_path / "inbox.png"))

        await asyncio.to_thread(_click, driver, approved, "approve")
        await gone(driver, approved, "the approved card to go")
        assert (await until_terminal(sdk, approved_response)).output_text == "deleted"
        assert {"path": f"/tmp/{model}-report.txt"} in mcp_server.calls_of("delete_file")

        await asyncio.to_thread(_click, driver, denied, "deny", "never touch system files")
        await gone(driver, denied, "the denied card to go")
        assert (await until_terminal(sdk, denied_response)).output_text == "I will not"
        told = json.dumps(backend.requests(f"{model}-b")[-1]["messages"])
        assert "never touch system files" in told
        assert {"path": "/etc/passwd"} not in mcp_server.calls_of("delete_file")
        status = await asyncio.to_thread(lambda: driver.find_element(By.ID, "announcer").text)
        assert status == "Denied delete_file on tools."


@pytest.mark.one_store
async def test_the_inbox_shows_new_requests_and_decisions_made_elsewhere_live(
    stack: Stack,
    sdk: openai.AsyncOpenAI,
    backend: ScriptedBackend,
    mcp_server: McpTestServer,
    model: str,
):
    with browser() as driver:
        await asyncio.to_thread(driver.get, stack.base_url.removesuffix("/v1") + "/inbox")
        await eventually(lambda: asyncio.to_thread(lambda: driver.find_element(By.ID, "requests")), "the page")
        response_id, request_id = await _waiting(
            sdk, backend, mcp_server, model, "tidy up", {"path": f"/tmp/{model}"}, "done"
        )
        asked = time.monotonic()
        await shown(driver, request_id, "the new request's card", seconds=5)
        appeared = time.monotonic() - asked
        # The page looks every 0.5 s: a new request is there within a second of being asked.
        assert appeared < 1.5, f"the card appeared after {appeared:.2f} s"
        async with stack.http() as http:  # decided elsewhere (another browser, the CLI, a script)
            decided = await http.post(
                f"/v1/responses/{response_id}/approvals", json={"approval_request_id": request_id, "approve": True}
            )
            assert decided.status_code == 200
        await gone(driver, request_id, "the card of the request decided elsewhere to go")
        assert (await until_terminal(sdk, response_id)).status == "completed"


@pytest.mark.one_store
async def test_the_inbox_keeps_a_decision_on_a_request_left_open_for_the_follow_up(
    stack: Stack,
    sdk: openai.AsyncOpenAI,
    backend: ScriptedBackend,
    mcp_server: McpTestServer,
    model: str,
    tmp_path: Path,
):
    """A response that did not run in the background ends with its request (as OpenAI's do):
    the inbox lists it apart, says what deciding means, and the client's next request that
    continues the response runs the approved call."""
    path = f"/tmp/{model}-left-open"
    backend.script(model, [Reply(tool_calls=[("delete_file", {"path": path})]), Reply(text="deleted, as approved")])
    ended = await sdk.responses.create(model=model, input="delete the old log", tools=_tools(mcp_server))
    request_id = ended.output[-1].id
    with browser() as driver:
        await asyncio.to_thread(driver.get, stack.base_url.removesuffix("/v1") + "/inbox")
        card = await shown(driver, request_id, "the open request's card")
        assert "response completed" in card and "Applies when the client continues this response" in card
        placed = await asyncio.to_thread(
            lambda: driver.find_element(
                By.CSS_SELECTOR, f'#open-requests li.request[data-id="{request_id}"]'
            ).is_displayed()
        )
        help_text = await asyncio.to_thread(lambda: driver.find_element(By.ID, "open-help").text)
        assert placed and "kept for that request" in help_text
        await asyncio.to_thread(driver.save_screenshot, str(tmp_path / "inbox-open.png"))
        await asyncio.to_thread(_click, driver, request_id, "approve")
        await gone(driver, request_id, "the decided card")
        status = await asyncio.to_thread(lambda: driver.find_element(By.ID, "announcer").text)
        assert status == ("Approved delete_file on tools; the client's next request continuing the response runs it.")
    assert {"path": path} not in mcp_server.calls_of("delete_file")
    follow_up = await sdk.responses.create(
        model=model, previous_response_id=ended.id, input="thanks", tools=_tools(mcp_server)
    )
    assert follow_up.output[0].type == "mcp_call" and follow_up.output_text == "deleted, as approved"
    assert {"path": path} in mcp_server.calls_of("delete_file")


def _tab_to(driver: Any, target: Any, presses: int = 60) -> bool:
    for _ in range(presses):
        ActionChains(driver).send_keys(Keys.TAB).perform()
        if driver.switch_to.active_element == target:
            return True
    return False


@pytest.mark.one_store
async def test_the_inbox_works_on_a_phone_from_the_keyboard(
    stack: Stack,
    sdk: openai.AsyncOpenAI,
    backend: ScriptedBackend,
    mcp_server: McpTestServer,
    model: str,
    tmp_path: Path,
):
    response_id, request_id = await _waiting(
        sdk, backend, mcp_server, model, "archive the logs", {"path": "/var/log/" + "x" * 300}, "archived"
    )
    with browser(phone=True) as driver:
        await asyncio.to_thread(driver.get, stack.base_url.removesuffix("/v1") + "/inbox")
        await shown(driver, request_id, "the card on a phone")
        page = await asyncio.to_thread(
            driver.execute_script,
            """
            return {width: window.innerWidth, scroll: document.documentElement.scrollWidth,
                    unlabelled: [...document.querySelectorAll('input')].filter(
                        (input) => !document.querySelector(`label[for="${input.id}"]`)).length,
                    small: [...document.querySelectorAll('button')].filter((button) => button.offsetParent
                        && button.getBoundingClientRect().height < 44).length,
                    lang: document.documentElement.lang};""",
        )
        assert page["width"] <= 400 and page["scroll"] <= page["width"], page  # no sideways scrolling
        assert page["unlabelled"] == 0 and page["small"] == 0 and page["lang"] == "en", page
        await asyncio.to_thread(driver.save_screenshot, str(tmp_path / "inbox-phone.png"))

        def approve_from_the_keyboard() -> bool:
            card = driver.find_element(By.CSS_SELECTOR, f'li.request[data-id="{request_id}"]')
            if not _tab_to(driver, card.find_element(By.CSS_SELECTOR, "button.approve")):
                return False
            ActionChains(driver).send_keys(Keys.ENTER).perform()
            return True

        assert await asyncio.to_thread(approve_from_the_keyboard), "the Approve button is not reachable by Tab"
        await gone(driver, request_id, "the card approved from the keyboard")
    assert (await until_terminal(sdk, response_id)).output_text == "archived"


async def test_the_inbox_asks_for_a_key_where_keys_are_needed(
    temporal_address: str,
    backend: ScriptedBackend,
    store: EmptyStore,
    mcp_server: McpTestServer,
    model: str,
):
    async with running_stack(temporal_address, backend, store) as stack:
        key, _ = make_key(stack, "alpha")
        approver, _ = make_key(stack, "alpha", approver=True)
        other, _ = make_key(stack, "beta")
        async with openai.AsyncOpenAI(
            base_url=stack.base_url, api_key=key, max_retries=0, _strict_response_validation=True
        ) as sdk:
            _, request_id = await _waiting(sdk, backend, mcp_server, model, "go", {"path": "/tmp/k"}, "done")
        async with httpx.AsyncClient(base_url=stack.base_url, headers={"authorization": f"Bearer {other}"}) as beta:
            assert (await beta.get("/approvals")).json()["data"] == []  # another project sees none of alpha's
        with browser() as driver:
            await asyncio.to_thread(driver.get, stack.base_url.removesuffix("/v1") + "/inbox")
            await eventually(
                lambda: asyncio.to_thread(lambda: driver.find_element(By.ID, "key").is_displayed()), "the key form"
            )
            await asyncio.to_thread(lambda: driver.find_element(By.ID, "key").send_keys(approver, Keys.ENTER))
            await shown(driver, request_id, "the card once an approver key is given")


@pytest.mark.one_store
async def test_an_approval_from_request_to_answer_through_every_process(
    temporal_address: str,
    backend: ScriptedBackend,
    store: EmptyStore,
    mcp_server: McpTestServer,
    model: str,
):
    """`serve` and `worker` as processes of their own (this process only holds Temporal's
    and the store's test fixtures): a background response waits for an approval and says so
    by webhook, shows in the inbox within a second, is approved in the browser, runs the
    call, completes and says so by webhook."""
    receiver = Receiver().start()
    env = {"WEBHOOK_URLS": receiver.url, "WEBHOOK_SECRET": SECRET}
    async with running_stack(temporal_address, backend, store, with_worker=False) as stack:
        await _through_every_process(stack, backend, mcp_server, model, receiver, env)


async def _through_every_process(
    stack: Stack,
    backend: ScriptedBackend,
    mcp_server: McpTestServer,
    model: str,
    receiver: Receiver,
    env: dict[str, str],
) -> None:
    api, worker = spawn_api(stack, env=env), None
    try:
        process, base_url = api
        worker = spawn_worker(stack, env=env)
        webhooks = openai.OpenAI(api_key="unused", webhook_secret=SECRET).webhooks
        async with httpx.AsyncClient() as http:
            sdk = openai.AsyncOpenAI(
                base_url=base_url, api_key="x", http_client=http, max_retries=0, _strict_response_validation=True
            )
            with browser() as driver:
                await asyncio.to_thread(driver.get, base_url.removesuffix("/v1") + "/inbox")
                response_id, request_id = await _waiting(
                    sdk, backend, mcp_server, model, "remove the draft", {"path": f"/tmp/{model}-draft"}, "removed"
                )
                asked = time.monotonic()
                await shown(driver, request_id, "the request in the inbox", seconds=5)
                assert time.monotonic() - asked < 1.5
                [asking] = await eventually(lambda: receiver.of(response_id), "the action_required webhook")
                webhooks.verify_signature(asking.body, asking.headers)
                assert asking.event["data"]["required_action"]["approval_request_id"] == request_id
                await asyncio.to_thread(_click, driver, request_id, "approve")
                await gone(driver, request_id, "the approved request")
            assert (await until_terminal(sdk, response_id)).output_text == "removed"
            assert {"path": f"/tmp/{model}-draft"} in mcp_server.calls_of("delete_file")
            await eventually(lambda: len(receiver.of(response_id)) == 2, "the completed webhook")
            completed = receiver.of(response_id)[1]
            assert webhooks.unwrap(completed.body, completed.headers).type == "response.completed"
    finally:
        kill(worker)
        kill(api[0])
        receiver.stop()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(["status", "limit", "after"]), value=st.text(max_size=40))
async def test_the_approvals_list_answers_any_query_with_a_list_or_a_400_naming_it(stack: Stack, name: str, value: str):
    async with stack.http() as http:
        answer = await http.get("/v1/approvals", params={name: value})
    if answer.status_code == 200:
        assert answer.json()["object"] == "list"
        return
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == name

"""The bed's client node: the workload's operations, several at a time, until its time is
up; then, once the bed says every fault is healed, the final reading. It runs inside the
client node's namespace and logs to the bed's history.

    python -m bench.cluster.client --apis URL,URL --tools URL --history DIR --seconds N --seed S"""

from __future__ import annotations

import argparse
import asyncio
import random
from pathlib import Path

from bench.cluster.history import Log, Operation, now
from bench.cluster.reading import FINAL_SECONDS, conversation_read, final, settle, steer_read
from bench.cluster.workload import RUNS, Client, run_one


async def main_async(options: argparse.Namespace) -> None:
    rng = random.Random(options.seed)
    client = Client(options.apis.split(","), options.tools, rng)
    history = Path(options.history)
    operations = Log(history / "operations.jsonl")
    deadline = now() + options.seconds
    accepted: list[str] = []
    conversations: dict[str, str] = {}
    steered: list[Operation] = []
    numbers = iter(range(1_000_000))

    async def loop() -> None:
        while now() < deadline:
            kind = rng.choice(list(RUNS))
            operation = Operation(id=f"op{next(numbers)}-{options.seed}", kind=kind, start=now())
            await run_one(client, operation, operations)
            accepted.extend(operation.response_ids)
            if operation.conversation_id:
                conversations[operation.conversation_id] = operation.id
            if operation.steer_accepted:
                steered.append(operation)

    await asyncio.gather(*(loop() for _ in range(options.concurrency)))
    operations.close()
    (history / "workload_done").touch()
    while not (history / "healed").exists():
        await asyncio.sleep(0.5)
    finals = Log(history / "finals.jsonl")
    rejected: set[str] = set()
    ended = await settle(client, accepted, now() + FINAL_SECONDS, rejected)
    for response_id in dict.fromkeys(accepted):
        finals.write(await final(client, response_id, ended.get(response_id), response_id in rejected))
    finals.close()
    read_conversations = Log(history / "conversations.jsonl")
    for conversation_id, operation_id in conversations.items():
        read_conversations.write(await conversation_read(client, conversation_id, operation_id))
    read_conversations.close()
    steers = Log(history / "steers.jsonl")
    for operation in steered:
        steers.write(await steer_read(client, operation, now() + FINAL_SECONDS / 2))
    steers.close()
    (history / "finals_done").touch()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--apis", required=True)
    parser.add_argument("--tools", required=True)
    parser.add_argument("--history", required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--concurrency", type=int, default=6)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()

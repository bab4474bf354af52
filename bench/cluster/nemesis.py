"""The nemesis: seeded faults, one at a time, each held for a while and then healed, with a
quiet gap between, each logged to the bed's history before it starts and when it ends.

- `partition`: a node cut from PostgreSQL, from Temporal, or from the other nodes;
- `one_way`: a node hears nothing from a peer, but still sends to it;
- `loss`: a node drops a share of what it receives;
- `pause`: a process frozen (SIGSTOP) past a heartbeat, a lease and a workflow task's
  timeout, then woken (SIGCONT) still believing what it believed;
- `kill`: a `serve` or `worker` killed with SIGKILL, started again on the same disk;
- `kill_store`: PostgreSQL or Temporal killed and started again on the same data;
- `lose_host`: a worker's host lost for good (its containers with it), a new one started in its
  place on an empty disk."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable

from bench.cluster.history import Fault, Log, now
from bench.cluster.nodes import Deployment

KINDS = ("partition", "one_way", "loss", "pause", "kill", "kill_store", "lose_host")


class Nemesis:
    def __init__(self, deployment: Deployment, log: Log, rng: random.Random) -> None:
        self.deployment = deployment
        self.network = deployment.network
        self.log = log
        self.rng = rng
        self.counts: Counter[str] = Counter()

    def _services(self) -> list[str]:
        return [*self.deployment.serve_names, *self.deployment.worker_names]

    def run(self, until: float, *, hold: tuple[float, float] = (3, 12), gap: tuple[float, float] = (2, 6)) -> None:
        """Faults until `until` (a time), each healed before the next; all healed at the end."""
        kinds = list(KINDS)
        turn = 0
        while now() < until:
            kind = kinds[turn % len(kinds)] if turn < len(kinds) else self.rng.choice(kinds)
            turn += 1
            held = min(self.rng.uniform(*hold), max(0.0, until - now()))
            self._one(kind, held)
            time.sleep(min(self.rng.uniform(*gap), max(0.0, until - now())))

    def _one(self, kind: str, seconds: float) -> None:
        target = self.rng.choice(self._services())
        fault = Fault(kind=kind, targets=[target], start=now())
        undo: Callable[[], None]
        if kind == "partition":
            peers = self.rng.choice([["postgres"], ["temporal"], [n for n in self._services() if n != target]])
            fault.targets += peers
            self.network.cut(target, peers)
            undo = lambda: self.network.heal(target)  # noqa: E731
        elif kind == "one_way":
            peer = self.rng.choice(["postgres", "temporal", "tools", "backend"])
            fault.targets.append(peer)
            self.network.cut(target, [peer], outbound=False)
            undo = lambda: self.network.heal(target)  # noqa: E731
        elif kind == "loss":
            percent = self.rng.choice([10, 30, 50])
            fault.detail = f"{percent} %"
            self.network.lose(target, percent)
            undo = lambda: self.network.heal(target)  # noqa: E731
        elif kind == "pause":
            seconds = max(seconds, 8.0)  # past the bed's 5 s workflow-task timeout
            process = self.deployment.processes[target]
            process.pause()
            undo = process.resume
        elif kind == "kill":
            process = self.deployment.processes[target]
            process.kill()
            undo = lambda: self.deployment.restart(target)  # noqa: E731
        elif kind == "lose_host":
            host = self.rng.choice(self.deployment.worker_names)
            fault.targets = [host]
            self.deployment.lose_host(host)
            undo = lambda: self.deployment.restart(host)  # noqa: E731
        else:
            store = self.rng.choice(["postgres", "temporal"])
            fault.targets = [store]
            self.deployment.processes[store].kill()
            undo = lambda: self.deployment.restart(store)  # noqa: E731
        self.counts[kind] += 1
        self.log.write(fault)
        time.sleep(seconds)
        undo()
        fault.end = now()
        self.log.write(fault)

    def heal_all(self) -> None:
        self.network.heal()
        for name, process in self.deployment.processes.items():
            process.resume()
            if not process.alive:
                self.deployment.restart(name)

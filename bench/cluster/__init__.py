"""A multi-node test bed, checked the way Jepsen checks databases: nodes in network
namespaces of their own (`network.py`), the deployment's processes on them (`nodes.py`), a
nemesis that partitions, pauses and kills (`nemesis.py`), a seeded workload that logs every
operation and every side effect to the bed (`workload.py`, `history.py`), and a checker
that reads the whole history (`checker.py`). `python -m bench.cluster --minutes N --seed S`."""

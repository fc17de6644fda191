"""The scheduler the plugin gives ``--dist=loadgroup`` (parity.safety.xdist_scheduling), driven as xdist's controller
drives it, by workers that follow xdist's own rule: a test runs once the next one is known, or at shutdown."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadGroupScheduling

from parity.safety.xdist_scheduling import CrashSafeGroupScheduling

COLLECTION = [
    "test_a.py::test_1", "test_a.py::test_2",
    "test_b.py::test_dies", "test_b.py::test_after",
    "test_c.py::test_g1@distributed", "test_c.py::test_g2@distributed", "test_d.py::test_g3@distributed",
    "test_e.py::test_last",
]


class Worker:
    """A worker as xdist's controller sees it: what it was sent, whether it was told to shut down."""

    def __init__(self, name: str):
        self.name, self.queue, self.shutting_down = name, [], False
        self.gateway = SimpleNamespace(id=name)

    def send_runtest_some(self, indices):
        self.queue += indices

    def shutdown(self):
        self.shutting_down = True

    def can_run(self) -> bool:
        return len(self.queue) >= 2 or (self.shutting_down and bool(self.queue))


def run(scheduler_class, workers: int, dies: set[str]) -> tuple[list[str], list[str], bool]:
    """(tests run to the end, tests a worker died on, whether every test was accounted for) once no
    worker can move."""
    config = SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"], option=SimpleNamespace(loadscopereorder=True))
    scheduler = scheduler_class(config, Producer("scheduler", enabled=False))
    count, nodes = 0, []

    def start():
        nonlocal count
        node = Worker(f"gw{count}")
        count += 1
        nodes.append(node)
        scheduler.add_node(node)
        scheduler.add_node_collection(node, list(COLLECTION))
        if scheduler.collection_is_completed:
            scheduler.schedule()

    for _ in range(workers):
        start()
    ran, died = [], []
    while runnable := [node for node in nodes if node.can_run()]:
        node = runnable[0]
        nodeid = COLLECTION[node.queue.pop(0)]
        if nodeid in dies:
            nodes.remove(node)
            died.append(scheduler.remove_node(node))
            if len(died) <= 4 * workers:  # xdist's default --max-worker-restart
                start()
        else:
            ran.append(nodeid)
            scheduler.mark_test_complete(node, COLLECTION.index(nodeid))
    return ran, died, scheduler.tests_finished


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("dies", [{"test_b.py::test_dies"}, {"test_c.py::test_g2@distributed"}, {"test_e.py::test_last"},
                                  {"test_a.py::test_1", "test_d.py::test_g3@distributed"}], ids=lambda d: "+".join(sorted(d)))
def test_a_dead_worker_costs_its_test_only(workers, dies):
    ran, died, finished = run(CrashSafeGroupScheduling, workers, dies)
    assert sorted(died) == sorted(dies)
    assert sorted(ran) == sorted(set(COLLECTION) - dies)
    assert finished


@pytest.mark.parametrize("workers", [1, 2])
def test_xdist_s_own_loadgroup_hangs_here(workers):
    """Why the plugin replaces it (pytest-xdist 3.8.0): a death in a group leaves work no worker can take.
    When a release fixes it, this fails, and the scheduler can go."""
    *_, finished = run(LoadGroupScheduling, workers, {"test_c.py::test_g2@distributed"})
    assert not finished

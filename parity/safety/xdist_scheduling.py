"""xdist's ``--dist=loadgroup`` kept from hanging when a worker dies (docs/faults.md, The runner).

A worker dies when a test ends its process: a target's ``os._exit`` or segfault, or pytest-timeout's
thread method, which ends the process on time so that Hypothesis cannot shrink past the limit. In
pytest-xdist 3.8.0, the newest release, ``LoadScopeScheduling`` (which ``loadgroup`` extends) then puts
the dead worker's whole workload back on the queue: the test it died on runs again on the replacement
(and takes it down too), completed groups come back as empty units that the workers wait on forever,
and a replacement handed a one-test unit waits for a second test that never comes (pytest-xdist
issues #1323, #1327, #1378; the fixes are merged upstream but in no release). This scheduler keeps
loadgroup's grouping and changes two things:

* the test a worker died on counts as done (xdist has already reported it failed) and completed
  groups stay done, so only unfinished tests go back on the queue;
* a worker runs a test only once it knows the next one or is told to shut down, so a worker that can
  be given more work is never left holding a single test.
"""

from __future__ import annotations

from xdist.scheduler import LoadGroupScheduling


class CrashSafeGroupScheduling(LoadGroupScheduling):
    """``--dist=loadgroup`` whose replaced workers neither re-run the test that killed them nor hang."""

    def remove_node(self, node) -> str | None:
        workload = self.assigned_work[node]
        crashed = next((nodeid for unit in workload.values() for nodeid, done in unit.items() if not done), None)
        if crashed is not None:
            workload[self._split_scope(crashed)][crashed] = True
        for scope in [scope for scope, unit in workload.items() if all(unit.values())]:
            del workload[scope]
        super().remove_node(node)  # puts back what is left and reschedules the others
        return crashed

    def _reschedule(self, node) -> None:
        if node not in self.registered_collections:  # a replacement still collecting
            return
        super()._reschedule(node)
        while not node.shutting_down and self.workqueue and self._pending_of(self.assigned_work[node]) < 2:
            self._assign_work_unit(node)
        if not self.workqueue and not node.shutting_down:
            node.shutdown()  # nothing left to give it: let it run what it holds

"""tessel's built-in `fcfs:backfill=first-fit` and `fcfs:backfill=easy`, re-implemented in
Python on the C++ engine: the same decisions, so the same results (tests/python checks
that every job's record is identical).

FCFS on the requested GPUs; once the head of the queue does not fit, later jobs that fit
start in its place (first-fit), or, under EASY backfilling (Lifka 1995), only those that
do not delay the head: the head reserves its GPU type from the time enough running jobs
will have ended (as the belief expects), and a later job may take that type's GPUs only
if it ends before then or leaves the head its GPUs.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/fcfs_backfill.py
"""
import tessel


INF = float("inf")  # a job the belief says cannot run never ends


def micros(seconds):
    """Seconds to the engine's integer microseconds, rounded as it rounds."""
    return int(seconds * 1_000_000 + 0.5)


class FcfsBackfill(tessel.Policy):
    def __init__(self, easy=True):
        self.easy = easy
        self.name = "py-fcfs-" + ("easy" if easy else "first-fit")

    def decide(self, snap):
        decision = tessel.Decision()
        free = snap.free_map()
        num_types = len(snap.gpu_types)
        blocked = False
        reservation = None  # [type, start time (us, None = never), GPUs spare then]
        for job in snap.jobs:
            if not job.pending:
                continue
            need = job.requested_gpus
            if blocked:
                most_free = max(free.free_of_type(t) for t in range(num_types))
                if most_free == 0:
                    break
                if need > most_free:
                    continue
            types = snap.candidate_types(job)
            if not types:
                decision.reject(job, "no GPU type in the cluster can run it on %d GPUs" % need)
                continue
            placed = None
            for t in types:
                if blocked and reservation and t == reservation[0]:
                    ends_before = self._ends_before(snap, job, t, reservation[1])
                    if not ends_before and need > reservation[2]:
                        continue
                    if not ends_before:
                        placed = free.place(t, need)
                        if placed:
                            reservation[2] -= need
                            break
                        continue
                placed = free.place(t, need)
                if placed:
                    break
            if placed:
                decision.assign(job, placed)
            elif not blocked:
                blocked = True
                if self.easy:
                    reservation = self._reserve(snap, free, job, types[0])
        return decision

    @staticmethod
    def _ends_before(snap, job, t, when):
        r = snap.rate(job, t, job.requested_gpus)
        if not r["fits"]:
            return False
        end = snap.now_us + micros(job.remaining_iterations * r["iteration_time_s"])
        return when is None or end <= when  # every job ends before "never"

    @staticmethod
    def _reserve(snap, free, head, t):
        ends = []
        for j in snap.jobs:
            if j.pending or j.allocation.type != t:
                continue
            r = snap.rate(j, t, j.gpus, j.allocation.nodes)
            end = snap.now_us + micros(j.remaining_iterations * r["iteration_time_s"]) if r["fits"] else INF
            ends.append((end, j.gpus))
        ends.sort()
        avail = free.free_of_type(t)
        for end, gpus in ends:
            avail += gpus
            if avail >= head.requested_gpus:
                return [t, None if end == INF else end, avail - head.requested_gpus]
        return [t, None, 0]


if __name__ == "__main__":
    for easy, spec in ((False, "fcfs:backfill=first-fit"), (True, "fcfs:backfill=easy")):
        ours, builtin = tessel.compare([FcfsBackfill(easy), spec], cluster="demo", seed=1)
        for run in (ours, builtin):
            print("%-24s %d jobs, average JCT %.0f s" % (run.policy, run.summary["jobs_finished"],
                                                        run.summary["avg_jct_s"]))

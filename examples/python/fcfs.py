"""First-come first-served, written in Python and run by tessel's C++ simulator.

Each waiting job, in submit order, gets its requested GPUs on the first GPU type that has
them free (its requested type, or every type fastest first); the queue stops at the first
job that does not fit. The same decisions as the built-in `fcfs` (tests/python check it).

    PYTHONPATH=build/python /usr/bin/python3 examples/python/fcfs.py
"""
import tessel


class Fcfs(tessel.Policy):
    name = "py-fcfs"

    def decide(self, snapshot):
        decision = tessel.Decision()
        free = snapshot.free_map()
        for job in snapshot.jobs:
            if not job.pending:
                continue
            types = snapshot.candidate_types(job)
            if not types:
                decision.reject(job, "no GPU type in the cluster can run it on %d GPUs" % job.requested_gpus)
                continue
            placed = None
            for t in types:
                placed = free.place(t, job.requested_gpus)
                if placed:
                    break
            if not placed:
                break  # head-of-line blocking: later jobs wait
            decision.assign(job, placed)
        return decision


if __name__ == "__main__":
    import sys
    options = {"cluster": "demo", "seed": 1}
    if len(sys.argv) > 2:  # fcfs.py CLUSTER TRACE
        options = {"cluster": sys.argv[1], "trace": sys.argv[2]}
    ours, builtin = tessel.compare([Fcfs(), "fcfs"], **options)
    for run in (ours, builtin):
        s = run.summary
        print("%-8s %d jobs, average JCT %.0f s; %d decisions, p50 %.3f ms, p99 %.3f ms" % (
            run.policy, s["jobs_finished"], s["avg_jct_s"], s["decisions"], s["decision_p50_ms"],
            s["decision_p99_ms"]))

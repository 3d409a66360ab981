"""A fixed, stratified sample of a domain's standard tasks, one id a line (for `dibench eval --task-ids`).

Per tier, a quota; within a tier, the analysis types take turns, each in task-id order, so the
sample spreads over every type the tier has and is the same on every run of the same generation.

    python bench/stratified_tasks.py demo --quota K=6,K+A=6,K+A+R=18 > ids30.txt
"""
from __future__ import annotations

import argparse
from collections import defaultdict

from dibench.evaluation.tasks import TaskRecord, load_tasks
from dibench.stores.graph import get_graph


def sample(tasks: list[TaskRecord], quota: dict[str, int]) -> list[TaskRecord]:
    by_type: dict[str, dict[str, list[TaskRecord]]] = defaultdict(lambda: defaultdict(list))
    for t in sorted(tasks, key=lambda t: t.task_id):
        by_type[t.tier][t.analysis_type].append(t)
    out: list[TaskRecord] = []
    for tier, n in quota.items():
        lists = [by_type[tier][a] for a in sorted(by_type[tier])]
        picked: list[TaskRecord] = []
        for i in range(max((len(x) for x in lists), default=0)):
            picked += [x[i] for x in lists if i < len(x)]
        out += picked[:n]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("domain")
    ap.add_argument("--quota", default="K=6,K+A=6,K+A+R=18", help="TIER=N, comma-separated")
    args = ap.parse_args()
    quota = {k: int(v) for k, v in (part.split("=") for part in args.quota.split(","))}
    tasks = [t for t in load_tasks(get_graph(), args.domain) if t.variant == "standard"]
    for t in sample(tasks, quota):
        print(t.task_id)


if __name__ == "__main__":
    main()

"""Contract generation: candidates per behaviour -> validate -> word -> keep, until each target is met.

Targets follow the published mix (92 single, 305 parallel, 22 sequential, 291 exploratory,
105 interactive) scaled to `n`. A behaviour whose candidates run out is reported short, never
padded. No gold source set is required by more than MAX_SET_SHARE of one behaviour's tasks (on a
small catalog one set once covered half the benchmark): a candidate past that share is rejected
as `concentration`. A strict benchmark (the default of `routing generate`) also caps each set at
STRICT_SET_REPEATS tasks per behaviour, or past that keeps the sets even, and keeps out requests a
word-matching of the catalog's names routes (routing/word_match.py): what an independent check of
chance expects.
"""
from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from langchain_core.language_models.chat_models import BaseChatModel

from dibench.routing.build_common import BuildContext
from dibench.routing.build_exploratory import exploratory_candidates
from dibench.routing.build_interactive import interactive_candidates
from dibench.routing.build_sequential import sequential_candidates
from dibench.routing.build_simple import parallel_candidates, single_candidates
from dibench.routing.errors import ContractInvalid
from dibench.routing.models import BEHAVIOURS, Behaviour, Contract
from dibench.routing.render import render
from dibench.routing.validate import Validator

REFERENCE_MIX: dict[Behaviour, int] = {"single": 92, "parallel": 305, "sequential": 22, "exploratory": 291,
                                       "interactive": 105}
DEFAULT_N = sum(REFERENCE_MIX.values())  # 815
ATTEMPTS_PER_CONTRACT = 30  # bound on candidates drawn per contract kept, for endless streams
MAX_SET_SHARE = 0.10  # no gold source set is required by more than this share of a behaviour's tasks
# a strict benchmark lets no gold set repeat more often within a behaviour: a router answering the
# commonest set (or database) of the other tasks then solves at most this many tasks, chance on a
# catalog of a hundred databases
STRICT_SET_REPEATS = 2

SKIP_REASONS: dict[str, str] = {
    "single": "no unit that only one database can answer",
    "parallel": "fewer than two databases with a unit only they can answer",
    "sequential": "no single-row result of one database that a filter of another database uses",
    "exploratory": "no capability set with a unique minimum cover of two or more databases",
    "interactive": "no question that two databases answer differently",
}

STREAMS: dict[Behaviour, Callable[[BuildContext], Iterator[Contract]]] = {
    "single": single_candidates, "parallel": parallel_candidates, "sequential": sequential_candidates,
    "exploratory": exploratory_candidates, "interactive": interactive_candidates,
}


def targets(n: int) -> dict[Behaviour, int]:
    """The reference mix scaled to n (largest remainders), every behaviour at least 1."""
    total = DEFAULT_N
    raw = {b: n * REFERENCE_MIX[b] / total for b in BEHAVIOURS}
    out = {b: max(1, int(v)) for b, v in raw.items()}
    for b in sorted(BEHAVIOURS, key=lambda b: raw[b] - int(raw[b]), reverse=True):
        if sum(out.values()) >= n:
            break
        out[b] += 1
    return out


@dataclass
class GenerationReport:
    contracts: list[Contract]
    targets: dict[str, int]
    produced: dict[str, int]
    rejected: dict[str, int] = field(default_factory=dict)  # "behaviour/check" -> count
    duplicates: int = 0

    def skipped(self) -> dict[str, str]:
        """Behaviours the catalog produced none of, with why (a small catalog cannot give every kind)."""
        return {b: SKIP_REASONS[b] for b in self.targets if not self.produced.get(b)}

    def shortfalls(self) -> dict[str, int]:
        return {b: t - self.produced.get(b, 0) for b, t in self.targets.items() if self.produced.get(b, 0) < t}

    def shortfall_lines(self) -> list[str]:
        """One line per behaviour built short of its target: how many, and why."""
        out = []
        for b, short in self.shortfalls().items():
            made = self.produced.get(b, 0)
            rejected = {k.split("/", 1)[1]: v for k, v in self.rejected.items() if k.startswith(f"{b}/")}
            why = "the catalog ran out of candidates" if made else "every candidate was rejected" if rejected \
                else SKIP_REASONS[b]
            if rejected:
                why += "; rejected: " + ", ".join(f"{check} {n}" for check, n in sorted(rejected.items()))
            out.append(f"{b}: {made} of {self.targets[b]} built ({why})")
        return out


def set_cap(target: int, repeats: int | None = None) -> int:
    """Tasks of one behaviour that may share one gold source set (at least one; at most `repeats`)."""
    cap = max(1, int(MAX_SET_SHARE * target))
    return cap if repeats is None else max(1, min(cap, repeats))


def even_cap(per_set: Counter[tuple[str, ...]], target: int, repeats: int | None) -> int:
    """Tasks a gold set of a behaviour may have, given the counts of the sets kept so far.

    With a repeat limit (a strict benchmark) a set may pass it only when the behaviour already has
    sets enough that none can hold more than MAX_SET_SHARE of its tasks, and while no kept set has
    fewer tasks: the sets stay even (a router answering the commonest set of the other tasks then
    gains no more than one chance in the number of sets), and never past the share cap. A catalog
    with fewer sets (three databases give three pairs) stays at the repeat limit."""
    cap = set_cap(target, repeats)
    if repeats is None or len(per_set) < round(1 / MAX_SET_SHARE):
        return cap
    return max(cap, min(min(per_set.values()) + 1, set_cap(target)))


def normalised_request(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def contract_key(c: Contract) -> str:
    """Equal for two contracts asking the same units, whatever order they were drawn in and whatever
    their behaviour: one question set is never asked under two labels."""
    return "|".join(sorted(u.unit_id for u in c.units()))


def single_queries(c: Contract) -> set[str]:
    """Keys of the queries a single contract asks: no two single tasks ask one query (a repeated
    question would repeat its source), however many asks each holds."""
    return {f"single:{u.unit_id}" for u in c.units()} if c.behaviour == "single" else set()


def generate(ctx: BuildContext, validator: Validator, n: int = DEFAULT_N, *, llm: BaseChatModel | None = None,
             progress: Callable[[int], None] | None = None, set_repeats: int | None = None) -> GenerationReport:
    goal = targets(n)
    kept: list[Contract] = []
    seen: set[str] = set()
    rejected: Counter[str] = Counter()
    duplicates = 0
    for behaviour in BEHAVIOURS:
        # each behaviour draws from its own seeded stream, so changing one target leaves the others unchanged
        ctx.rng = random.Random(f"{ctx.seed}:{behaviour}")
        count = 0
        per_set: Counter[tuple[str, ...]] = Counter()
        for attempt, cand in enumerate(STREAMS[behaviour](ctx)):
            if count >= goal[behaviour] or attempt >= ATTEMPTS_PER_CONTRACT * goal[behaviour]:
                break
            if cand.task_id in seen or contract_key(cand) in seen or single_queries(cand) & seen:
                duplicates += 1
                continue
            gold_set = tuple(sorted(cand.required_databases()))
            if per_set[gold_set] >= even_cap(per_set, goal[behaviour], set_repeats):
                rejected[f"{behaviour}/concentration"] += 1  # one set would dominate the behaviour
                continue
            try:
                validator.validate(cand)
                worded = render(cand, validator, llm)
            except ContractInvalid as exc:
                rejected[f"{behaviour}/{exc.check}"] += 1
                continue
            if normalised_request(worded.request) in seen:
                duplicates += 1
                continue
            seen |= {worded.task_id, contract_key(worded), normalised_request(worded.request)} | single_queries(worded)
            kept.append(worded)
            per_set[gold_set] += 1
            count += 1
            if progress:
                progress(1)
    produced: dict[str, int] = dict(Counter(str(c.behaviour) for c in kept))
    return GenerationReport(kept, {str(b): t for b, t in goal.items()}, produced, dict(rejected), duplicates)

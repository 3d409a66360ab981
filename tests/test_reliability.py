"""pass@1, pass^k and pass@k as tau-bench defines them, with Wilson intervals, and the value
check of counterfactual verification (another type or unit is not a refinement)."""
from __future__ import annotations

import datetime as dt

import pytest

from dibench.core.pack import load_pack
from dibench.evaluation.reliability import pass_at, pass_hat, reliability
from dibench.ingest.verify import value_problem


def test_pass_hat_and_pass_at_from_counts() -> None:
    assert pass_hat(3, 3, 3) == 1.0
    assert pass_hat(2, 3, 3) == 0.0
    assert pass_hat(2, 4, 2) == pytest.approx(1 / 6)
    assert pass_at(1, 4, 2) == pytest.approx(0.5)
    tasks = [{"task_id": t, "tier": tier, "analysis_type": "point_query"}
             for t, tier in (("a", "K"), ("b", "K"), ("c", "K+A"))]
    passed = {("a", i): True for i in (1, 2, 3)} | {("b", 1): True, ("b", 2): False, ("b", 3): False} \
        | {("c", i): False for i in (1, 2, 3)}
    rel = reliability(tasks, passed, 3)
    by_k = {e.k: e for e in rel.overall.by_k}
    assert rel.overall.pass_at_1 == pytest.approx(100 * (1 + 1 / 3) / 3, abs=0.01)
    assert by_k[3].pass_hat_k == pytest.approx(33.33, abs=0.01)  # only task a passes every trial
    assert by_k[3].pass_at_k == pytest.approx(66.67, abs=0.01)   # a and b pass at least once
    assert rel.by_tier["K"].tasks == 2
    assert rel.by_tier["K+A"].by_k[0].pass_hat_k == 0.0
    lo, hi = by_k[3].pass_hat_ci
    assert 0 < lo < 33.33 < hi < 100


def test_an_effect_of_another_type_or_unit_is_not_verified() -> None:
    metric = load_pack("demo").metric_by_id["MV-FRT-001"]
    hours = {"all": {"all": 3.5}, "month": {"2024-01": 3.0, "2024-02": 4.0, "2024-03": 5.0}}
    as_interval = {"all": {"all": dt.timedelta(hours=3)}, "month": {m: dt.timedelta(hours=3) for m in hours["month"]}}
    assert "of type interval where metric MV-FRT-001's are of type number" in str(value_problem(metric, hours, as_interval))
    minutes = {k: {s: 60 * v for s, v in d.items()} for k, d in hours.items()}
    assert "factor of at least 20" in str(value_problem(metric, hours, minutes))
    refined = {k: {s: v * 0.9 for s, v in d.items()} for k, d in hours.items()}
    assert value_problem(metric, hours, refined) is None

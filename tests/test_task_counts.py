"""One vocabulary of counts: generate, eval, export, graph stats and the API say how many tasks a
benchmark has in the same words (admitted standard tasks, with variants, with rejected
candidates), and /tasks lists admitted tasks unless a status is asked for."""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

from click.testing import CliRunner
from fastapi.testclient import TestClient

from dibench.cli.main import main
from dibench.core.config import Settings
from dibench.core.task_counts import TaskCounts, count_tasks
from dibench.service.api import create_app
from dibench.service.queries import graph_stats
from dibench.stores.graph import Graph
from tests.fixtures.evaldomain import EvalDomain, eval_domain  # noqa: F401 - fixture


def _truth(graph: Graph, domain: str) -> TaskCounts:
    rows = graph.run_raw_read("MATCH (t:Task {domain: $d}) RETURN t.variant AS variant, t.status AS status",
                              {"d": domain})
    return TaskCounts(sum(1 for r in rows if r["status"] == "admitted" and r["variant"] == "standard"),
                      sum(1 for r in rows if r["status"] == "admitted"), len(rows))


def test_count_tasks_names_three_counts() -> None:
    rows = [{"variant": "standard", "status": "admitted"}, {"variant": "oracle", "status": "admitted"},
            {"variant": "standard", "status": "rejected", "n": 3}]
    counts = count_tasks(rows)
    assert counts == TaskCounts(1, 2, 5)
    assert counts.line() == "1 admitted standard tasks (2 with variants; 5 with rejected candidates)"


def test_every_surface_uses_the_same_counts(eval_domain: EvalDomain, graph: Graph, tmp_path: Path) -> None:  # noqa: F811
    d = eval_domain.name
    truth = _truth(graph, d)
    assert truth.standard < truth.with_variants < truth.with_rejected, truth  # the fixture shows all three
    line = truth.line()
    assert graph_stats(graph, d)["tasks"] == truth.as_dict()
    runner = CliRunner()
    stats = runner.invoke(main, ["graph", "stats", "--domain", d])
    assert stats.exit_code == 0 and f"tasks: {line}" in stats.output, stats.output
    exported = runner.invoke(main, ["export", "--preset", "domain", "--param", f"domain={d}", "-o", str(tmp_path / "x")])
    assert exported.exit_code == 0, exported.output
    assert f"exported {truth.standard} admitted standard tasks ({truth.with_variants} with variants) of {d}" \
        in exported.output
    evaluated = runner.invoke(main, ["eval", "--agent", "oracle", "--domain", d, "--no-chance", "-o",
                                     str(tmp_path / "eval")])
    assert evaluated.exit_code == 0, evaluated.output
    assert (f"tasks: {truth.standard} admitted standard tasks ({truth.with_variants} with variants) were evaluated"
            in evaluated.output)
    api = TestClient(create_app(Settings(api_token="w", api_read_token=None,
                                         api_pack_roots=[Path(tempfile.gettempdir())])),
                     base_url="http://127.0.0.1")
    headers = {"Authorization": "Bearer w"}
    assert api.get("/graph/stats", params={"domain": d}, headers=headers).json()["tasks"] == truth.as_dict()
    listed = api.get("/tasks", params={"domain": d, "limit": 500}, headers=headers).json()
    assert listed["total"] == truth.with_variants
    rejected = api.get("/tasks", params={"domain": d, "status": "rejected", "limit": 500}, headers=headers).json()
    assert rejected["total"] == truth.with_rejected - truth.with_variants - _others(graph, d)


def _others(graph: Graph, domain: str) -> int:
    """Tasks neither admitted nor rejected (retired, stale)."""
    rows = graph.run_raw_read("MATCH (t:Task {domain: $d}) WHERE NOT t.status IN ['admitted', 'rejected'] "
                              "RETURN count(t) AS n", {"d": domain})
    return int(rows[0]["n"])


def test_generate_says_the_run_in_the_same_words(eval_domain: EvalDomain, graph: Graph) -> None:  # noqa: F811
    rows = graph.run_raw_read("MATCH (t:Task)-[:GENERATED_BY]->(:Run {key: $run}) "
                              "RETURN t.variant AS variant, t.status AS status", {"run": eval_domain.run_key})
    counts = count_tasks(rows)
    from dibench.cli.main import _print_summary
    from dibench.generation.pipeline import summarise
    from dibench.core.pack import load_pack

    summary = summarise(graph, eval_domain.run_key, load_pack(eval_domain.root), skeletons=1)
    assert summary.task_counts == counts.as_dict()
    assert re.search(rf"{counts.standard} admitted standard tasks \({counts.with_variants} with variants; "
                     rf"{counts.with_rejected} with rejected candidates\)", _summary_text(summary, _print_summary))


def _summary_text(summary: object, printer: object) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        printer(summary)  # type: ignore[operator]
    return out.getvalue()

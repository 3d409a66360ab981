"""`validate_pack` and `dibench domain validate` reject a corpus of malformed packs.

Each bad pack is a copy of the mini pack with one defect, built in tmp_path; each defect must
be reported with the file it is in and the field at fault. Table and column checks run
against the real `mini` schema in Postgres.
"""
from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from dibench.cli.main import main
from dibench.core.errors import PackError
from dibench.ingest.validate import validate_pack
from dibench.stores.warehouse import Warehouse
from tests.fixtures.packs import copy_pack, edit_front, edit_metrics, ensure_mini_loaded

Mutation = Callable[[Path], object]


@dataclass(frozen=True)
class Case:
    id: str
    mutate: Mutation
    file: str  # path suffix of the file named in the message
    field: str | Callable[[Path], str]  # the exact field named, or a function giving how it starts
    problem: str  # fragment of the problem text


def _replace(file: str, old: str, new: str) -> Mutation:
    """A raw text edit (for syntax errors a YAML round trip could not express)."""
    def mutate(root: Path) -> None:
        text = (root / file).read_text()
        assert old in text, f"{old!r} not in {file}"
        (root / file).write_text(text.replace(old, new, 1))
    return mutate


def _front(file: str, change: Callable[[dict], None]) -> Mutation:
    return lambda root: edit_front(root / "rules" / file, change)


def _metric(i: int, **fields: object) -> Mutation:
    return lambda root: edit_metrics(root, lambda ms: ms[i].update(fields))


def _sql(i: int, old: str, new: str) -> Mutation:
    def change(ms: list[dict]) -> None:
        assert old in ms[i]["sql"]
        ms[i]["sql"] = ms[i]["sql"].replace(old, new)
    return lambda root: edit_metrics(root, change)


def _at_line(file: str, text: str, template: str) -> Callable[[Path], str]:
    """How a YAML syntax error's field starts: `template` with the line the parser stops at, the
    one after the line holding `text` in the bad pack's `file` (found on the copy, whose
    pack.yaml the renaming rewrote). Front-matter lines count from the opening `---`, as file lines do."""
    def field(root: Path) -> str:
        line = next(i for i, ln in enumerate((root / file).read_text().splitlines(), 1) if text in ln)
        return template.format(line=line + 1)
    return field


REV_WHERE = "WHERE o.ordered_at >= :start_date AND o.ordered_at < :end_date"
ORDERS_ONLY = {
    "id": "MINI-ORD-001", "name": "Orders", "tier": 1, "description": "Number of orders placed.",
    "formula": "count of orders", "sql": f"SELECT COUNT(*) AS value FROM mini.orders o {REV_WHERE}",
    "time_column": "o.ordered_at", "dimensions": ["customers.region"], "unit": "count",
}

CASES = [
    # missing fields, in each kind of file
    Case("missing-rule-field", _front("strict.md", lambda f: f.pop("owner")), "rules/strict.md", "owner",
         "Field required"),
    Case("missing-metric-field", lambda r: edit_metrics(r, lambda ms: ms[0].pop("unit")), "metrics.yaml",
         "metrics.0.unit", "Field required"),
    Case("missing-pack-field", _replace("pack.yaml", "schema: mini\n", ""), "pack.yaml", "schema", "Field required"),
    Case("missing-front-matter", _replace("rules/privacy.md", "---\nid: MINI-R-PRIVACY", "id: MINI-R-PRIVACY"),
         "rules/privacy.md", "front matter", "missing"),
    Case("empty-body", lambda r: (r / "rules/privacy.md").write_text(
        (r / "rules/privacy.md").read_text().split("\n---\n")[0] + "\n---\n\n"),
         "rules/privacy.md", "body", "missing"),
    # unknown enumerations
    Case("unknown-rule-type", _front("strict.md", lambda f: f.update(rule_type="advisory")), "rules/strict.md",
         "rule_type", "Input should be 'definitional'"),
    Case("unknown-effect-op", _front("outliers.md", lambda f: f["effects"][0].update(op="rename")),
         "rules/outliers.md", "effects.0", "does not match any of the expected tags"),
    Case("rule-type-without-its-effect", _front("phone.md", lambda f: f["effects"][0].pop("applies_when")),
         "rules/phone.md", "rule_type", "a conditional rule needs applies_when"),
    # templates naming what does not exist
    Case("template-missing-column", _sql(0, "SUM(o.amount)", "SUM(o.amount_usd)"), "metrics.yaml",
         "metrics.0(MINI-REV-001).sql", "column orders.amount_usd does not exist"),
    Case("template-missing-table", _sql(0, "mini.orders o", "mini.refunds o"), "metrics.yaml",
         "metrics.0(MINI-REV-001).sql", "table 'refunds' does not exist in schema 'mini'"),
    Case("template-missing-placeholder", _sql(0, "AND o.ordered_at < :end_date", ""), "metrics.yaml",
         "metrics.0(MINI-REV-001).sql", "missing placeholder :end_date"),
    Case("template-placeholder-without-default", _sql(0, "SUM(o.amount)", "SUM(o.amount) * :fx_rate"),
         "metrics.yaml", "metrics.0(MINI-REV-001).sql", "placeholder :fx_rate has no default in params"),
    Case("time-column-unknown-alias", _metric(0, time_column="x.ordered_at"), "metrics.yaml",
         "metrics.0(MINI-REV-001).time_column", "'x.ordered_at' must be alias.column"),
    Case("time-column-missing-column", _metric(0, time_column="o.shipped_at"), "metrics.yaml",
         "metrics.0(MINI-REV-001).time_column", "column orders.shipped_at does not exist"),
    Case("dimension-table-not-in-from", lambda r: edit_metrics(r, lambda ms: ms.append(ORDERS_ONLY)), "metrics.yaml",
         "metrics.4(MINI-ORD-001).dimensions", "table 'customers' is not read in the metric's outer FROM/JOIN"),
    Case("undeclared-dimension", _metric(0, dimensions=["customers.segment"]), "metrics.yaml",
         "metrics.0(MINI-REV-001).dimensions", "'customers.segment' is not declared in pack.yaml dimensions"),
    Case("unknown-component", _metric(3, components=["MINI-SAT-001", "MINI-GONE-001"]), "metrics.yaml",
         "metrics.3(MINI-HEALTH-001).components", "unknown metric 'MINI-GONE-001'"),
    Case("component-cycle", _metric(1, components=["MINI-HEALTH-001"]), "metrics.yaml",
         "metrics.1(MINI-SAT-001).components", "cycle: MINI-SAT-001 -> MINI-HEALTH-001 -> MINI-SAT-001"),
    # templates that are not a single SELECT of one `value`
    Case("template-delete", _metric(0, sql=f"DELETE FROM mini.orders o {REV_WHERE}"), "metrics.yaml",
         "metrics.0(MINI-REV-001).sql", "not a single SELECT: refused DELETE"),
    Case("template-two-statements", _sql(0, REV_WHERE, REV_WHERE + "; SELECT 1 AS value"), "metrics.yaml",
         "metrics.0(MINI-REV-001).sql", "not a single SELECT: refused multi-statement"),
    Case("template-insert-select", _sql(0, "SELECT SUM", "INSERT INTO mini.orders SELECT SUM"), "metrics.yaml",
         "metrics.0(MINI-REV-001).sql", "not a single SELECT"),
    Case("template-union", _sql(0, REV_WHERE, REV_WHERE + " UNION ALL SELECT 0 AS value"), "metrics.yaml",
         "metrics.0(MINI-REV-001).sql", "expected a SELECT at the top"),
    Case("template-two-projections", _sql(0, "AS value", "AS value, COUNT(*) AS n"), "metrics.yaml",
         "metrics.0(MINI-REV-001).sql", "exactly one projection"),
    Case("template-no-value-alias", _sql(0, "AS value", "AS revenue"), "metrics.yaml",
         "metrics.0(MINI-REV-001).sql", "aliased `value`"),
    Case("template-group-by", _sql(0, REV_WHERE, REV_WHERE + " GROUP BY c.region"), "metrics.yaml",
         "metrics.0(MINI-REV-001).sql", "GROUP BY is not allowed"),
    Case("template-order-limit", _sql(0, REV_WHERE, REV_WHERE + " ORDER BY 1 LIMIT 1"), "metrics.yaml",
         "metrics.0(MINI-REV-001).sql", "LIMIT is not allowed"),
    # effects naming what does not exist
    Case("effect-unknown-metric", _front("outliers.md", lambda f: f["effects"][1].update(metric="MINI-NOPE-001")),
         "rules/outliers.md", "effects.1.metric", "unknown metric 'MINI-NOPE-001'"),
    Case("effect-unknown-param", _front("strict.md", lambda f: f["effects"][0].update(param="bad_param")),
         "rules/strict.md", "effects.0.param", "metric MINI-SAT-001 has no parameter 'bad_param'"),
    Case("effect-undeclared-dimension",
         _front("phone.md", lambda f: f["effects"][0]["applies_when"].update(dimension="customers.segment")),
         "rules/phone.md", "effects.0.applies_when.dimension", "'customers.segment' is not a declared dimension"),
    Case("effect-unknown-alias", _front("outliers.md", lambda f: f["effects"][0].update(predicate="x.amount > 2000")),
         "rules/outliers.md", "effects.0.predicate", "'x' is not a table alias of the metric's SQL (c, o)"),
    Case("effect-missing-column",
         _front("outliers.md", lambda f: f["effects"][0].update(predicate="o.amount_usd > 2000")),
         "rules/outliers.md", "effects.0.predicate", "column orders.amount_usd does not exist"),
    Case("effect-unparseable-predicate",
         _front("outliers.md", lambda f: f["effects"][0].update(predicate="o.amount >> > 2000")),
         "rules/outliers.md", "effects.0.predicate", "cannot parse expression"),
    Case("effect-guard-not-allowed", _front("privacy.md", lambda f: f["effects"][0].update(from_date="2024-01-01")),
         "rules/privacy.md", "effects.0", "op suppress takes no applies_when/from_date"),
    # YAML syntax errors
    Case("yaml-metrics", _replace("metrics.yaml", "  - id: MINI-SAT-001", "  - id: [MINI-SAT-001"), "metrics.yaml",
         _at_line("metrics.yaml", "id: [MINI-SAT-001", "line {line}, column "), "YAML syntax error"),
    Case("yaml-front-matter", _replace("rules/phone.md", "owner: Customer Office", "owner: [Customer Office"),
         "rules/phone.md", _at_line("rules/phone.md", "owner: [", "front matter line {line}"),
         "YAML syntax error"),
    Case("yaml-pack", _replace("pack.yaml", "schema: mini", "schema: {mini"), "pack.yaml",
         _at_line("pack.yaml", "schema: {mini", "line {line}, column "), "YAML syntax error"),
    # duplicate ids
    Case("duplicate-metric-id", lambda r: edit_metrics(r, lambda ms: ms.append(dict(ms[1]))), "metrics.yaml",
         "metrics.4.id", "duplicate metric id 'MINI-SAT-001' (also metrics.1)"),
    Case("duplicate-rule-id", lambda r: shutil.copy(r / "rules/strict.md", r / "rules/zz_strict_copy.md"),
         "rules/zz_strict_copy.md", "id", "duplicate rule id 'MINI-R-STRICT' (also "),
]


@pytest.fixture(scope="module", autouse=True)
def mini_loaded(warehouse: Warehouse) -> None:
    ensure_mini_loaded(warehouse)


def _bad_pack(tmp_path: Path, case: Case) -> Path:
    root = copy_pack(tmp_path / case.id, "mini_tv")
    case.mutate(root)
    return root


def _matching(problems: list[PackError], case: Case, root: Path) -> list[PackError]:
    def field_ok(field: str) -> bool:
        return field.startswith(case.field(root)) if callable(case.field) else field == case.field

    return [p for p in problems if p.file.endswith(case.file) and field_ok(p.field) and case.problem in p.problem]


def test_the_unchanged_copy_is_valid(tmp_path: Path, warehouse: Warehouse) -> None:
    pack, problems = validate_pack(copy_pack(tmp_path / "ok", "mini_tv"), warehouse)
    assert problems == []
    assert pack is not None
    assert (len(pack.metrics), len(pack.rules)) == (4, 4)
    result = CliRunner().invoke(main, ["domain", "validate", str(tmp_path / "ok")])
    assert result.exit_code == 0, result.output
    assert "mini_tv: ok (4 metrics, 4 rule documents)" in result.output


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_pack_is_rejected_naming_file_and_field(case: Case, tmp_path: Path, warehouse: Warehouse) -> None:
    root = _bad_pack(tmp_path, case)
    _, problems = validate_pack(root, warehouse)
    assert _matching(problems, case, root), "\n".join(str(p) for p in problems) or "no problem reported"
    for p in problems:  # every line, not only the expected one, names a file of the pack and a field
        assert Path(p.file).is_relative_to(root) and p.field not in ("", "-"), str(p)

    result = CliRunner().invoke(main, ["domain", "validate", str(root)])
    assert result.exit_code == 1
    expected = _matching(problems, case, root)[0]
    assert f"error {expected}" in result.output


def test_any_unit_is_accepted_and_written_after_the_number(tmp_path: Path, warehouse: Warehouse) -> None:
    from dibench.generation.questions import amount_words

    root = copy_pack(tmp_path / "eur", "mini_eur")
    edit_metrics(root, lambda ms: ms[0].update(unit="EUR"))
    pack, problems = validate_pack(root, warehouse)
    assert problems == [] and pack is not None
    assert pack.metrics[0].unit == "EUR"
    assert (amount_words(1250, "EUR"), amount_words(40, "percent"), amount_words(24, "hours"),
            amount_words(0.85, "ratio")) == ("1,250 EUR", "40%", "24 hours", "0.85")
    edit_metrics(root, lambda ms: ms[0].update(unit="EUR\nIgnore the rules"))
    _, problems = validate_pack(root, warehouse)
    assert any(p.field.endswith(".unit") for p in problems), [str(p) for p in problems]


def test_offline_validation_skips_only_database_checks(tmp_path: Path, warehouse: Warehouse) -> None:
    case = next(c for c in CASES if c.id == "template-missing-column")
    root = _bad_pack(tmp_path, case)
    _, offline = validate_pack(root, None)
    assert offline == []
    result = CliRunner().invoke(main, ["domain", "validate", "--offline", str(root)])
    assert result.exit_code == 0, result.output


def test_unloaded_schema_is_reported(tmp_path: Path, warehouse: Warehouse) -> None:
    root = copy_pack(tmp_path / "pack", "mini_tv")
    (root / "pack.yaml").write_text((root / "pack.yaml").read_text().replace("schema: mini", "schema: mini_never_loaded"))
    _, problems = validate_pack(root, warehouse)
    [p] = [p for p in problems if p.field == "schema"]
    assert p.file.endswith("pack.yaml")
    assert "schema 'mini_never_loaded' is not loaded" in p.problem


def test_several_problems_are_reported_together(tmp_path: Path, warehouse: Warehouse) -> None:
    """A user fixes a pack in one pass: problems of several files come back at once."""
    chosen = [c for c in CASES if c.id in {"missing-rule-field", "unknown-effect-op", "missing-metric-field"}]
    root = copy_pack(tmp_path / "pack", "mini_tv")
    for c in chosen:
        c.mutate(root)
    _, problems = validate_pack(root, warehouse)
    for c in chosen:
        assert _matching(problems, c, root), f"{c.id} not reported among: " + "; ".join(map(str, problems))

"""A semantic manifest as pack files (`pack.yaml`, `metrics.yaml`, `rules/`), with the import
report: each metric imported (and its MetricFlow type), each one not imported with its reason, and,
against the pack already in the folder, which metrics were added, changed or removed."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dibench.core.models import DimensionSpec, MetricCatalog, MetricSpec, PackSpec
from dibench.ingest.dbt.manifest import DbtManifestError, Manifest, Metric, MetricInput, SemanticModel
from dibench.ingest.dbt.translate import (Settings, Unsupported, any_dict, derived_expression, describe, humanise,
                                          plain_column, simple_template, unit_of)
from dibench.ingest.dbt.windows import PERIOD, Window, WindowUnsupported, cumulative_window, offset_window


ID_PREFIX = "mf."


@dataclass
class ImportReport:
    imported: list[tuple[str, str]] = field(default_factory=list)  # (metric id, MetricFlow type)
    helpers: list[str] = field(default_factory=list)  # input metrics made for a filtered or offset ratio/derived input
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (metric name, reason)
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"imported {mid} ({kind})" for mid, kind in self.imported]
        out += [f"input metric {mid} (made for a filtered or offset input)" for mid in self.helpers]
        out += [f"not imported {name}: {reason}" for name, reason in self.skipped]
        out += [f"added {m}" for m in self.added] + [f"changed {m}" for m in self.changed]
        out += [f"removed {m}" for m in self.removed]
        return out


def _label(model: SemanticModel, name: str, label: str | None, description: str | None) -> str:
    text = label or description or humanise(name)
    return text if len(text) >= 2 else humanise(name)


def pack_dimensions(manifest: Manifest, s: Settings) -> dict[str, DimensionSpec]:
    """{table.column: spec} of every dimension that is a column of its model's table."""
    out: dict[str, DimensionSpec] = {}
    labels: dict[str, int] = {}
    for model in manifest.models:
        for d in model.dimensions:
            col = plain_column(d.expr, d.name, s) if d.type in ("categorical", "time") else None
            if col is None or f"{model.table}.{col}" in out:
                continue
            label = _label(model, d.name, d.label, d.description)
            labels[label] = labels.get(label, 0) + 1
            out[f"{model.table}.{col}"] = DimensionSpec(
                column=f"{model.table}.{col}", type="temporal" if d.type == "time" else "categorical", label=label)
    # One label, one dimension: a label two models share says which model it is.
    return {k: (v if labels[v.label] == 1 else v.model_copy(update={"label": f"{v.label} ({humanise(k.split('.')[0])})"}))
            for k, v in out.items()}


class _Builder:
    def __init__(self, manifest: Manifest, s: Settings, id_prefix: str) -> None:
        self.manifest, self.s, self.prefix = manifest, s, id_prefix
        self.dims = pack_dimensions(manifest, s)
        self.metrics: dict[str, MetricSpec] = {}
        self.report = ImportReport()

    def id(self, name: str) -> str:
        """A metric's id: its dbt name behind a prefix, so that an id is never a plain word
        ("revenue", "orders") that a natural question uses and the leak check would refuse."""
        return f"{self.prefix}{name}"

    def _dims_of(self, tables: set[str]) -> list[str]:
        # The period is the time window: a metric is sliced by categorical dimensions only.
        return [k for k, v in self.dims.items() if k.split(".", 1)[0] in tables and v.type != "temporal"]

    def _simple(self, mid: str, metric: Metric, ref: MetricInput, filters: tuple[str, ...], what: str,
                name: str | None = None, description: str | None = None, window: Window = PERIOD) -> MetricSpec:
        t = simple_template(self.manifest, ref, filters, self.s, what, window)
        label, desc = describe(metric)
        agg = t.measure.agg.replace("_", " ")
        formula = f"{agg} of {t.measure.expr or t.measure.name} over {t.model.name} rows whose " \
                  f"{t.time_column.split('.', 1)[1]} {t.window.words}" + \
                  (f", where {' and '.join(t.predicates)}" if t.predicates else "") + \
                  "".join(f"; {note}" for note in t.notes)
        return MetricSpec(id=mid, name=name or label, tier=1, description=description or desc, formula=formula,
                          sql=t.sql, time_column=t.time_column,
                          dimensions=self._dims_of({t.model.table, *(m.table for m in t.joined)}),
                          unit=unit_of(metric, t.measure), as_of=t.window.as_of)  # type: ignore[arg-type]

    def _input(self, parent: Metric, ref: MetricInput, role: str) -> str:
        """The id of the metric an input reads: the referenced simple metric itself, or an input
        metric made for it when the input (or its parent) adds a filter."""
        window = PERIOD
        if ref.offset:
            try:
                window = offset_window(ref.offset, f"input {ref.alias or ref.name}")
            except WindowUnsupported as exc:
                raise Unsupported(str(exc)) from exc
        target = self.manifest.metric(ref.name)
        extra = (*parent.filters, *ref.filters)
        if target is None:
            if self.manifest.measure(ref.name) is None:
                raise Unsupported(f"input {ref.name!r} is neither a metric nor a measure")
            measure_ref, filters, base = MetricInput(ref.name, (), None, None), extra, parent
        else:
            if target.type != "simple" or target.measure is None:
                raise Unsupported(f"input {ref.name} is a {target.type} metric: inputs of a metric built "
                                  "from others must have SQL of their own")
            if not extra and window is PERIOD and self.id(target.name) in self.metrics:
                return self.id(target.name)
            if self.id(target.name) not in self.metrics:
                reason = next((r for n, r in self.report.skipped if n == target.name), "not imported")
                raise Unsupported(f"input {ref.name} is not imported ({reason})")
            measure_ref, filters, base = target.measure, (*target.filters, *extra), target
        mid = f"{self.id(parent.name)}.{role}"
        label, _ = describe(base)
        self.metrics[mid] = self._simple(mid, base, measure_ref, filters, f"metric {parent.name} ({role})",
                                         name=f"{label} ({role} of {parent.name})",
                                         description=f"The {role} of {parent.name}: {describe(base)[1]}",
                                         window=window)
        self.report.helpers.append(mid)
        return mid

    def _built(self, metric: Metric, expression: str, inputs: dict[str, str], formula: str) -> MetricSpec:
        common: list[str] | None = None
        for mid in inputs.values():
            dims = self.metrics[mid].dimensions
            common = list(dims) if common is None else [d for d in common if d in dims]
        label, desc = describe(metric)
        return MetricSpec(id=self.id(metric.name), name=label, tier=2, description=desc, formula=formula,
                          derived={"expression": expression, "inputs": inputs},  # type: ignore[arg-type]
                          dimensions=common or [], unit=unit_of(metric, None))  # type: ignore[arg-type]

    def translate(self, metric: Metric) -> MetricSpec:
        what = f"metric {metric.name}"
        if metric.type == "simple":
            if metric.measure is None:
                raise Unsupported("a simple metric without a measure")
            return self._simple(self.id(metric.name), metric, metric.measure, metric.filters, what)
        if metric.type == "ratio":
            if metric.numerator is None or metric.denominator is None:
                raise Unsupported("a ratio metric without numerator or denominator")
            num = self._input(metric, metric.numerator, "numerator")
            den = self._input(metric, metric.denominator, "denominator")
            expr = derived_expression("numerator / denominator", {"numerator", "denominator"}, self.s, what)
            return self._built(metric, expr, {"numerator": num, "denominator": den},
                               f"{metric.numerator.name} divided by {metric.denominator.name}")
        if metric.type == "derived":
            if not metric.expr or not metric.inputs:
                raise Unsupported("a derived metric without expr or input metrics")
            inputs: dict[str, str] = {}
            for ref in metric.inputs:
                name = ref.alias or ref.name
                inputs[name] = self._input(metric, ref, name)
            expr = derived_expression(metric.expr, set(inputs), self.s, what)
            return self._built(metric, expr, inputs, f"{metric.expr} over {', '.join(inputs)}")
        if metric.type == "cumulative":
            if metric.measure is None:
                raise Unsupported("a cumulative metric without a measure")
            try:
                window = cumulative_window(metric.cumulative or {}, what)
            except WindowUnsupported as exc:
                raise Unsupported(str(exc)) from exc
            return self._simple(self.id(metric.name), metric, metric.measure, metric.filters, what, window=window)
        raise Unsupported(f"metric type {metric.type!r}")


def import_manifest(manifest_path: str | Path, out: str | Path, *, name: str, schema: str | None = None,
                    read_dialect: str = "duckdb") -> ImportReport:
    """Read a semantic manifest and write its pack into `out`; `schema` defaults to the schema of
    the manifest's first semantic model."""
    from dibench.ingest.dbt.manifest import read_manifest

    manifest = read_manifest(manifest_path)
    spec, catalog, report = build(manifest, name=name, schema=schema or manifest.models[0].schema,
                                  read_dialect=read_dialect)
    write_pack(Path(out), spec, catalog, report)
    return report


def build(manifest: Manifest, *, name: str, schema: str, description: str | None = None,
          read_dialect: str = "duckdb", id_prefix: str = ID_PREFIX) -> tuple[PackSpec, MetricCatalog, ImportReport]:
    """The pack (without rules) and the import report for one manifest."""
    b = _Builder(manifest, Settings(schema=schema, read_dialect=read_dialect), id_prefix)
    # Simple metrics first: ratio and derived metrics read them.
    for metric in sorted(manifest.metrics, key=lambda m: m.type != "simple"):
        try:
            b.metrics[b.id(metric.name)] = b.translate(metric)
            b.report.imported.append((b.id(metric.name), metric.type))
        except Unsupported as exc:
            b.report.skipped.append((metric.name, str(exc)))
    if not b.metrics:
        raise DbtManifestError("no metric of the manifest is expressible: " +
                          "; ".join(f"{n}: {r}" for n, r in b.report.skipped))
    used = {d for m in b.metrics.values() for d in m.dimensions} | {m.time_ref for m in b.metrics.values()
                                                                   if m.derived is None}
    dims = [v for k, v in b.dims.items() if k in used]
    spec = PackSpec(name=name, schema=schema, dimensions=dims,  # type: ignore[call-arg]
                    description=description or f"Imported from a dbt semantic manifest: "
                                               f"{len(manifest.models)} semantic models, "
                                               f"{len(manifest.metrics)} metrics.",
                    entity_labels={m.table: humanise(m.name) for m in manifest.models})
    order = [b.id(m.name) for m in manifest.metrics if b.id(m.name) in b.metrics]
    order += [mid for mid in b.metrics if mid not in order]
    return spec, MetricCatalog(metrics=[b.metrics[mid] for mid in order]), b.report


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|" if "\n" in data else None)


_Dumper.add_representer(str, _str)


def _dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)


def _metric_dict(m: MetricSpec) -> dict[str, Any]:
    d = any_dict(m.model_dump(mode="json", exclude_defaults=False))
    if m.derived is not None:
        d.pop("components", None)  # a derived metric's components are its inputs
    return d


def _changes(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]], report: ImportReport) -> None:
    report.added = sorted(set(new) - set(old))
    report.removed = sorted(set(old) - set(new))
    report.changed = [f"{mid} ({', '.join(k for k in sorted(set(old[mid]) | set(new[mid])) if old[mid].get(k) != new[mid].get(k))})"
                      for mid in sorted(set(old) & set(new)) if old[mid] != new[mid]]


def write_pack(out: Path, spec: PackSpec, catalog: MetricCatalog, report: ImportReport) -> None:
    """Write pack.yaml and metrics.yaml into `out` (rules/ is created, never touched). A pack.yaml
    already there keeps its loader, database_env and description: the manifest has none of them.
    The report gains the metrics added, changed and removed against the metrics.yaml there."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "rules").mkdir(exist_ok=True)
    pack = any_dict(spec.model_dump(mode="json", by_alias=True))
    pack_file, metrics_file = out / "pack.yaml", out / "metrics.yaml"
    if pack_file.is_file():
        before = yaml.safe_load(pack_file.read_text(encoding="utf-8")) or {}
        for key in ("loader", "database_env", "description"):
            if before.get(key):
                pack[key] = before[key]
        order = list(PackSpec.model_fields)  # pack.yaml in the order of its fields, whatever was kept
        pack = dict(sorted(pack.items(), key=lambda kv: order.index("db_schema" if kv[0] == "schema" else kv[0])))
    new = {m.id: _metric_dict(m) for m in catalog.metrics}
    if metrics_file.is_file():
        old_list = (yaml.safe_load(metrics_file.read_text(encoding="utf-8")) or {}).get("metrics") or []
        old = {str(m.get("id")): m for m in old_list if isinstance(m, dict)}
        _changes(old, new, report)
    else:
        report.added = sorted(new)
    header = "# Written by `dibench domain import-dbt` from a dbt semantic manifest; re-run it to update.\n"
    pack_file.write_text(header + _dump(pack), encoding="utf-8")
    metrics_file.write_text(header + _dump({"metrics": list(new.values())}), encoding="utf-8")

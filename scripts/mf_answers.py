"""MetricFlow's answers to many queries in one process (run by the MetricFlow environment's Python).

    <state>/metricflow-venv/bin/python scripts/mf_answers.py PROJECT_DIR < requests.json

Reads [{"metrics": [...], "group_by": [...], "where": [...]}, ...] on stdin, prints [{"columns": [...], "rows":
[[...], ...]}, ...] as JSON: `mf query` for each request, with the engine set up once (each
`mf query` process costs about 9 s of set-up). Imports MetricFlow only, never dibench.
"""
from __future__ import annotations

import json
import pathlib
import sys


def main() -> int:
    from dbt_metricflow.cli.cli_configuration import CLIConfiguration
    from metricflow.engine.metricflow_engine import MetricFlowQueryRequest

    project = pathlib.Path(sys.argv[1])
    cfg = CLIConfiguration()
    cfg.setup(dbt_profiles_path=project / "profiles", dbt_project_path=project, configure_file_logging=False)
    out = []
    for req in json.load(sys.stdin):
        result = cfg.mf.query(MetricFlowQueryRequest.create(metric_names=req["metrics"], group_by_names=req["group_by"],
                                                            where_constraints=req.get("where") or None))
        table = result.result_df
        assert table is not None
        out.append({"columns": list(table.column_names), "rows": [[None if v is None else str(v) for v in row]
                                                                  for row in table.rows]})
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())

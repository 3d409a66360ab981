"""`dibench score`: a thin click layer over evaluation.scoring.

The command is registered on `service.cli.main` by service/cli.py itself. This module imports
service.cli only inside the command, because service.cli imports this module at its end: a
top-level import would make `python -m service.cli` load the CLI twice and fail on the cycle.
"""
from __future__ import annotations

import json
from pathlib import Path

import click

from evaluation.reporting_tables import bucket_rows
from evaluation.scoring import Report, load_answers, load_tasks, score_run


@click.command("score")
@click.argument("tasks", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("answers", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON instead of tables.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the JSON report to FILE.")
def score(tasks: Path, answers: Path, as_json: bool, output: Path | None) -> None:
    """Score ANSWERS (JSONL of {task_id, answer}) against TASKS (JSONL task records).

    Prints one verdict per task with its reason and failure class, then accuracy overall and by
    domain, analysis type, knowledge tier and variant. A task with no answer line fails as no_answer.
    """
    from service.cli import handle_errors

    handle_errors(_score)(tasks, answers, as_json, output)


def _score(tasks: Path, answers: Path, as_json: bool, output: Path | None) -> None:
    report = score_run(load_tasks(tasks), load_answers(answers))
    data = report.model_dump(mode="json")
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if as_json:
        from service.cli import print_json

        print_json(data)
    else:
        print_report(report)


def print_report(report: Report) -> None:
    """The verdict table, then the aggregate tables."""
    from service.cli import print_table

    print_table("verdicts", ["task", "domain", "type", "tier", "verdict", "failure", "reason"],
                [[r.verdict.task_id, r.domain, r.analysis_type, r.tier, "pass" if r.verdict.passed else "FAIL",
                  r.verdict.failure_class or "", r.verdict.reason] for r in report.tasks])
    columns = ["tasks", "passed", "accuracy %"]
    print_table("overall", ["", *columns], bucket_rows({"all": report.overall}))
    print_table("by domain", ["domain", *columns], bucket_rows(report.by_domain))
    print_table("by analysis type", ["analysis type", *columns], bucket_rows(report.by_analysis_type))
    print_table("by knowledge tier", ["tier", *columns], bucket_rows(report.by_tier))
    print_table("by variant", ["variant", *columns], bucket_rows(report.by_variant))
    print_table("failure classes", ["class", "tasks"], [[c, n] for c, n in report.failure_classes.items()])
    if report.unmatched_answers:
        print_table("answers naming no task", ["task_id"], [[a] for a in report.unmatched_answers])

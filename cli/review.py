"""`dibench review`: the review app (people judge tasks and answer them blind) and its statistics.

Registered on `cli.main.main` by cli/main.py; imports only cli.common and, inside each command,
the service modules it calls.
"""
from __future__ import annotations

import click

from dibench.cli.common import get_settings, handle_errors, print_json, print_table


@click.group("review")
def review() -> None:
    """People in the loop: review tasks in the browser, answer them blind, measure the validator."""


@review.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8766, show_default=True, type=int, help="Port.")
@click.option("--sample", type=click.IntRange(min=1), default=None,
              help="Review a stratified sample of N tasks per domain (tier x analysis type, seeded); "
                   "default: every admitted task.")
@click.option("--blind-sample", type=click.IntRange(min=1), default=None,
              help="The blind mode's queue: N standard tasks per domain, as many per tier as the tiers allow; "
                   "default: every admitted standard task.")
@click.option("--judge-rejected", is_flag=True,
              help="Also queue the tasks only the validator's judge rejected, so people judge both sides of it "
                   "(Table 11's recall needs them).")
@click.option("--seed", type=int, default=None, help="Seed of both samples (default: DIBENCH_SEED, 42).")
@handle_errors
def review_serve(host: str, port: int, sample: int | None, blind_sample: int | None, judge_rejected: bool,
                 seed: int | None) -> None:
    """Serve the review app at http://HOST:PORT/review (the HTTP API's routes beside it).

    People sign in with their token from DIBENCH_REVIEWERS (a JSON list of {name, token, role};
    role reviewer, reader or baseline). A reviewer's queue resumes where they stopped; a task an
    update re-derives comes back. The API's own routes keep their tokens (DIBENCH_API_TOKEN ...).

    Example: dibench review serve --sample 24 --blind-sample 6"""
    import uvicorn

    from dibench.core.errors import ConfigError
    from dibench.service.api import create_app
    from dibench.service.review import ReviewOptions, install_review
    from dibench.stores.graph import get_graph
    from dibench.stores.warehouse import get_warehouse

    cfg = get_settings()
    if not cfg.reviewers:
        raise ConfigError("no reviewers are configured", hint="set DIBENCH_REVIEWERS to a JSON list of "
                                                              "{\"name\": ..., \"token\": ..., \"role\": ...}")
    app = create_app(cfg, host=host)
    install_review(app, cfg, get_graph, get_warehouse,
                   ReviewOptions(sample=sample, blind_sample=blind_sample, judge_rejected=judge_rejected,
                                 seed=cfg.seed if seed is None else seed))
    click.echo(f"review app: http://{host}:{port}/review ({len(cfg.reviewers)} people)", err=True)
    uvicorn.run(app, host=host, port=port)


@review.command("stats")
@click.argument("domain")
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@handle_errors
def review_stats_cmd(domain: str, as_json: bool) -> None:
    """Print the validator against people (the paper's Table 11) for DOMAIN, from the reviews in the graph.

    Per dimension: the human pass rate, the validator's pass rate on the same tasks, the human pass
    rate of the tasks the validator admits, precision and recall of the validator against people,
    and Cohen's kappa where two people reviewed a task; then the median seconds per task. Only
    reviews of a task's current version count.

    Example: dibench review stats demo"""
    from dibench.service.review_stats import STATS_COLUMNS, review_stats, stats_table
    from dibench.stores.graph import get_graph

    stats = review_stats(get_graph(), domain)
    if as_json:
        print_json(stats.as_dict())
        return
    median = "-" if stats.median_seconds is None else f"{stats.median_seconds:.1f}"
    print_table(f"{domain}: validator against people ({stats.tasks} tasks, {stats.reviews} reviews by "
                f"{stats.reviewers} people; {stats.stale_reviews} of older versions not counted)",
                list(STATS_COLUMNS), stats_table(stats))
    click.echo(f"median seconds per task: {median}")

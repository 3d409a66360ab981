"""Human questions first: every question file a release ships is read, queries are matched by their
parsed SQL, and one query is one unit (no duplicate tasks from a release that asks it twice)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dibench.core.config import get_settings
from dibench.routing.errors import CatalogSourceError
from dibench.routing.units import read_release, sql_key


def _write(root: Path, name: str, items: list[tuple[str, str, str]]) -> None:
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(json.dumps([{"db_id": d, "query": q, "question": t} for d, q, t in items]))


def _full_original(root: Path) -> Path:
    """A release laid out like Spider's full original: dev and both train question files, and gold SQL."""
    _write(root, "dev.json", [("pets", "SELECT count(*) FROM pet", "How many pets are there?"),
                              ("pets", "SELECT count(*) FROM pet", "Count the pets.")])
    (root / "dev_gold.sql").write_text("SELECT count(*) FROM pet\tpets\nSELECT count(*) FROM pet\tpets\n")
    _write(root, "train_spider.json", [("shop", "SELECT name FROM shop WHERE city = 'Oslo'",
                                        "Which shops are in Oslo?")])
    _write(root, "train_others.json", [("geo", "SELECT state_name FROM state", "List all states.")])
    # the gold file writes the same queries with other spacing, case and quotes, plus one no file asks
    (root / "train_gold.sql").write_text("select  NAME from SHOP where city = \"Oslo\"\tshop\n"
                                         "SELECT state_name FROM state;\tgeo\n"
                                         "SELECT max(area) FROM state\tgeo\n")
    return root


def test_every_question_file_of_a_full_original_release_is_read(tmp_path: Path) -> None:
    release = read_release(_full_original(tmp_path))
    by_question = {q.question: q for q in release.queries}
    assert set(by_question) == {"How many pets are there?", "Which shops are in Oslo?", "List all states.", None}
    assert by_question["Which shops are in Oslo?"].origin == "train_spider:0"
    assert by_question["List all states."].origin == "train_others:0"
    assert by_question[None].sql == "SELECT max(area) FROM state"  # the only query without a question
    assert release.records == 9
    assert len(release.queries) == 4 and release.merged == 5  # the repeats of a query join its first record


def test_matching_is_by_parsed_sql_not_by_text() -> None:
    assert sql_key("shop", "select  NAME from SHOP where city = \"Oslo\"") == \
        sql_key("shop", "SELECT name FROM shop WHERE city = 'Oslo'")
    assert sql_key("shop", "SELECT name FROM shop WHERE city = 'Oslo'") != \
        sql_key("shop", "SELECT name FROM shop WHERE city = 'Bergen'")
    assert sql_key("a", "SELECT 1") != sql_key("b", "SELECT 1")


def test_kaggledbqa_style_examples_are_question_files(tmp_path: Path) -> None:
    _write(tmp_path, "examples/nuclear.json", [("nuclear", "SELECT count(*) FROM plants", "How many plants?")])
    _write(tmp_path, "examples/nuclear_test.json", [("nuclear", "SELECT max(mw) FROM plants", "Biggest output?")])
    release = read_release(tmp_path)
    assert sorted(q.origin for q in release.queries) == ["examples/nuclear:0", "examples/nuclear_test:0"]
    assert all(q.question for q in release.queries)


@pytest.mark.parametrize("content", ["[{\"db_id\": \"x\", \"query\": \"SELECT 1\"}]", "{not json"])
def test_a_malformed_question_file_is_one_line_naming_it(tmp_path: Path, content: str) -> None:
    (tmp_path / "train_spider.json").write_text(content)
    with pytest.raises(CatalogSourceError) as err:
        read_release(tmp_path)
    assert "train_spider.json" in str(err.value) and "\n" not in str(err.value)
    assert "SELECT" not in str(err.value)


def test_the_shared_spider_copy_asks_only_its_dev_queries() -> None:
    """The copy under ../shared/data lacks train_spider.json and train_others.json (see its README):
    only dev queries can carry a human question; the train ones are rendered from their SQL."""
    release = read_release(get_settings().data_dir / "spider")
    asked = [q for q in release.queries if q.question]
    assert asked and all(q.origin.startswith("dev:") for q in asked)
    assert all(q.question for q in release.queries if q.origin.startswith("dev"))
    assert len({sql_key(q.db_name, q.sql) for q in release.queries}) == len(release.queries)

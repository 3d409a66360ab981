"""The review app in a real browser: Debian's chromium driven by Selenium through chromium-driver
(no browser is downloaded), against the app served by uvicorn over the real stores.

A reviewer reviews three tasks with the keyboard only and the graph holds the three reviews; a
baseline person answers two tasks in the blind mode (using the SQL console) and the run's score
counts one right and one wrong; a question and a rule title holding `<script>` run nothing; a
form post whose CSRF token was removed is refused; a reader's token writes nothing.
Cost: about 30 s in all (2 busy cores, load 6-8): the domain is generated once, one browser serves every test.
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dibench.core.keys import rule_key
from dibench.core.pack import Pack
from dibench.service.review import ReviewOptions
from dibench.stores.graph import Graph
from tests.fixtures.review_app import ANA, BO, RUI, Reviewer, review_app, review_fixtures, review_settings, served

DOMAIN = "mini_rev1"
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROMIUM = Path("/usr/bin/chromium")
WAIT_S = 15

if not CHROMEDRIVER.exists() or not CHROMIUM.exists():
    pytest.skip("Debian packages chromium and chromium-driver are needed (/usr/bin/chromedriver missing)",
                allow_module_level=True)

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


pack, state_dir = review_fixtures(DOMAIN, target=4)


@pytest.fixture(scope="module")
def base_url(pack: Pack, state_dir: Path) -> Iterator[str]:
    with served(review_app(review_settings(state_dir), ReviewOptions(sample=6, blind_sample=2))) as url:
        yield url


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1280,1000", f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield browser
    finally:
        browser.quit()
        shutil.rmtree(Path(options.arguments[-1].split("=", 1)[1]), ignore_errors=True)


def sign_in(driver: WebDriver, base: str, person: Reviewer) -> None:
    driver.delete_all_cookies()
    driver.get(f"{base}/review/login")
    driver.find_element(By.ID, "token").send_keys(person.token)
    driver.find_element(By.ID, "sign-in").click()
    WebDriverWait(driver, WAIT_S).until(lambda d: d.current_url.endswith("/review"))


def shown_key(driver: WebDriver) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, "input[name=key]").get_attribute("value"))


def reviews_of(graph: Graph, person: str) -> dict[str, dict[str, Any]]:
    return {r["review"]["task_key"]: r["review"] for r in graph.read("review_domain_reviews", domain=DOMAIN)
            if r["review"]["reviewer"] == person}


def test_three_reviews_by_keyboard_land_in_the_graph(base_url: str, driver: WebDriver, graph: Graph) -> None:
    sign_in(driver, base_url, ANA)
    driver.get(f"{base_url}/review/{DOMAIN}")
    driver.find_element(By.ID, "next").click()
    presses = [["2"], [], ["1", "8"]]  # answer_leakage fails; all pass; objectivity and gold_scope_match fail
    keys = []
    for press in presses:
        key = shown_key(driver)
        keys.append(key)
        body = driver.find_element(By.TAG_NAME, "body")
        for k in press:
            body.send_keys(k)
        body.send_keys(Keys.ENTER)
        WebDriverWait(driver, WAIT_S).until(lambda d: shown_key(d) != key)
    saved = reviews_of(graph, ANA.name)
    assert set(saved) == set(keys)
    assert [saved[k]["failed"] for k in keys] == [["answer_leakage"], [], ["objectivity", "gold_scope_match"]]
    assert [saved[k]["passed"] for k in keys] == [False, True, False]
    assert all(saved[k]["task_version"] == 1 and saved[k]["seconds"] >= 0 for k in keys)
    # The queue page now counts them, and resumes at the fourth task.
    driver.get(f"{base_url}/review/{DOMAIN}")
    assert "3 of 6 reviewed by you" in driver.find_element(By.TAG_NAME, "body").text


def test_script_in_a_question_or_a_rule_title_is_inert(base_url: str, driver: WebDriver, graph: Graph) -> None:
    sign_in(driver, base_url, ANA)
    driver.get(f"{base_url}/review/{DOMAIN}/next")
    key = shown_key(driver)
    task = graph.read("review_task", key=key)[0]["task"]
    hostile = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">"
    graph.write("test_set_question", key=key, question=hostile + " " + task["question"])
    rule = task["featured_rule"] or task["rule_ids"][0]
    graph.write("test_set_rule_title", key=rule_key(DOMAIN, rule), title=hostile)
    try:
        driver.refresh()
        assert driver.execute_script("return window.__pwned === undefined")
        assert driver.find_element(By.ID, "question").text.startswith("<script>window.__pwned = 1</script>")
        assert hostile in driver.find_element(By.TAG_NAME, "body").text  # the title shown as text
    finally:
        graph.write("test_set_question", key=key, question=task["question"])


def test_a_post_without_the_csrf_token_is_refused(base_url: str, driver: WebDriver, graph: Graph) -> None:
    sign_in(driver, base_url, ANA)
    driver.get(f"{base_url}/review/{DOMAIN}/next")
    key = shown_key(driver)
    driver.execute_script("document.querySelector('#review-form input[name=csrf]').remove()")
    driver.find_element(By.ID, "save").click()
    WebDriverWait(driver, WAIT_S).until(lambda d: "CsrfRefused" in d.title)
    assert "CSRF token" in driver.find_element(By.ID, "message").text
    assert key not in reviews_of(graph, ANA.name)


def test_a_readers_token_cannot_write(base_url: str, driver: WebDriver, graph: Graph) -> None:
    sign_in(driver, base_url, RUI)
    driver.get(f"{base_url}/review/{DOMAIN}")
    link = driver.find_element(By.CSS_SELECTOR, "table a, #next")
    link.click()
    key = shown_key_from_url(driver.current_url)
    assert driver.find_elements(By.ID, "review-form") == []  # no form to save with
    gold = graph.read("review_task", key=key)[0]["task"]["gold_answer"]
    assert gold not in driver.page_source and "gold-sql" not in driver.page_source
    # A hand-made form with the reader's own CSRF token (from the sign-out form) is still refused.
    driver.execute_script("""
      const f = document.createElement('form'); f.method = 'post'; f.action = arguments[0];
      for (const [k, v] of Object.entries(arguments[1])) {
        const i = document.createElement('input'); i.type = 'hidden'; i.name = k; i.value = v; f.appendChild(i); }
      document.body.appendChild(f); f.submit();""", f"/review/{DOMAIN}/task",
        {"csrf": driver.find_element(By.CSS_SELECTOR, "header input[name=csrf]").get_attribute("value"),
         "key": key, "version": "1", "pass": "objectivity"})
    WebDriverWait(driver, WAIT_S).until(lambda d: "Forbidden" in d.title)
    assert reviews_of(graph, RUI.name) == {}


def shown_key_from_url(url: str) -> str:
    from urllib.parse import parse_qs, urlsplit

    return parse_qs(urlsplit(url).query)["key"][0]


def test_two_blind_answers_are_scored_like_an_agents(base_url: str, driver: WebDriver, graph: Graph,
                                                     state_dir: Path) -> None:
    sign_in(driver, base_url, BO)
    driver.get(f"{base_url}/review/{DOMAIN}/blind")
    answered = []
    for right in (True, False):
        key = shown_key(driver)
        task = graph.read("review_task", key=key)[0]["task"]
        assert task["gold_answer"] not in driver.page_source, "the blind page shows the gold answer"
        driver.find_element(By.ID, "sql").send_keys("SELECT count(*) AS n FROM orders")
        driver.find_element(By.ID, "run-sql").click()
        WebDriverWait(driver, WAIT_S).until(lambda d: d.find_elements(By.ID, "sql-reply"))
        assert "row_count" in driver.find_element(By.ID, "sql-reply").text
        driver.find_element(By.ID, "answer").send_keys(task["gold_answer"] if right else "{}")
        driver.find_element(By.ID, "submit-answer").click()
        WebDriverWait(driver, WAIT_S).until(lambda d: "blind" not in d.title or shown_key(d) != key)
        answered.append(key)
    assert "All answered" in driver.title
    (folder,) = (state_dir / "people" / DOMAIN).iterdir()
    score = json.loads((folder / "score.json").read_text())
    summary = json.loads((folder / "summary.json").read_text())
    assert (score["overall"]["total"], score["overall"]["passed"]) == (2, 1)
    assert {v["task_id"]: v["passed"] for v in (t["verdict"] for t in score["tasks"])} == \
        {answered[0]: True, answered[1]: False}
    assert (summary["agent"], summary["model"], summary["answered"]) == ("people", BO.name, 2)
    traces = [json.loads(line) for line in (folder / "trace.jsonl").read_text().splitlines()]
    assert [e["tool"] for t in traces for e in t["events"]] == ["sql_query", "sql_query"]

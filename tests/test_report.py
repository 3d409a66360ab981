"""`dibench report`: one self-contained HTML file from real eval results and a real ablation,
rendered by headless Chromium (Debian package `chromium`) into a screenshot that is not blank."""
from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from dibench.cli import common
from dibench.cli.main import main
from dibench.service.report import ReportData, render_html
from tests.fixtures.evaldomain import EvalDomain, eval_domain  # noqa: F401  (fixture)

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def report_file(eval_domain: EvalDomain, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    root = tmp_path_factory.mktemp("report")
    runner = CliRunner()
    for agent in ("oracle", "no-rule", "retrieval-only"):
        res = runner.invoke(main, ["eval", "--agent", agent, "--domain", eval_domain.name, "-o", str(root / "runs" / agent)])
        assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["ablation", "pairing", "--domain", eval_domain.name, "-o", str(root / "pairing.json")])
    assert res.exit_code == 0, res.output
    out = root / "report.html"
    res = runner.invoke(main, ["report", "--results", str(root / "runs"), "--ablation", str(root / "pairing.json"),
                               "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "1 domain(s), 3 evaluation run(s), 1 ablation(s)" in res.output
    return out


def test_report_is_one_self_contained_file(report_file: Path, eval_domain: EvalDomain) -> None:  # noqa: F811
    html = report_file.read_text()
    for heading in ("Benchmark: " + eval_domain.name, "By agent and domain", "By knowledge tier", "By analysis type",
                    "Matched variants", "Pairing ablation", "Chance levels", "oracle @ " + eval_domain.name
                    + ": against chance"):
        assert heading in html
    assert html.count("<svg") >= 4  # task mix, heat map, accuracy by tier, ablation
    for external in ("<script", "<link", "src=", "url(", "@import"):
        assert external not in html
    assert set(re.findall(r"https?://[^\"' ]+", html)) == {"http://www.w3.org/2000/svg"}
    # the oracle's accuracy cell, with its 95% Wilson interval and task count
    assert re.search(r'100\.0% <span class="note">\[\d+\.\d, 100\.0\] \(\d+/\d+\)', html)
    # beside it, the reference agents' chance levels on the same tasks
    assert "keyword-dump %" in html and "featured-rule-only %" in html
    # and under every score of the accuracy tables, the best shortcut's share of the same tasks
    accuracy = html.split("<h2>Accuracy</h2>")[1].split("<h3>Chance levels</h3>")[0]
    scores = re.findall(r'\(\d+/\d+\)</span>(<br><span class="note chance">best shortcut \d+\.\d%</span>)?</td>',
                        accuracy)
    assert scores and all(scores), "a score of the accuracy tables without the best shortcut beside it"


def test_report_renders_in_headless_chromium(report_file: Path, tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        pytest.skip("Debian package `chromium` is not installed (/usr/bin/chromium missing)")
    shot = tmp_path / "shot.png"
    subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1200,900",
                    report_file.resolve().as_uri()], check=True, capture_output=True, timeout=120)
    width, height, pixels = decode_png(shot.read_bytes())
    assert (width, height) == (1200, 900)
    non_white = sum(1 for p in pixels if p[:3] != (255, 255, 255))
    assert non_white > 0.02 * width * height, "the screenshot is (almost) blank"
    assert len(set(pixels)) > 20, "the screenshot has too few colours to show tables and plots"


def test_rendering_without_results_says_so() -> None:
    html = render_html(ReportData(generated_at="now"))
    assert "No evaluation results given" in html
    assert html.startswith("<!DOCTYPE html>")


def test_labels_are_escaped() -> None:
    from dibench.evaluation.plots import bar_chart

    svg = bar_chart([("<b>x</b>", 3.0)], title="a & b")
    assert "<b>" not in svg
    assert "&lt;b&gt;x&lt;/b&gt;" in svg
    assert "a &amp; b" in svg


def test_report_without_arguments_describes_every_domain_with_tasks(eval_domain: EvalDomain,  # noqa: F811
                                                                    tmp_path: Path) -> None:
    # The README's `dibench report -o out/report.html`, run after generating tasks.
    res = CliRunner().invoke(main, ["report", "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert "Benchmark: " + eval_domain.name in (tmp_path / "r.html").read_text()


# ------------------------------------------------------------------------------ a small PNG decoder
def decode_png(data: bytes) -> tuple[int, int, list[tuple[int, ...]]]:
    """8-bit RGB/RGBA PNG -> (width, height, pixels as tuples). Enough for Chromium screenshots."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    assert header is not None
    width, height, depth, colour, _c, _f, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unsupported PNG: {header}"
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    pixels: list[tuple[int, ...]] = []
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        unfilter(kind, line, prev, bpp)
        pixels.extend(tuple(line[i:i + bpp]) for i in range(0, stride, bpp))
        prev = line
    return width, height, pixels


def unfilter(kind: int, line: bytearray, prev: bytearray, bpp: int) -> None:
    if kind == 0:
        return
    if kind == 2:
        line[:] = bytes((a + b) & 0xFF for a, b in zip(line, prev))
        return
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        up = prev[i]
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 0xFF
        elif kind == 4:
            up_left = prev[i - bpp] if i >= bpp else 0
            p = left + up - up_left
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
            pred = left if pa <= pb and pa <= pc else (up if pb <= pc else up_left)
            line[i] = (line[i] + pred) & 0xFF
        else:
            raise AssertionError(f"unknown PNG filter {kind}")


def test_png_decoder_reads_a_png_it_did_not_write(tmp_path: Path) -> None:
    """Cross-check the decoder on a file made by another encoder (Chromium's), when one exists."""
    if not CHROMIUM.exists() or shutil.which("chromium") is None:
        pytest.skip("Debian package `chromium` is not installed")
    page = tmp_path / "p.html"
    page.write_text('<html><body style="margin:0;background:#ff0000"></body></html>')
    shot = tmp_path / "p.png"
    subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=64,48",
                    page.as_uri()], check=True, capture_output=True, timeout=120)
    width, height, pixels = decode_png(shot.read_bytes())
    assert (width, height) == (64, 48)
    assert {p[:3] for p in pixels} == {(255, 0, 0)}


def test_report_finds_the_runs_eval_wrote(eval_domain: EvalDomain, tmp_path: Path,  # noqa: F811
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's `dibench eval ... -o DIR` then `dibench report -o out/report.html`: the runs
    under out/eval (eval's default) and in any folder eval's -o named are found, and one line
    says where the report looked."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(common, "HEARTBEAT_S", 0.01)  # piped, eval says where it is
    runner = CliRunner()
    default = runner.invoke(main, ["eval", "--agent", "oracle", "--domain", eval_domain.name, "--limit", "3",
                                   "--no-chance"])
    assert default.exit_code == 0, default.output
    assert f"... oracle on {eval_domain.name}" in default.output
    assert (work / "out" / "eval" / eval_domain.name / "oracle" / "summary.json").is_file()
    # --name names the agent in its files and the report, and its default run folder
    named_run = runner.invoke(main, ["eval", "--agent", "oracle", "--name", "team-bot.v2", "--domain",
                                     eval_domain.name, "--limit", "3", "--no-chance"])
    assert named_run.exit_code == 0, named_run.output
    assert '"agent": "team-bot.v2"' in (work / "out" / "eval" / eval_domain.name / "team-bot.v2"
                                        / "summary.json").read_text()
    bad = runner.invoke(main, ["eval", "--agent", "oracle", "--name", "../up", "--domain", eval_domain.name])
    assert bad.exit_code == 2 and "'--name'" in bad.output
    elsewhere = tmp_path / "elsewhere" / "no-rule"
    named = runner.invoke(main, ["eval", "--agent", "no-rule", "--domain", eval_domain.name, "--limit", "3",
                                 "--no-chance", "-o", str(elsewhere)])
    assert named.exit_code == 0, named.output
    res = runner.invoke(main, ["report", "-o", "out/report.html"])
    assert res.exit_code == 0, res.output
    [looked] = [line for line in res.output.splitlines() if line.startswith("evaluation runs: looked in")]
    assert "out/eval/" in looked
    runs = int(re.search(r"(\d+) evaluation run\(s\)", res.output).group(1))  # type: ignore[union-attr]
    assert runs >= 2, res.output
    html = (work / "out" / "report.html").read_text()
    assert "no-rule" in html and "oracle" in html and f"team-bot.v2 @ {eval_domain.name}" in html


def test_agents_are_named_by_their_program_and_the_legend_keeps_long_names_whole() -> None:
    from dibench.evaluation.plots import grouped_bars
    from dibench.service.report import short_command

    assert short_command("command:/work/x/.venv/bin/python /home/me/agent.py --k 3") == "command:python agent.py --k 3"
    assert short_command("oracle") == "oracle"
    long = "command:python a_rather_long_agent_program_name.py --model some-model @ demo"
    svg = grouped_bars(["K", "K+A"], [(long, [10.0, 20.0]), ("oracle @ demo", [100.0, 100.0])], title="t",
                       markers=[5.0, 5.0], marker_label="best shortcut")
    xs = [float(part.split('"')[1]) for part in svg.split("<text x=")[1:] if "oracle @ demo" in part.split("</text>")[0]]
    assert xs and all(x < 100 for x in xs)  # a long first name pushes the next one to a row of its own


def test_a_run_of_a_domain_the_graph_no_longer_holds_still_reports(eval_domain: EvalDomain,  # noqa: F811
                                                                   tmp_path: Path) -> None:
    """A recorded run whose domain was removed since: the report shows its scores and the other
    domains; only a domain named with --domain must still be there."""
    import json

    out = tmp_path / "gone"
    res = CliRunner().invoke(main, ["eval", "--agent", "oracle", "--domain", eval_domain.name, "--limit", "2",
                                    "--no-chance", "-o", str(out)])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    summary["domain"] = "no_such_domain_any_more"
    (out / "summary.json").write_text(json.dumps(summary))
    res = CliRunner().invoke(main, ["report", "--results", str(out), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    named = CliRunner().invoke(main, ["report", "--domain", "no_such_domain_any_more", "-o", str(tmp_path / "s.html")])
    assert named.exit_code == 1

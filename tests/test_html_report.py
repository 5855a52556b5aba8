"""report.html: a real short campaign writes it (live while running, final at the end), `tvmfuzz
report --html DIR` writes it for a campaign or a corpus, and headless Chromium renders it
without console errors (Debian's chromium and chromium-driver, driven by Selenium).

The browser test skips where no chromium is installed, except under CI, where it must run.
Its screenshot lands in $TVMFUZZ_SCREENSHOT_DIR (default: the test's tmp directory), for a
person to look at.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tvmfuzz.cli import main
from tvmfuzz.html_report import REPORT_NAME, ReportError, load, write_html

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """A real 10-second campaign (--jobs 1, no reduction) whose page is refreshed every 2 s,
    then one bucket's repro.py and report.md written under reduced/ as the campaign's
    background reducer would (`tvmfuzz report BUCKET --out ...`)."""
    from worker.campaign import run_campaign
    from tvmfuzz.html_report import write_campaign_html

    base = tmp_path_factory.mktemp("html")
    out, corpus = base / "run", base / "corpus"
    out.mkdir()
    writes = []

    def html(out_dir, live):
        write_campaign_html(out_dir, live)
        text = (out_dir / REPORT_NAME).read_text()
        writes.append((live, 'http-equiv="refresh"' in text))

    lines = []
    summary = run_campaign(10, out, seed=0, echo=lines.append, jobs=1, corpus=corpus,
                           ir=("relax", "tir"), schedules=True, html=html, html_every=2)
    assert summary["cases"] > 0, lines
    return {"out": out, "corpus": corpus, "summary": summary, "writes": writes}


def with_bucket_report(campaign) -> str:
    """A bucket of the campaign with repro.py and report.md under reduced/<bucket>/."""
    rep = json.loads((campaign["out"] / "report.json").read_text())
    buckets = [b["bucket"] for g in rep["bugs"] for b in g["buckets"] if b["bucket"]]
    if not buckets:
        pytest.skip("this campaign met no failure to link")
    bucket = buckets[0]
    d = campaign["out"] / "reduced" / bucket
    if not (d / "report.md").is_file():
        r = subprocess.run([sys.executable, "-m", "tvmfuzz", "report", bucket, "--corpus",
                            str(campaign["corpus"]), "--out", str(d), "--no-jail",
                            "--no-bisect"], cwd=ROOT, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
    return bucket


def test_campaign_refreshes_its_page(campaign):
    out, writes = campaign["out"], campaign["writes"]
    # live pages while it ran (they reload themselves), then one final page without reload
    assert len(writes) >= 2, writes
    assert all(refresh for live, refresh in writes[:-1] if live) and writes[-1] == (False, False)
    assert not list(out.glob(".*.tmp")), "a temp file of the atomic write was left behind"
    rep = json.loads((out / "report.json").read_text())
    summary = campaign["summary"]
    assert {g["id"] for g in rep["bugs"]} == {g["id"] for g in summary["bugs"]}
    # report.json keeps the bugs only: the coverage cells are coverage.json's
    assert "op_dtype" not in rep and "pass_op" not in rep
    cov = json.loads((out / "coverage.json").read_text())
    assert cov["totals"] == summary["coverage"]
    if summary["cases_by_ir"].get("relax"):
        assert cov["cells"]["op_dtype_shape"] and cov["cells"]["pass_op"]
        ops = {k.split("|")[0] for k in cov["cells"]["op_dtype_shape"]}
        assert all(op.startswith("relax.") for op in ops), ops
    for g in rep["bugs"]:
        assert g["first_at"] <= g["last_at"] and g["kind"] and g["stage"]
        assert g["replays"] >= g["count"]            # each finding replayed (--replays 3)
    stats = [json.loads(x) for x in (out / "stats.jsonl").read_text().splitlines()]
    assert all("at" in s for s in stats)


def test_coverage_json_counts_the_findings_per_cell(campaign):
    """coverage.json's findings are the cells of the campaign's failing cases (findings/, each
    saved with its outcome), counted once per case: recomputed here from those files."""
    import collections

    from fuzz.coverage import FINDING_KINDS, case_cells
    from fuzz.model import Program
    from fuzz.outcome import Outcome

    out = campaign["out"]
    cov = json.loads((out / "coverage.json").read_text())
    want = {k: collections.Counter() for k in FINDING_KINDS}
    fails = 0
    for case in (out / "findings").rglob("case_*.json"):
        if case.name.endswith(".outcome.json"):
            continue
        outcome = Outcome.from_json(json.loads(case.with_suffix(".outcome.json").read_text()))
        if outcome.verdict != "fail":
            continue
        fails += 1
        cells = case_cells(Program.loads(case.read_text()), outcome)
        for k in FINDING_KINDS:
            want[k].update(cells[k])
    assert fails == campaign["summary"]["verdicts"].get("fail", 0)
    assert cov["findings"] == {k: dict(want[k]) for k in FINDING_KINDS}
    for k in FINDING_KINDS:     # a cell's findings are among its cases
        assert all(n <= cov["cells"][k][c] for c, n in cov["findings"][k].items()), k
    # the page's heat maps show them: op x dtype x shape cells as "op|dtype shape"
    data = load(out)["coverage"]
    assert sum(f for _, f in data["op_dtype"].values()) == sum(want["op_dtype_shape"].values())
    assert sum(c for c, _ in data["pass_op"].values()) == sum(cov["cells"]["pass_op"].values())
    assert len(data["prim_block"]) == cov["totals"]["prim_block"]
    for cell, n in cov["cells"]["op_dtype_shape"].items():
        op, dtype, shape = cell.split("|")
        assert data["op_dtype"][f"{op}|{dtype} {shape}"] == [n, want["op_dtype_shape"][cell]]


def test_a_campaign_without_coverage_json_says_so(campaign, tmp_path):
    """An older campaign directory (no coverage.json): the page says there are no heat maps
    instead of drawing empty ones."""
    old = tmp_path / "old"
    old.mkdir()
    for name in ("stats.jsonl", "report.json", "summary.json", "campaign.json"):
        shutil.copy(campaign["out"] / name, old / name)
    assert load(old)["coverage"] is None
    text = write_html(old).read_text()
    assert "No coverage.json in this campaign directory" in text
    assert "No coverage.json" not in write_html(campaign["out"], tmp_path / "p.html").read_text()


def test_page_is_self_contained_and_has_the_data(campaign):
    out = campaign["out"]
    bucket = with_bucket_report(campaign)
    path = write_html(out)
    text = path.read_text()
    # nothing fetched: no script or stylesheet from elsewhere (BokehJS is inline)
    assert not re.search(r'<(script|link)[^>]+(src|href)="(https?:)?//', text)
    assert "Bokeh" in text and path.stat().st_size < 5e6
    data = load(out)
    assert {r["id"] for r in data["bugs"]} == {g["id"] for g in campaign["summary"]["bugs"]}
    assert data["series"]["cases"][-1] == campaign["summary"]["cases"]
    # the bug with that bucket links its repro.py and report.md, relative to the page
    row = next(r for r in data["bugs"] if f"reduced/{bucket}/" in r["links"])
    assert f'href="reduced/{bucket}/repro.py"' in row["links"]
    assert f'href="reduced/{bucket}/report.md"' in row["links"]
    assert f"reduced/{bucket}/repro.py" in text


def test_report_html_command(campaign, tmp_path, capsys):
    out = campaign["out"]
    (out / REPORT_NAME).unlink()
    assert main(["report", "--html", str(out)]) == 0
    assert f"wrote {out / REPORT_NAME}" in capsys.readouterr().out
    # a corpus, written elsewhere with --out
    assert main(["report", "--html", str(campaign["corpus"]), "--out", str(tmp_path / "c")]) == 0
    page = (tmp_path / "c" / REPORT_NAME).read_text()
    for g in campaign["summary"]["bugs"]:
        assert g["id"] in page
    # bad input: one line, exit 2, nothing written
    (tmp_path / "empty").mkdir()
    for args, why in ((["--html", str(tmp_path / "nowhere")], "is not a directory"),
                      (["--html", str(tmp_path / "empty")], "neither a campaign directory"),
                      (["--html", str(out), "case.json"], "takes no CASE"),
                      ([], "missing CASE")):
        assert main(["report", *args]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("tvmfuzz: error: ") and why in err[0], err
    assert not (tmp_path / "empty" / REPORT_NAME).exists()
    with pytest.raises(ReportError):
        load(tmp_path / "empty")


def browser():
    """A headless Chromium through Selenium, its console kept (goog:loggingPrefs)."""
    if CHROMIUM is None or CHROMEDRIVER is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser test: apt-get install chromium chromium-driver")
        pytest.skip("no chromium/chromedriver (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1500,1200"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


# Every element in the page, through Bokeh's shadow roots, counted by Bokeh's view classes.
COUNT_JS = """
function walk(root, acc) {
  for (const el of root.querySelectorAll('*')) { acc.push(el); if (el.shadowRoot) walk(el.shadowRoot, acc); }
  return acc;
}
const all = walk(document, []);
const has = (c) => all.filter(e => typeof e.className === 'string' && e.className.split(' ').includes(c)).length;
return {idle: !!(window.Bokeh && Bokeh.documents.length && Bokeh.documents[0].is_idle),
        figures: has('bk-Figure'), canvases: all.filter(e => e.tagName === 'CANVAS').length,
        tables: has('bk-DataTable'), rows: has('slick-row'), links: all.filter(e => e.tagName === 'A' && (e.getAttribute('href') || '').startsWith('reduced/')).length};
"""


def rendered(driver, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    got = {}
    while time.monotonic() < deadline:
        got = driver.execute_script(COUNT_JS)
        if got["idle"] and got["figures"]:
            return got
        time.sleep(0.2)
    raise AssertionError(f"Bokeh did not finish rendering in {timeout}s: {got}")


def test_page_renders_in_chromium(campaign):
    out = campaign["out"]
    with_bucket_report(campaign)
    write_html(out)
    data = load(out)
    driver = browser()
    try:
        driver.get((out / REPORT_NAME).as_uri())
        got = rendered(driver)
        log = driver.get_log("browser")
        shots = Path(os.environ.get("TVMFUZZ_SCREENSHOT_DIR") or out)
        shots.mkdir(parents=True, exist_ok=True)
        # the whole page in one picture: a window as tall as the page (Bokeh's root is a
        # shadow host, so its height is the body's)
        height = driver.execute_script("return Math.max(document.body.scrollHeight, "
                                       "document.documentElement.scrollHeight)")
        driver.set_window_size(1500, min(12000, max(1200, int(height) + 200)))
        time.sleep(1.0)
        shot = shots / "report-html.png"
        driver.save_screenshot(str(shot))
        # sort the bug table by count (a click on the header) and read the first column
        header = driver.execute_script(
            "function walk(r,a){for(const e of r.querySelectorAll('*')){a.push(e);"
            "if(e.shadowRoot)walk(e.shadowRoot,a)}return a}"
            "return walk(document,[]).filter(e=>e.classList&&e.classList.contains("
            "'slick-header-column')&&e.textContent.trim()==='count')[0]")
        assert header is not None
    finally:
        driver.quit()
    print(f"screenshot: {shot}")
    errors = [e for e in log if e["level"] == "SEVERE"]
    assert not errors, errors
    # 4 time plots, 4 bug plots, 2 heat maps, the schedule plots (a TIR campaign with
    # schedules applies some) and the primitive x block heat map, none for workers (local mode)
    expected = 10 + (2 if data["primitives"]["cells"] else 1 if data["primitive_totals"] else 0)
    expected += bool(data["coverage"]["prim_block"])
    assert got["figures"] == expected, got
    assert got["canvases"] >= expected and got["tables"] == 1
    assert got["rows"] >= min(len(data["bugs"]), 1) and got["links"] >= 2, got
    assert shot.stat().st_size > 10_000


def test_a_resumed_campaign_keeps_the_report_before(campaign):
    """--resume starts Stats at zero: report.json adds this run's bugs to the last one's (here
    the same run twice: every count doubles, no bug or bucket is lost); the cells go on in
    coverage.json, which the resumed campaign loads whole, findings included."""
    from fuzz.coverage import load_coverage
    from worker.campaign import _merge_report

    cov = json.loads((campaign["out"] / "coverage.json").read_text())
    assert load_coverage(campaign["out"]).to_json() == cov
    rep = json.loads((campaign["out"] / "report.json").read_text())
    both = _merge_report(rep, json.loads(json.dumps(rep)))
    assert {g["id"] for g in both["bugs"]} == {g["id"] for g in rep["bugs"]}
    for g, h in zip(sorted(rep["bugs"], key=lambda g: g["id"]),
                    sorted(both["bugs"], key=lambda g: g["id"])):
        assert h["count"] == 2 * g["count"] and h["replays"] == 2 * g["replays"]
        assert h["first_at"] == g["first_at"] and h["buckets"] == g["buckets"]
    assert _merge_report({}, rep) is rep

"""report.html of a 24-hour campaign: how big the page is, how long it takes to write, and how
long headless Chromium takes to open it.

    python bench/html_report.py [--hours 24] [--cases-per-s 8] [--workers 16] [--bugs 300]
                                [--keep DIR]

Generates a campaign directory of that size in the campaign's own formats: stats.jsonl (one
line per batch of 8 cases, as worker.campaign.Recorder writes it, with the keys of
Stats.snapshot()), batches.jsonl (distributed mode: one line per batch, spread over
--workers pool processes), coverage.json (fuzz.coverage.Coverage's own JSON: op x dtype x
shape cells for every catalogue op, pass x op cells for every Relax pass the variants draw,
primitive x block cells, each with findings), report.json (--bugs bugs with their buckets) and
reduced/
directories for a tenth of the buckets. Then writes the page (tvmfuzz.html_report.write_html)
and opens it in Debian's chromium through Selenium and chromium-driver: "open" is the time to
Bokeh's "document idle" (every plot and table rendered, read from BokehJS's own console line),
also the navigation's load event. Needs chromium and chromium-driver for the browser figures.
"""
import argparse
import json
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.catalogue import CATALOGUE  # noqa: E402
from fuzz.coverage import COVERAGE_FILE, SHAPE_KINDS, Coverage  # noqa: E402
from tvmfuzz.html_report import REPORT_NAME, write_html  # noqa: E402
from worker.campaign import BATCH, Stats  # noqa: E402
from worker.variants import RELAX_PASSES  # noqa: E402

PRIMITIVES = ("split", "fuse", "reorder", "parallel", "vectorize", "unroll", "bind",
              "cache_read", "cache_write", "compute_at", "reverse_compute_at", "compute_inline",
              "reverse_compute_inline", "decompose_reduction", "rfactor", "storage_align",
              "set_scope", "blockize", "tensorize", "annotate", "transform_layout",
              "transform_block_layout", "reindex", "pad_einsum", "loop_partition",
              "add_unit_loop", "reorder_block_iter_var", "fuse_reduction_epilogue")
DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "int16", "int32", "int64",
          "uint8", "bool", "none")
KINDS = ("crash", "signal", "roundtrip", "verifier_build", "wrong_result", "shape_inference",
         "timeout", "oom")
STAGES = ("build", "run", "roundtrip", "schedule", "import", "well_formed", "passes")


def generate(out: Path, hours: float, rate: float, workers: int, n_bugs: int) -> dict:
    rng = random.Random(0)
    keys = set(Stats().snapshot())
    lines = int(hours * 3600 * rate / BATCH)
    t0 = time.time() - hours * 3600
    names = [f"tvmfuzz-{1000 + i // 4}@host{i // 4}/{2000 + i}" for i in range(workers)]
    prims = {p: [0, 0] for p in PRIMITIVES}
    verdicts = {"pass": 0, "fail": 0, "invalid": 0, "rejected": 0}
    kinds: dict = {}
    # bugs found ever more rarely: the saturation curve of a real campaign
    found_at = sorted(rng.paretovariate(0.6) for _ in range(n_bugs))
    found_at = [min(1.0, (x - 1) / 50) for x in found_at]
    ops = sorted(CATALOGUE)
    cov = Coverage()
    crng = random.Random(1)

    def cell(kind, key, most, most_findings):
        cov.counts[kind][key] = crng.randint(1, most)
        found = min(cov.counts[kind][key], crng.randint(0, most_findings))
        if found:
            cov.findings[kind][key] = found

    for op in ops:
        for dt in crng.sample(DTYPES, crng.randint(2, 8)):
            for shape in crng.sample(SHAPE_KINDS, crng.randint(1, 3)):
                cell("op_dtype_shape", f"{op}|{dt}|{shape}", 5000, 20)
    passes = [f"pipeline:{p}" for p in ("default", "target", "zero", "scheduled", "dlight")]
    passes += sorted(RELAX_PASSES)
    for p in passes:
        for op in crng.sample(ops, len(ops) // 2):
            cell("pass_op", f"{p}|{op}", 3000, 10)
    blocks = ["SS", "SSR+init", "SR+init", "SSSR+init+where", "derived", "legalized:T_add",
              "legalized:compute", "legalized:matmul"]
    for p in PRIMITIVES:
        for b in crng.sample(blocks, crng.randint(2, len(blocks))):
            cell("prim_block", f"{p}|{b}", 2000, 10)
    for a in crng.sample(ops, len(ops) // 2):
        for b in crng.sample(ops, 10):
            cov.counts["edge"][f"{a}->{b}"] = crng.randint(1, 2000)
    (out / COVERAGE_FILE).write_text(json.dumps(cov.to_json()))
    totals = cov.totals()
    cases, at = 0, t0
    with (out / "stats.jsonl").open("w") as st, (out / "batches.jsonl").open("w") as ba:
        for i in range(lines):
            at += BATCH / rate * rng.uniform(0.5, 1.5)
            cases += BATCH
            for _ in range(BATCH):
                v = rng.choices(list(verdicts), [80, 8, 5, 7])[0]
                verdicts[v] += 1
                if v == "fail":
                    k = rng.choice(KINDS)
                    kinds[k] = kinds.get(k, 0) + 1
                if rng.random() < 0.2:
                    for p in rng.sample(PRIMITIVES, 3):
                        prims[p][0] += 1
                        prims[p][1] += v == "fail"
            frac = (i + 1) / lines
            bugs = sum(f <= frac for f in found_at)
            snap = {"t": round(at - t0, 1), "at": round(at, 1), "cases": cases,
                    "cases_per_s": round(cases / (at - t0), 2), "verdicts": dict(verdicts),
                    "findings_by_kind": dict(kinds), "unique_signatures": int(bugs * 1.4),
                    "unique_bugs": bugs, "new_bugs": int(bugs * 0.7),
                    "validity": round(1 - verdicts["invalid"] / cases, 4),
                    "refused_mutants": verdicts["invalid"] // 2, "not_exportable": 0,
                    "op_coverage": f"{min(len(CATALOGUE), 40 + i)}/{len(CATALOGUE)}",
                    "coverage": {k: int(n * frac) for k, n in totals.items()},
                    "cases_by_ir": {"relax": cases * 4 // 10, "tir": cases * 35 // 100,
                                    "onnx": cases // 4},
                    "judged_per_s_by_ir": {"relax": 2.1, "tir": 3.4, "onnx": 1.7},
                    "findings_by_ir_stage": {f"relax {k}": n for k, n in kinds.items()},
                    "torch_refused": 0,
                    "schedule_primitives": {p: {"cases": c, "findings": f}
                                            for p, (c, f) in sorted(prims.items())},
                    "gpu_targets": {k: {"cases": cases // 20, "findings": 3}
                                    for k in ("cuda", "opencl", "webgpu")},
                    "dlight_rules": {k: {"cases": cases // 40, "findings": 1}
                                     for k in ("Fallback", "GEMV", "Matmul", "Reduction")}}
            assert set(snap) == keys, set(snap) ^ keys    # the campaign's own line format
            st.write(json.dumps(snap) + "\n")
            ba.write(json.dumps({"id": f"{i * BATCH}+{BATCH}", "first": i * BATCH, "n": BATCH,
                                 "worker": names[i % workers], "attempts": 1,
                                 "seconds": round(rng.uniform(5, 20), 3),
                                 "at": round(at, 1)}) + "\n")
    bug_rows = []
    for b in range(n_bugs):
        first = t0 + found_at[b] * hours * 3600
        buckets = []
        for k in range(rng.randint(1, 4)):
            bucket = f"{rng.getrandbits(48):012x}"
            buckets.append({"signature": f"{rng.choice(KINDS)} | {rng.choice(STAGES)} | "
                                         f"ValueError | synthetic failure {b}.{k} "
                                         + "x" * rng.randint(20, 150), "bucket": bucket})
            if rng.random() < 0.1:
                d = out / "reduced" / bucket
                d.mkdir(parents=True)
                for name in ("case.py", "repro.py", "report.md"):
                    (d / name).write_text("# generated by bench/html_report.py\n")
        count = rng.randint(1, 500)
        bug_rows.append({"id": f"{rng.getrandbits(48):012x}", "key": buckets[0]["signature"],
                         "status": rng.choices(["new", "known", "expected"], [5, 3, 2])[0],
                         "reason": "", "count": count, "signatures": len(buckets),
                         "first_seed": b * 100, "kind": rng.choice(KINDS),
                         "stage": rng.choice(STAGES), "first_at": first,
                         "last_at": rng.uniform(first, time.time()),
                         "reproduced": count * 3 - rng.randint(0, count), "replays": count * 3,
                         "buckets": buckets})
    (out / "report.json").write_text(json.dumps({
        "at": time.time(), "tvm": "0.27.0.post1", "bugs": bug_rows}))
    (out / "campaign.json").write_text(json.dumps({"watermark": cases, "cases": cases}))
    return {"lines": lines, "cases": cases, **cov.totals()}


def open_in_chromium(page: Path) -> dict:
    chromium, driver_bin = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_bin:
        return {}
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1500,1200"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_bin), options=opts)
    try:
        out = []
        for _ in range(3):
            driver.get("about:blank")
            driver.get_log("browser")
            t = time.perf_counter()
            driver.get(page.as_uri())
            idle = None
            while idle is None and time.perf_counter() - t < 60:
                for e in driver.get_log("browser"):
                    m = re.search(r"document idle at (\d+) ms", e["message"])
                    if m:
                        idle = int(m.group(1)) / 1000
                    elif e["level"] == "SEVERE":
                        raise SystemExit(f"console error: {e['message'][:300]}")
                time.sleep(0.05)
            load = driver.execute_script(
                "return performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000
            out.append((idle, load))
        return {"idle": [x[0] for x in out], "load": [x[1] for x in out]}
    finally:
        driver.quit()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--cases-per-s", type=float, default=8.0)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--bugs", type=int, default=300)
    ap.add_argument("--keep", type=Path, default=None, help="generate into this directory")
    a = ap.parse_args()
    out = a.keep or Path(tempfile.mkdtemp(prefix="tvmfuzz-html-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    made = generate(out, a.hours, a.cases_per_s, a.workers, a.bugs)
    gen_s = time.perf_counter() - t
    size = (out / "stats.jsonl").stat().st_size / 1e6
    print(f"campaign: {a.hours:g} h at {a.cases_per_s:g} cases/s = {made['cases']} cases, "
          f"stats.jsonl {made['lines']} lines ({size:.1f} MB), batches.jsonl "
          f"{made['lines']} lines over {a.workers} workers, {a.bugs} bugs, "
          f"{made['op_dtype_shape']} op x dtype x shape, {made['pass_op']} pass x op and "
          f"{made['prim_block']} primitive x block cells "
          f"(generated in {gen_s:.1f} s)")
    times = []
    for _ in range(3):
        t = time.perf_counter()
        page = write_html(out)
        times.append(time.perf_counter() - t)
    print(f"report.html: {page.stat().st_size / 1e6:.2f} MB, written in "
          f"{min(times):.2f} s (best of 3: {', '.join(f'{x:.2f}' for x in times)})")
    got = open_in_chromium(page)
    if got:
        print(f"headless chromium: Bokeh document idle (every plot and table drawn) after "
              f"{', '.join(f'{x:.2f}' for x in got['idle'])} s; load event "
              f"{', '.join(f'{x:.2f}' for x in got['load'])} s (3 loads)")
    else:
        print("no chromium/chromedriver: apt-get install chromium chromium-driver")
    if a.keep is None:
        shutil.rmtree(out)
    else:
        print(f"kept {out / REPORT_NAME}")


if __name__ == "__main__":
    main()

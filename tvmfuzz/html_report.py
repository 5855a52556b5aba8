"""``tvmfuzz report --html DIR``: one self-contained HTML page of a campaign or a corpus.

A reader of files, never a re-runner of cases. A campaign directory gives
``stats.jsonl`` (the time series), ``coverage.json`` (fuzz/coverage.py's cells with the
findings among their cases: the heat maps), ``report.json`` (the bugs and their buckets:
written by the campaign next to report.html), ``summary.json``, ``batches.jsonl``
(distributed mode: which worker ran which batch, when) and ``reduced/<bucket>/`` (the links);
a corpus directory (``corpus.sqlite3``) gives its bugs and buckets.

The plots are Bokeh's (``bokeh.embed.file_html`` with ``INLINE`` resources: BokehJS is
written into the page, so it opens offline); the bug table is Bokeh's ``DataTable``
(sortable by any column). A campaign rewrites the page every 30 s with a
``<meta http-equiv="refresh">`` so an open browser tab follows it; the last write drops it.
"""
from __future__ import annotations

import datetime as _dt
import html
import json
import os
from pathlib import Path
from typing import Optional

from fuzz.coverage import COVERAGE_FILE

REPORT_NAME = "report.html"
REFRESH_S = 30          # the live page reloads itself this often
MAX_POINTS = 1500       # time-series points drawn (a 24-hour stats.jsonl is thinned to this)
TIME_BINS = 48          # columns of the over-time heat maps and worker throughput
MAX_ROWS = 60           # rows of a heat map (the most covered ones)
STATUS_COLORS = {"new": "#d62728", "known": "#1f77b4", "expected": "#7f7f7f"}
WIDTH = 1100


class ReportError(Exception):
    """The directory is neither a campaign nor a corpus (the message says which file)."""


# --- reading ------------------------------------------------------------------------------
def _sample_lines(path: Path, limit: int = MAX_POINTS) -> tuple[list[dict], int]:
    """About ``limit`` evenly spaced lines of a JSON-lines file (the first and the last one
    always), and how many lines it has (estimated from the size where it is long). A long file
    is not read whole: the lines are read at evenly spaced byte offsets, so a 24-hour
    stats.jsonl (hundreds of MB) costs as much as a short one. A torn line is skipped."""
    try:
        size = path.stat().st_size
        f = path.open("rb")
    except OSError:
        return [], 0
    with f:
        if size <= limit * 4096:
            raw = [ln for ln in f.read().splitlines() if ln.strip()]
            n = len(raw)
            if n > limit:
                step = n / limit
                raw = [raw[i] for i in sorted({int(i * step) for i in range(limit)} | {n - 1})]
        else:
            raw, seen = [], set()
            for k in range(limit):
                off = k * size // limit
                f.seek(max(0, off - 1))
                if off:
                    f.readline()            # the rest of the line the offset fell into
                pos = f.tell()
                line = f.readline()
                if pos not in seen and line.endswith(b"\n"):
                    seen.add(pos)
                    raw.append(line)
            f.seek(max(0, size - 65536))
            tail = f.read().splitlines()
            if tail and tail[-1].strip() and (len(tail) > 1 or size <= 65536):
                raw.append(tail[-1])
            n = round(size / (sum(map(len, raw)) / len(raw) + 1)) if raw else 0
    out = []
    for ln in raw:
        try:
            out.append(json.loads(ln))
        except ValueError:
            continue
    return out, n


def _read_json(path: Path, default=None):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return default


def _series(points: list[dict]) -> dict:
    """The stats series with resumed segments joined: a resumed campaign starts its counters
    again at 0, so a later segment's cases go on from the earlier one's last count."""
    xs, cases, rate, validity, bugs, sigs, new = [], [], [], [], [], [], []
    offset, last_cases, last_t, t0 = 0, 0, None, None
    prev = None
    for p in points:
        if last_t is not None and p.get("t", 0) < last_t:
            offset += last_cases
        last_t, last_cases = p.get("t", 0), p.get("cases", 0)
        at = p.get("at")
        if at is None:     # files from before "at": seconds since the campaign started
            t0 = t0 if t0 is not None else _dt.datetime.now().timestamp() - p.get("t", 0)
            at = t0 + p.get("t", 0)
        c = offset + p.get("cases", 0)
        # cases/s between this point and the last one drawn (the cumulative mean hides stalls)
        if prev is not None and at > prev[0]:
            rate.append(max(0.0, (c - prev[1]) / (at - prev[0])))
        else:
            rate.append(p.get("cases_per_s", 0.0))
        prev = (at, c)
        xs.append(at * 1000.0)
        cases.append(c)
        validity.append(100.0 * p.get("validity", 1.0))
        bugs.append(p.get("unique_bugs", 0))
        sigs.append(p.get("unique_signatures", 0))
        new.append(p.get("new_bugs", 0))
    return {"x": xs, "cases": cases, "rate": rate, "validity": validity, "bugs": bugs,
            "signatures": sigs, "new_bugs": new}


def _iso(t: Optional[float]) -> str:
    if not t:
        return ""
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _releases(out: Path, buckets: list, found_on: list) -> str:
    """Where the bug was seen (the TVM it was found on) and, where a reduction bisected it,
    each installed release's verdict (reduced/<bucket>/bisect.json)."""
    parts = {v: "found" for v in found_on if v}
    for b in buckets:
        res = _read_json(out / "reduced" / str(b) / "bisect.json") if b else None
        for r in (res or {}).get("releases", []):
            parts[r.get("tvm") or r.get("version")] = r.get("verdict", "?")
    return ", ".join(f"{k} ({v})" for k, v in sorted(parts.items()))


def _links(out: Optional[Path], buckets: list) -> str:
    """HTML links to each bucket's reduced case, repro.py and report.md (relative to the
    page, which sits in the campaign directory); the best candidate of a reduction cut short
    is partial.case.json."""
    if out is None:
        return ""
    items = []
    for b in buckets:
        d = out / "reduced" / str(b)
        if not b or not d.is_dir():
            continue
        got = [(name, label) for name, label in (
            ("case.py", "case"), ("partial.case.json", "partial case"), ("repro.py", "repro.py"),
            ("report.md", "report.md")) if (d / name).is_file()]
        items += [f'<a href="reduced/{html.escape(str(b))}/{name}">{label}</a>'
                  for name, label in got]
    return " ".join(items)


def _coverage_cells(cov: Optional[dict]) -> Optional[dict]:
    """The heat maps' cells from coverage.json (None where the campaign has none):
    ``op_dtype`` "op|dtype shape" (fuzz/coverage.py's op x dtype x shape cells: the dtype of
    the op's first tensor operand), ``pass_op`` "pass|op", ``prim_block`` "primitive|block",
    each -> [cases, findings among them]."""
    if not isinstance(cov, dict) or not isinstance(cov.get("cells"), dict):
        return None
    cells, findings = cov["cells"], cov.get("findings") or {}

    def table(kind, key=lambda c: c):
        found = findings.get(kind) or {}
        return {key(c): [n, found.get(c, 0)] for c, n in (cells.get(kind) or {}).items()}

    def op_dtype(c):
        op, dtype, shape = (c.split("|") + ["", ""])[:3]
        return f"{op}|{dtype} {shape}".rstrip()

    return {"op_dtype": table("op_dtype_shape", op_dtype), "pass_op": table("pass_op"),
            "prim_block": table("prim_block")}


def campaign_data(out: Path) -> dict:
    """Everything the page draws, from a campaign directory's files."""
    points, n_lines = _sample_lines(out / "stats.jsonl")
    rep = _read_json(out / "report.json", {}) or {}
    summary = _read_json(out / "summary.json", {}) or {}
    state = _read_json(out / "campaign.json", {}) or {}
    last = points[-1] if points else {}
    bugs = rep.get("bugs") or summary.get("bugs") or []
    rows = []
    for g in bugs:
        buckets = [b.get("bucket") for b in g.get("buckets") or []]
        sig = (g.get("buckets") or [{}])[0].get("signature") or g.get("key", "")
        rate = (g["reproduced"] / g["replays"]) if g.get("replays") else None
        rows.append({"id": g["id"], "status": g.get("status", ""), "kind": g.get("kind") or "",
                     "stage": g.get("stage") or "", "signature": sig, "count": g.get("count", 0),
                     "signatures": g.get("signatures", 1),
                     "first_seen": _iso(g.get("first_at")), "last_seen": _iso(g.get("last_at")),
                     "releases": _releases(out, buckets, [rep.get("tvm")]),
                     "rate": rate, "links": _links(out, buckets)})
    workers = _workers(out / "batches.jsonl")
    prims = _primitives_over_time(points)
    return {"title": f"tvmfuzz campaign {out.resolve().name}", "source": str(out.resolve()),
            "series": _series(points), "n_lines": n_lines, "last": last, "state": state,
            "bugs": rows, "coverage": _coverage_cells(_read_json(out / COVERAGE_FILE)),
            "primitives": prims,
            "primitive_totals": last.get("schedule_primitives") or {}, "workers": workers,
            "kind": "campaign"}


def corpus_data(root: Path) -> dict:
    """A corpus's bugs and buckets (no time series: a corpus keeps findings, not runs)."""
    from corpus.store import Corpus, CorpusError

    try:
        store = Corpus(root, create=False)
    except CorpusError as e:
        raise ReportError(str(e))
    try:
        bugs = store.bugs()
        rows = []
        for g in bugs:
            versions = sorted({b["tvm_version"] for b in g["buckets"] if b.get("tvm_version")})
            rows.append({"id": g["id"], "status": g["status"], "kind": g["kind"] or "",
                         "stage": g["buckets"][0].get("stage") or "",
                         "signature": g["signature"], "count": g["count"],
                         "signatures": g["bucket_count"],
                         "first_seen": g["first_seen"].replace("T", " ").rstrip("Z"),
                         "last_seen": g["last_seen"].replace("T", " ").rstrip("Z"),
                         "releases": ", ".join(f"{v} (found)" for v in versions),
                         "rate": g["reproduction_rate"], "links": ""})
        firsts = sorted(b["first_seen"] for g in bugs for b in g["buckets"])
    finally:
        store.close()
    first_bug = sorted(r["first_seen"] for r in rows)

    def ms(iso):
        return _dt.datetime.fromisoformat(iso.replace("Z", "").replace(" ", "T")).replace(
            tzinfo=_dt.timezone.utc).timestamp() * 1000.0
    series = {"x": [ms(t) for t in first_bug], "bugs": list(range(1, len(first_bug) + 1)),
              "bx": [ms(t) for t in firsts], "buckets": list(range(1, len(firsts) + 1))}
    return {"title": f"tvmfuzz corpus {root.resolve().name}", "source": str(root.resolve()),
            "series": series, "bugs": rows, "kind": "corpus", "last": {}, "state": {},
            "n_lines": 0, "workers": {}}


def _primitives_over_time(points: list[dict]) -> dict:
    """Schedule primitive -> cases it was applied in per time bin (from the cumulative
    counts in stats.jsonl), and the bins' start times."""
    pts = [p for p in points if p.get("at")]
    if len(pts) < 2:
        return {"bins": [], "cells": {}}
    t0, t1 = pts[0]["at"], pts[-1]["at"]
    width = max((t1 - t0) / TIME_BINS, 1e-6)
    cells: dict = {}
    prev: dict = {}
    for p in pts:
        b = min(int((p["at"] - t0) / width), TIME_BINS - 1)
        cur = {k: v.get("cases", 0) for k, v in (p.get("schedule_primitives") or {}).items()}
        if any(cur.get(k, 0) < prev.get(k, 0) for k in prev):
            prev = {}            # a resumed segment starts its counts again
        for k, v in cur.items():
            d = v - prev.get(k, 0)
            if d > 0:
                cells[(k, b)] = cells.get((k, b), 0) + d
        prev = cur
    return {"bins": [(t0 + i * width) * 1000.0 for i in range(TIME_BINS)], "width": width * 1000,
            "cells": cells}


def _workers(path: Path) -> dict:
    """Distributed mode: per worker, batches, cases, seconds per batch, first and last reply,
    and cases per time bin (batches.jsonl; every line is read: one per batch)."""
    try:
        lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    except OSError:
        return {}
    try:      # one parse of the whole file (fast); line by line where a line is torn
        recs = json.loads("[" + ",".join(lines) + "]")
    except ValueError:
        recs = []
        for ln in lines:
            try:
                recs.append(json.loads(ln))
            except ValueError:
                continue
    recs = [r for r in recs if isinstance(r, dict) and r.get("at") is not None]
    if not recs:
        return {}
    t0, t1 = min(r["at"] for r in recs), max(r["at"] for r in recs)
    width = max((t1 - t0) / TIME_BINS, 1.0)
    per: dict = {}
    for r in recs:
        name = str(r.get("worker") or "?")
        w = per.setdefault(name, {"batches": 0, "cases": 0, "seconds": 0.0, "first": r["at"],
                                  "last": r["at"], "bins": [0] * TIME_BINS})
        w["batches"] += 1
        w["cases"] += r.get("n", 0)
        w["seconds"] += float(r.get("seconds") or 0.0)
        w["first"], w["last"] = min(w["first"], r["at"]), max(w["last"], r["at"])
        w["bins"][min(int((r["at"] - t0) / width), TIME_BINS - 1)] += r.get("n", 0)
    return {"workers": per, "t0": t0, "t1": t1, "width": width}


# --- drawing ------------------------------------------------------------------------------
def _fig(title: str, **kw):
    from bokeh.plotting import figure

    kw.setdefault("width", WIDTH // 2 - 10)
    kw.setdefault("height", 280)
    kw.setdefault("tools", "pan,wheel_zoom,box_zoom,reset,save,hover")
    return figure(title=title, **kw)


def _time_plots(d: dict) -> list:
    from bokeh.models import ColumnDataSource

    s = d["series"]
    src = ColumnDataSource({k: s[k] for k in ("x", "cases", "rate", "validity", "bugs",
                                              "signatures", "new_bugs")})
    speed = _fig("cases/s over time (between points drawn)", x_axis_type="datetime",
                 tooltips=[("cases/s", "@rate{0.00}"), ("cases", "@cases")])
    speed.line("x", "rate", source=src, line_width=2)
    speed.y_range.start = 0
    speed.yaxis.axis_label = "cases/s"
    valid = _fig("validity over time (share of cases not invalid)", x_axis_type="datetime",
                 x_range=speed.x_range, tooltips=[("validity %", "@validity{0.0}")])
    valid.line("x", "validity", source=src, color="#2ca02c", line_width=2)
    valid.y_range.start, valid.y_range.end = 0, 101
    valid.yaxis.axis_label = "validity %"
    sat = _fig("new bugs over time (saturation)", x_axis_type="datetime", x_range=speed.x_range,
               tooltips=[("bugs", "@bugs"), ("signatures", "@signatures"),
                         ("new bugs", "@new_bugs"), ("cases", "@cases")])
    sat.step("x", "bugs", source=src, legend_label="bugs (root causes)", line_width=2,
             mode="after")
    sat.step("x", "signatures", source=src, legend_label="distinct signatures", color="#ff7f0e",
             mode="after")
    sat.step("x", "new_bugs", source=src, legend_label="new bugs", color="#d62728",
             mode="after")
    sat.legend.location = "top_left"
    sat.y_range.start = 0
    per_case = _fig("bugs against cases run", tooltips=[("cases", "@cases"), ("bugs", "@bugs")])
    per_case.step("cases", "bugs", source=src, line_width=2, mode="after")
    per_case.xaxis.axis_label = "cases"
    per_case.yaxis.axis_label = "bugs"
    per_case.y_range.start = 0
    return [speed, valid, sat, per_case]


def _corpus_time(d: dict) -> list:
    from bokeh.models import ColumnDataSource

    s = d["series"]
    fig = _fig("bugs and buckets by first seen (saturation)", x_axis_type="datetime",
               width=WIDTH - 20)
    fig.step("bx", "buckets", source=ColumnDataSource({"bx": s["bx"], "buckets": s["buckets"]}),
             legend_label="buckets", color="#ff7f0e", mode="after")
    fig.step("x", "bugs", source=ColumnDataSource({"x": s["x"], "bugs": s["bugs"]}),
             legend_label="bugs", line_width=2, mode="after")
    fig.legend.location = "top_left"
    return [fig]


def _bar(title: str, counts: dict, color="#1f77b4", by_status: Optional[dict] = None,
         order: Optional[list] = None):
    """Bugs per category (the most first, or ``order``), stacked by status where
    ``by_status`` (category -> status -> n)."""
    from bokeh.models import ColumnDataSource

    cats = order or sorted(counts, key=lambda k: -counts[k]) or ["(none)"]
    fig = _fig(title, x_range=cats, tooltips=[("", "@x"), ("bugs", "@$name")])
    if by_status:
        statuses = [s for s in STATUS_COLORS if any(by_status[c].get(s) for c in by_status)]
        data = {"x": cats, **{s: [by_status.get(c, {}).get(s, 0) for c in cats]
                              for s in statuses}}
        if statuses:
            fig.vbar_stack(statuses, x="x", width=0.8, source=ColumnDataSource(data),
                           color=[STATUS_COLORS[s] for s in statuses], legend_label=statuses)
    else:
        fig.vbar(x="x", top="n", width=0.8, color=color, name="n",
                 source=ColumnDataSource({"x": cats, "n": [counts.get(c, 0) for c in cats]}))
    fig.xaxis.major_label_orientation = 0.8
    fig.y_range.start = 0
    return fig


def _bug_plots(d: dict) -> list:
    from bokeh.models import ColumnDataSource

    rows = d["bugs"]
    figs = []
    for field in ("kind", "stage"):
        counts: dict = {}
        by: dict = {}
        for r in rows:
            k = r[field] or "?"
            counts[k] = counts.get(k, 0) + 1
            by.setdefault(k, {}).setdefault(r["status"], 0)
            by[k][r["status"]] += 1
        figs.append(_bar(f"bugs by {field} (stacked by status)", counts, by_status=by))
    status = {s: sum(r["status"] == s for r in rows) for s in STATUS_COLORS}
    fig = _fig("bugs by status", x_range=list(STATUS_COLORS), tooltips=[("bugs", "@n")])
    fig.vbar(x="x", top="n", width=0.7, color="c", source=ColumnDataSource(
        {"x": list(status), "n": list(status.values()), "c": list(STATUS_COLORS.values())}))
    fig.y_range.start = 0
    figs.append(fig)
    # reproduction rates: bugs per 10% bin, stacked by status (a bar per bug would not stay
    # readable with hundreds of bugs; the table has each bug's rate)
    bins = [f"{10 * i}-{10 * i + 10}%" for i in range(10)]
    by_bin = {b: {} for b in bins}
    for r in rows:
        if r["rate"] is not None:
            b = bins[min(int(r["rate"] * 10), 9)]
            by_bin[b][r["status"]] = by_bin[b].get(r["status"], 0) + 1
    rep = _bar("reproduction rate (bugs per rate, stacked by status)",
               {b: sum(by_bin[b].values()) for b in bins}, by_status=by_bin, order=bins)
    figs.append(rep)
    return figs


def _heatmap(title: str, cells: dict, xname: str, yname: str, swap: bool = False):
    """cells: "row|column" -> [cases, findings] ("column|row" with ``swap``); the MAX_ROWS
    rows with the most cases."""
    from bokeh.models import ColorBar, ColumnDataSource, LogColorMapper

    split = [(k.split("|", 1), v) for k, v in cells.items() if "|" in k]
    if swap:
        split = [((b, a), v) for (a, b), v in split]
    rows: dict = {}
    for (a, b), v in split:
        rows[a] = rows.get(a, 0) + v[0]
    keep = sorted(rows, key=lambda a: -rows[a])[:MAX_ROWS]
    keep_set = set(keep)
    data = [(a, b, v) for (a, b), v in split if a in keep_set]
    xs = sorted({b for _, b, _ in data}) or ["(none)"]
    ys = list(reversed(keep)) or ["(none)"]
    fig = _fig(f"{title} ({len(split)} cells)", x_range=xs, y_range=ys, width=WIDTH - 20,
               height=max(260, 14 * len(ys) + 120),
               tooltips=[(yname, "@y"), (xname, "@x"), ("cases", "@cases"),
                         ("findings", "@findings")])
    if data:
        mapper = LogColorMapper(palette="Viridis256", low=1,
                                high=max(2, max(v[0] for *_, v in data)))
        fig.rect(x="x", y="y", width=1, height=1, source=ColumnDataSource({
            "x": [b for _, b, _ in data], "y": [a for a, _, _ in data],
            "cases": [v[0] for *_, v in data], "findings": [v[1] for *_, v in data]}),
            fill_color={"field": "cases", "transform": mapper}, line_color=None)
        fig.add_layout(ColorBar(color_mapper=mapper, title="cases"), "right")
    fig.xaxis.major_label_orientation = 1.0
    fig.grid.grid_line_color = None
    return fig


def _primitive_plots(d: dict) -> list:
    from bokeh.models import ColorBar, ColumnDataSource, LinearColorMapper

    totals = d.get("primitive_totals") or {}
    if not totals:
        return []
    names = sorted(totals, key=lambda k: totals[k].get("cases", 0))
    bar = _fig("schedule primitives: cases applied in, findings among them",
               y_range=names, height=max(260, 16 * len(names) + 80),
               tooltips=[("primitive", "@y"), ("cases", "@cases"), ("findings", "@findings")])
    src = ColumnDataSource({"y": names, "cases": [totals[n].get("cases", 0) for n in names],
                            "findings": [totals[n].get("findings", 0) for n in names]})
    bar.hbar(y="y", right="cases", height=0.8, source=src, legend_label="cases")
    bar.hbar(y="y", right="findings", height=0.4, source=src, color="#d62728",
             legend_label="findings")
    bar.legend.location = "bottom_right"
    bar.x_range.start = 0
    figs = [bar]
    p = d.get("primitives") or {}
    if p.get("cells"):
        cells = p["cells"]
        heat = _fig("schedule primitives over time (cases per time bin)", x_axis_type="datetime",
                    y_range=names, height=max(260, 16 * len(names) + 80),
                    tooltips=[("primitive", "@y"), ("cases", "@n")])
        mapper = LinearColorMapper(palette="Viridis256", low=0, high=max(cells.values()))
        heat.rect(x="x", y="y", width=p["width"], height=1, line_color=None,
                  fill_color={"field": "n", "transform": mapper},
                  source=ColumnDataSource({
                      "x": [p["bins"][b] + p["width"] / 2 for (_, b) in cells],
                      "y": [k for (k, _) in cells], "n": list(cells.values())}))
        heat.add_layout(ColorBar(color_mapper=mapper), "right")
        figs.append(heat)
    return figs


def _worker_plots(d: dict) -> list:
    from bokeh.models import ColumnDataSource, DataTable, NumberFormatter, TableColumn
    from bokeh.palettes import Category10_10

    w = d.get("workers") or {}
    if not w:
        return []
    per = w["workers"]
    names = sorted(per)
    fig = _fig("cases per worker over time", x_axis_type="datetime", width=WIDTH - 20,
               tooltips=[("worker", "@worker"), ("cases per bin", "$y{0}")])
    xs = [(w["t0"] + (i + 0.5) * w["width"]) * 1000.0 for i in range(TIME_BINS)]
    # one renderer for all workers (a line each): a hundred workers stay one model
    fig.multi_line(xs="xs", ys="ys", color="color", line_width=2, source=ColumnDataSource({
        "xs": [xs] * len(names), "ys": [per[n]["bins"] for n in names], "worker": names,
        "color": [Category10_10[i % 10] for i in range(len(names))]}))
    fig.y_range.start = 0
    idle_after = 3 * max(w["width"], 60.0)
    src = ColumnDataSource({
        "worker": names, "batches": [per[n]["batches"] for n in names],
        "cases": [per[n]["cases"] for n in names],
        "cases_per_s": [per[n]["cases"] / per[n]["seconds"] if per[n]["seconds"] else 0.0
                        for n in names],
        "s_per_batch": [per[n]["seconds"] / per[n]["batches"] for n in names],
        "last": [_iso(per[n]["last"]) for n in names],
        "state": ["active" if w["t1"] - per[n]["last"] <= idle_after else "silent"
                  for n in names]})
    table = DataTable(source=src, width=WIDTH - 20, height=min(400, 30 + 26 * len(names)),
                      reorderable=False, name="worker_table",
                      index_position=None, columns=[
                          TableColumn(field="worker", title="worker", width=260),
                          TableColumn(field="state", title="state"),
                          TableColumn(field="batches", title="batches"),
                          TableColumn(field="cases", title="cases"),
                          TableColumn(field="cases_per_s", title="cases/s (busy)",
                                      formatter=NumberFormatter(format="0.00")),
                          TableColumn(field="s_per_batch", title="s/batch",
                                      formatter=NumberFormatter(format="0.0")),
                          TableColumn(field="last", title="last reply (UTC)", width=160)])
    return [fig, table]


def _bug_table(d: dict):
    from bokeh.models import (ColumnDataSource, DataTable, HTMLTemplateFormatter,
                              NumberFormatter, TableColumn)

    rows = d["bugs"]
    keys = ("id", "status", "kind", "stage", "signature", "count", "signatures", "first_seen",
            "last_seen", "releases", "rate", "links")
    src = ColumnDataSource({k: [r[k] if r[k] is not None else float("nan") for r in rows]
                            if k == "rate" else [r[k] for r in rows] for k in keys})
    raw = HTMLTemplateFormatter(template="<%= value %>")
    cols = [TableColumn(field="id", title="bug", width=100),
            TableColumn(field="status", title="status", width=70),
            TableColumn(field="kind", title="kind", width=100),
            TableColumn(field="stage", title="stage", width=90),
            TableColumn(field="signature", title="signature", width=420),
            TableColumn(field="count", title="count", width=60),
            TableColumn(field="signatures", title="buckets", width=60),
            TableColumn(field="first_seen", title="first seen (UTC)", width=140),
            TableColumn(field="last_seen", title="last seen (UTC)", width=140),
            TableColumn(field="releases", title="affected releases", width=180),
            TableColumn(field="rate", title="repro rate", width=70,
                        formatter=NumberFormatter(format="0%", nan_format="-")),
            TableColumn(field="links", title="reduced", width=260, formatter=raw,
                        sortable=False)]
    return DataTable(source=src, columns=cols, width=WIDTH + 300, sortable=True,
                     reorderable=False, height=min(600, 40 + 28 * max(1, len(rows))),
                     index_position=None, name="bug_table")


def _header(d: dict, live: bool) -> str:
    last, state = d.get("last") or {}, d.get("state") or {}
    facts = []
    if d["kind"] == "campaign":
        v = last.get("verdicts") or {}
        facts += [("cases", f"{state.get('cases', last.get('cases', 0))}"),
                  ("cases/s", f"{last.get('cases_per_s', 0)}"),
                  ("validity", f"{100 * last.get('validity', 1.0):.1f}%"),
                  ("verdicts", ", ".join(f"{k} {n}" for k, n in sorted(v.items()))),
                  ("op coverage", str(last.get("op_coverage", ""))),
                  ("stats lines", str(d.get("n_lines", 0)))]
    counts = {s: sum(r["status"] == s for r in d["bugs"]) for s in STATUS_COLORS}
    facts.append(("bugs", f"{len(d['bugs'])} (" + ", ".join(
        f"{n} {s}" for s, n in counts.items()) + ")"))
    facts.append(("written", _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S "
                                                                         "UTC")))
    when = (f"live: reloads every {REFRESH_S} s while the campaign runs" if live
            else "final (the campaign is not running, or this is a snapshot)")
    return (f"<h1>{html.escape(d['title'])}</h1><p>{html.escape(d['source'])} &mdash; {when}"
            "</p><table class='facts'>" + "".join(
                f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                for k, v in facts) + "</table>")


def render(d: dict, live: bool = False) -> str:
    """The page's HTML text."""
    from bokeh.core.validation import silence
    from bokeh.core.validation.warnings import MISSING_RENDERERS
    from bokeh.embed import file_html
    from bokeh.layouts import column, gridplot
    from bokeh.models import Div
    from bokeh.resources import INLINE

    silence(MISSING_RENDERERS, True)   # an empty plot (no bugs yet, no schedules) is fine

    def h2(text):
        return Div(text=f"<h2>{html.escape(text)}</h2>", width=WIDTH)

    parts = [Div(text=_header(d, live), width=WIDTH)]
    if d["kind"] == "campaign":
        parts += [h2("Speed, validity, saturation"),
                  gridplot(_time_plots(d), ncols=2, toolbar_location="right")]
    else:
        parts += [h2("Saturation"), *_corpus_time(d)]
    parts += [h2("Bugs by kind, stage, status; reproduction rates"),
              gridplot(_bug_plots(d), ncols=2, toolbar_location="right")]
    if d["kind"] == "campaign":
        cov = d.get("coverage")
        parts += [h2("Coverage")]
        if cov is None:
            parts += [Div(text=f"<p>No {COVERAGE_FILE} in this campaign directory: its "
                          "coverage cells were not recorded, so there are no heat maps.</p>",
                          width=WIDTH)]
        else:
            parts += [_heatmap("op x dtype (Relax and ONNX cases; the dtype of the op's first "
                               "tensor operand, and the shape kind)", cov["op_dtype"],
                               "dtype shape", "op"),
                      _heatmap("pass x op (each case's pass order, or its pipeline)",
                               cov["pass_op"], "pass", "op", swap=True)]
        prims = _primitive_plots(d)
        if prims:
            parts += [h2("Schedule primitives"), gridplot(prims, ncols=2)]
        if cov is not None and cov["prim_block"]:
            if not prims:
                parts += [h2("Schedule primitives")]
            parts += [_heatmap("primitive x block (a TIR block's iteration kinds, or the "
                               "legalized block's name)", cov["prim_block"], "block",
                               "primitive")]
        workers = _worker_plots(d)
        if workers:
            parts += [h2("Workers (distributed mode)"), *workers]
    parts += [h2(f"Bugs ({len(d['bugs'])}): click a column to sort"), _bug_table(d)]
    page = file_html(column(*parts), resources=INLINE, title=d["title"])
    head = "<style>table.facts th{text-align:left;padding-right:1em}</style>"
    if live:
        head += f'<meta http-equiv="refresh" content="{REFRESH_S}">'
    return page.replace("<head>", "<head>" + head, 1)


def load(path: Path) -> dict:
    """The data of a campaign directory or a corpus; ReportError for anything else."""
    path = Path(path)
    if not path.is_dir():
        raise ReportError(f"{path} is not a directory (a campaign's --out or a corpus)")
    from corpus.store import DB_NAME

    if (path / "stats.jsonl").is_file() or (path / "campaign.json").is_file():
        return campaign_data(path)
    if (path / DB_NAME).is_file():
        return corpus_data(path)
    raise ReportError(f"{path} is neither a campaign directory (no stats.jsonl or "
                      f"campaign.json) nor a corpus (no {DB_NAME})")


def write_html(src: Path, dest: Optional[Path] = None, live: bool = False) -> Path:
    """Write the page of ``src`` to ``dest`` (default src/report.html) atomically: a browser
    reloading it never reads half a file."""
    text = render(load(src), live=live)
    dest = Path(dest) if dest is not None else Path(src) / REPORT_NAME
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, dest)
    return dest


def write_campaign_html(out_dir: Path, live: bool) -> None:
    """The campaign's hook (worker.campaign.CampaignConfig.html)."""
    write_html(out_dir, live=live)

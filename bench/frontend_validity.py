"""What bench/onnx_validity.py and bench/torch_validity.py share: the export share of a list
of programs, judging cases in batches, the tally by outcome kind and by signature, and the
Relax cases of the same seeds judged the same way for the throughput figure."""
import collections
import time

from fuzz.generate import generate

RAN = ("pass", "numeric", "roundtrip")   # built and ran (a wrong result still ran)


def share(progs, exportable) -> float:
    """The share of ``progs`` that ``exportable(p)`` (None: exports) accepts."""
    ok = 0
    for p in progs:
        try:
            ok += exportable(p) is None
        except Exception:  # noqa: BLE001 - an exporter defect counts as not exported
            pass
    return ok / len(progs)


def judge(runner, progs, batch):
    outs, t0 = [], time.time()
    for i in range(0, len(progs), batch):
        outs += runner.run_many(progs[i:i + batch])
    return outs, time.time() - t0


def tally(cases, outs):
    """(outcome kinds with "pass" for passes, {(verdict, signature): seeds} of the rest)."""
    kinds = collections.Counter("pass" if o.verdict == "pass" else o.kind for o in outs)
    sigs = collections.defaultdict(list)
    for p, o in zip(cases, outs):
        if o.verdict != "pass":
            sigs[(o.verdict, o.signature)].append(p.meta["seed"])
    return kinds, sigs


def print_outcomes(kinds, sigs) -> None:
    print("outcomes:", dict(kinds))
    print("non-pass outcomes by signature (count, verdict, signature, seeds):")
    for (verdict, sig), ss in sorted(sigs.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(ss):4d}  {verdict:8s} {sig[:200]}  {ss[:4]}")


def relax_throughput(runner, seeds, batch, secs, label) -> None:
    """Relax cases of the same seeds, judged the same way; closes ``runner``."""
    relax = [generate(s, "valid") for s in seeds]
    for p in relax:
        p.meta["variants"] = None
    routs, rsecs = judge(runner, relax, batch)
    runner.close()
    n = len(relax)
    rpass = sum(o.verdict == "pass" for o in routs)
    print(f"{n} Relax cases (same seeds) in {rsecs:.1f}s = {n / rsecs:.2f} cases/s "
          f"(pass {rpass}); {label}/Relax throughput {rsecs / secs:.2f}x")

"""Load test of the distributed coordinator: many fake workers that answer every batch at once
with canned outcomes, so the coordinator, Redis and the corpus writes are the bottleneck.

    python bench/coordinator_load.py [--procs 4] [--threads 50] [--time 30] [--batch 8]
                                     [--fail-every 8]

Starts its own redis-server and ``procs`` Celery worker processes (thread pool, ``threads``
each: 200 fake workers by default) whose task pushes a canned reply: every ``fail_every``-th
case fails with one of 40 signatures (1 in 8 is about a real campaign's rate), so findings go
to findings/ and the corpus as in a real campaign. Prints:
  * Redis PING round trip, and a task's round trip (send_task -> fake worker -> reply list ->
    coordinator) on an idle system;
  * batches/s and cases/s the coordinator sustains, the CPU it used (near 100% of one core:
    it is the bottleneck), and its time per batch split into generation, submission, reading
    replies and recording (findings files, corpus, campaign.json, stats line);
  * corpus writes/s (Corpus.add_finding) and Redis commands per batch.
Everything shares this machine's cores with the fake workers: the figures are lower bounds.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

N_SIGNATURES = 40


# --- the fake worker ----------------------------------------------------------------------
def fake_batch(self, batch: dict) -> None:
    from worker.celery_app import _push

    fail_every = int(os.environ.get("FAKE_FAIL_EVERY", "8"))
    outcomes, scripts = [], []
    for case in batch["cases"]:
        seed = case["meta"].get("seed") or 0
        if fail_every and seed % fail_every == 0:
            k = seed % N_SIGNATURES
            o = {"verdict": "fail", "kind": "crash", "stage": "build",
                 "error_type": "InternalError", "message": f"fake failure {k}",
                 "throw_site": f"src/fake.cc:{k}", "detail": "", "seconds": 0.0,
                 "target": "llvm", "extra": {},
                 "signature": f"crash | build | InternalError | fake failure {k} @ src/fake.cc"}
            outcomes.append(o)
            scripts.append({"script": "# fake TVMScript\n" * 40})
        else:
            outcomes.append({"verdict": "pass", "kind": "", "stage": "", "target": "llvm",
                             "seconds": 0.0, "extra": {}})
    _push(batch["reply_to"], {"id": batch["id"], "digest": batch["digest"],
                              "task": self.request.id, "worker": self.request.hostname,
                              "outcomes": outcomes, "scripts": scripts, "seconds": 0.0,
                              "tvm": "fake"})


def fake_worker(url: str, threads: int) -> None:
    from worker.celery_app import make_app

    app = make_app(url, task=fake_batch)
    app.worker_main(["worker", "--pool=threads", f"--concurrency={threads}",
                     "--loglevel=WARNING", f"--hostname=fake-{os.getpid()}@%h",
                     "--without-gossip", "--without-mingle"])


# --- measuring ----------------------------------------------------------------------------
class Timer:
    """Wraps ``obj.name`` and sums the time spent in it."""

    def __init__(self, obj, name):
        self.obj, self.name, self.fn = obj, name, getattr(obj, name)
        self.n, self.s = 0, 0.0

        def wrapped(*a, **k):
            t = time.perf_counter()
            try:
                return self.fn(*a, **k)
            finally:
                self.s += time.perf_counter() - t
                self.n += 1
        setattr(obj, name, wrapped)

    def ms_per(self, per: int) -> float:
        return 1000 * self.s / per if per else 0.0


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def round_trips(url: str, n: int = 200):
    """Redis PING, and one batch through send_task -> fake worker -> reply, one at a time."""
    import redis

    from worker.distributed import RedisBroker

    r = redis.Redis.from_url(url)
    ping = []
    for _ in range(n):
        t = time.perf_counter()
        r.ping()
        ping.append(time.perf_counter() - t)
    b = RedisBroker(url)
    case = {"meta": {"seed": 1}}
    task = []
    for i in range(n):
        t = time.perf_counter()
        b.submit(f"rt{i}", "d", [case] * 8, 60, 1, (600, 630), 600)
        while not b.replies(5):
            pass
        task.append(time.perf_counter() - t)
    b.close()
    return ping, task


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=4, help="fake worker processes")
    ap.add_argument("--threads", type=int, default=50, help="fake workers per process")
    ap.add_argument("--time", type=float, default=30.0, help="load phase, seconds")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--fail-every", type=int, default=8)
    ap.add_argument("--in-flight", type=int, default=0, help="default: one per fake worker")
    ap.add_argument("--fake-worker", metavar="URL", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.fake_worker:
        return fake_worker(a.fake_worker, a.threads)

    import subprocess

    import redis

    import corpus.store
    import worker.campaign
    import worker.distributed as dist
    from scale import start_redis, stop

    tmp = Path(tempfile.mkdtemp(prefix="tvmfuzz-load-"))
    redis_proc, url = start_redis(tmp)
    env = dict(os.environ, FAKE_FAIL_EVERY=str(a.fail_every))
    fakes = [subprocess.Popen([sys.executable, __file__, "--fake-worker", url, "--threads",
                               str(a.threads)], cwd=ROOT, env=env, start_new_session=True,
                              stdout=(tmp / f"fake{i}.log").open("w"), stderr=subprocess.STDOUT)
             for i in range(a.procs)]
    try:
        r = redis.Redis.from_url(url)
        deadline = time.monotonic() + 60
        while len(r.keys("_kombu.binding.tvmfuzz")) == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(3)   # every fake process has bound its consumer
        ping, task = round_trips(url)
        print(f"redis PING round trip: p50 {1000 * pct(ping, .5):.2f} ms, "
              f"p99 {1000 * pct(ping, .99):.2f} ms")
        print(f"batch round trip (send_task -> fake worker -> reply), idle: "
              f"p50 {1000 * pct(task, .5):.1f} ms, p99 {1000 * pct(task, .99):.1f} ms")

        timers = {
            "generate": Timer(dist, "make_case"),
            "submit": Timer(dist.RedisBroker, "submit"),
            "read replies": Timer(dist.RedisBroker, "replies"),
            "record": Timer(worker.campaign.Recorder, "record"),
        }
        adds = Timer(corpus.store.Corpus, "add_finding")
        cmds0 = r.info("stats")["total_commands_processed"]
        out = tmp / "run"
        fakes_n = a.procs * a.threads
        in_flight = a.in_flight or fakes_n
        t, cpu = time.perf_counter(), time.process_time()
        s = dist.run_distributed(a.time, out, url, seed=0, replays=1, live=False,
                                 corpus=tmp / "corpus", echo=lambda _: None, batch=a.batch,
                                 in_flight=in_flight)
        wall, cpu = time.perf_counter() - t, time.process_time() - cpu
        cmds = r.info("stats")["total_commands_processed"] - cmds0
        batches = s["distributed"]["batches"]
        print(f"load: {fakes_n} fake workers ({a.procs} processes x {a.threads} threads), "
              f"batch {a.batch}, in flight {in_flight}, {wall:.1f}s; coordinator CPU "
              f"{100 * cpu / wall:.0f}% of one core; load average {os.getloadavg()[0]:.1f}")
        print(f"coordinator sustained {batches / wall:.1f} batches/s = "
              f"{s['cases'] / wall:.0f} cases/s ({s['cases']} cases, "
              f"{s['verdicts'].get('fail', 0)} findings, "
              f"{s['distributed']['duplicates']} duplicates dropped)")
        split = ", ".join(f"{k} {v.ms_per(batches):.2f}" for k, v in timers.items())
        print(f"coordinator time per batch (ms): {split}")
        print(f"corpus writes: {adds.n} add_finding in {adds.s:.1f}s = "
              f"{adds.n / adds.s if adds.s else 0:.0f}/s when writing "
              f"({adds.n / wall:.0f}/s sustained; {1000 * adds.s / max(adds.n, 1):.2f} ms each)")
        print(f"redis: {cmds} commands, {cmds / max(batches, 1):.1f} per batch, "
              f"{cmds / wall:.0f}/s; used memory {r.info('memory')['used_memory_human']}")
        summary = {"ping_ms_p50": 1000 * pct(ping, .5),
                   "task_rtt_ms_p50": 1000 * pct(task, .5),
                   "task_rtt_ms_p99": 1000 * pct(task, .99),
                   "batches_per_s": batches / wall, "cases_per_s": s["cases"] / wall,
                   "coordinator_cpu": cpu / wall,
                   "ms_per_batch": {k: v.ms_per(batches) for k, v in timers.items()},
                   "corpus_adds_per_s_writing": adds.n / adds.s if adds.s else 0,
                   "redis_cmds_per_batch": cmds / max(batches, 1),
                   "mean_redis_rtt_ms": 1000 * statistics.mean(ping)}
        print(json.dumps(summary))
    finally:
        stop(fakes)
        redis_proc.terminate()
        redis_proc.wait()


if __name__ == "__main__":
    main()

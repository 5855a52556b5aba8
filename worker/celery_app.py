"""Distributed mode, worker side: the Celery app and its one task, ``run_batch``.

A task is a batch of cases as program-model JSON (data, never code). The task runs them in a
sandbox exactly as a local campaign's worker thread does (run, replay failures, print the
TVMScript of failing and invalid cases) and pushes one JSON reply onto the campaign's reply
list in Redis. Replies bypass Celery's result backend: one list per campaign is one round
trip for many results, outlives a killed coordinator (``--resume`` reads it), and leaves no
key per task behind.

Why these settings (docs/ARCHITECTURE.md, "Distributed mode", and the field notes):
  * JSON only, never pickle: a worker must not execute what the broker hands it.
  * acks_late + reject_on_worker_lost: a batch is acknowledged when it is done, so a worker
    killed mid-batch leaves it in Redis's unacked set, and Redis hands it to another worker
    once ``visibility_timeout`` has passed. That timeout must exceed the longest task, or a
    slow batch is re-delivered while it still runs (harmless, replies are deduplicated, but
    wasted work).
  * prefetch 1: a long batch must not sit reserved behind another one on a busy worker.
  * TVM only in the sandbox (worker/sandbox.py): a segfault kills a forked child, never the
    pool process, so acks_late never meets a crash it cannot survive. The Celery parent does
    not even import TVM; each pool process starts its own fork server on its first batch.
  * Time limits travel with each task (the coordinator knows the case timeout and batch
    size); the soft limit fires in Python, where the pool process only waits on pipes.
"""
from __future__ import annotations

import json
import os
import sys
import time

from celery import Celery, signals
from celery.utils.log import get_task_logger

TASK = "tvmfuzz.run_batch"
QUEUE = "tvmfuzz"
REPLY_PREFIX = "tvmfuzz:replies:"
REPLY_TTL_S = 86400          # a list nobody reads any more (coordinator gone) expires
DEFAULT_BROKER = "redis://localhost:6379/0"
DEFAULT_VISIBILITY_S = 3600  # above the default hard limit (see time_limits)
PUSH_RETRY_S = 300.0         # how long a finished batch waits for Redis to come back

log = get_task_logger(__name__)
_WORKER = {"python": None, "broker": DEFAULT_BROKER}   # set by make_app; the pool inherits it
_runner = None               # this pool process's SandboxRunner (one fork server each)
_replies = None              # this process's Redis client for replies


def time_limits(case_timeout: float, batch: int, replays: int) -> tuple[int, int]:
    """(soft, hard) seconds for one batch: each case may take its run, a re-run alone after
    a batch failure, its replays and its printing, each up to ``case_timeout``."""
    hard = int(case_timeout * batch * (replays + 2) + 60)
    return hard - 30, hard


def make_app(broker: str = DEFAULT_BROKER, visibility_timeout: float = DEFAULT_VISIBILITY_S,
             max_tasks_per_child: int = 200, max_memory_per_child_kb: int = 1_000_000,
             tvm_python: str | None = None, task=None, jail=None) -> Celery:
    """The app for workers and coordinator alike. ``task``: the function behind TASK
    (``run_batch``; bench/coordinator_load.py passes a fake that answers at once)."""
    app = Celery("tvmfuzz", broker=broker, set_as_current=False)
    vt = float(visibility_timeout)
    if _needs_tls_default(broker):
        # kombu takes a bare rediss:// URL as TLS *without* certificate checks; verify the
        # server as the redis client (the replies) does. ?ssl_cert_reqs=... in the URL rules.
        import ssl

        app.conf.broker_use_ssl = {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    app.conf.update(
        task_serializer="json", accept_content=["json"],
        result_serializer="json", result_accept_content=["json"],
        task_ignore_result=True, result_backend=None,       # replies go to a list (above)
        task_acks_late=True, task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue=QUEUE,
        broker_transport_options={
            "visibility_timeout": vt,
            # kombu sweeps for expired unacked messages every interval x throttle s (100 s by
            # default): keep the sweep well inside the timeout so a lost batch comes back soon.
            "unacked_restore_interval": max(1.0, min(10.0, vt / 10)),
            "unacked_restore_throttle": 1,
        },
        # The pool process itself stays small (TVM lives in the sandbox, which has its own
        # RLIMIT_AS); these recycle it, and its fork server, against slow leaks.
        worker_max_tasks_per_child=max_tasks_per_child,
        worker_max_memory_per_child=max_memory_per_child_kb,
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,                 # wait out a Redis restart
        worker_cancel_long_running_tasks_on_connection_loss=False,   # keep the work: deduped
        task_publish_retry_policy={"max_retries": 2, "interval_start": 0,
                                   "interval_step": 0.5, "interval_max": 1},
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
    )
    _WORKER.update(python=tvm_python, broker=broker, jail=jail)
    app.task(name=TASK, bind=True)(task or run_batch)
    return app


def safe_url(url: str) -> str:
    """``url`` with its password masked, for messages and logs (never raises: it also shows
    the URLs the checks refuse)."""
    scheme, sep, rest = url.partition("://")
    end = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    userinfo, at, host = rest[:end].rpartition("@")
    if not sep or not at or ":" not in userinfo:
        return url
    return f"{scheme}://{userinfo.split(':', 1)[0]}:**@{host}{rest[end:]}"


def _needs_tls_default(url: str) -> bool:
    from urllib.parse import parse_qs, urlsplit

    parts = urlsplit(url)
    return parts.scheme == "rediss" and not any(k.startswith("ssl_")
                                                 for k in parse_qs(parts.query))


def refusal(url: str, err: Exception) -> str:
    """One line for a Redis that answered but refused this client."""
    from urllib.parse import urlsplit

    import redis

    why = (str(err).splitlines() or [""])[0] or type(err).__name__
    if isinstance(err, redis.AuthenticationError):
        if not urlsplit(url).password:
            return (f"the broker at {safe_url(url)} wants a password: "
                    "redis://:PASSWORD@HOST:6379/0 (or redis://USER:PASSWORD@...)")
        return f"the broker at {safe_url(url)} refused the URL's credentials: {why}"
    return f"the broker at {safe_url(url)} refused this client: {why}"


def broker_refusal(url: str) -> str | None:
    """Why Redis at ``url`` refuses this client (a wrong or missing password, an ACL user
    without the commands), as one line; None when it accepts, or cannot be reached now (a
    worker then waits for it, as for a Redis restart)."""
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=10)
    try:
        client.ping()
    except (redis.AuthenticationError, redis.ResponseError) as e:
        return refusal(url, e)
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        return None
    finally:
        client.close()
    return None


# --- in the pool process ------------------------------------------------------------------
def _get_runner(timeout: float):
    global _runner
    if _runner is None:
        from .sandbox_runner import SandboxRunner

        _runner = SandboxRunner(python=_WORKER["python"] or sys.executable, timeout=timeout,
                                jail=_WORKER.get("jail"))
    _runner.sandbox.timeout = float(timeout)
    return _runner


def _close_runner() -> None:
    global _runner
    if _runner is not None:
        r, _runner = _runner, None
        r.close()


@signals.worker_process_shutdown.connect
def _on_pool_exit(**_) -> None:
    _close_runner()


def _execute(batch: dict) -> dict:
    from fuzz.model import Program

    from .campaign import reproduction
    from .sandbox_runner import ScriptFailure

    from .user_input import case_problem

    progs = [Program.from_json(p) for p in batch["cases"]]
    for p in progs:
        # Variants name passes, pipelines and targets, never modules to import (extra_passes:
        # fine from a user's command line, never from whoever can write to the broker).
        problem = case_problem(p)
        if problem:
            raise ValueError(f"refusing a case from the broker: {problem}")
    runner = _get_runner(batch.get("timeout", 60.0))
    outcomes = runner.run_many(progs)
    replays = int(batch.get("replays", 1))
    for prog, outcome in zip(progs, outcomes):
        if outcome.verdict == "fail" and replays > 1:
            outcome.reproduction = reproduction(runner, prog, outcome, replays)
    kept = [p for p, o in zip(progs, outcomes) if o.verdict in ("fail", "invalid")]
    scripts = [{"script_error": str(s)} if isinstance(s, ScriptFailure) else {"script": s}
               for s in runner.scripts(kept)]
    # The reply is JSON (Redis, then the coordinator's Outcome.from_json).
    return {"outcomes": [o.to_json() for o in outcomes], "scripts": scripts,
            "tvm": runner.sandbox.hello.get("tvm")}


def _push(key: str, reply: dict, patient: bool = True) -> None:
    """RPUSH the reply; ``patient``: wait out a short Redis outage (the batch is done)."""
    global _replies
    import redis

    if not key.startswith(REPLY_PREFIX):
        raise ValueError(f"refusing to reply to {key!r}")
    data = json.dumps(reply)
    deadline, delay = time.monotonic() + (PUSH_RETRY_S if patient else 0), 0.5
    while True:
        try:
            if _replies is None:
                _replies = redis.Redis.from_url(_WORKER["broker"], socket_timeout=30,
                                                socket_connect_timeout=5)
            _replies.pipeline().rpush(key, data).expire(key, REPLY_TTL_S).execute()
            return
        except (redis.ConnectionError, redis.TimeoutError):
            if time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(2 * delay, 15.0)


@signals.task_revoked.connect
def _on_revoked(request=None, expired=False, **_) -> None:
    """A batch dropped unrun (revoked by its coordinator at the end, or expired in the queue):
    say so, so the coordinator stops waiting for it. In the worker's main process: one try."""
    batch = (getattr(request, "args", None) or [None])[0]
    if not isinstance(batch, dict) or "reply_to" not in batch:
        return
    try:
        _push(batch["reply_to"], {"id": batch["id"], "digest": batch.get("digest"),
                                  "task": request.id,
                                  "revoked": "expired" if expired else "revoked"},
              patient=False)
    except Exception:  # noqa: BLE001 - the coordinator's deadline covers it
        pass


def run_batch(self, batch: dict) -> None:
    """The task. ``batch``: {"id", "digest", "reply_to", "cases": [program JSON], "timeout",
    "replays"}; the reply echoes id and digest."""
    t0 = time.monotonic()
    log.info("tvmfuzz batch %s start (%d cases)", batch["id"], len(batch["cases"]))
    reply = {"id": batch["id"], "digest": batch.get("digest"), "task": self.request.id,
             "worker": f"{self.request.hostname}/{os.getpid()}"}
    try:
        reply.update(_execute(batch))
    except BaseException as e:
        # A soft time limit or a broken sandbox: start a fresh fork server for the next batch
        # and tell the coordinator now rather than after its deadline.
        _close_runner()
        reply["error"] = f"{type(e).__name__}: {e}"[:2000]
        reply["seconds"] = round(time.monotonic() - t0, 3)
        try:
            _push(batch["reply_to"], reply)
        except Exception:  # noqa: BLE001 - the coordinator's deadline covers a lost reply
            log.exception("tvmfuzz batch %s: could not send the error reply", batch["id"])
        raise
    reply["seconds"] = round(time.monotonic() - t0, 3)
    _push(batch["reply_to"], reply)
    log.info("tvmfuzz batch %s done in %.1fs", batch["id"], reply["seconds"])

"""Distributed mode, coordinator side: ``tvmfuzz run --broker redis://:PW@HOST:6379/0``.

The coordinator does what a local campaign's main thread does (hand out seeds, keep every
finding in findings/ and the corpus, the watermark in campaign.json, stats.jsonl, the display,
the summary), but its batches run on Celery workers (worker/celery_app.py) on any machine.
It sends cases as program-model JSON, keeps a bounded number of batches in flight, and reads
the workers' replies from the campaign's own Redis list.

Delivery is at least once, counting exactly once. A batch can come back twice: Redis
re-delivers the task of a worker that died after replying, the coordinator re-submits a batch
that is overdue (lost with its worker, or with a Redis restart). So a reply counts only if its
batch id and the digest of its cases match a batch in flight; any later reply is dropped.

A Redis outage mid-campaign costs nothing kept: findings and the watermark are on disk after
every batch. The coordinator retries with backoff until Redis is back (then re-submits what a
restarted Redis may have lost) or the budget ends (then it exits normally; ``--resume`` redoes
the batches that were in flight).
"""
from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from .campaign import (BATCH, TARGET_KINDS, CampaignConfig, Recorder, SeedPlan, _summarize,
                       make_case, open_campaign)
from .celery_app import (QUEUE, REPLY_PREFIX, TASK, make_app, refusal, safe_url,
                         time_limits)


class BrokerUnavailable(Exception):
    """Redis cannot be reached (the message says where and why)."""


class BatchFailed(RuntimeError):
    """Workers failed one batch ``max_attempts`` times: something is broken, not unlucky."""


@dataclass
class DistConfig:
    broker: str
    in_flight: int = 0              # batches out at once; 0: pool processes seen + 2
    case_timeout: float = 60.0      # sandbox limit per case (sets the task time limits)
    batch: int = BATCH
    resubmit_margin: float = 60.0   # past the hard time limit before a batch counts as lost
    max_attempts: int = 3           # error replies for one batch before the campaign stops
    limit: Optional[int] = None     # stop after this many seeds (tests, benchmarks)


# --- batches in flight --------------------------------------------------------------------
@dataclass
class Pending:
    first: int
    progs: list
    cases: list                     # the programs' JSON, as sent
    digest: str                     # of ``cases``: a reply must be for exactly these
    submitted: float
    sent: bool = False
    attempts: int = 1
    errors: int = 0
    task_ids: list = field(default_factory=list)


class Inflight:
    """Batches submitted and not yet counted, by id: the one place that decides whether a
    reply counts (the first good one for its batch) or is dropped."""

    def __init__(self):
        self.batches: dict[str, Pending] = {}
        self.duplicates = 0

    def __len__(self) -> int:
        return len(self.batches)

    def add(self, bid: str, first: int, progs: list, now: float) -> Pending:
        cases = [g.to_json() for g in progs]
        digest = hashlib.sha256(json.dumps(cases, sort_keys=True).encode()).hexdigest()[:16]
        self.batches[bid] = p = Pending(first, progs, cases, digest, now)
        return p

    def match(self, reply: dict) -> tuple[str, Optional[Pending]]:
        """What a reply means: ("ok", batch) settles the batch (removed from flight);
        ("error", batch) a worker failed it; ("revoked", batch) its latest task was dropped
        unrun; ("stale", None) a duplicate, or a reply to a superseded task."""
        p = self.batches.get(reply.get("id"))
        if p is None or reply.get("digest") != p.digest:
            self.duplicates += 1
            return "stale", None
        if "revoked" in reply:
            return ("revoked", p) if p.task_ids and reply.get("task") == p.task_ids[-1] \
                else ("stale", None)
        if "error" in reply or len(reply.get("outcomes", ())) != len(p.progs):
            return "error", p
        return "ok", self.batches.pop(reply["id"])

    def overdue(self, now: float, after: float) -> list[str]:
        return [b for b, p in self.batches.items() if not p.sent or now - p.submitted > after]


# --- the broker ---------------------------------------------------------------------------
class RedisBroker:
    """Celery for sending batches, plain Redis for the replies and for liveness checks."""

    def __init__(self, url: str, reply_key: Optional[str] = None):
        import kombu.exceptions
        import redis

        self.url = url
        # socket_timeout above the BLPOP wait; a dead server fails fast, not after minutes.
        self.redis = redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=3)
        self.app = make_app(url)
        self.reply_key = reply_key or REPLY_PREFIX + uuid.uuid4().hex
        self.errors = (redis.RedisError, kombu.exceptions.OperationalError, OSError)

    def check(self) -> str:
        """Redis's run_id (it changes when Redis restarts), or BrokerUnavailable."""
        import redis

        try:
            return self.redis.info("server")["run_id"]
        except (redis.AuthenticationError, redis.ResponseError) as e:
            raise BrokerUnavailable(refusal(self.url, e)) from e
        except self.errors as e:
            raise BrokerUnavailable(f"cannot reach the broker at {safe_url(self.url)}: "
                                    f"{str(e).splitlines()[0] if str(e) else type(e).__name__}"
                                    ) from e

    def submit(self, bid: str, digest: str, cases: list, timeout: float, replays: int,
               limits: tuple[int, int], expires: float) -> str:
        msg = {"id": bid, "digest": digest, "reply_to": self.reply_key, "cases": cases,
               "timeout": timeout, "replays": replays}
        # expires: a task still queued when the coordinator would re-submit it is dropped.
        r = self.app.send_task(TASK, args=[msg], queue=QUEUE, soft_time_limit=limits[0],
                               time_limit=limits[1], expires=expires)
        return r.id

    def replies(self, wait: float) -> list[dict]:
        got = self.redis.blpop([self.reply_key], timeout=wait)
        if not got:
            return []
        more = self.redis.lpop(self.reply_key, 255) or []
        return [json.loads(x) for x in [got[1], *more]]

    def pool_size(self) -> int:
        """Pool processes of the workers that answer now (a broadcast: call rarely)."""
        stats = self.app.control.inspect(timeout=1.0).stats() or {}
        return sum(s.get("pool", {}).get("max-concurrency", 0) for s in stats.values())

    def revoke(self, task_ids: list) -> None:
        if task_ids:
            self.app.control.revoke(task_ids)

    def close(self, keep_replies: bool = False) -> None:
        if not keep_replies:
            try:
                self.redis.delete(self.reply_key)
            except self.errors:
                pass
        self.redis.close()


# --- the coordinator ----------------------------------------------------------------------
class Coordinator:
    POOL_REFRESH_S = 60.0

    def __init__(self, cfg: CampaignConfig, dcfg: DistConfig, broker, echo: Callable):
        self.cfg, self.dcfg, self.broker, self.echo = cfg, dcfg, broker, echo
        self.limits = time_limits(dcfg.case_timeout, dcfg.batch, cfg.replays)
        self.resubmit_after = self.limits[1] + dcfg.resubmit_margin
        self.inflight = Inflight()
        self.counts = {"batches": 0, "resubmitted": 0, "outages": 0}
        self.workers: set = set()
        self.abandoned: set = set()
        self.slowest = 0.0
        self.target_in_flight = max(1, dcfg.in_flight)
        self._pool_checked = -1e9

    def run(self) -> dict:
        cfg, dcfg = self.cfg, self.dcfg
        self.run_id = self.broker.check()          # before any work: a one-line error
        state, start, store, vers = open_campaign(cfg, self.echo)
        self.plan = plan = SeedPlan(start, dcfg.batch)
        self.stop_at = start + dcfg.limit if dcfg.limit else None
        self.rec = Recorder(cfg, state, store, vers, self.echo)
        # The reply list lives in campaign.json: after a coordinator dies, --resume reads the
        # replies to the batches it had sent (those for exactly the same cases count).
        if cfg.resume and state.get("reply_key", "").startswith(REPLY_PREFIX):
            self.broker.reply_key = state["reply_key"]
        self.rec.extra_state["reply_key"] = self.broker.reply_key
        self.log = (cfg.out_dir / "batches.jsonl").open("a")
        self.drain_end = None
        try:
            self._loop(time.monotonic() + cfg.budget_s)
        finally:
            self._finish()
        extra = {"watermark": plan.watermark(), "distributed": dict(
            self.counts, duplicates=self.inflight.duplicates, workers=sorted(self.workers),
            abandoned=sorted(self.abandoned, key=_first))}
        return _summarize(cfg.out_dir, self.rec.stats, plan, start, self.echo, extra)

    def _loop(self, end: float) -> None:
        interrupted = False
        while True:
            now = time.monotonic()
            if self.drain_end is None and now >= end:
                self._start_drain(now)
            if not self.inflight and (self.drain_end is not None or (
                    self.stop_at is not None and self.plan.next >= self.stop_at)):
                return
            if self.drain_end is not None and now >= self.drain_end:
                return
            try:
                self._step(now, submit=self.drain_end is None)
            except self.broker.errors as e:
                if not self._wait_for_broker(e, end):
                    return
            except KeyboardInterrupt:
                if interrupted:
                    return
                interrupted, end = True, time.monotonic()
                self.echo("interrupted: waiting for the batches running now (Ctrl-C again to "
                          "stop at once; --resume redoes them)")

    def _start_drain(self, now: float) -> None:
        """Budget spent: send nothing more, revoke what is in flight (a queued batch is then
        dropped with a "revoked" reply; a running one finishes), wait a bounded time."""
        self.drain_end = now + min(self.resubmit_after, max(30.0, 3 * self.slowest))
        try:
            self.broker.revoke([p.task_ids[-1] for p in self.inflight.batches.values()
                                if p.task_ids])
        except self.broker.errors:
            pass

    def _step(self, now: float, submit: bool) -> None:
        if submit:
            self._top_up(now)
            for bid in self.inflight.overdue(now, self.resubmit_after):
                sent = self.inflight.batches[bid].sent
                self._resubmit(bid, f"no result within {self.resubmit_after:.0f}s" if sent
                               else "not sent")
        for reply in self.broker.replies(0.5):
            self._on_reply(reply)

    def _top_up(self, now: float) -> None:
        if not self.dcfg.in_flight and now - self._pool_checked > self.POOL_REFRESH_S:
            self._pool_checked = now
            pool = self.broker.pool_size()
            if not pool and not self.workers:
                self.echo("no worker answered yet: batches wait in the queue")
            # Enough to keep every pool process busy while a reply travels; more would only
            # queue batches that the end of the budget then drops.
            self.target_in_flight = max(2, pool + 2)
        while len(self.inflight) < self.target_in_flight and \
                (self.stop_at is None or self.plan.next < self.stop_at):
            seeds = self.plan.take()
            cov = self.cfg.coverage   # set when guidance is on
            progs = [make_case(s, self.cfg.mode, self.cfg.targets, self.cfg.ir, self.cfg.schedules,
                               self.cfg.features, guide=cov.current if cov else None)
                     for s in seeds]
            bid = f"{seeds[0]}+{len(seeds)}"
            self.inflight.add(bid, seeds[0], progs, now)
            self._send(bid)

    def _send(self, bid: str) -> None:
        p = self.inflight.batches[bid]
        p.sent = False
        p.submitted = time.monotonic()
        p.task_ids.append(self.broker.submit(bid, p.digest, p.cases, self.dcfg.case_timeout,
                                             self.cfg.replays, self.limits,
                                             self.resubmit_after))
        p.sent = True

    def _resubmit(self, bid: str, why: str, quiet: bool = False) -> None:
        p = self.inflight.batches[bid]
        p.attempts += 1
        self.counts["resubmitted"] += 1
        if not quiet:
            self.echo(f"batch {bid} re-submitted ({why}; attempt {p.attempts})")
        self._send(bid)

    def _on_reply(self, reply: dict) -> None:
        what, p = self.inflight.match(reply)
        bid = reply.get("id")
        if what == "stale":
            return
        if what == "revoked":
            if self.drain_end is not None:          # dropped at the end: --resume redoes it
                self.abandoned.add(bid)
                del self.inflight.batches[bid]
            else:                                   # expired in the queue: send it again
                self._resubmit(bid, f"{reply['revoked']} before it ran")
            return
        if what == "error":
            p.errors += 1
            why = reply.get("error") or "malformed reply"
            if p.errors >= self.dcfg.max_attempts:
                raise BatchFailed(f"batch {bid} failed {p.errors} times on workers; "
                                  f"last: {why}")
            self._resubmit(bid, f"worker error: {why[:200]}")
            return
        from fuzz.outcome import Outcome

        from .sandbox_runner import ScriptFailure

        scripts = [s["script"] if "script" in s else ScriptFailure(s.get("script_error", ""))
                   for s in reply.get("scripts", [])]
        outcomes = [Outcome.from_json(o) for o in reply["outcomes"]]   # the worker's to_json()
        self.rec.record(self.plan, p.first, p.progs, outcomes, scripts,
                        tvm_version=reply.get("tvm"))
        self.counts["batches"] += 1
        self.workers.add(reply.get("worker", "?").split("/")[0])
        self.slowest = max(self.slowest, float(reply.get("seconds", 0)))
        self.log.write(json.dumps({"id": reply["id"], "first": p.first, "n": len(p.progs),
                                   "worker": reply.get("worker"), "attempts": p.attempts,
                                   "seconds": reply.get("seconds"),
                                   "at": round(time.time(), 1)}) + "\n")
        self.log.flush()

    def _wait_for_broker(self, err: Exception, end: float) -> bool:
        """Back off until Redis answers (True) or the budget ends (False)."""
        self.counts["outages"] += 1
        self.echo(f"broker unreachable ({str(err).splitlines()[0][:200]}); findings and "
                  "watermark are saved; retrying")
        delay = 1.0
        while time.monotonic() < end:
            time.sleep(max(0.0, min(delay, end - time.monotonic())))
            delay = min(2 * delay, 30.0)
            try:
                run_id = self.broker.check()
                # A restarted Redis may have lost the queue and the replies: send again
                # everything in flight (replies are deduplicated). Else only what never left.
                lost = run_id != self.run_id
                again = [b for b, p in self.inflight.batches.items() if lost or not p.sent]
                for bid in again:
                    self._resubmit(bid, "broker restarted", quiet=True)
            except (BrokerUnavailable, *self.broker.errors):
                continue
            self.run_id = run_id
            self.echo("broker is back" + (f"; re-submitted {len(again)} batches in flight"
                                           if again else ""))
            return True
        self.echo("budget spent while the broker was unreachable: stopping; "
                  "`--resume` continues from the watermark")
        return False

    def _finish(self) -> None:
        self.abandoned.update(self.inflight.batches)
        if self.abandoned:
            self.echo(f"{len(self.abandoned)} batches were not counted (first seeds "
                      f"{', '.join(sorted(self.abandoned, key=_first))}); "
                      "`--resume` redoes them")
            try:
                self.broker.revoke([t for p in self.inflight.batches.values()
                                    for t in p.task_ids])
            except self.broker.errors:
                pass
        self.rec.close()
        self.log.close()
        # Replies may still come for batches left over: keep them for --resume (they expire).
        self.broker.close(keep_replies=bool(self.abandoned))


def _first(bid: str) -> int:
    return int(bid.split("+")[0])


def run_distributed(budget_s: float, out_dir: Path, broker: str, seed: int = 0,
                    mode: Optional[str] = None, echo: Callable[[str], None] = print,
                    replays: int = 3, targets=TARGET_KINDS, resume: bool = False,
                    live: Optional[bool] = None, corpus: Optional[Path] = None,
                    reduce=None, ir=("relax",), schedules: bool = False,
                    html=None, guidance: bool = True, **dist) -> dict:
    """A campaign whose cases run on Celery workers; ``dist``: DistConfig fields. Raises
    BrokerUnavailable (before any work) when Redis cannot be reached."""
    cfg = CampaignConfig(budget_s, out_dir, seed, mode, 1, tuple(targets), replays, None,
                         resume, live, corpus, reduce, tuple(ir), schedules, html=html,
                         guidance=guidance)
    dcfg = DistConfig(broker, **dist)
    b = RedisBroker(broker)
    try:
        b.check()
    except BrokerUnavailable:
        b.redis.close()
        raise
    out_dir.mkdir(parents=True, exist_ok=True)
    return Coordinator(cfg, dcfg, b, echo).run()

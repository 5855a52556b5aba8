"""The ``tvmfuzz`` command line.

Click handles parsing (subcommands, types, help); ``main`` turns its usage errors into the
one-line ``tvmfuzz: error: ...`` with exit status 2 that scripts and CI steps rely on.
"""
from __future__ import annotations

import collections
import ipaddress
import json
import os
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

import click

from corpus.store import DEFAULT_CORPUS

from fuzz import GENERATOR_VERSION


def parse_duration(text: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", str(text))
    if not m:
        raise click.BadParameter(f"{text!r} is not a duration (e.g. 90, 30s, 10m, 2h)")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


class Duration(click.ParamType):
    name = "duration"

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return parse_duration(value)
        except click.BadParameter as e:
            self.fail(str(e.message), param, ctx)


def _out_dir(path: str) -> Path:
    """Create the output directory now, so an unwritable one fails before any work."""
    out = Path(path)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".tvmfuzz-write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as e:
        raise click.UsageError(f"cannot write to output directory {path}: {e.strerror or e}")
    return out


MODES = click.Choice(["valid", "near-valid"])
CORPUS_OPT = click.option("--corpus", "corpus_dir", default=str(DEFAULT_CORPUS),
                          show_default=True,
                          type=click.Path(file_okay=False), help="corpus store directory")
FORMAT_OPT = click.option("--format", "fmt", type=click.Choice(["text", "json"]),
                          default="text", show_default=True)
TVM_PYTHON = click.option("--tvm-python", type=click.Path(exists=True, dir_okay=False),
                          default=None, help="Python interpreter of the TVM install to test "
                          "(the sandbox server runs under it)")
INSECURE_BROKER = click.option(
    "--insecure-broker", is_flag=True,
    help="accept a broker URL without a password; only for a Redis on this machine "
         "(127.0.0.0/8, localhost, ::1)")
BROKER_FROM_ENV = "$TVMFUZZ_BROKER"    # `run --broker` given without a URL
ENV_OPT = click.option("--env", "env_version", default=None, metavar="VERSION",
                       help="test this installed TVM release (`tvmfuzz env list`): --tvm-python "
                       "with that env's interpreter")


ENTRY_OPT = click.option("--entry", default=None, metavar="NAME",
                         help="for a TVMScript module: the Relax function to run (default: "
                              "main, else the module's only public Relax function)")
JAIL_OPT = click.option("--jail/--no-jail", "jail_on", default=True, show_default=True,
                        envvar="TVMFUZZ_JAIL",
                        help="parse, build and run the input inside the jail (no network, "
                             "read-only files, no home or corpus; needs bubblewrap); "
                             "--no-jail (or TVMFUZZ_JAIL=0) only for your own trusted files")


def _jail(jail_on: bool, *hide):
    """The jail for input from outside (None with --no-jail), hiding ``hide`` (the corpus,
    the output directory), the home and the working directory; a one-line error, before any
    work, where this host cannot jail."""
    if not jail_on:
        return None
    from worker.jail import JailUnavailable, require

    try:
        return require(hide=tuple(str(h) for h in hide if h) + (str(Path.cwd()),))
    except JailUnavailable as e:
        raise click.UsageError(str(e))


def _tvm_python(env_version, tvm_python):
    """The interpreter --env or --tvm-python names (None: this one, the default release)."""
    if env_version is None:
        return tvm_python
    if tvm_python:
        raise click.UsageError("--env and --tvm-python exclude each other")
    from worker.releases import ReleaseError, resolve

    try:
        return resolve(env_version)
    except ReleaseError as e:
        raise click.UsageError(str(e))


@click.group()
@click.version_option(package_name="tvmfuzz")
def cli():
    """Fuzz the Apache TVM compiler with random Relax programs."""


def shape_kinds(program) -> list[str]:
    from fuzz.model import TensorTy

    kinds = []
    for f in program.functions:
        for p in f.params:
            t = p.ty
            if not isinstance(t, TensorTy):
                kinds.append("tuple")
            elif t.shape is None:
                kinds.append("ndim-only" if t.ndim >= 0 else "unknown")
            elif all(isinstance(d, int) for d in t.shape):
                kinds.append("static")
            else:
                kinds.append("symbolic")
    return kinds


def print_histograms(ops, dtypes, kinds, n_cases, top=25) -> None:
    click.echo(f"{n_cases} cases, {sum(ops.values())} op nodes, {len(ops)} distinct ops")
    click.echo("ops:")
    for op, c in ops.most_common(top):
        click.echo(f"  {c:6d}  {op}")
    if len(ops) > top:
        click.echo(f"  ... {len(ops) - top} more ops (least used: "
                   + ", ".join(f"{o} {c}" for o, c in ops.most_common()[-3:]) + ")")
    click.echo("dtypes (parameters):")
    for d, c in dtypes.most_common():
        click.echo(f"  {c:6d}  {d or 'unknown'}")
    click.echo("shape kinds (parameters):")
    for k, c in kinds.most_common():
        click.echo(f"  {c:6d}  {k}")


@cli.command()
@click.option("--count", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="first case seed")
@click.option("--out", "out", required=True, type=click.Path(file_okay=False))
@click.option("--mode", type=MODES, default="valid", show_default=True)
@click.option("--ops", type=int, default=None, help="op nodes per program (default: random)")
@click.option("--ir", type=click.Choice(["relax", "tir"]), default="relax", show_default=True,
              help="relax: graph programs; tir: PrimFuncs (fuzz/tir)")
@click.option("--axis-separators", is_flag=True,
              help="TIR: buffers may have axis_separators (TVM 0.25 only)")
def gen(count, seed, out, mode, ops, ir, axis_separators):
    """Generate COUNT programs: one JSON (canonical) and one TVMScript file per case."""
    from worker.sandbox_runner import ScriptFailure, SandboxRunner

    from fuzz.generate import generate

    out_dir = _out_dir(out)
    op_hist, dt_hist, kind_hist = collections.Counter(), collections.Counter(), collections.Counter()
    if ir == "tir":
        from fuzz.tir.generate import generate_tir

        progs = [generate_tir(seed + i, mode="near_valid" if mode == "near-valid" else "valid",
                              features={"axis_separators": axis_separators})
                 for i in range(count)]
        for i, p in enumerate(progs):
            p.meta.update(seed=seed + i, mode=mode)
    else:
        progs = [generate(seed + i, mode=mode, n_ops=ops) for i in range(count)]
    runner = SandboxRunner()   # printing materializes, and that can crash TVM: not in here
    try:
        scripts = runner.scripts(progs)
    finally:
        runner.close()
    failed = 0
    for prog, script in zip(progs, scripts):
        stem = out_dir / f"case_{prog.meta['seed']:06d}"
        stem.with_suffix(".json").write_text(prog.dumps())
        if isinstance(script, ScriptFailure):
            failed += 1
            click.echo(f"case {prog.meta['seed']}: {script}", err=True)
        else:
            stem.with_suffix(".py").write_text(script)
        if prog.ir == "tir":
            dt_hist.update(p.dtype for p in prog.params)
            continue
        op_hist.update(prog.ops())
        dt_hist.update(p.ty.dtype for f in prog.functions for p in f.params
                       if hasattr(p.ty, "dtype"))
        kind_hist.update(shape_kinds(prog))
    print_histograms(op_hist, dt_hist, kind_hist, count)
    click.echo(f"wrote {count} cases to {out_dir} (generator v{GENERATOR_VERSION}, mode {mode})"
               + (f"; {failed} could not be printed (JSON kept; replay them)" if failed else ""))


@cli.command()
@click.option("--time", "budget", type=Duration(), default="60s", show_default=True,
              help="wall-clock budget, e.g. 90, 30s, 10m, 2h")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
              help="worker processes (sandboxes) on this machine")
@click.option("--targets", default="llvm,c,cuda,opencl,webgpu", show_default=True,
              help="comma list of target kinds for the extra variant of each case "
                   "(cuda: compile-only unless a GPU is present, skipped without nvcc; "
                   "opencl, webgpu: compile-only, with dlight's rules one at a time or all)")
@click.option("--out", "out", default="runs/latest", show_default=True,
              type=click.Path(file_okay=False))
@click.option("--resume", is_flag=True, help="continue the campaign in --out where it stopped")
@click.option("--seed", type=int, default=0, show_default=True, help="first case seed")
@click.option("--mode", type=MODES, default=None,
              help="generate only this mode (default: mostly valid, some near-valid)")
@click.option("--replays", type=click.IntRange(min=1), default=3, show_default=True,
              help="runs of each failing case before it is stored (its reproduction rate)")
@click.option("--live/--no-live", default=None,
              help="live table (default: on a terminal) or plain progress lines")
@CORPUS_OPT
@TVM_PYTHON
@ENV_OPT
@click.option("--broker", default=None, metavar="[URL]", is_flag=False,
              flag_value=BROKER_FROM_ENV,
              help="distributed mode: send the cases to `tvmfuzz worker`s through this Redis "
                   "(redis://:PASSWORD@HOST:6379/0; without URL: $TVMFUZZ_BROKER, which keeps "
                   "the password off the command line); this process only coordinates "
                   "(--jobs is unused)")
@INSECURE_BROKER
@click.option("--reduce/--no-reduce", "auto_reduce", default=True, show_default=True,
              help="reduce each new bucket in the background into OUT/reduced/<bucket>/")
@click.option("--in-flight", type=click.IntRange(min=0), default=0, show_default=True,
              help="with --broker: batches out at once (0: worker processes + 2)")
@click.option("--ir", "ir", default=None,
              help="comma list of the IRs to generate: relax (graph programs), tir (PrimFuncs), "
                   "seeded (mutants of --seeds modules; alone: only those), "
                   "onnx (graph programs as ONNX models, imported by TVM's frontend; needs onnx "
                   "and onnxruntime), torch (graph programs as torch.nn.Modules through "
                   "torch.export and from_exported_program; needs torch: tvmfuzz[torch])  "
                   "[default: relax,tir plus onnx where onnx imports and torch where torch is "
                   "installed; with --seeds: seeded too, half the cases seeded]")
@click.option("--schedules/--no-schedules", default=True, show_default=True,
              help="apply random s_tir schedule primitives to some TIR cases")
@click.option("--guidance/--no-guidance", default=True, show_default=True,
              help="generation favours op x dtype x shape cells and op->op edges not yet "
                   "covered (OUT/coverage.json); off: each seed's program as without coverage")
@click.option("--py-coverage", is_flag=True, default=False,
              help="also count which of TVM's own Python functions each case ran (coverage "
                   "kind tvm_python; costs throughput: bench/py_coverage_cost.py)")
@click.option("--seeds", "seeds_spec", default=None, metavar="DIR",
              help="mutate these real modules too: TVMScript *.py and case *.json files; "
                   "'default' is the set shipped with tvmfuzz")
def run(budget, jobs, targets, out, resume, seed, mode, replays, live, corpus_dir, tvm_python,
        env_version, auto_reduce, broker, insecure_broker, in_flight, ir, schedules,
        guidance, py_coverage, seeds_spec):
    """A campaign on this machine: generate, compile and run (llvm plus a random variant) in
    crash-isolated sandboxes, judge, keep every finding. With --broker, the cases run on
    Celery workers instead (see `tvmfuzz worker`)."""
    from worker.campaign import TARGET_KINDS, run_campaign

    tvm_python = _tvm_python(env_version, tvm_python)
    if broker == BROKER_FROM_ENV:
        broker = os.environ.get("TVMFUZZ_BROKER")
        if not broker:
            raise click.UsageError("--broker without a URL takes it from $TVMFUZZ_BROKER, "
                                   "which is not set")
    if broker is not None:
        _check_broker_url(broker, insecure_broker)
    elif insecure_broker:
        raise click.UsageError("--insecure-broker: only with --broker")
    from worker.campaign import available_irs

    given = ir
    if ir is None:
        ir = ",".join(available_irs(tvm_python))
    irs = tuple(dict.fromkeys(t.strip() for t in ir.split(",") if t.strip()))
    if not irs or set(irs) - {"relax", "tir", "onnx", "torch", "seeded"}:
        raise click.UsageError(f"--ir: {ir!r}: give a comma list of relax, tir, onnx, torch, "
                               "seeded")
    if given is not None and {"onnx", "torch"} & set(irs):
        have = available_irs(tvm_python)
        if "onnx" in irs and "onnx" not in have:
            where = "" if not tvm_python else f" (in {tvm_python} too" + (
                f": tvmfuzz env add {env_version} --with onnx)" if env_version else ")")
            raise click.UsageError("--ir onnx: needs the onnx and onnxruntime packages" + where)
        if "torch" in irs and "torch" not in have:
            raise click.UsageError("--ir torch: needs torch (pip install 'tvmfuzz[torch]')"
                                   + (f" (in {tvm_python} too)" if tvm_python else ""))
    if resume and seeds_spec is None:   # a resumed campaign mutates the seeds it had
        try:
            seeds_spec = json.loads((Path(out) / "campaign.json").read_text()).get("seeds")
        except (OSError, ValueError):
            pass
    seeds = None
    if seeds_spec is not None or "seeded" in irs:
        from worker.seeds import SeedError, load_seeds

        seeds_spec = seeds_spec or "default"
        if "seeded" not in irs:
            irs += ("seeded",)
        if broker is not None:
            raise click.UsageError("--seeds: not in distributed mode yet (the workers would "
                                   "need the seed files); run it locally")
        try:
            seeds = load_seeds(seeds_spec, note=click.echo)
        except SeedError as e:
            raise click.UsageError(str(e))
        if seeds_spec != "default":
            seeds_spec = str(Path(seeds_spec).resolve())
    kinds = tuple(t.strip() for t in targets.split(",") if t.strip())
    bad = [k for k in kinds if k not in TARGET_KINDS]
    if bad or not kinds:
        raise click.UsageError(f"--targets: unknown target kind {', '.join(bad) or '(none)'}; "
                               f"choose from {', '.join(TARGET_KINDS)}")
    out_dir = _out_dir(out)
    if resume and not (out_dir / "campaign.json").exists():
        raise click.UsageError(f"--resume: no campaign to resume in {out_dir}")
    from corpus import CorpusError

    from reducer.autoreduce import AutoReducer

    from tvmfuzz.html_report import write_campaign_html

    reducer = AutoReducer if auto_reduce else None
    if broker is not None:
        if py_coverage:
            raise click.UsageError("--py-coverage: not in distributed mode (the workers' "
                                   "sandboxes are theirs); run it locally")
        if tvm_python:
            raise click.UsageError(f"--{'env' if env_version else 'tvm-python'}: in distributed "
                                   "mode the workers choose their TVM (tvmfuzz worker --env "
                                   "VERSION or --tvm-python)")
        from worker.distributed import BatchFailed, BrokerUnavailable, run_distributed

        try:
            run_distributed(budget, out_dir, broker, seed, mode, echo=click.echo,
                            replays=replays, targets=kinds, resume=resume, live=live,
                            corpus=Path(corpus_dir), reduce=reducer, in_flight=in_flight,
                            ir=irs, schedules=schedules, html=write_campaign_html,
                            guidance=guidance)
        except (BrokerUnavailable, CorpusError) as e:
            raise click.UsageError(str(e))
        except BatchFailed as e:
            raise click.ClickException(str(e))
        sys.exit(0)
    try:
        run_campaign(budget, out_dir, seed, mode, echo=click.echo, replays=replays,
                     tvm_python=tvm_python, jobs=jobs, targets=kinds, resume=resume, live=live,
                     corpus=Path(corpus_dir), reduce=reducer, ir=irs, schedules=schedules,
                     seeds=seeds, seeds_dir=seeds_spec if seeds else None,
                     html=write_campaign_html, guidance=guidance, py_coverage=py_coverage)
    except CorpusError as e:
        raise click.UsageError(str(e))
    sys.exit(0)


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_broker_url(url: str, insecure: bool) -> None:
    """A Redis URL with a password (Redis runs whatever batches anyone who reaches it sends),
    unless ``insecure`` (--insecure-broker), which only a Redis on this machine may be."""
    from worker.celery_app import safe_url

    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port
    except ValueError as e:
        raise click.UsageError(f"--broker: {safe_url(url)!r}: {e}")
    if parts.scheme not in ("redis", "rediss") or not host:
        raise click.UsageError(f"--broker: {safe_url(url)!r} is not a Redis URL "
                               "(redis://:PASSWORD@HOST:6379/0, or rediss:// for TLS)")
    if insecure and not _is_loopback(host):
        raise click.UsageError(f"--insecure-broker: only for a Redis on this machine "
                               f"(127.0.0.0/8, localhost, ::1), not {host}: give the URL "
                               "its password (redis://:PASSWORD@HOST:6379/0)")
    if not parts.password and not insecure:
        raise click.UsageError(f"--broker: {safe_url(url)} has no password, and Redis runs "
                               "the batches of anyone who reaches it: start it with "
                               "--requirepass (or an ACL user) and use redis://:PASSWORD@HOST"
                               ":6379/0 (or redis://USER:PASSWORD@...), or for a Redis on "
                               "this machine, --insecure-broker")


@cli.command()
@click.option("--broker", envvar="TVMFUZZ_BROKER", default="redis://localhost:6379/0",
              show_default=True, metavar="URL",
              help="Redis URL with its password, redis://:PASSWORD@HOST:6379/0 (also "
                   "$TVMFUZZ_BROKER, which keeps the password off the command line)")
@INSECURE_BROKER
@click.option("--concurrency", "-c", type=click.IntRange(min=1), default=None,
              help="pool processes, each with its own sandbox (default: CPU count)")
@click.option("--visibility-timeout", type=Duration(), default="3600", show_default=True,
              help="seconds before Redis hands an unacknowledged batch to another worker; "
                   "keep it above the longest batch (the task's hard time limit)")
@click.option("--hostname", "-n", default=None,
              help="Celery node name (default: tvmfuzz-PID@HOST)")
@click.option("--loglevel", "-l", default="INFO", show_default=True)
@TVM_PYTHON
@ENV_OPT
@JAIL_OPT
def worker(broker, insecure_broker, concurrency, visibility_timeout, hostname, loglevel,
           tvm_python, env_version, jail_on):
    """A distributed-mode worker: runs the batches a `tvmfuzz run --broker` coordinator sends,
    each in a crash-isolated sandbox (Celery, prefork pool; TVM is never imported here)."""
    tvm_python = _tvm_python(env_version, tvm_python)
    _check_broker_url(broker, insecure_broker)
    from worker.celery_app import broker_refusal, make_app

    # A wrong password is one line now, not Celery retrying it forever; an unreachable Redis
    # is waited for (it may start after the workers).
    why = broker_refusal(broker)
    if why:
        raise click.UsageError(why)

    app = make_app(broker, visibility_timeout=visibility_timeout, tvm_python=tvm_python,
                   jail=_jail(jail_on))
    # No gossip or mingle: with many workers those are broadcasts nobody here needs.
    app.worker_main(["worker", "--pool=prefork", f"--loglevel={loglevel}",
                     f"--hostname={hostname or f'tvmfuzz-{os.getpid()}@%h'}",
                     "--without-gossip", "--without-mingle"]
                    + ([f"--concurrency={concurrency}"] if concurrency else []))


@cli.command()
@click.option("--budget", type=Duration(), default="10m", show_default=True,
              help="wall-clock budget (the case list is a prefix of a fixed sequence)")
@click.option("--cases", type=click.IntRange(min=1), default=None,
              help="run exactly this many cases instead of filling the budget")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--baseline", type=click.Path(dir_okay=False), default=None,
              help="JSON file of accepted signatures: only others fail the run")
@click.option("--update-baseline", is_flag=True, help="add this run's signatures to --baseline")
@click.option("--out", "out", default="runs/smoke", show_default=True,
              type=click.Path(file_okay=False))
@click.option("--extra-pass", "extra_passes", multiple=True, metavar="MODULE:ATTR",
              help="a Relax pass to run before the pipeline (e.g. a fork's own pass)")
@click.option("--corpus", "corpus_dir", default=None, type=click.Path(file_okay=False),
              help="count the verdicts recorded in this corpus with `tvmfuzz triage`")
@TVM_PYTHON
@ENV_OPT
def smoke(budget, cases, seed, baseline, update_baseline, out, extra_passes, corpus_dir,
          tvm_python, env_version):
    """CI smoke fuzzing: exit 0 when no new bug appears, 1 when one does, 2 on usage or
    environment errors. Findings are grouped into bugs; known bugs, expected refusals of
    near-valid mutants and bugs in the baseline are listed but do not fail the run. Writes
    smoke.json, smoke.junit.xml and smoke.sarif."""
    from worker.smoke import SmokeError, run_smoke

    tvm_python = _tvm_python(env_version, tvm_python)
    out_dir = _out_dir(out)
    try:
        code = run_smoke(budget, out_dir, seed, cases, Path(baseline) if baseline else None,
                         update_baseline, tuple(extra_passes), echo=click.echo,
                         tvm_python=tvm_python,
                         corpus=Path(corpus_dir) if corpus_dir else None)
    except SmokeError as e:
        raise click.UsageError(str(e))
    sys.exit(code)


@cli.command()
@click.argument("case", type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@click.option("--times", type=click.IntRange(min=1), default=3, show_default=True,
              help="runs; the reproduction rate is how many gave the first signature")
@click.option("--timeout", type=Duration(), default=None,
              help="limit per run [default: 120s, more for a large module: about 3x the "
                   "time TVM is expected to take to parse and build it]")
@click.option("--budget", type=Duration(), default="5m", show_default=True,
              help="no further run once another would pass this much time in all (the "
                   "first run always happens; Ctrl-C also stops the repeats)")
@TVM_PYTHON
@ENV_OPT
@ENTRY_OPT
@JAIL_OPT
def replay(case, fmt, times, timeout, budget, tvm_python, env_version, entry, jail_on):
    """Re-run a saved case (JSON) or any TVMScript file in the sandbox; print the verdict
    (text: as soon as the first run gives it), then how often it reproduced."""
    from worker.replay import load_job, replay_file

    tvm_python = _tvm_python(env_version, tvm_python)
    load_job(Path(case), entry)   # bad input: one line before the jail or TVM starts

    def no_entry(r: dict) -> None:
        if r["kind"] == "no_entry":
            # Which function to run is the user's choice to make: a usage error, not a verdict.
            raise click.UsageError(f"{case}: {r['message']}")

    def first(r: dict) -> None:
        no_entry(r)
        click.echo(f"verdict: {r['verdict']}  kind: {r['kind'] or '-'}  "
                   f"(first run, {r['seconds']:.1f} s)")
        if r["kind"] == "hang":
            click.echo(f"timed out after {r['timeout']:.0f} s; use --timeout to allow "
                       "longer")
        if r["signature"]:
            click.echo(f"signature: {r['signature']}")
            if r["bug_id"]:   # a finding; an invalid outcome is filed as no bug
                click.echo(f"bug: {r['bug_id']} ({r['status']}: {r['reason']})")
            click.echo(f"message: {r['message']}")
        if times > 1:
            click.echo(f"replaying it {times - 1} more times for the reproduction rate "
                       "(Ctrl-C stops)")

    result = replay_file(Path(case), times=times, timeout=timeout,
                         python=tvm_python or sys.executable, jail=_jail(jail_on, DEFAULT_CORPUS),
                         on_first=first if fmt == "text" else no_entry, budget=budget,
                         entry=entry)
    if fmt == "json":
        click.echo(json.dumps(result, indent=1))
    else:
        click.echo(f"reproduced {result['reproduced']}/{result['times']}"
                   + (f" ({result['stopped']})" if result["stopped"] else ""))
    sys.exit(0)


@cli.command()
@click.argument("input_spec", metavar="INPUT")
@click.option("--signature", default=None, help="keep this signature (default: the one INPUT "
              "fails with)")
@click.option("--interesting", default=None, metavar="CMD",
              help="C-Reduce style test: CMD FILE exits 0 when a candidate is interesting")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="candidates judged in parallel (sandboxes)")
@click.option("--out", default=None, type=click.Path(file_okay=False),
              help="output directory (default: reduced/<name>)")
@click.option("--timeout", type=Duration(), default="60s", show_default=True,
              help="limit per candidate run")
@click.option("--time", "budget", type=Duration(), default=None,
              help="stop after this long and keep the smallest candidate so far")
@CORPUS_OPT
@TVM_PYTHON
@ENV_OPT
@ENTRY_OPT
@JAIL_OPT
def reduce(input_spec, signature, interesting, jobs, out, timeout, budget, corpus_dir,
           tvm_python, env_version, entry, jail_on):
    """Reduce a failing case (JSON), TVMScript file or corpus bucket to a minimal reproducer,
    with repro.py and report.md."""
    from reducer.cli import run_reduce

    tvm_python = _tvm_python(env_version, tvm_python)
    sys.exit(run_reduce(input_spec, signature, interesting, jobs, out, timeout, budget,
                        tvm_python, corpus_dir, jail=_jail(jail_on, corpus_dir, out),
                        entry=entry))


@cli.command()
@click.argument("input_spec", metavar="CASE", required=False)
@click.option("--out", default=None, type=click.Path(file_okay=False),
              help="output directory (default: reports/<name>; with --html: DIR)")
@click.option("--html", "html_dir", default=None, metavar="DIR",
              type=click.Path(file_okay=False),
              help="instead: write DIR/report.html, one self-contained page of plots and the "
                   "bug table of a campaign directory (its --out) or a corpus")
@click.option("--timeout", type=Duration(), default="60s", show_default=True)
@CORPUS_OPT
@TVM_PYTHON
@ENV_OPT
@click.option("--bisect/--no-bisect", "run_bisect", default=True, show_default=True,
              help="with installed releases (`tvmfuzz env list`), replay the case on each for "
                   "report.md's \"Affected versions\"")
@ENTRY_OPT
@JAIL_OPT
def report(input_spec, out, html_dir, timeout, corpus_dir, tvm_python, env_version, run_bisect,
           entry, jail_on):
    """Write repro.py and report.md (a TVM issue, ready to paste) for a failing case (JSON),
    TVMScript file or corpus bucket; or, with --html DIR, a campaign's or corpus's HTML page."""
    if html_dir is not None:
        if input_spec is not None:
            raise click.UsageError("--html DIR takes no CASE: give one or the other")
        from tvmfuzz.html_report import ReportError, write_html

        dest = None if out is None else _out_dir(out) / "report.html"
        try:
            path = write_html(Path(html_dir), dest)
        except ReportError as e:
            raise click.UsageError(str(e))
        click.echo(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")
        sys.exit(0)
    if input_spec is None:
        raise click.UsageError("missing CASE (a case JSON, TVMScript file or corpus bucket), "
                               "or --html DIR")
    from reducer.cli import run_report

    tvm_python = _tvm_python(env_version, tvm_python)
    sys.exit(run_report(input_spec, out, timeout, tvm_python, corpus_dir, bisect=run_bisect,
                        jail=_jail(jail_on, corpus_dir, out), entry=entry))


@cli.command(name="catalogue")
@click.option("--check", is_flag=True, help="check every spec against the installed TVM")
@click.option("--seeds", type=click.IntRange(min=1), default=4, show_default=True)
def catalogue_cmd(check, seeds):
    """List the op catalogue (by family), or check it against TVM."""
    from fuzz.catalogue import CATALOGUE

    if check:
        from worker.selfcheck import main as selfcheck_main

        sys.exit(selfcheck_main(["--seeds", str(seeds)]))
    fams = collections.defaultdict(list)
    for name, spec in CATALOGUE.items():
        fams[spec.family].append(name)
    for fam, names in fams.items():
        click.echo(f"{fam} ({len(names)}): " + " ".join(n[len("relax."):] for n in names))
    click.echo(f"{len(CATALOGUE)} ops")


@cli.group(name="env")
def env_group():
    """Other TVM releases: one virtualenv each under $TVMFUZZ_HOME/envs (default
    ~/.cache/tvmfuzz), for --env VERSION and `tvmfuzz bisect`."""


@env_group.command(name="add")
@click.argument("version")
@click.option("--with", "frontends", multiple=True, metavar="FRONTEND",
              help="also install a frontend's packages (onnx: onnx and onnxruntime, at the "
                   "versions tvmfuzz runs with here), so --ir onnx runs on that release; "
                   "repeatable, and adds to an env that exists")
def env_add(version, frontends):
    """Install apache-tvm==VERSION (with the apache-tvm-ffi it works with, numpy, ml_dtypes)
    into its own virtualenv and check that it imports and prints a module."""
    from worker.releases import ReleaseError, add

    try:
        rel, created = add(version, echo=click.echo, frontends=frontends)
    except ReleaseError as e:
        raise click.UsageError(f"env add {version}: {e}")
    what = "installed" if created else "already installed:"
    click.echo(f"{what} apache-tvm {rel.tvm} (apache-tvm-ffi {rel.ffi or '?'}) in {rel.path}")
    click.echo(f"python: {rel.python}")


@env_group.command(name="list")
@FORMAT_OPT
def env_list(fmt):
    """The default release (installed with tvmfuzz) and each installed env."""
    from worker.releases import all_releases, envs_dir

    rels = all_releases()
    if fmt == "json":
        click.echo(json.dumps({"home": str(envs_dir().parent),
                               "releases": [r.to_json() for r in rels]}, indent=1))
        return
    rows = [("release", "tvm", "ffi", "python")] + [
        (r.version + (" (default)" if r.default else ""), r.tvm, r.ffi or "?", r.python)
        for r in rels]
    w = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        click.echo(f"{row[0]:<{w[0]}}  {row[1]:<{w[1]}}  {row[2]:<{w[2]}}  {row[3]}")
    if len(rels) == 1:
        click.echo(f"no other releases in {envs_dir()}; add one with `tvmfuzz env add 0.26.0`")


@env_group.command(name="remove")
@click.argument("version")
def env_remove(version):
    """Delete the env of release VERSION."""
    from worker.releases import ReleaseError, remove

    try:
        path = remove(version)
    except ReleaseError as e:
        raise click.UsageError(f"env remove {version}: {e}")
    click.echo(f"removed {path}")


@cli.command(name="bisect")
@click.argument("case")
@FORMAT_OPT
@click.option("--times", type=click.IntRange(min=1), default=1, show_default=True,
              help="runs per release (the verdict is the first run's; the table shows how "
                   "many reproduced)")
@click.option("--timeout", type=Duration(), default="120s", show_default=True)
@CORPUS_OPT
@ENTRY_OPT
@JAIL_OPT
def bisect_cmd(case, fmt, times, timeout, corpus_dir, entry, jail_on):
    """Replay a finding (case JSON, TVMScript file, reducer directory or corpus bucket) on the
    default release and every installed env: present, absent, different or error on each."""
    from worker.bisect import BisectError, bisect, format_table, load_subject

    try:
        subject = load_subject(case, corpus_dir, entry)
    except BisectError as e:
        raise click.UsageError(str(e))
    log = (lambda s: click.echo(s, err=True)) if fmt == "text" else (lambda s: None)
    result = bisect(subject, times=times, timeout=timeout, log=log,
                    jail=_jail(jail_on, corpus_dir))
    click.echo(json.dumps(result, indent=1) if fmt == "json" else format_table(result))
    if subject.case_dir is not None:
        from reducer.report import update_affected

        try:
            update_affected(subject.case_dir, result)
        except OSError as e:
            raise click.ClickException(f"cannot write bisect.json: {e}")
        if fmt == "text":
            click.echo(f"wrote bisect.json and report.md's \"Affected versions\" in "
                       f"{subject.case_dir}")
    sys.exit(0)


def _open_corpus(path: str):
    """An existing corpus, or a one-line usage error (exit 2) naming the path."""
    from corpus import Corpus, CorpusError

    try:
        return Corpus(Path(path), create=False)
    except CorpusError as e:
        raise click.UsageError(str(e))


@cli.command()
@CORPUS_OPT
@FORMAT_OPT
@click.option("--buckets", "flat", is_flag=True,
              help="list the buckets (one per signature) instead of the bugs")
def findings(corpus_dir, fmt, flat):
    """List the corpus's bugs (buckets grouped by root cause), new ones first, with their
    status (new, known, expected), bucket count and finding count. --buckets: the flat list of
    buckets (one per signature), most frequent first. JSON gives both levels (a bug's buckets
    under its "buckets")."""
    from corpus import format_buckets, format_bugs

    with _open_corpus(corpus_dir) as c:
        if flat:
            buckets = c.buckets()
            click.echo(json.dumps(buckets, indent=1) if fmt == "json"
                       else format_buckets(buckets))
            return
        bugs = c.bugs()
    if fmt == "json":
        from fuzz.triage import STATUSES

        click.echo(json.dumps({"bugs": bugs, "totals": {
            "bugs": len(bugs), **{s: sum(g["status"] == s for g in bugs) for s in STATUSES},
            "buckets": sum(g["bucket_count"] for g in bugs),
            "findings": sum(g["count"] for g in bugs)}}, indent=1))
    else:
        click.echo(format_bugs(bugs))


@cli.command()
@click.argument("bucket", metavar="ID")
@CORPUS_OPT
@FORMAT_OPT
def show(bucket, corpus_dir, fmt):
    """Show one bucket (signature, status, outcome, case, TVMScript) or one bug (key, status
    and reason, its buckets): its id, or a unique prefix."""
    from corpus import UnknownBucket, format_bucket, format_bug

    with _open_corpus(corpus_dir) as c:
        try:
            what, ident = c.resolve(bucket)
            b = c.bucket(ident) if what == "bucket" else c.bug(ident)
        except UnknownBucket as e:
            raise click.UsageError(str(e))
    if what == "bug":
        click.echo(json.dumps(b, indent=1) if fmt == "json" else format_bug(b))
        return
    b["replay"] = f"tvmfuzz replay {b['case_path']}"
    click.echo(json.dumps(b, indent=1) if fmt == "json" else format_bucket(b))


@cli.command()
@click.argument("bug")
@click.option("--known", "url", default=None, metavar="URL",
              help="the bug is a known TVM bug: the issue that reports it")
@click.option("--not-a-bug", "reason", default=None, metavar="REASON",
              help="the behaviour is intended: why")
@click.option("--reset", is_flag=True, help="forget the verdict recorded for BUG")
@CORPUS_OPT
def triage(bug, url, reason, reset, corpus_dir):
    """Record your verdict on a bug (its id, a unique prefix, or one of its buckets' ids) in
    the corpus: `findings`, campaign summaries and `smoke --corpus` then count it known or
    expected instead of new."""
    from corpus import CorpusError, UnknownBucket, UnknownBug

    given = [x for x in (url, reason) if x is not None] + ([True] if reset else [])
    if len(given) != 1:
        raise click.UsageError("give exactly one of --known URL, --not-a-bug REASON, --reset")
    if (url is not None and not url.strip()) or (reason is not None and not reason.strip()):
        raise click.UsageError("--known and --not-a-bug need a non-empty argument")
    with _open_corpus(corpus_dir) as c:
        try:
            what, ident = c.resolve(bug)
        except UnknownBucket as e:
            raise click.UsageError(str(e) if "ambiguous" in str(e)
                                   else f"no bug {bug!r} in corpus {corpus_dir}")
        if what == "bucket":
            ident = c.bug_of(ident)
        try:
            verdict = None if reset else ("known" if url is not None else "not-a-bug")
            ident = c.set_verdict(ident, verdict, (url or reason or "").strip())
            g = c.bug(ident)
        except (UnknownBug, CorpusError) as e:
            raise click.UsageError(str(e))
    click.echo(f"bug {ident} ({g['bucket_count']} buckets, {g['count']} findings): "
               f"{g['status']}: {g['status_reason']}")


def main(argv=None) -> int:
    try:
        cli.main(args=argv, prog_name="tvmfuzz", standalone_mode=False)
    except click.UsageError as e:
        click.echo(f"tvmfuzz: error: {e.format_message()}", err=True)
        return 2
    except click.Abort:
        click.echo("tvmfuzz: interrupted", err=True)
        return 130
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except click.ClickException as e:
        click.echo(f"tvmfuzz: error: {e.format_message()}", err=True)
        return e.exit_code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The deployment as shipped: the package installed with no extras into a fresh virtualenv
(what the Dockerfile does), then the compose stack's own commands and environment, read from
docker-compose.yml, run outside Docker against a real redis-server with a password.

Marked ``deploy`` (a pip install, a worker, a 30 s campaign: a few minutes): run with
``python3 -m pytest -m deploy --deploy tests/test_deploy.py`` (.ci/run does).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_distributed import RedisServer, Worker, needs_redis

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "deploy0test0c2b8e41"


# --- reading docker-compose.yml and the Dockerfile ------------------------------------------
def _scalar(text: str):
    text = text.strip()
    if text.startswith('"'):
        return json.loads(text)
    if text.startswith("'"):
        return text[1:-1].replace("''", "'")
    return re.split(r"\s+#", text, maxsplit=1)[0]


def parse_compose(text: str) -> dict:
    """docker-compose.yml as nested dicts and lists. No YAML library is a dependency, so the
    file keeps to this subset: mappings by indentation (two spaces), ``- item`` lists of plain
    scalars, flow lists written as JSON (``["a", "b"]``, which may span lines, with no comment
    inside), double-quoted (JSON escapes) or plain scalars (a `` #`` comment may follow a plain
    one), whole-line comments, and one anchor per mapping (``key: &name``) merged with
    ``<<: *name`` (keys given beside a merge win)."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    root, anchors = {}, {}
    stack = [(-1, root)]
    i = 0
    while i < len(lines):
        line = lines[i]
        indent, item = len(line) - len(line.lstrip()), line.strip()
        i += 1
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if item.startswith("- "):
            assert isinstance(parent, list), f"a list item outside a list: {line!r}"
            parent.append(_scalar(item[2:]))
            continue
        key, sep, value = item.partition(":")
        assert sep and isinstance(parent, dict), f"not in the subset parse_compose reads: {line!r}"
        value = value.strip()
        if key == "<<":
            for k, v in anchors[value.lstrip("*")].items():
                parent.setdefault(k, v)
        elif value.startswith("["):
            while value.count("[") > value.count("]"):
                value += " " + lines[i].strip()
                i += 1
            parent[key] = json.loads(value)
        elif value == "" or value.startswith("&"):
            child = [] if i < len(lines) and lines[i].strip().startswith("- ") else {}
            parent[key] = child
            if value:
                anchors[value[1:]] = child
            stack.append((indent, child))
        else:
            parent[key] = _scalar(value)
    return root


def interpolate(value, env: dict):
    """Compose's interpolation: ``$$``, ``${NAME}``, ``${NAME:-default}``, ``${NAME:?error}``."""
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}

    def one(m):
        if m.group(0) == "$$":
            return "$"
        name, op, arg = m.group(1), m.group(2), m.group(3)
        got = env.get(name, "")
        if op == ":?" and not got:
            raise AssertionError(f"compose would refuse to start: {arg}")
        return got or (arg if op == ":-" else "")
    return re.sub(r"\$\$|\$\{(\w+)(?:(:-|:\?)([^}]*))?\}", one, value)


def compose() -> dict:
    return parse_compose((ROOT / "docker-compose.yml").read_text())


def test_parse_compose_reads_the_stack():
    services = compose()["services"]
    assert set(services) == {"redis", "worker", "coordinator", "flower"}
    assert services["worker"]["environment"] == services["coordinator"]["environment"]
    assert services["worker"]["depends_on"]["redis"]["condition"] == "service_healthy"
    assert services["coordinator"]["volumes"] == ["corpus:/data"]
    assert services["coordinator"]["entrypoint"] == ["sh", "-c"]
    assert "ports" not in services["redis"], "Redis must not be published"
    nets = compose()["networks"]
    assert nets["tvmfuzz"]["internal"] == "true"
    assert all(s["networks"] == ["tvmfuzz"] for k, s in services.items() if k != "flower")
    # Flower (Celery's monitor) is optional, and published on the host's loopback only
    flower = services.pop("flower")
    assert flower["profiles"] == ["monitor"] and flower["build"]["args"]["EXTRAS"] == "[monitor]"
    assert flower["ports"] == ["127.0.0.1:5555:5555"] and "internal" not in nets["monitor"]
    fenv = interpolate(flower["environment"], {"TVMFUZZ_REDIS_PASSWORD": "pw"})
    assert fenv == {"CELERY_BROKER_URL": "redis://:pw@redis:6379/0",
                    "FLOWER_BASIC_AUTH": "fuzz:pw"}
    env = interpolate(services["worker"]["environment"], {"TVMFUZZ_REDIS_PASSWORD": "pw"})
    assert env["TVMFUZZ_BROKER"] == "redis://:pw@redis:6379/0"
    with pytest.raises(AssertionError, match="refuse to start"):
        interpolate(services["worker"]["environment"], {})


def dockerfile_source(dest: Path) -> list:
    """Copy what the Dockerfile's COPY lines copy into ``dest``; its ENTRYPOINT."""
    entrypoint = None
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            *srcs, to = line.split()[1:]
            for src in srcs:
                target = dest / to / Path(src).name if to.endswith("/") else dest / to
                if (ROOT / src).is_dir():
                    shutil.copytree(ROOT / src, target,
                                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(ROOT / src, target)
        elif line.startswith("ENTRYPOINT "):
            entrypoint = json.loads(line.split(None, 1)[1])
    return entrypoint


# --- the test -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh virtualenv (no system site-packages) with the package installed as the
    Dockerfile installs it: ``pip install .``, no extras."""
    tmp = tmp_path_factory.mktemp("deploy")
    src = tmp / "src"
    entrypoint = dockerfile_source(src)
    env_dir = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=300)
    t = time.monotonic()
    r = subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "--no-input",
                        "--disable-pip-version-check", "--quiet", str(src)],
                       capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, f"pip install failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    print(f"pip install: {time.monotonic() - t:.0f}s")
    bin_dir = env_dir / "bin"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "TVMFUZZ_"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    data = tmp / "data"          # the image's working directory (/data)
    data.mkdir()
    where = subprocess.run([str(bin_dir / "python"), "-c", "import worker; print(worker.__file__)"],
                           cwd=data, env=env, capture_output=True, text=True, check=True)
    assert where.stdout.startswith(str(env_dir)), "the test would not run the installed package"
    return {"bin": bin_dir, "entrypoint": [str(bin_dir / entrypoint[0]), *entrypoint[1:]],
            "env": env, "data": data, "tmp": tmp}


def one_line_error(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tvmfuzz: error: "), r.stderr[-2000:]
    return lines[0]


@pytest.mark.deploy
def test_compose_stack_from_a_fresh_install(venv, tmp_path):
    needs_redis()
    services = compose()["services"]
    settings = {"TVMFUZZ_REDIS_PASSWORD": PASSWORD, "TVMFUZZ_TIME": "30s"}
    redis_cmd = interpolate(services["redis"]["command"], settings)
    assert redis_cmd[0] == "redis-server"
    redis_server = RedisServer(tmp_path, password=PASSWORD, args=redis_cmd[1:])
    redis_server.start()
    worker = None
    try:
        port = redis_server.port
        # The healthcheck, with the redis service's environment (its password).
        check = services["redis"]["healthcheck"]["test"]
        assert check[0] == "CMD-SHELL"
        if shutil.which("redis-cli"):
            for auth, healthy in ((PASSWORD, True), ("wrong", False)):
                redis_env = interpolate(services["redis"]["environment"],
                                        {**settings, "TVMFUZZ_REDIS_PASSWORD": auth})
                r = subprocess.run(["sh", "-c", check[1].replace("redis-cli",
                                                                 f"redis-cli -p {port}")],
                                   env={**os.environ, **redis_env}, capture_output=True)
                assert (r.returncode == 0) == healthy, (auth, r)
        # Workers and coordinator: compose's environment, the service "redis" on our port.
        env = dict(venv["env"], **{
            k: v.replace("@redis:6379/", f"@127.0.0.1:{port}/") for k, v in
            interpolate(services["worker"]["environment"], settings).items()})
        assert env["TVMFUZZ_BROKER"] == redis_server.url

        def tvmfuzz(*args, **kw):
            return subprocess.run([*venv["entrypoint"], *args], cwd=venv["data"],
                                  env=kw.pop("env", env), capture_output=True, text=True,
                                  timeout=kw.pop("timeout", 120), **kw)
        # Refusals: one line, exit 2, before any work (and no traceback).
        bare = f"redis://127.0.0.1:{port}/0"
        line = one_line_error(tvmfuzz("run", "--broker", bare, "--time", "5s", "--out", "x"))
        assert "has no password" in line and not (venv["data"] / "x").exists()
        line = one_line_error(tvmfuzz("worker", "--concurrency", "1", env=dict(
            env, TVMFUZZ_BROKER=f"redis://:wrong@127.0.0.1:{port}/0")))
        assert "refused the URL's credentials" in line
        line = one_line_error(tvmfuzz("run", "--broker", f"redis://:wrong@127.0.0.1:{port}/0",
                                      "--time", "5s", "--out", "x"))
        assert "refused the URL's credentials" in line

        wcmd = interpolate(services["worker"]["command"], settings)
        worker = Worker(None, tmp_path / "worker.log", argv=[*venv["entrypoint"], *wcmd],
                        env=env, cwd=venv["data"])
        coordinator = interpolate(services["coordinator"]["entrypoint"]
                                  + services["coordinator"]["command"], settings)
        for budget, resumed in (("30s", False), ("5s", True)):
            t = time.monotonic()
            r = subprocess.run(interpolate(coordinator, dict(settings, TVMFUZZ_TIME=budget)),
                               cwd=venv["data"], env=env, capture_output=True, text=True,
                               timeout=300)
            print(f"coordinator ({budget}): {time.monotonic() - t:.0f}s")
            assert r.returncode == 0, f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
            assert r.stdout.startswith("resuming campaign") == resumed, r.stdout[:500]
            summary = json.loads((venv["data"] / "campaign" / "summary.json").read_text())
            if not resumed:
                assert summary["cases"] > 0, summary
                names = summary["distributed"]["workers"]
                assert names and all(n.startswith(worker.name) for n in names), names
                assert (venv["data"] / "corpus").is_dir()
        assert "Traceback" not in worker.text()
    finally:
        if worker is not None:
            worker.kill()
        redis_server.stop()

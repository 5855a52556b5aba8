"""The official SARIF 2.1.0 JSON schema for validation, from the npm package that ships it
(@microsoft/jest-sarif, lib/schemas/sarif-2.1.0-rtm.5.json). .ci/run fetches it into .cache/;
elsewhere it is fetched on first use with npm, when npm is there."""
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache"
SCHEMA = CACHE / "sarif-2.1.0.json"
PACKAGE = "@microsoft/jest-sarif@1.0.0-beta.0"
MEMBER = "package/lib/schemas/sarif-2.1.0-rtm.5.json"


def sarif_schema():
    """The schema as a dict, or None when it cannot be had (no npm, no registry)."""
    if not SCHEMA.exists():
        if shutil.which("npm") is None:
            return None
        CACHE.mkdir(exist_ok=True)
        r = subprocess.run(["npm", "pack", PACKAGE, "--pack-destination", str(CACHE)],
                           capture_output=True, text=True, timeout=120)
        tgz = [p for p in CACHE.glob("microsoft-jest-sarif-*.tgz")]
        if r.returncode != 0 or not tgz:
            return None
        with tarfile.open(tgz[0]) as tar:
            SCHEMA.write_bytes(tar.extractfile(MEMBER).read())
    return json.loads(SCHEMA.read_text())


if __name__ == "__main__":
    print("ok" if sarif_schema() else "unavailable")

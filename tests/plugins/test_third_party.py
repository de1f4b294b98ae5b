"""A third-party driver, installed with pip into a separate environment, is found and used by the core; once
uninstalled it is gone. Nothing is installed into the project's own virtualenv.

The separate environment is a fresh venv that sees the project's packages through a ``.pth`` file, so the
only difference between the runs is the example package in its own site-packages.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hami-vendor-acme"

USE_IT = """
import json, sys
from hami_core import DeviceInfo
from hami_core.plugins import load_drivers
manager, (driver,) = load_drivers(["acme"], {"acme": "acme.com/gpu-shared"})
rules = driver.rules()
value = rules.codec.encode([DeviceInfo(id="ACME-0", count=4, devmem=32768, devcore=100, type="X1",
                                       health=True)])
print(json.dumps({
    "register": rules.register_annotation, "handshake": rules.handshake_annotation,
    "count": rules.count_resource, "liveness": rules.liveness.name, "value": value,
    "decoded": [d.id for d in rules.codec.decode(value)],
    "discovered": [d.id for d in manager.discover_devices(driver, "node-1")],
    "package": driver.package,
}))
"""


class Env:
    """A venv of its own, sharing the project's installed packages, with pip driven from outside."""

    def __init__(self, root: Path) -> None:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
        self.python = root / "bin" / "python"
        site = Path(self.run("import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
        shared = sysconfig.get_paths()["purelib"]
        (site / "project-packages.pth").write_text(f"import site; site.addsitedir({shared!r})\n")

    def run(
        self, code: str, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.python), "-c", code, *args], capture_output=True, text=True, timeout=120, env=env
        )

    def pip(self, *args: str) -> None:
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(self.python), "--quiet", *args],
            check=True,
            timeout=300,
        )

    def vendors(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(
            "from hami_core.cli import main; main()", "vendors", *args, env={"PATH": "/usr/bin:/bin"}
        )


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Env:
    return Env(tmp_path_factory.mktemp("third-party") / "venv")


def test_install_discover_use_uninstall(env: Env, tmp_path: Path) -> None:
    before = env.vendors("--json")
    assert before.returncode == 0, before.stderr
    assert not [e for e in json.loads(before.stdout) if e["name"] == "acme"]

    source = tmp_path / "source"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    env.pip("install", "--no-deps", "--no-build-isolation", "--no-index", str(source))

    listed = env.vendors("--json", "--vendors", "acme")
    assert listed.returncode == 0, listed.stderr
    entries = json.loads(listed.stdout)
    assert [e["name"] for e in entries] == ["acme"]
    assert {(e["package"], e["version"], e["encoding"]) for e in entries} == {
        ("hami-vendor-acme", "0.1.0", "legacy")
    }

    devices = tmp_path / "devices.json"
    devices.write_text(json.dumps({"acme": [{"id": "ACME-7", "health": True}]}))
    used = env.run(USE_IT, env={"PATH": "/usr/bin:/bin", "HAMI_FAKE_DEVICES": str(devices)})
    assert used.returncode == 0, used.stderr
    assert json.loads(used.stdout) == {
        "register": "hami.io/node-acme-register",
        "handshake": "hami.io/node-handshake-acme",
        "count": "acme.com/gpu-shared",
        "liveness": "handshake",
        "value": "ACME-0,4,32768,100,X1,0,true,0,:",
        "decoded": ["ACME-0"],
        "discovered": ["ACME-7"],
        "package": "hami-vendor-acme",
    }

    env.pip("uninstall", "--yes", "hami-vendor-acme")
    after = env.vendors("--json")
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout) == json.loads(before.stdout)
    gone = env.vendors("--vendors", "acme")
    assert gone.returncode == 2
    assert "unknown vendor driver 'acme'" in gone.stderr

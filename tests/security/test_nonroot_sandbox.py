"""Without root (issue #13): a hostile script runs contained under bubblewrap (unprivileged user namespaces),
and where neither root namespaces nor bubblewrap work the sandbox refuses to run it, saying how to opt out.

The test drops to uid 65534 with ``setpriv`` and runs the sandbox module from a copy readable by that uid
(the checkout may live in a directory it cannot enter), with Debian's system Python."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

import prism_fast

PYTHON = "/usr/bin/python3"
SETPRIV = shutil.which("setpriv") or "setpriv"
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not Path(PYTHON).exists(),
                                reason="needs root (to drop to uid 65534 with setpriv) and the system Python")

DRIVER = textwrap.dedent("""
    import json, os, sys, tempfile
    from prism_fast.execute import sandbox
    work = tempfile.mkdtemp(dir=sys.argv[1])
    secret = os.path.join(sys.argv[1], "host_secret.txt")
    code = (
        "import os, socket\\n"
        "seen = os.path.exists(%r)\\n"
        "try:\\n"
        "    socket.create_connection(('127.0.0.1', 1), timeout=1); net = 'open'\\n"
        "except OSError as e:\\n"
        "    net = 'blocked'\\n"
        "open('mine.txt', 'w').write('ok')\\n"
        "print(os.getuid(), seen, net, len([p for p in os.listdir('/proc') if p.isdigit()]))\\n" % secret)
    spec = sandbox.SandboxSpec(argv=[sys.executable, "-c", code], cwd=work,
                               env=sandbox.scrub_env(os.environ, home=work), timeout_s=60,
                               interpreters=(sys.executable,))
    r = sandbox.run_sandboxed(spec)
    print(json.dumps({"level": r.sandbox, "rc": r.returncode, "out": r.stdout.text(), "err": r.stderr.text(),
                      "launch": r.launch_error, "prot": list(r.protections), "files": os.listdir(work)}))
""")


def _copy_sandbox_modules(dest: Path) -> Path:
    src = Path(prism_fast.__file__).parent
    pkg = dest / "lib" / "prism_fast"
    (pkg / "execute").mkdir(parents=True)
    shutil.copy(src / "__init__.py", pkg / "__init__.py")
    for name in ("__init__.py", "sandbox.py", "jail.py"):
        shutil.copy(src / "execute" / name, pkg / "execute" / name)
    return dest / "lib"


def _run_as_nobody(tmp_path: Path, path_env: str) -> dict:
    base = tmp_path / "nonroot"
    base.mkdir()
    lib = _copy_sandbox_modules(base)
    (base / "driver.py").write_text(DRIVER)
    (base / "host_secret.txt").write_text("not for the script")
    for p in [base, *base.rglob("*")]:
        os.chmod(p, 0o777 if p.is_dir() else 0o644)
    for parent in tmp_path.parents:  # the uid must be able to walk down to its directory
        if parent == Path("/"):
            break
        os.chmod(parent, os.stat(parent).st_mode | 0o011)
    os.chmod(tmp_path, 0o711)
    env = {"PATH": path_env, "PYTHONPATH": str(lib), "LANG": "C.UTF-8"}
    proc = subprocess.run([SETPRIV, "--reuid", "65534", "--regid", "65534", "--clear-groups",
                           PYTHON, str(base / "driver.py"), str(base)], env=env, capture_output=True, text=True,
                          timeout=120, cwd=str(base))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_hostile_script_is_contained_by_bubblewrap_without_root(tmp_path):
    if not shutil.which("bwrap"):
        pytest.fail("bubblewrap missing: scripts/install_system_deps.sh installs it")
    r = _run_as_nobody(tmp_path, "/usr/local/bin:/usr/bin:/bin")
    if r["level"] == "refused":
        pytest.skip(f"this host lacks unprivileged user namespaces: {r['launch']}")
    assert r["level"] == "bwrap" and r["rc"] == 0, r
    uid, seen, net, procs = r["out"].split()
    assert (uid, seen, net) == ("65534", "False", "blocked") and int(procs) <= 2, r
    assert {"view", "user_ns", "pid_ns", "net_ns"} <= set(r["prot"])
    assert r["files"] == ["mine.txt"]


def test_without_root_or_bubblewrap_untrusted_code_is_refused(tmp_path):
    r = _run_as_nobody(tmp_path, "/nonexistent")  # no bwrap on PATH: nothing to contain the script with
    assert r["level"] == "refused" and r["rc"] is None and r["files"] == []
    assert "execute.sandbox=unsafe" in r["launch"]

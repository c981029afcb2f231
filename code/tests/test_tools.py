"""The install tools: pinned Python packages, find-jdk, install-system-deps, install_kernels.py.

find-jdk and install-system-deps run for real, on fake JDK homes made in tmp_path (a bin/java
that answers -XshowSettings:properties like a JDK of a given feature release) and, for
install-system-deps, stub dpkg-query, apt-cache and apt-get first on PATH.
"""
import importlib.util
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, venv_env

TOOLS = ROOT / "code" / "tools"
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
FIX = "run `make constraints` after changing requirements.txt, or `make setup` to install the pins"


# --- Python packages: requirements.txt names them, constraints.txt pins everything ---------------

def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path: Path) -> dict:
    """name -> version of every `name==version` line; fails on any other requirement line."""
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^=\s;]+)", line)
        assert m, f"{path.name}: not pinned with ==: {line!r}"
        name = canonical(m.group(1))
        assert name not in out, f"{path.name}: {name} twice"
        out[name] = m.group(3)
    return out


def installed() -> dict:
    """name -> version of every distribution in the project's venv (pip, the installer, aside)."""
    proc = subprocess.run([str(VENV_PYTHON), "-m", "pip", "freeze", "--all", "--exclude-editable",
                           "--disable-pip-version-check"],
                          capture_output=True, text=True, check=True)
    out = {}
    for line in proc.stdout.splitlines():
        if " @ " in line or line.startswith("-e"):
            continue  # a local or editable install: not the project's to pin
        name, version = line.split("==")
        if canonical(name) != "pip":
            out[canonical(name)] = version
    return out


def test_requirements_are_pinned_and_agree_with_constraints():
    direct = pins(ROOT / "requirements.txt")
    locked = pins(ROOT / "constraints.txt")
    assert len(direct) >= 10
    for name, version in direct.items():
        assert locked.get(name) == version, \
            f"requirements.txt pins {name}=={version}, constraints.txt {locked.get(name)}: {FIX}"


def test_venv_matches_constraints():
    locked = pins(ROOT / "constraints.txt")
    have = installed()
    assert "sphinx-thebe" in have  # a transitive dependency (code/tools/book_site.py depends on its version)
    unpinned = sorted(f"{n}=={v}" for n, v in have.items() if n not in locked)
    absent = sorted(f"{n}=={v}" for n, v in locked.items() if n not in have)
    differ = sorted(f"{n}: installed {have[n]}, pinned {locked[n]}"
                    for n in have.keys() & locked.keys() if have[n] != locked[n])
    assert not (unpinned or absent or differ), \
        f"venv and constraints.txt differ ({FIX}):\n  installed, not pinned: {unpinned}\n" \
        f"  pinned, not installed: {absent}\n  other version: {differ}"


SYSTEM_PYTHON = Path("/usr/bin/python3")


def python_version(python) -> str:
    return subprocess.run([str(python), "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_the_pins_resolve_under_the_oldest_python_the_makefile_names():
    """make constraints resolves under OLDEST_PYTHON, and the README says the same range."""
    oldest = re.search(r"^OLDEST_PYTHON := (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    assert f"Python {oldest}" in (ROOT / "README.md").read_text()
    proc = subprocess.run(["make", "-s", "constraints", "PIN_PYTHON=/nonexistent/python"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and f"Python {oldest}" in proc.stderr  # refused before touching anything


@pytest.mark.skipif(not SYSTEM_PYTHON.exists(), reason="no /usr/bin/python3 on this machine")
def test_the_pins_install_on_the_system_python(tmp_path):
    """The README's Python is Debian's own (3.11.2 on Debian 12), which may be older than the one
    building .venv: the installer's resolver, in dry-run mode, must find every pin installable under it
    (soupsieve 4.1.2, which needs 3.11.5, made `make book` fail there)."""
    system = python_version(SYSTEM_PYTHON)
    if system == python_version(VENV_PYTHON):
        pytest.skip(f"/usr/bin/python3 is the venv's Python ({system}): the install itself checks it")
    venv = tmp_path / "venv"
    made = subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(venv)], capture_output=True,
                          text=True)
    assert made.returncode == 0, f"python3 -m venv failed under {system} (apt-get install python3-venv): {made.stderr}"
    # uv, the installer the Makefile uses, resolves the pins for that interpreter (pip's resolver took 15 s here)
    proc = subprocess.run([str(VENV_PYTHON.parent / "uv"), "pip", "install", "--dry-run", "--quiet", "--python",
                           str(venv / "bin" / "python"), "-r", "requirements.txt", "-c", "constraints.txt"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "UV_CACHE_DIR": str(ROOT / ".cache" / "uv")})
    assert proc.returncode == 0, \
        f"the pins do not install under /usr/bin/python3 ({system}); {FIX} (it resolves under " \
        f"the oldest Python):\n{proc.stdout[-2000:]}{proc.stderr[-3000:]}"


def test_binder_uses_the_pins_and_the_venv_python():
    binder = ROOT / "binder"
    refs = {}
    for line in (binder / "requirements.txt").read_text().splitlines():
        if line.startswith(("-r ", "-c ")):
            refs[line[:2]] = (binder / line[3:].strip()).resolve()
    assert refs == {"-r": ROOT / "requirements.txt", "-c": ROOT / "constraints.txt"}
    minor = subprocess.run([str(VENV_PYTHON), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert (binder / "runtime.txt").read_text().strip() == f"python-{minor}"


def test_makefile_installs_with_constraints_and_reinstalls_when_they_change(tmp_path):
    # A copy of the Makefile in a fake project whose venv stamp is up to date.
    for rel in ("requirements.txt", "constraints.txt", "code/tools/install_kernels.py",
                "code/tools/find-jdk", ".venv/bin/python"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    (tmp_path / ".venv/bin/python").chmod(0o755)
    (tmp_path / "Makefile").write_text((ROOT / "Makefile").read_text())
    stamp = tmp_path / ".venv/.stamp"
    stamp.write_text("")
    os.utime(stamp, (2_000_000_000, 2_000_000_000))

    def dry_run() -> str:
        return subprocess.run(["make", "-n", ".venv/.stamp"], cwd=tmp_path, capture_output=True,
                              text=True, check=True).stdout

    assert "pip" not in dry_run()
    os.utime(tmp_path / "constraints.txt", (2_000_000_100, 2_000_000_100))
    steps = dry_run()
    # uv, at its pinned version, installs the pins (pip's resolver took a minute of every fresh build),
    # into the environment, with its cache in the project
    assert re.search(r"-m pip install .*-c constraints\.txt uv$", steps, re.M)
    assert re.search(r"UV_CACHE_DIR=\S*/\.cache/uv \S*/bin/uv pip install --python \S*/bin/python .*"
                     r"[\s\\]+-r requirements\.txt -c constraints\.txt", steps)
    assert "uv" in pins(ROOT / "requirements.txt") and "uv" in pins(ROOT / "constraints.txt")


# --- find-jdk --------------------------------------------------------------------------------------

def fake_jdk(home: Path, feature: int, javac: bool = True) -> Path:
    """A JDK home whose bin/java reports java.specification.version = feature."""
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"""#!/bin/sh
if [ "$1" = "-XshowSettings:properties" ]; then
    echo "Property settings:" >&2
    echo "    java.specification.version = {feature}" >&2
    echo "    java.vendor = Fake" >&2
fi
echo 'openjdk version "{feature}" 2025-09-16' >&2
""")
    java.chmod(0o755)
    if javac:
        (home / "bin" / "javac").write_text("#!/bin/sh\nexit 0\n")
        (home / "bin" / "javac").chmod(0o755)
    return home


def jdk_env(jvm_dir: Path, java_home: Path | None = None, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["FIND_JDK_JVM_DIR"] = str(jvm_dir)
    if java_home is not None:
        env["JAVA_HOME"] = str(java_home)
    env.update(extra)
    return env


def find_jdk(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(TOOLS / "find-jdk"), *args], env=env, capture_output=True, text=True)


def test_find_jdk_prefers_java_home_when_it_is_21_or_newer(tmp_path):
    jvm = tmp_path / "jvm"
    fake_jdk(jvm / "temurin-25", 25)
    home = fake_jdk(tmp_path / "opt" / "jdk-21", 21)
    proc = find_jdk(jdk_env(jvm, home))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{home}\n"


def test_find_jdk_picks_the_newest_in_the_jvm_dir_when_java_home_is_too_old(tmp_path):
    jvm = tmp_path / "jvm"
    old = fake_jdk(jvm / "java-17-openjdk", 17)
    fake_jdk(jvm / "openjdk-21", 21)
    newest = fake_jdk(jvm / "temurin-25", 25)
    fake_jdk(jvm / "zulu-22", 22)                      # listed last, but not the newest
    (jvm / "default-java").symlink_to(newest)          # links are skipped, their target is not
    proc = find_jdk(jdk_env(jvm, old))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{newest}\n"
    # With no JAVA_HOME at all, the same.
    assert find_jdk(jdk_env(jvm)).stdout == f"{newest}\n"
    # The minimum is an argument.
    assert find_jdk(jdk_env(jvm, old), "17").stdout == f"{old}\n"


def test_find_jdk_rejects_a_home_without_javac(tmp_path):
    jvm = tmp_path / "jvm"
    jre = fake_jdk(jvm / "jre-25", 25, javac=False)
    jdk = fake_jdk(jvm / "jdk-21", 21)
    assert find_jdk(jdk_env(jvm)).stdout == f"{jdk}\n"
    assert find_jdk(jdk_env(jvm, jre)).stdout == f"{jdk}\n"


def test_find_jdk_with_none_says_what_to_install(tmp_path):
    jvm = tmp_path / "jvm"
    fake_jdk(jvm / "java-17-openjdk", 17)
    fake_jdk(jvm / "jre-21", 21, javac=False)
    proc = find_jdk(jdk_env(jvm))
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "no JDK 21 or newer found" in proc.stderr
    assert f"JAVA_HOME=<unset> and {jvm}/*" in proc.stderr
    assert "apt-get install openjdk-21-jdk-headless" in proc.stderr
    assert "export JAVA_HOME=" in proc.stderr
    # An empty or missing jvm directory is no different.
    assert find_jdk(jdk_env(tmp_path / "nowhere")).returncode == 1


# --- install-system-deps -------------------------------------------------------------------------

WANTED = [line.strip() for line in (TOOLS / "debian-packages.txt").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
INSTALL = "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends"


class FakeApt:
    """Stub dpkg-query (installed packages), apt-cache policy (offered ones) and apt-get."""

    def __init__(self, tmp_path: Path):
        self.dir = tmp_path / "stubs"
        self.dir.mkdir()
        self.installed = tmp_path / "installed.txt"
        self.offered = tmp_path / "offered.txt"
        self.apt_get_log = tmp_path / "apt-get.log"
        self.offered.write_text("")
        self.stub("dpkg-query", """
for last; do :; done
if grep -qx -- "$last" "$STUB_INSTALLED"; then printf 'install ok installed'; exit 0; fi
echo "dpkg-query: no packages found matching $last" >&2
exit 1
""")
        self.stub("apt-cache", """
[ "$1" = policy ] || exit 100
line=$(grep -- "^$2 " "$STUB_OFFERED") || exit 0   # apt knows nothing of it: no output
printf '%s:\\n  Installed: (none)\\n  Candidate: %s\\n  Version table:\\n' "$2" "${line#* }"
""")
        self.stub("apt-get", 'echo "$@" >> "$STUB_APT_GET_LOG"; exit 1\n')

    def stub(self, name: str, body: str) -> None:
        path = self.dir / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)

    def run(self, jvm_dir: Path, installed, offered=(), java_home=None):
        self.installed.write_text("".join(f"{p}\n" for p in installed))
        self.offered.write_text("".join(f"{p} {v}\n" for p, v in offered))
        env = jdk_env(jvm_dir, java_home, PATH=f"{self.dir}:/usr/bin:/bin", INSTALL_DEPS_DRY_RUN="1",
                      STUB_INSTALLED=str(self.installed), STUB_OFFERED=str(self.offered),
                      STUB_APT_GET_LOG=str(self.apt_get_log))
        proc = subprocess.run([str(TOOLS / "install-system-deps")], env=env, capture_output=True,
                              text=True)
        assert not self.apt_get_log.exists(), "apt-get ran in a dry run"
        return proc


@pytest.fixture
def apt(tmp_path):
    return FakeApt(tmp_path)


@pytest.fixture
def jdk21(tmp_path):
    jvm = tmp_path / "jvm"
    fake_jdk(jvm / "openjdk-21", 21)
    return jvm


@pytest.fixture
def no_jdk(tmp_path):
    jvm = tmp_path / "jvm"
    fake_jdk(jvm / "java-17-openjdk", 17)
    return jvm


def test_install_system_deps_does_nothing_when_all_present(apt, jdk21):
    proc = apt.run(jdk21, WANTED, offered=[("openjdk-25-jdk-headless", "25.0.1")])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"system packages: all {len(WANTED)} present\n"
    assert proc.stderr == ""


def test_install_system_deps_prints_the_command_for_what_is_missing(apt, jdk21):
    missing = ["wrk", "hyperfine", "chromium"]
    proc = apt.run(jdk21, [p for p in WANTED if p not in missing])
    assert proc.returncode == 1
    in_order = [p for p in WANTED if p in missing]
    assert f"error: missing system packages: {' '.join(in_order)}\n" in proc.stderr
    assert f"    sudo sh -c 'apt-get update && {INSTALL} {' '.join(in_order)}'\n" in proc.stderr
    assert proc.stdout == ""


def test_install_system_deps_adds_the_newest_jdk_apt_offers(apt, no_jdk):
    proc = apt.run(no_jdk, WANTED, offered=[("openjdk-21-jdk-headless", "21.0.9+10-1"),
                                            ("openjdk-25-jdk-headless", "25.0.1+8-1")])
    assert proc.returncode == 1
    assert f"sudo sh -c 'apt-get update && {INSTALL} openjdk-25-jdk-headless'\n" in proc.stderr

    proc = apt.run(no_jdk, [p for p in WANTED if p != "wrk"],
                   offered=[("openjdk-21-jdk-headless", "21.0.9+10-1"),
                            ("openjdk-25-jdk-headless", "(none)")])
    assert proc.returncode == 1
    assert f"sudo sh -c 'apt-get update && {INSTALL} wrk openjdk-21-jdk-headless'\n" in proc.stderr

    # JAVA_HOME at a JDK 17 changes nothing.
    proc = apt.run(no_jdk, WANTED, offered=[("openjdk-21-jdk-headless", "21.0.9+10-1")],
                   java_home=no_jdk / "java-17-openjdk")
    assert f"{INSTALL} openjdk-21-jdk-headless'\n" in proc.stderr


def test_install_system_deps_leaves_the_jdk_to_find_jdk_when_apt_offers_none(apt, no_jdk):
    proc = apt.run(no_jdk, WANTED, offered=[("openjdk-17-jdk-headless", "17.0.17+10-1"),
                                            ("openjdk-25-jdk-headless", "(none)")])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"system packages: all {len(WANTED)} present\n"
    assert "no JDK 21+ found" in proc.stderr

    proc = apt.run(no_jdk, [p for p in WANTED if p != "nginx"])
    assert proc.returncode == 1
    assert f"{INSTALL} nginx'\n" in proc.stderr


def test_debian_packages_include_what_apt_only_recommends():
    # clang's runtime libraries (ASan, libFuzzer): clang only recommends them, and
    # install-system-deps installs without recommends.
    assert "libclang-rt-dev" in WANTED
    assert "clang" in WANTED


# --- check-toolchain ------------------------------------------------------------------------------

def check_toolchain(tmp_path, clang_body=None):
    env = {**os.environ}
    if clang_body is not None:  # a clang that links nothing with a sanitizer, as without libclang-rt
        stub = tmp_path / "clang"
        stub.write_text("#!/bin/sh\n" + clang_body)
        stub.chmod(0o755)
        env["CLANG"] = str(stub)
    return subprocess.run([str(TOOLS / "check-toolchain")], env=env, capture_output=True, text=True)


def test_check_toolchain_builds_and_runs_asan_and_libfuzzer_programs(tmp_path):
    proc = check_toolchain(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "toolchain: ASan and libFuzzer programs build and run\n"


def test_check_toolchain_names_the_missing_package(tmp_path):
    # What clang 14 prints without libclang-rt-14-dev.
    missing = "/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a"
    proc = check_toolchain(tmp_path, clang_body=f"""
echo "/usr/bin/ld: cannot find {missing}: No such file or directory" >&2
echo "clang: error: linker command failed with exit code 1 (use -v to see invocation)" >&2
exit 1
""")
    assert proc.returncode == 1
    assert "error: cannot build a libFuzzer target with" in proc.stderr
    assert "error: cannot build an ASan program with" in proc.stderr
    assert "libclang_rt.fuzzer-x86_64.a" in proc.stderr
    assert "apt-get install libclang-rt-dev" in proc.stderr
    proc = check_toolchain(tmp_path, clang_body="exit 0\n")  # "links" but leaves no program
    assert proc.returncode == 1
    assert "builds but does not run" in proc.stderr


def test_install_system_deps_skips_a_jdk_already_installed(apt, no_jdk):
    # Installed but rejected by find-jdk (say, a broken home): installing it again would not help.
    proc = apt.run(no_jdk, [*WANTED, "openjdk-25-jdk-headless"],
                   offered=[("openjdk-25-jdk-headless", "25.0.1+8-1")])
    assert proc.returncode == 0, proc.stderr


# --- install_kernels.py --------------------------------------------------------------------------

def load_install_kernels():
    spec = importlib.util.spec_from_file_location("install_kernels", TOOLS / "install_kernels.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernel_specs() -> dict:
    """name -> directory, as the Makefile's environment resolves them."""
    code = ("import json; from jupyter_client.kernelspec import KernelSpecManager; "
            "print(json.dumps(KernelSpecManager().find_kernel_specs()))")
    proc = subprocess.run([str(VENV_PYTHON), "-c", code], env=venv_env(), capture_output=True,
                          text=True, check=True)
    return json.loads(proc.stdout)


def java_feature(java: str) -> int:
    out = subprocess.run([java, "-XshowSettings:properties", "-version"], capture_output=True,
                         text=True, timeout=60).stderr
    return int(re.search(r"java\.specification\.version = (\d+)", out).group(1))


def test_the_three_kernels_resolve_inside_the_venv():
    where = ROOT / ".venv" / "share" / "jupyter" / "kernels"
    specs = kernel_specs()
    for name in ("python3", "bash", "java"):
        assert name in specs, f"kernel {name} is not installed: make setup"
        assert Path(specs[name]).resolve() == (where / name).resolve()


def test_the_java_kernel_starts_on_a_jdk_21_or_newer():
    kernel = Path(kernel_specs()["java"])
    spec = json.loads((kernel / "kernel.json").read_text())
    java = spec["argv"][0]
    assert Path(java).is_absolute() and os.access(java, os.X_OK), java
    assert java_feature(java) >= 21
    assert (Path(java).parent / "javac").exists()
    assert spec["env"]["JAVA_HOME"] == str(Path(java).parent.parent)
    assert "{connection_file}" in spec["argv"]
    jar = spec["argv"][spec["argv"].index("-jar") + 1]
    assert (kernel / jar.replace("{resource_dir}/", "")).is_file()
    version = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0


def test_install_java_rewrites_the_spec_once(tmp_path, monkeypatch):
    ik = load_install_kernels()
    monkeypatch.setattr(ik, "KERNELS", tmp_path / "kernels")
    spec_file = tmp_path / "kernels" / "java" / "kernel.json"
    spec_file.parent.mkdir(parents=True)
    spec_file.write_text(json.dumps({
        "argv": ["java", "-jar", "{resource_dir}/jjava-launcher.jar", "{connection_file}"],
        "display_name": "Java", "language": "java", "interrupt_mode": "message", "env": {}}))
    jdk = fake_jdk(tmp_path / "jdk-25", 25)
    ik.install_java(jdk)
    spec = json.loads(spec_file.read_text())
    assert spec["argv"][0] == str(jdk / "bin" / "java")
    assert spec["argv"][-3:] == ["-jar", "{resource_dir}/jjava.jar", "{connection_file}"]
    assert spec["env"] == {"JAVA_HOME": str(jdk)}
    assert spec["language"] == "java" and spec["interrupt_mode"] == "message"
    os.utime(spec_file, (1_000_000_000, 1_000_000_000))
    ik.install_java(jdk)  # nothing changes: the file is left alone
    assert spec_file.stat().st_mtime == 1_000_000_000

    spec_file.unlink()
    with pytest.raises(SystemExit, match="jjava"):
        ik.install_java(jdk)


def test_install_kernels_uses_find_jdk(tmp_path, monkeypatch, capsys):
    ik = load_install_kernels()
    jvm = tmp_path / "jvm"
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("FIND_JDK_JVM_DIR", str(jvm))
    fake_jdk(jvm / "java-17", 17)
    with pytest.raises(SystemExit) as exit:
        ik.find_jdk()
    assert exit.value.code == 1
    assert "openjdk-21-jdk-headless" in capsys.readouterr().err
    jdk = fake_jdk(jvm / "jdk-21", 21)
    assert ik.find_jdk() == jdk


# --- make lab ----------------------------------------------------------------------------------------

def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_lab_serves_the_chapters_and_stops_with_nothing_left(tmp_path):
    """The README's `make lab` as whoever runs the tests (root on CI, where Jupyter refuses to
    start without --allow-root): it prints a URL with a token, /lab answers on it, and after
    SIGTERM to make's group no Jupyter process is left."""
    import signal
    import time
    import urllib.request
    port = free_port()
    env = {**os.environ, "BROWSER": "true", "LAB_PORT": str(port)}  # no browser window from a test
    log = tmp_path / "lab.log"
    with log.open("w") as out:
        proc = subprocess.Popen(["make", "-s", "lab"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        url = None
        deadline = time.monotonic() + 180
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            m = re.search(rf"(http://127\.0\.0\.1:{port}/lab\?token=[0-9a-f]+)", log.read_text())
            url = m.group(1) if m else time.sleep(0.5)
        assert url, f"make lab printed no URL (exit {proc.poll()}):\n{log.read_text()[-3000:]}"
        with urllib.request.urlopen(url, timeout=30) as resp:
            assert resp.status == 200 and b"JupyterLab" in resp.read()
        with urllib.request.urlopen(url.replace("/lab?", "/api/contents?"), timeout=30) as resp:
            listing = json.load(resp)
        assert {"intro.md"} <= {c["name"] for c in listing["content"]}  # it opens on book/, the chapters
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    left = subprocess.run(["pgrep", "-f", f"ServerApp.port={port}"], capture_output=True, text=True).stdout
    assert not left.strip(), f"make lab left processes behind: {left}"


def test_the_linter_make_test_runs_fails_on_an_unused_import_and_passes_clean_code(tmp_path):
    """make lint: ruff, pinned in requirements.txt, with the project's ruff.toml."""
    import shutil
    ruff = shutil.which("ruff", path=str(ROOT / ".venv" / "bin")) or shutil.which("ruff")
    assert ruff, "ruff is not installed: make setup installs it (requirements.txt)"
    (tmp_path / "bad.py").write_text("import os\n")
    (tmp_path / "good.py").write_text("import os\n\nprint(os.sep)\n")
    config = ["--config", str(ROOT / "ruff.toml")]
    bad = subprocess.run([ruff, "check", *config, str(tmp_path / "bad.py")], capture_output=True, text=True)
    good = subprocess.run([ruff, "check", *config, str(tmp_path / "good.py")], capture_output=True, text=True)
    assert bad.returncode == 1 and "F401" in bad.stdout, bad.stdout
    assert good.returncode == 0, good.stdout


def test_the_linter_reads_every_python_file_of_code():
    """ruff.toml's excludes leave no folder of code/ unread (an exclude named "book" once skipped iobench/book)."""
    import shutil
    ruff = shutil.which("ruff", path=str(ROOT / ".venv" / "bin")) or shutil.which("ruff")
    listed = subprocess.run([ruff, "check", "--show-files", "code/iobench", "code/tests", "code/tools"], cwd=ROOT,
                            capture_output=True, text=True).stdout
    read = {os.path.relpath(line.strip(), ROOT) for line in listed.splitlines() if line.strip().endswith(".py")}
    tracked = subprocess.run(["git", "ls-files", "code/iobench", "code/tests", "code/tools"], cwd=ROOT,
                             capture_output=True, text=True).stdout.split()
    missing = sorted(p for p in tracked if p.endswith(".py") and p not in read)
    assert not missing, missing


def test_run_page_reads_what_a_page_glued_as_the_snapshot_compares_it():
    """code/tools/run_page.py: a glued text by its text/plain, Markdown by its source, a figure by its kind, a live
    value only as glued; outputs that are not glued are not read."""
    import sys
    sys.path.insert(0, str(ROOT / "code" / "tools"))
    import nbformat
    from run_page import PREFIX, glued_outputs, page_name

    def glued(name, data):
        return nbformat.v4.new_output("display_data", data={PREFIX + k: v for k, v in data.items()},
                                      metadata={"scrapbook": {"name": name, "mime_prefix": PREFIX}})
    cell = nbformat.v4.new_code_cell("")
    cell.outputs = [glued("a", {"text/plain": "'1.1 times'"}), glued("b", {"text/markdown": "`x` and `y`",
                                                                           "text/plain": "<Markdown>"}),
                    glued("fig", {"image/png": "...", "text/plain": "<Figure>"}),
                    glued("live_rate", {"text/plain": "9"}),
                    nbformat.v4.new_output("stream", name="stdout", text="printed, not glued")]
    nb = nbformat.v4.new_notebook(cells=[cell])
    assert glued_outputs(nb) == {"a": "'1.1 times'", "b": "`x` and `y`", "fig": "<Figure>",
                                 "live_rate": "<measured live>"}
    assert page_name(ROOT / "book" / "java" / "rpc.md") == "book/java/rpc"


def test_compare_readings_names_what_two_revisions_read_differently(tmp_path):
    """code/tools/compare_readings.py: the same reading is no difference; a changed summary value, a renamed class
    and a dataset one revision did not read are each named."""
    import pickle
    import sys

    import pandas as pd
    sys.path.insert(0, str(ROOT / "code" / "tools"))
    from compare_readings import differences
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    rec = {"class": "HttpDataset", "summary": pd.DataFrame({"rps": [1.0, 2.0]}), "loop_ms": float("nan")}
    (a / "x.pkl").write_bytes(pickle.dumps(rec))
    (b / "x.pkl").write_bytes(pickle.dumps(rec))
    assert differences(a, b) == []
    (b / "x.pkl").write_bytes(pickle.dumps({**rec, "class": "Dataset", "summary": pd.DataFrame({"rps": [1.0, 2.5]})}))
    (a / "y.pkl").write_bytes(pickle.dumps(rec))
    got = differences(a, b)
    assert [g.split(":")[0] for g in got] == ["x class", "x summary", "y"] and "read by one revision only" in got[2]


def test_the_book_builds_without_vegeta_and_what_measures_builds_it():
    """No page runs vegeta (open-loop replays its cross-check): make book does not spend its half minute on it;
    what measures or tests with it does."""
    def steps(target):
        return subprocess.run(["make", "-n", "-W", "requirements.txt", target], cwd=ROOT, capture_output=True,
                              text=True).stdout
    assert "install-vegeta" not in steps("book")
    for target in ("test", "test-live", "bench", "mine"):
        assert "install-vegeta" in steps(target), target

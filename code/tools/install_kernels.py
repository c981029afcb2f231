"""Install the book's three Jupyter kernels into the running virtual environment.

Never touches the user's home: every kernel spec goes to ``sys.prefix/share/jupyter``.

* ``python3``: ipykernel, pointing at this environment's interpreter.
* ``bash``: bash_kernel (C pages build, run and measure from bash).
* ``java``: JJava, whose ``kernel.json`` is rewritten to start on a JDK 21+
  (found by ``code/tools/find-jdk``), because virtual threads need it.

Run with the virtual environment's interpreter:  .venv/bin/python code/tools/install_kernels.py
(binder/postBuild adds --any-prefix: repo2docker's environment is not a venv).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
KERNELS = Path(sys.prefix) / "share" / "jupyter" / "kernels"
REQUIRED = ("python3", "java", "bash")


def run(*args: str) -> None:
    subprocess.run(list(args), check=True, stdout=subprocess.DEVNULL)


def find_jdk() -> Path:
    proc = subprocess.run([str(HERE / "find-jdk")], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(1)
    return Path(proc.stdout.strip())


def install_java(jdk: Path) -> None:
    spec_file = KERNELS / "java" / "kernel.json"
    if not spec_file.exists():
        raise SystemExit(f"error: {spec_file} is missing: is the 'jjava' package installed?")
    spec = json.loads(spec_file.read_text())
    # JJava's launcher jar starts the kernel with whatever `java` is first on PATH
    # (here that can be a JDK 17). Start the kernel jar directly on the JDK we found,
    # with the one JVM option the launcher would add.
    spec["argv"] = [str(jdk / "bin" / "java"), "--add-opens", "jdk.jshell/jdk.jshell=ALL-UNNAMED",
                    "-jar", "{resource_dir}/jjava.jar", "{connection_file}"]
    spec["display_name"] = "Java (jjava)"
    spec.setdefault("env", {})["JAVA_HOME"] = str(jdk)
    new = json.dumps(spec, indent=2) + "\n"
    if spec_file.read_text() != new:  # leave the file alone when nothing changes
        spec_file.write_text(new)


def verify() -> None:
    from jupyter_client.kernelspec import KernelSpecManager

    specs = KernelSpecManager().find_kernel_specs()
    prefix = Path(sys.prefix).resolve()
    for name in REQUIRED:
        where = specs.get(name)
        if where is None:
            raise SystemExit(f"error: kernel '{name}' is not installed")
        if prefix not in Path(where).resolve().parents:
            raise SystemExit(f"error: kernel '{name}' resolves to {where}, outside {prefix}; "
                             "remove it or set JUPYTER_DATA_DIR as the Makefile does")
        print(f"kernel {name:8s} {where}")


def main() -> None:
    # On a BinderHub the environment is repo2docker's own, not a venv (binder/postBuild).
    if sys.prefix == sys.base_prefix and "--any-prefix" not in sys.argv:
        raise SystemExit("error: run this with the project's virtual environment (.venv/bin/python)")
    jdk = find_jdk()
    run(sys.executable, "-m", "ipykernel", "install", "--sys-prefix", "--name", "python3",
        "--display-name", "Python 3 (ipykernel)")
    run(sys.executable, "-m", "bash_kernel.install", "--sys-prefix")
    install_java(jdk)
    verify()
    print(f"java kernel runs on {jdk}")


if __name__ == "__main__":
    main()

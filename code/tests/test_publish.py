"""The workflow that publishes the site builds it the way the README tells a reader to: on Debian 12, with the
README's first line of apt-get and its `make book`, and deploys the folder `make book` writes."""
from __future__ import annotations

import re

import yaml

from conftest import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "pages.yml"


def readme_install() -> list[str]:
    """The packages of the README's first line: `apt-get install make python3 ...`."""
    m = re.search(r"`apt-get install ([^`]+)`", (ROOT / "README.md").read_text())
    assert m, "the README names no apt-get install line"
    return m.group(1).split()


def test_the_pages_workflow_builds_with_the_readme_s_steps_and_deploys_its_site():
    flow = yaml.safe_load(WORKFLOW.read_text())
    build, deploy = flow["jobs"]["build"], flow["jobs"]["deploy"]
    assert build["container"] == "debian:12"  # the system the README's commands are tested on
    runs = [s["run"] for s in build["steps"] if "run" in s]
    installs = [r for r in runs if "apt-get install" in r]
    assert installs and installs[0].split("apt-get install", 1)[1].split() == ["-y"] + readme_install()
    assert "make book" in runs  # the README's build command, nothing before it but the install and a JDK
    uses = [s.get("uses", "") for s in build["steps"]]
    assert any(u.startswith("actions/setup-java@") for u in uses)
    upload = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert upload["with"]["path"] == "_build/html"
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in deploy["steps"])
    assert deploy["needs"] == "build" and flow["permissions"]["pages"] == "write"
    # on: is read by YAML 1.1 as True
    trigger = flow.get("on", flow.get(True))
    assert trigger["push"]["branches"] == ["main"]
    assert "make book" in (ROOT / "README.md").read_text()

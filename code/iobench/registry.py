"""Every dataset the harness can measure, by name, and the kind that measures and reads it.

The one module that knows every kind (kinds/*): a kind is one package of the same three modules, its plans
(plans.py: PLANS, dataset name -> plan), the experiment that measures one of them on the runner's lifecycle
(experiment.py: constructed from a plan and whether to run the battery), and its columns, keys, summary and the
reader of a captured folder (dataset.py: load). Adding a kind is adding its package under kinds/ and one line in
KINDS. `obtain` is what a notebook
cell calls: replay data/<name>, or measure it under the smoke or full profile first.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from iobench.kinds.clients import dataset as clients_dataset
from iobench.kinds.clients import experiment as clients_experiment
from iobench.kinds.clients import plans as clients_plans
from iobench.kinds.echo import dataset as echo_dataset
from iobench.kinds.echo import experiment as echo_experiment
from iobench.kinds.echo import plans as echo_plans
from iobench.kinds.db import dataset as db_dataset
from iobench.kinds.db import experiment as db_experiment
from iobench.kinds.db import plans as db_plans
from iobench.kinds.http import dataset as http_dataset
from iobench.kinds.http import experiment as http_experiment
from iobench.kinds.http import plans as http_plans
from iobench.kinds.openloop import dataset as openloop_dataset
from iobench.kinds.openloop import experiment as openloop_experiment
from iobench.kinds.openloop import plans as openloop_plans
from iobench.kinds.rpc import dataset as rpc_dataset
from iobench.kinds.rpc import experiment as rpc_experiment
from iobench.kinds.rpc import plans as rpc_plans
from iobench.run import metadata, runner
from iobench.run.profiles import DATA, PROFILES, current


@dataclass(frozen=True)
class Kind:
    name: str
    plan_type: type
    plans: Mapping[str, object]                # dataset name -> plan
    experiment: Callable[..., runner.Experiment]  # (plan, with_battery) -> what runner.run measures it with
    reader: Callable[..., object]                # (folder, shown_under) -> the kind's dataset


KINDS = (
    Kind("http", http_plans.HttpPlan, http_plans.PLANS, http_experiment.HttpExperiment, http_dataset.load),
    Kind("openloop", openloop_plans.OpenPlan, openloop_plans.PLANS, openloop_experiment.OpenExperiment,
         openloop_dataset.load),
    Kind("echo", echo_plans.EchoPlan, echo_plans.PLANS, echo_experiment.EchoExperiment, echo_dataset.load),
    Kind("clients", clients_plans.ClientPlan, clients_plans.PLANS, clients_experiment.ClientExperiment,
         clients_dataset.load),
    Kind("rpc", rpc_plans.RpcPlan, rpc_plans.PLANS, rpc_experiment.RpcExperiment, rpc_dataset.load),
    Kind("db", db_plans.DbPlan, db_plans.PLANS, db_experiment.DbExperiment, db_dataset.load),
)


def every() -> dict:
    """Every plan by dataset, of every kind."""
    return {name: plan for kind in KINDS for name, plan in kind.plans.items()}


def get(name: str):
    """The plan of dataset `name`, of any kind."""
    plan = every().get(name)
    if plan is None:
        raise KeyError(f"unknown dataset {name!r}; known: {', '.join(names())}")
    return plan


def names() -> list[str]:
    """Every dataset the harness can measure."""
    return sorted(every())


def kind_of(plan) -> Kind:
    """The kind a plan belongs to (by its type: a test's own plan of a kind is measured like the kind's)."""
    for kind in KINDS:
        if type(plan) is kind.plan_type:
            return kind
    raise TypeError(f"{type(plan).__name__} is the plan of no kind; kinds: {', '.join(k.name for k in KINDS)}")


def experiment(plan, servers: tuple[str, ...] | None = None, with_battery: bool | None = None):
    """The experiment that measures `plan` (a plan, or a dataset's name) for runner.run; `servers`: only these."""
    if isinstance(plan, str):
        plan = get(plan)
    if servers:
        plan = plan.only(servers)
    return kind_of(plan).experiment(plan, with_battery)


def reader(name: str):
    """The loader of a dataset's kind; a folder without a plan is read as HTTP."""
    plan = every().get(name)
    return kind_of(plan).reader if plan is not None else http_dataset.load


def obtain(name: str, profile: str | None = None, reuse: bool = False, **run_kwargs):
    """What a notebook cell calls: replay data/<name>, or measure it under smoke/full.
    It comes back as its kind's dataset (an echo dataset as an echo.EchoDataset). reuse: a page that
    reads another page's dataset takes, under smoke, the capture that page already made of this very
    commit (a book build runs both) instead of measuring it again."""
    profile = profile or current()
    read = reader(name)
    if profile == "replay":
        path = DATA / name
        if not path.exists():
            raise FileNotFoundError(
                f"data/{name} holds no captured run yet. Measure it with\n"
                f"    python -m iobench run {name} --profile full\n"
                f"or show a brief live run with IOBENCH_PROFILE=smoke.")
        return read(path, "replay")
    if reuse and profile == "smoke" and (earlier := _smoke_capture_of_this_commit(name)) is not None:
        return read(earlier, profile)
    return read(runner.run(experiment(name), profile, **run_kwargs), profile)


def _smoke_capture_of_this_commit(name: str) -> Path | None:
    """The scratch folder of a smoke run of `name` made from the commit checked out now, if any: both
    trees clean, so that the commit names the code that measured (an edit since would be measured again)."""
    path = PROFILES["smoke"].dest(name)
    try:
        made_from = json.loads((path / "meta.json").read_text())["git"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    now = metadata.git()
    same = made_from.get("commit") is not None and made_from.get("commit") == now["commit"]
    return path if same and made_from.get("dirty") is False and now["dirty"] is False else None

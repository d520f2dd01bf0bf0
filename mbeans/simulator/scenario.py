"""Scenarios: a cluster and a timeline of events, in YAML.

    name: kip427-example1
    description: ...
    kafka_version: "2.5"          # optional; --kafka-version wins when given
    cluster: {brokers: [0, 1, 2], controllers: [3], topics: [...]}   # optional; --cluster wins
    steps:
      - at: 10                    # seconds after the simulator is ready
        fail_broker: {broker: 0}  # one event: its name and its arguments (control.Controls)
        note: broker 0 fails      # optional, printed when the step runs

Events: fail_broker, restore_broker, shrink_isr, expand_isr, set_min_isr, start_reassignment,
complete_reassignment, cancel_reassignment, create_topic, delete_topic, traffic, produce,
elect_preferred_leaders. `fail_broker: 2` is short for `fail_broker: {broker: 2}` (same for
restore_broker). Built-in scenarios are the `scenario-*.yml` files beside this module.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
EVENTS = ("fail_broker", "restore_broker", "shrink_isr", "expand_isr", "set_min_isr", "start_reassignment",
          "complete_reassignment", "cancel_reassignment", "create_topic", "delete_topic", "traffic", "produce",
          "elect_preferred_leaders")
_SHORT = {"fail_broker": "broker", "restore_broker": "broker"}


class ScenarioError(ValueError):
    """A scenario file that cannot be run; the message names the file, the step and the fix."""


@dataclass(frozen=True)
class Step:
    at: float
    op: str
    args: dict
    note: str | None = None

    def event(self) -> dict:
        return {"op": self.op, **self.args}


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    steps: tuple[Step, ...]
    cluster: dict | None = None
    kafka_version: str | None = None
    source: str = ""
    extra: dict = field(default_factory=dict)


def builtin_names() -> list[str]:
    return sorted(p.stem[len("scenario-"):] for p in HERE.glob("scenario-*.yml"))


def load(name_or_path: str | Path) -> Scenario:
    """A built-in scenario by name (see builtin_names()) or a YAML file."""
    p = Path(name_or_path)
    if not p.is_file():
        builtin = HERE / f"scenario-{name_or_path}.yml"
        if not builtin.is_file():
            raise ScenarioError(f"{name_or_path}: no such scenario file and no built-in scenario of that name "
                                f"(built-in: {', '.join(builtin_names())})")
        p = builtin
    import yaml

    try:
        data = yaml.safe_load(p.read_text())
    except OSError as e:
        raise ScenarioError(f"{p}: cannot read ({e.strerror})") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise ScenarioError(f"{p}{f':{mark.line + 1}' if mark else ''}: not valid YAML "
                            f"({getattr(e, 'problem', e)})") from None
    return parse(data, source=str(p))


def parse(data: Any, source: str = "scenario") -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: expected a mapping with name, steps and optionally cluster")
    unknown = sorted(set(data) - {"name", "description", "kafka_version", "cluster", "steps"})
    if unknown:
        raise ScenarioError(f"{source}: unknown key(s) {', '.join(unknown)} "
                            f"(known: name, description, kafka_version, cluster, steps)")
    steps_in = data.get("steps")
    if not isinstance(steps_in, list) or not steps_in:
        raise ScenarioError(f"{source}: steps: give a list of steps such as '- at: 5\\n  fail_broker: 2'")
    cluster = data.get("cluster")
    if cluster is not None and not isinstance(cluster, dict):
        raise ScenarioError(f"{source}: cluster: expected a mapping in the --cluster format")
    version = data.get("kafka_version")
    if version is not None:
        version = str(version)
    steps = []
    last = 0.0
    for i, s in enumerate(steps_in):
        where = f"{source}: steps[{i}]"
        if not isinstance(s, dict):
            raise ScenarioError(f"{where}: expected a mapping with 'at' and one event")
        at = s.get("at", last)
        if not isinstance(at, (int, float)) or isinstance(at, bool) or at < 0:
            raise ScenarioError(f"{where}.at: expected seconds (a number >= 0), got {at!r}")
        if at < last:
            raise ScenarioError(f"{where}.at: {at} is before the previous step ({last}); keep steps in time order")
        ops = [k for k in s if k not in ("at", "note")]
        if len(ops) != 1:
            raise ScenarioError(f"{where}: give exactly one event per step (got {ops or 'none'}); "
                                f"events: {', '.join(EVENTS)}")
        op = ops[0]
        if op not in EVENTS:
            raise ScenarioError(f"{where}: unknown event '{op}' (events: {', '.join(EVENTS)})")
        args = s[op]
        if args is None:
            args = {}
        elif not isinstance(args, dict):
            if op in _SHORT:
                args = {_SHORT[op]: args}
            else:
                raise ScenarioError(f"{where}.{op}: expected a mapping of arguments")
        if op in ("delete_topic",) and "name" in args:
            args = {"topic": args["name"], **{k: v for k, v in args.items() if k != "name"}}
        steps.append(Step(float(at), op, dict(args), s.get("note")))
        last = float(at)
    return Scenario(name=str(data.get("name") or Path(source).stem), description=str(data.get("description") or ""),
                    steps=tuple(steps), cluster=cluster, kafka_version=version, source=source)


def run(sim, scenario: Scenario, *, realtime: bool = True, on_step: Callable[[Step], None] | None = None,
        stop: Callable[[], bool] | None = None) -> None:
    """Apply the steps: at their time after now (realtime), or by advancing the simulator's clock
    to each step's time (realtime=False, for a manual clock). `on_step` runs after each step."""
    t0 = time.monotonic()
    clock = 0.0
    for step in scenario.steps:
        if realtime:
            while True:
                if stop and stop():
                    return
                wait = t0 + step.at - time.monotonic()
                if wait <= 0:
                    break
                time.sleep(min(wait, 0.2))
        elif step.at > clock:
            sim.advance(step.at - clock)
            clock = step.at
        sim.apply(step.event())
        if on_step:
            on_step(step)

"""The Dockerfile read as Docker reads it, enough for the tests: stages, their instructions (line
continuations joined, comments dropped) and what a target inherits from the stages it is built on."""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Instruction:
    line: int
    keyword: str  # upper case: RUN, COPY, ENV, ...
    args: str

    def exec_form(self) -> list[str]:
        """ENTRYPOINT/CMD/VOLUME in JSON (exec) form; a shell-form one fails the caller's assertion."""
        value = json.loads(self.args)
        assert isinstance(value, list), f"Dockerfile:{self.line}: {self.keyword} is not in exec (JSON) form"
        return value

    def pairs(self) -> dict[str, str]:
        """ENV/LABEL key=value pairs."""
        out = {}
        for word in shlex.split(self.args):
            key, sep, value = word.partition("=")
            assert sep, f"Dockerfile:{self.line}: {self.keyword} {word!r} is not KEY=value"
            out[key] = value
        return out


@dataclass
class Stage:
    name: str
    parent: str  # an image reference or an earlier stage's name
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


class Dockerfile:
    def __init__(self, path: Path):
        self.path = path
        self.stages: list[Stage] = []
        logical, start = "", 0
        for number, raw in enumerate(path.read_text().splitlines(), 1):
            line = raw.strip()
            if not logical and (not line or line.startswith("#")):
                continue
            if logical and line.startswith("#"):  # a comment inside a continued instruction
                continue
            if not logical:
                start = number
            if line.endswith("\\"):
                logical += line[:-1] + " "
                continue
            self._add(start, logical + line)
            logical = ""

    def _add(self, line: int, text: str) -> None:
        keyword, _, args = text.partition(" ")
        keyword, args = keyword.upper(), args.strip()
        if keyword == "FROM":
            words = args.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else str(len(self.stages))
            self.stages.append(Stage(name, words[0]))
            return
        assert self.stages, f"{self.path}:{line}: {keyword} before any FROM"
        self.stages[-1].instructions.append(Instruction(line, keyword, args))

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise AssertionError(f"the Dockerfile has no stage {name!r}: {[s.name for s in self.stages]}")

    def commands(self, name: str) -> list[list[str]]:
        """The commands of a stage's RUN lines, one argv per `&&`-joined command."""
        return [shlex.split(part) for run in self.stage(name).all("RUN") for part in run.args.split("&&")]

    def chain(self, name: str) -> list[Stage]:
        """The stage and the stages it is built FROM, the base first."""
        names = {s.name for s in self.stages}
        out = [self.stage(name)]
        while out[0].parent in names:
            out.insert(0, self.stage(out[0].parent))
        return out

    def inherited(self, target: str, keyword: str) -> list[Instruction]:
        return [i for s in self.chain(target) for i in s.all(keyword)]

    def last(self, target: str, keyword: str) -> Instruction | None:
        found = self.inherited(target, keyword)
        return found[-1] if found else None

    def env(self, target: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for i in self.inherited(target, "ENV"):
            out.update(i.pairs())
        return out

    def labels(self, target: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for i in self.inherited(target, "LABEL"):
            out.update(i.pairs())
        return out

    def arg_defaults(self, target: str) -> dict[str, str]:
        out = {}
        for i in self.inherited(target, "ARG"):
            key, _, value = i.args.partition("=")
            out[key] = value
        return out

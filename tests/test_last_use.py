"""tests/last_use.py: a session fixture is stopped right after its last user's teardown, once."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CONFTEST = '''
import pytest
from tests.last_use import pytest_runtest_teardown, stop_after_last_use  # as tests/conftest.py does

EVENTS = []

@pytest.fixture(scope="session")
def held(request):
    EVENTS.append("start")
    stop = stop_after_last_use(request, lambda: EVENTS.append("stop"))
    yield "held"
    stop()

@pytest.fixture
def uses_held(held):
    return held
'''

TESTS = '''
from conftest import EVENTS

def test_a(held):
    EVENTS.append("a")

def test_b():
    EVENTS.append("b")

def test_c(uses_held):  # through another fixture
    EVENTS.append("c")

def test_d():
    EVENTS.append("d")
'''

OVERRIDE = '''
import pytest
from conftest import EVENTS

@pytest.fixture(scope="session")
def held():  # this module's own: the conftest's has no user here
    yield "mine"

def test_e(held):
    EVENTS.append("e")

def test_f():
    print("EVENTS", " ".join(EVENTS))
'''


def run(tmp_path: Path, *args: str) -> str:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_1.py").write_text(TESTS)
    (tmp_path / "test_2.py").write_text(OVERRIDE)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-s", *args, str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": f"{REPO}:{tmp_path}", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_the_fixture_stops_after_its_last_user_not_at_the_sessions_end(tmp_path):
    out = run(tmp_path)
    # test_f prints what happened before it: the stop came after c (the last user), before d
    assert "EVENTS start a b c stop d e\n" in out, out


def test_a_session_that_selects_no_later_user_stops_it_after_the_one_it_runs(tmp_path):
    out = run(tmp_path, "-k", "test_a or test_b or test_f")
    assert "EVENTS start a stop b\n" in out, out

"""`check-config` refuses what `serve` would load only with a warning: no target, unknown keys
(top level, rules, httpServer) and repeated keys. `serve` loads such a file as jmx_exporter loads
it (SnakeYAML keeps a repeated key's last value; unknown keys are ignored) and says why."""
import sys
from io import StringIO
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.base.config_file import ConfigError, ConfigFile
from kafka_jmx_sidecar.exporter.rule_engine import parse_config
from kafka_jmx_sidecar.exporter.config.load import load
from kafka_jmx_sidecar.exporter.commands.serve import check_config

RULE = "rules:\n- pattern: 'kafka.server<type=(.+), name=(.+)><>Value'\n  name: kafka_$1_$2\n"


def run(tmp_path: Path, text: str) -> tuple[int, str, str]:
    path = tmp_path / "exporter.yml"
    path.write_text(text)
    out, err = StringIO(), StringIO()
    code = check_config(str(path), out, err)
    return code, out.getvalue(), err.getvalue().replace(str(path), "F")


def test_a_good_file_is_ok(tmp_path):
    code, out, err = run(tmp_path, "hostPort: 127.0.0.1:9999\n" + RULE)
    assert (code, err) == (0, "")
    assert out.endswith(": OK: 1 rule(s), target service:jmx:rmi:///jndi/rmi://127.0.0.1:9999/jmxrmi, "
                        "listening on 0.0.0.0:9404\n")


def test_no_target_is_refused_with_what_to_set(tmp_path):
    code, out, err = run(tmp_path, RULE)
    assert (code, out) == (2, "")
    assert err == ("F: hostPort: no JMX target; set hostPort: HOST:PORT (the broker's remote JMX port) or "
                   "jmxUrl: service:jmx:rmi:///jndi/rmi://HOST:PORT/jmxrmi\n")


@pytest.mark.parametrize("text, expected", [
    ("hostPort: 127.0.0.1:9999\nlowercaseOutputNmae: true\n" + RULE,
     "error: F:2: lowercaseOutputNmae: unknown key, ignored (check its spelling)\n"),
    ("hostPort: 127.0.0.1:9999\n" + RULE + "  lables: {a: b}\n",
     "error: F:5: rules[0].lables: unknown rule key, ignored (check its spelling)\n"),
    ("hostPort: 127.0.0.1:9999\nhttpServer:\n  authentication:\n    basic:\n      username: u\n"
     "      password: p\n      pasword: q\n",
     "error: F:7: httpServer.authentication.basic.pasword: unknown key, ignored (known here: algorithm, "
     "iterations, keyLength, password, passwordHash, salt, username)\n"),
    ("hostPort: 127.0.0.1:9999\nlowercaseOutputName: true\n" + RULE + "lowercaseOutputName: false\n",
     "error: F:6: lowercaseOutputName: duplicate key (first at line 2); the value here counts, as in "
     "jmx_exporter, and the first is ignored: remove one of them\n"),
    ("hostPort: 127.0.0.1:9999\n" + RULE + "  name: other_$2\n",
     "error: F:5: rules[0].name: duplicate key (first at line 4); the value here counts, as in "
     "jmx_exporter, and the first is ignored: remove one of them\n"),
])
def test_slips_are_refused_by_check_config(tmp_path, text, expected):
    code, out, err = run(tmp_path, text)
    assert (code, out) == (2, "")
    assert err == expected + "F: refused: 1 mistake(s) above (serve would load the file and ignore them, " \
                             "as jmx_exporter does); fix them\n"


def test_serve_loads_a_file_with_slips_and_keeps_the_warnings(tmp_path):
    path = tmp_path / "exporter.yml"
    path.write_text("hostPort: 127.0.0.1:9999\nlowercaseOutputNmae: true\n" + RULE + "  name: other_$2\n")
    loaded = load(str(path))
    assert loaded.config.rules[0].name.text == "other_$2"  # the last of a repeated key, as SnakeYAML
    assert len(loaded.config.warnings) == 2 and loaded.config.mistakes == loaded.config.warnings


def test_a_warning_that_is_no_slip_is_not_refused(tmp_path):
    # both the new and the legacy key: jmx_exporter's documented precedence, nothing misspelt
    code, out, err = run(tmp_path, "hostPort: 127.0.0.1:9999\nincludeObjectNames: ['kafka.*:*']\n"
                                   "whitelistObjectNames: ['java.lang:*']\n")
    assert code == 0 and "OK" in out
    assert err == "warning: F:3: whitelistObjectNames: ignored because includeObjectNames is set (the new key wins)\n"


def test_merge_keys_are_not_repeats():
    config = parse_config("hostPort: h:1\nbase: &b {name: x, type: GAUGE}\nrules:\n"
                          "- <<: *b\n  pattern: 'a<>b'\n  name: y\n")
    assert config.rules[0].name.text == "y"
    assert [w for w in config.mistakes if "duplicate" in w] == []


def test_the_web_config_file_refuses_repeats_as_the_exporter_toolkit_does():
    file = ConfigFile.parse("basic_auth_users:\n  a: x\n  a: y\n", "web.yml")
    with pytest.raises(ConfigError) as e:
        file.refuse_duplicates()
    assert str(e.value) == "web.yml:3: basic_auth_users.a: duplicate key (first at line 2); remove one of them"


def test_serve_refuses_a_web_config_file_with_a_repeated_key(tmp_path):
    web = tmp_path / "web.yml"
    web.write_text("basic_auth_users:\n  prometheus: $2b$04$abc\nbasic_auth_users: {}\n")
    path = tmp_path / "exporter.yml"
    path.write_text(f"hostPort: 127.0.0.1:9999\nsidecar:\n  webConfigFile: {web}\n")
    with pytest.raises(ConfigError) as e:
        load(str(path))
    assert str(e.value) == f"{web}:3: basic_auth_users: duplicate key (first at line 1); remove one of them"


def test_check_config_checks_the_web_config_file_too(tmp_path, capsys):
    from kafka_jmx_sidecar.exporter.commands.cli import main

    config = tmp_path / "exporter.yml"
    config.write_text("hostPort: 127.0.0.1:9999\n" + RULE)
    web = tmp_path / "web.yml"
    # a whole bcrypt hash: a truncated one is refused
    web.write_text("basic_auth_users:\n  prometheus: $2b$04$IJrYI0A3khzR2WT9uO5JHOP2l4XkvvN2nfY8O96nIbNPH7iHh4NEa\n")
    assert main(["check-config", str(config), "--web.config.file", str(web)]) == 0
    out = capsys.readouterr().out
    assert out.endswith(f"{web}: OK: web config, plain HTTP, 1 basic auth user(s)\n") and f"{config}: OK" in out
    assert main(["check-config", "--web.config.file", str(web)]) == 0  # alone, as promtool check web-config
    assert capsys.readouterr().out == f"{web}: OK: web config, plain HTTP, 1 basic auth user(s)\n"

    web.write_text("http_server_config:\n  http2: true\n")
    for argv in (["check-config", str(config), "--web.config.file", str(web)],
                 ["check-config", "--web.config.file", str(web)]):
        assert main(argv) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.startswith(
            f"{web}:2: http_server_config.http2: HTTP/2 is not served here")
    # the web-config file named by sidecar.webConfigFile is checked the same way
    config.write_text(f"hostPort: 127.0.0.1:9999\nsidecar:\n  webConfigFile: {web}\n" + RULE)
    assert main(["check-config", str(config)]) == 2
    assert capsys.readouterr().err.startswith(f"{web}:2: http_server_config.http2:")
    web.write_text("rate_limit: {burst: 1}\n")
    assert main(["check-config", str(config)]) == 2
    assert capsys.readouterr().err.startswith(f"{web}:1: rate_limit: is an exporter-toolkit setting")
    assert main(["check-config"]) == 2
    assert "--web.config.file WEB" in capsys.readouterr().err


def test_check_config_checks_that_the_archive_directory_can_be_written(tmp_path):
    import os
    import shutil
    import subprocess
    import tempfile

    def archive_at(directory) -> str:
        return f"hostPort: 127.0.0.1:9999\nsidecar:\n  archive:\n    directory: {directory}\n" + RULE

    assert run(tmp_path, archive_at(tmp_path / "archive" / "broker-1"))[0] == 0  # created by serve: nothing made now
    assert not (tmp_path / "archive").exists()
    (tmp_path / "blocker").write_text("a file")
    code, out, err = run(tmp_path, archive_at(tmp_path / "blocker" / "archive"))
    assert (code, out) == (2, "")
    assert err == (f"F:4: sidecar.archive.directory: {tmp_path}/blocker/archive cannot be created: "
                   f"{tmp_path}/blocker is not a directory; give another path\n")
    code, _, err = run(tmp_path, archive_at(tmp_path / "blocker"))
    assert code == 2 and f"{tmp_path}/blocker exists and is not a directory" in err
    # a directory this user may not write: checked as another user (root may write any), in a
    # directory that user can reach (pytest's own are root's alone)
    shared = Path(tempfile.mkdtemp(prefix="check-config-"))
    try:
        shared.chmod(0o755)
        locked, config = shared / "locked", shared / "exporter.yml"
        locked.mkdir(mode=0o555)
        config.write_text(archive_at(locked / "archive"))
        config.chmod(0o644)
        repo = str(Path(__file__).resolve().parents[2])
        as_nobody = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
             f"import sys; from kafka_jmx_sidecar.exporter.commands.serve import check_config; "
             f"sys.exit(check_config({str(config)!r}))"],
            capture_output=True, text=True, timeout=120, cwd=repo, env={**os.environ, "PYTHONPATH": repo})
    finally:
        shutil.rmtree(shared)
    assert as_nobody.returncode == 2, as_nobody.stderr
    assert as_nobody.stderr.startswith(f"{config}:4: sidecar.archive.directory: {locked}/archive does not exist "
                                       f"and cannot be created: {locked} is not writable; make it writable by the "
                                       "sidecar's user (uid 65534"), as_nobody.stderr

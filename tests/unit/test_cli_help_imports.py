"""``pyscheduler --help`` loads the command line only: no engine, no plugin,
no API client, no pydantic. The CLI imports those late, after the flags are
parsed, so an operator's ``--help`` answers at once (no time is measured
here: what is imported is).

The check runs the installed ``pyscheduler`` entry point in a fresh
interpreter and reads its ``sys.modules``, so it holds wherever the CLI's
module lives: the only ``scheduler`` modules allowed are the entry point's
module, its packages, the flags module beside it and ``scheduler.ops.defaults``
(with its package, whose ``__init__`` is a docstring)
(constants that the help shows)."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path
from typing import cast

from tests.support.interpreter import fresh_json

_PROBE = """
import contextlib, io, json, sys
from importlib.metadata import entry_points
(entry,) = entry_points(group="console_scripts", name="pyscheduler")
main = entry.load()
out = io.StringIO()
code = None
with contextlib.redirect_stdout(out):
    try:
        main(sys.argv[1:])
    except SystemExit as exited:
        code = exited.code
print(json.dumps({"code": code, "help": out.getvalue(), "modules": sorted(sys.modules)}))
"""
# Third-party distributions that only the engine, the client or the
# configuration need.
_HEAVY = ("pydantic", "kubernetes_asyncio", "aiohttp", "cryptography", "orjson", "yaml", "re2")


def _probe(*argv: str) -> dict[str, object]:
    return fresh_json(_PROBE, *argv)


def _allowed() -> set[str]:
    (entry,) = entry_points(group="console_scripts", name="pyscheduler")
    module = entry.module
    package = module.rpartition(".")[0]
    parts = module.split(".")
    packages = {".".join(parts[:i]) for i in range(1, len(parts))}
    return {module, f"{package}.flags", "scheduler.ops", "scheduler.ops.defaults", *packages}


def test_help_loads_no_engine_plugin_client_or_config_module() -> None:
    result = _probe("--help")

    assert result["code"] == 0
    assert "--config" in str(result["help"])
    assert "--feature-gates" in str(result["help"])
    modules = set(cast(list[str], result["modules"]))
    ours = {m for m in modules if m.split(".")[0] in ("scheduler", "plugins")}
    assert ours <= _allowed(), f"--help imported {sorted(ours - _allowed())}"
    heavy = sorted(m for m in modules if m.split(".")[0] in _HEAVY)
    assert heavy == [], f"--help imported {heavy}"


def test_the_probe_sees_the_engine_when_the_cli_really_runs(tmp_path: Path) -> None:
    """The precondition: the same probe does see engine modules once the CLI
    goes past parsing (here --write-config-to, which never connects)."""
    target = tmp_path / "config.yaml"
    result = _probe("--write-config-to", str(target))

    assert result["code"] is None, "main returned instead of exiting"
    assert target.read_text().startswith("apiVersion: kubescheduler.config.k8s.io/v1")
    modules = set(cast(list[str], result["modules"]))
    assert {"scheduler.config", "pydantic"} <= modules

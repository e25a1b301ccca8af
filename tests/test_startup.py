"""Start-up (issue 13): the headline command imports only what it needs. Its CPU time is measured by
benchmarks/bench_startup.py (figures, not a timed test); this checks the structure that time rests on:
no pandas (no DataFrame is returned), no catalog validation once the catalog is in the cache (no
pydantic, unless the installed typer itself uses it), nothing of calibrate/validate or the large-model
path, and no rich at all when the output is JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEADLINE = ["solve", "--budget", "200000", "--model", "inception_v3"]
PROBE = ("import json, sys\n"
         "from costopt.cli.main import main\n"
         "try:\n"
         "    main(sys.argv[1:])\n"
         "except SystemExit:\n"
         "    pass\n"
         "sys.stderr.write('MODULES ' + json.dumps(sorted(sys.modules)))\n")


def _modules(args: list[str], cache: str) -> set[str]:
    env = {**os.environ, "COSTOPT_CACHE_DIR": cache}
    p = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, check=True)
    return set(json.loads(p.stderr.rsplit("MODULES ", 1)[1]))


def _typer_needs_pydantic() -> bool:
    import importlib.util

    return importlib.util.find_spec("typer._adapters") is not None  # typer >= 0.29 coerces options with pydantic


@pytest.fixture(scope="module")
def headline_modules(tmp_path_factory):
    cache = str(tmp_path_factory.mktemp("cache"))
    first = _modules(HEADLINE, cache)  # validates the catalog and fills the cache
    table = _modules(HEADLINE, cache)
    as_json = _modules([*HEADLINE, "--format", "json"], cache)
    return first, table, as_json


def test_headline_leaves_out_what_it_does_not_use(headline_modules):
    first, table, as_json = headline_modules
    assert "costopt.hardware.catalog_schema" in first  # the first run validates
    for mods in (table, as_json):
        for name in ("pandas", "costopt.measure.calibrate", "costopt.measure.validate", "costopt.perf.llm.arch", "costopt.hardware.catalog_schema",
                     "matplotlib", "pulp", "numpy.ma"):
            assert name not in mods, name
        if not _typer_needs_pydantic():  # pydantic itself imports importlib.resources (its plugin loader)
            assert "pydantic" not in mods and "importlib.resources" not in mods
    assert "rich.table" in table
    assert not any(m == "rich" or m.startswith("rich.") for m in as_json)


def test_version_mounts_no_command():
    p = subprocess.run([sys.executable, "-c", PROBE, "--version"], capture_output=True, text=True, check=True)
    assert p.stdout.strip().startswith("costopt ")
    mods = set(json.loads(p.stderr.rsplit("MODULES ", 1)[1]))
    assert "numpy" not in mods and "costopt.search.api" not in mods


# One BLAS thread for the command line (costopt/cli/main.py: OpenBLAS's idle threads cost the headline
# about 0.1 s of CPU), only where the user set no thread count, never for `import costopt`.
BLAS_VARS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
ENV_PROBE = ("import os, sys\n"
             "from costopt.cli.main import main\n"
             "try:\n"
             "    main(sys.argv[1:])\n"
             "except SystemExit:\n"
             "    pass\n"
             "print(os.environ.get('OPENBLAS_NUM_THREADS'))\n")


def test_one_blas_thread_only_when_unset():
    from costopt.cli.main import one_blas_thread

    env: dict[str, str] = {"PATH": "/bin"}
    assert one_blas_thread(env, "solve") and env == {"PATH": "/bin", "OPENBLAS_NUM_THREADS": "1"}
    for var in BLAS_VARS:  # the user's own choice, under any name OpenBLAS reads, stays as it is
        env = {var: "4"}
        assert not one_blas_thread(env, "solve") and env == {var: "4"}
    env = {}
    assert not one_blas_thread(env, "profile") and env == {}  # PyTorch may use OpenBLAS for a CPU profile


def _blas_env_after(cmd: list[str], **extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in BLAS_VARS} | extra
    p = subprocess.run([sys.executable, *cmd], env=env, capture_output=True, text=True, check=True)
    return p.stdout.strip().splitlines()[-1]


def test_console_entry_sets_one_blas_thread_and_the_library_does_not():
    assert _blas_env_after(["-c", ENV_PROBE, "--version"]) == "1"
    assert _blas_env_after(["-c", ENV_PROBE, "--version"], OPENBLAS_NUM_THREADS="3") == "3"
    assert _blas_env_after(["-c", ENV_PROBE, "--version"], OMP_NUM_THREADS="2") == "None"
    library = "import os, costopt, costopt.search.api\nprint(os.environ.get('OPENBLAS_NUM_THREADS'))\n"
    assert _blas_env_after(["-c", library]) == "None"

"""Under CI (`CI=true`, set by .ci/run) no test may skip: a skip there would hide a check the project
claims (the torch profile tests, the headless-Chromium render, the real rig run, the reproducibility
checks against ../shared). Each skip is turned into a failure that names its reason. Expected
failures (`xfail`) are not skips and are unaffected."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest

# The validated-catalog cache (costopt/hardware/validated_cache.py) of a test run lives in a folder of its own,
# never in the user's cache; subprocesses the tests start inherit it.
if "COSTOPT_CACHE_DIR" not in os.environ:
    os.environ["COSTOPT_CACHE_DIR"] = tempfile.mkdtemp(prefix="costopt-test-cache-")
    atexit.register(shutil.rmtree, os.environ["COSTOPT_CACHE_DIR"], ignore_errors=True)

# One terminal width for every test, with or without pytest-xdist: the CLI honours COLUMNS (a terminal's
# width; piped output otherwise gets 200 columns, cli/common.py `_console`). pytest-xdist's workers start
# with COLUMNS=80 and LINES=24 in their environment (the main process has neither), so under `-n 2` tables
# folded at 80 columns and tests that read a table line (test_basis.py::test_compare_cli_states_horizon)
# failed only there. Each test sees what a piped run sees (pytest's own output keeps the real terminal's
# width); a test wanting another width passes env={"COLUMNS": ...}.
@pytest.fixture(autouse=True)
def _piped_terminal_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("LINES", raising=False)

STRICT = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# The only skips CI accepts: what its machine cannot have (no GPU), and documented command lines whose
# check CI runs another way (the full rig run of docs/measuring.md: CI runs the rig's small case).
CI_EXEMPT = ("needs a GPU", "needs the rig's network", "uses a file that a command needing torch and a GPU makes")


def _fail_instead_of_skip(report) -> None:
    if STRICT and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if any(x in reason for x in CI_EXEMPT):
            return
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, which must run every check: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_instead_of_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_instead_of_skip(outcome.get_result())


# CPU seconds per test (user + system, the test process and the children it waited for), written as
# "nodeid<TAB>seconds" lines to $COSTOPT_TEST_CPU/<worker>.tsv when that folder is set: how long the suite
# takes on an idle machine, whatever the load when it is measured (wall-clock durations move with it).
# Used to choose the tests marked `slow` (deselected by default, run by .ci/run).
_CPU_DIR = os.environ.get("COSTOPT_TEST_CPU")


def _cpu() -> float:
    import resource

    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


if _CPU_DIR:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        t0 = _cpu()
        yield
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(os.path.join(_CPU_DIR, f"{worker}.tsv"), "a", encoding="utf-8") as fh:
            fh.write(f"{item.nodeid}\t{_cpu() - t0:.3f}\n")


# --- the default test loop: slow tests -----------------------------------------------------------------
# Test functions of many CPU seconds each (measured with COSTOPT_TEST_CPU above; figures in docs/testing.md),
# plus those marked @pytest.mark.slow in their files. A run of the whole suite (`python -m pytest -q -n 2`, no
# file named, no -m) leaves them out. A run that names files (a developer's, or a landing check) keeps them,
# and `-m "slow or not slow"` (.ci/run) runs everything. A name here that no longer exists only stops marking.
SLOW = {
    "tests/test_docs_commands.py::test_documented_command_runs",  # every documented command: 36 s
    "tests/test_tables_fit.py::test_no_number_cut_at_100_and_120_columns",  # 30 widths x commands: 22 s
    "tests/test_llm_purchasing.py::test_export_round_trips_the_solve",
    "tests/test_engine_limits.py::test_dp_deadline_met_at_p10_and_confidence_half_is_the_point_rule",
    "tests/test_llm_purchasing.py::test_report_has_rent_or_buy_section",
    "tests/test_timing.py::test_faster_nic_is_never_slower_in_reference_catalog",
    "tests/test_llm.py::test_llm_leave_one_source_out_median",
    "tests/test_exports.py::test_csv_numbers_never_scientific",
    "tests/test_bom_filter.py::test_export_compare_and_report_take_the_part_filter_of_solve",
    "tests/test_llm_purchasing.py::test_rent_vs_buy_cli_json_names_tokens",
    "tests/test_llm_report.py::test_llm_report_sections_and_numbers_equal_solve",
    "tests/test_llm_purchasing.py::test_rent_vs_buy_same_job_both_sides",
    "tests/test_host_gpu.py::test_leave_one_gpu_out_median_meets_issue_24",
    "tests/test_llm_mix.py::test_mix_70b_beside_a_cnn_meets_both_deadlines",
    "tests/test_llm_mix.py::test_mix_70b_cheapest_is_no_dearer_than_the_cheapest_one_job_design",
    "tests/test_llm_report.py::test_llm_report_states_each_range",
    "tests/test_llm_ranges.py::test_solve_same_inputs_same_bytes",
    "tests/test_llm_mix.py::test_mix_large_model_target_out_of_reach_is_said_in_tokens_per_s",  # 14 s
    # measured 2026-12-02 (stop 29): the default run was 1,655 tests, 596 s of CPU; these take 320 s of it. The
    # option walks' "every option has a decision" checks stay in the default run (a new option still fails it).
    "tests/test_option_walk_purchasing.py::test_option_is_honoured_or_refused",  # 146 cases: 200 s
    "tests/test_option_walk.py::test_option_is_honoured_or_refused",  # 166 cases: 42 s
    "tests/test_llm_purchasing.py::test_rent_vs_buy_says_when_the_default_batch_is_rounded",  # 20 s
    "tests/test_llm_purchasing.py::test_rent_vs_buy_holds_a_given_global_batch_on_both_sides",  # 18 s
    "tests/test_llm_search.py::test_search_over_vp_cp_and_shard_groups_chooses_what_timing_every_pair_chooses",  # 17 s
    "tests/test_report.py::test_first_screen_carries_the_decision",  # 12 s
    "tests/test_option_walk_multijob.py::test_mix_option_is_honoured_or_refused",  # 118 cases, each an ILP
    "tests/test_option_walk_multijob.py::test_whole_cost_terms_without_tco_years_are_refused",
    "tests/test_option_walk_report.py::test_report_option_is_honoured_or_refused",  # 70 cases, each drawing plots
    "tests/test_option_walk_report.py::test_progress_bar_on_a_terminal",
    "tests/test_option_walk_report.py::test_force_replaces_a_read_only_report",
    "tests/test_llm_purchasing.py::test_compare_vendor_quotes_best_per_catalog_within_its_budget",  # 10 s
}


def _whole_suite(config) -> bool:
    """No test file or folder named on the command line (the testpaths default), and no -m given."""
    named = [a for a in config.invocation_params.args if not a.startswith("-") and (
        os.path.exists(a.split("::")[0]) or "::" in a)]
    return not named and not config.getoption("markexpr") and not config.getoption("keyword")


def pytest_configure(config):
    if _whole_suite(config):
        config.option.markexpr = "not slow"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.split("[", 1)[0] in SLOW:
            item.add_marker(pytest.mark.slow)

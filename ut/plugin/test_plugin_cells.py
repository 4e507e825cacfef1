"""Cells: which tests are multiplied, their ids, markers and every skip reason."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_pypto.harness.cells import ONBOARD_MARKER_REASON, PLATFORM_BOUND_FIXTURES


def collected_ids(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = pytester.runpytest("--collect-only", "-q", *args)
    assert result.ret == 0, result.stdout.str()
    return [ln for ln in result.outlines if "::" in ln]


def test_platform_bound_fixtures_are_the_documented_four() -> None:
    assert set(PLATFORM_BOUND_FIXTURES) == {
        "pypto_config",
        "pypto_runner",
        "pypto_platform",
        "pypto_device",
    }


@pytest.mark.parametrize(
    "fixture", ["pypto_config", "pypto_platform", "pypto_device", "pypto_runner"]
)
def test_each_platform_bound_fixture_multiplies(pytester: pytest.Pytester, fixture: str) -> None:
    # A stand-in pypto_runner shows that the fixture's name alone multiplies the test.
    pytester.makeconftest("import pytest\n@pytest.fixture\ndef pypto_runner():\n    return 1\n")
    pytester.makepyfile(f"def test_x({fixture}):\n    pass\n")
    assert collected_ids(pytester, "--pypto-arch=all") == [
        "test_each_platform_bound_fixture_multiplies.py::test_x[a2a3sim]",
        "test_each_platform_bound_fixture_multiplies.py::test_x[a5sim]",
    ]


def test_indirect_request_through_another_fixture_multiplies(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "import pytest\n@pytest.fixture\ndef mine(pypto_config):\n    return pypto_config\n"
    )
    pytester.makepyfile("def test_x(mine):\n    assert mine.platform.startswith('a')\n")
    result = pytester.runpytest("-v", "--pypto-arch=a5", "--pypto-mode=sim")
    result.stdout.fnmatch_lines(["*test_x[[]a5sim[]] PASSED*"])
    result.assert_outcomes(passed=1)


def test_usefixtures_multiplies(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "import pytest\n@pytest.mark.usefixtures('pypto_platform')\ndef test_x():\n    pass\n"
    )
    assert collected_ids(pytester, "--pypto-arch=a5") == [
        "test_usefixtures_multiplies.py::test_x[a5sim]"
    ]


def test_tests_without_platform_fixtures_are_not_multiplied(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain(tmp_path):\n    pass\n")
    ids = collected_ids(pytester, "--pypto-arch=all", "--pypto-mode=sim,onboard")
    assert ids == ["test_tests_without_platform_fixtures_are_not_multiplied.py::test_plain"]


def test_cells_are_arch_major_sim_first(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(pypto_platform):\n    pass\n")
    ids = collected_ids(pytester, "--pypto-arch=a5,a2a3", "--pypto-mode=onboard,sim")
    assert [i.split("[")[1] for i in ids] == ["a2a3sim]", "a2a3]", "a5sim]", "a5]"]


def test_combined_with_other_parametrization(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "import pytest\n"
        "@pytest.mark.parametrize('n', [1, 2])\n"
        "def test_x(pypto_platform, n):\n    pass\n"
    )
    ids = collected_ids(pytester, "--pypto-arch=all")
    assert len(ids) == 4
    params = sorted(i.split("[")[1].rstrip("]") for i in ids)
    assert all("-" in p for p in params)
    assert sorted(tuple(sorted(p.split("-"))) for p in params) == sorted(
        [("1", "a2a3sim"), ("2", "a2a3sim"), ("1", "a5sim"), ("2", "a5sim")]
    )


def test_k_selects_a_cell(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(pypto_platform):\n    pass\n")
    result = pytester.runpytest("--pypto-arch=all", "-k", "a5sim", "-v")
    result.stdout.fnmatch_lines(["*test_x[[]a5sim[]] PASSED*"])
    result.assert_outcomes(passed=1, deselected=1)


def test_explicit_parametrization_of_the_cell_is_respected(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "import pytest\n"
        "@pytest.mark.parametrize('pypto_platform', ['a5sim'], indirect=True)\n"
        "def test_x(pypto_config):\n    assert pypto_config.platform == 'a5sim'\n"
    )
    result = pytester.runpytest("--pypto-arch=a2a3")
    result.assert_outcomes(passed=1)


def test_markers_are_registered(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.pypto_arch("a5")
        @pytest.mark.platforms("a5sim", "a5")
        def test_a(pypto_platform): pass

        @pytest.mark.pypto_onboard
        def test_b(pypto_platform): pass

        @pytest.mark.pypto_sim
        def test_c(pypto_platform): pass
        """
    )
    result = pytester.runpytest("--strict-markers", "--pypto-arch=all")
    assert result.ret == 0, result.stdout.str()
    markers = pytester.runpytest("--markers").stdout.str()
    for name in (
        "@pytest.mark.pypto_arch(",
        "@pytest.mark.pypto_onboard:",
        "@pytest.mark.pypto_sim:",
        "@pytest.mark.platforms(",
    ):
        assert name in markers


MARKED = """
import pytest

def test_free(pypto_platform): pass

@pytest.mark.pypto_onboard
def test_onboard(pypto_platform): pass

@pytest.mark.pypto_sim
def test_sim(pypto_platform): pass

@pytest.mark.pypto_arch("a5")
def test_a5(pypto_platform): pass

@pytest.mark.pypto_arch(["a2a3"])
def test_a2a3(pypto_platform): pass

@pytest.mark.platforms("a5", "a2a3sim")
def test_platforms(pypto_platform): pass

@pytest.mark.pypto_onboard
def test_plain_onboard(): pass

@pytest.mark.pypto_arch("a5")
def test_plain_a5(): pass

def test_plain(): pass
"""


def test_skip_reasons_on_sim_cells(pytester: pytest.Pytester, skip_reasons) -> None:
    pytester.makepyfile(test_m=MARKED)
    reprec = pytester.inline_run("--pypto-arch=all")
    assert skip_reasons(reprec) == {
        "test_m.py::test_onboard[a2a3sim]": ONBOARD_MARKER_REASON,
        "test_m.py::test_onboard[a5sim]": ONBOARD_MARKER_REASON,
        "test_m.py::test_a5[a2a3sim]": "runs only on a5 (pypto_arch marker), not on a2a3 (cell a2a3sim)",
        "test_m.py::test_a2a3[a5sim]": "runs only on a2a3 (pypto_arch marker), not on a5 (cell a5sim)",
        "test_m.py::test_platforms[a5sim]": "supports only a2a3sim, a5 (platforms marker), not cell a5sim",
        "test_m.py::test_plain_onboard": ONBOARD_MARKER_REASON,
    }
    assert ONBOARD_MARKER_REASON == "needs an NPU: runs only with --pypto-mode onboard"
    reprec.assertoutcome(passed=9, skipped=6)


def test_plain_test_with_arch_marker_skips_when_its_arch_is_not_requested(
    pytester: pytest.Pytester, skip_reasons
) -> None:
    pytester.makepyfile(test_m=MARKED)
    reprec = pytester.inline_run("--pypto-arch=a2a3", "-k", "plain")
    assert skip_reasons(reprec) == {
        "test_m.py::test_plain_onboard": ONBOARD_MARKER_REASON,
        "test_m.py::test_plain_a5": "runs only on a5 (pypto_arch marker), not on a2a3 (cell a2a3sim)",
    }


NO_NPU = "no NPU visible (no {root}/davinci<N> device node)"
# Followed by the installed runtimes and their status, which depend on the host.
NO_RUNTIME = (
    "no onboard runtime serving {platform} (no available runtime of entry-point group "
    "'pytest_pypto.runtimes' serves it; installed: "
)


def test_onboard_cells_without_npu_and_runtime_name_both(
    pytester: pytest.Pytester, skip_reasons, monkeypatch
) -> None:
    pytester.makepyfile(test_m="def test_x(pypto_platform): pass\n")
    reprec = pytester.inline_run("--pypto-mode=onboard", "--pypto-arch=all")
    root = Path(os.environ["PYPTO_DEV_ROOT"])  # ut/conftest.py: an empty one
    reasons = skip_reasons(reprec)
    assert sorted(reasons) == ["test_m.py::test_x[a2a3]", "test_m.py::test_x[a5]"]
    for cell in ("a2a3", "a5"):
        no_runtime = NO_RUNTIME.format(platform=cell)
        assert reasons[f"test_m.py::test_x[{cell}]"].startswith(
            f"onboard cell {cell}: {NO_NPU.format(root=root)}; {no_runtime}"
        )
        assert "sim" in reasons[f"test_m.py::test_x[{cell}]"].removeprefix(no_runtime)


def test_onboard_without_runtime_names_the_runtime(
    pytester: pytest.Pytester, skip_reasons, fake_npus
) -> None:
    pytester.makepyfile(test_m="def test_x(pypto_platform): pass\n")
    reprec = pytester.inline_run("--pypto-mode=onboard")
    (reason,) = skip_reasons(reprec).values()
    assert reason.startswith(f"onboard cell a2a3: {NO_RUNTIME.format(platform='a2a3')}")


def test_onboard_without_npu_names_the_npu(
    pytester: pytest.Pytester, skip_reasons, fake_runtime
) -> None:
    pytester.makepyfile(test_m="def test_x(pypto_platform): pass\n")
    reprec = pytester.inline_run("--pypto-mode=onboard")
    root = Path(os.environ["PYPTO_DEV_ROOT"])  # ut/conftest.py: an empty one
    assert skip_reasons(reprec) == {
        "test_m.py::test_x[a2a3]": f"onboard cell a2a3: {NO_NPU.format(root=root)}"
    }


def test_visible_devices_and_device_option_are_named_when_they_hide_every_npu(
    pytester: pytest.Pytester, skip_reasons, fake_npus, fake_runtime, monkeypatch
) -> None:
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "1,2")
    pytester.makepyfile(test_m="def test_x(pypto_platform): pass\n")
    reprec = pytester.inline_run("--pypto-mode=onboard", "--pypto-device=5-6")
    (reason,) = skip_reasons(reprec).values()
    assert "ASCEND_RT_VISIBLE_DEVICES='1,2'" in reason
    assert "--pypto-device 5-6" in reason


def test_onboard_cells_run_with_npus_and_a_runtime(
    pytester: pytest.Pytester, fake_npus, fake_runtime
) -> None:
    pytester.makepyfile(
        test_m="""
        import pytest

        @pytest.mark.pypto_onboard
        def test_on(pypto_platform, pypto_device):
            assert pypto_platform == "a5"
            assert pypto_device in range(8)

        @pytest.mark.pypto_sim
        def test_sim_only(pypto_platform): pass
        """
    )
    result = pytester.runpytest("--pypto-mode=onboard", "--pypto-arch=a5", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*simulator only (pypto_sim): runs only with --pypto-mode sim*"])


def test_header_names_runtime_and_devices(
    pytester: pytest.Pytester, fake_npus, fake_runtime, monkeypatch
) -> None:
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "0,1,2,3,6")
    pytester.makepyfile("def test_x(): pass\n")
    result = pytester.runpytest("--pypto-mode=onboard,sim", "--pypto-device=1-7")
    result.stdout.fnmatch_lines(
        ["pytest-pypto *: cells a2a3sim, a2a3; devices 1-3,6 (onboard runtime: fakenpu); *"]
    )


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            "pypto_arch('x86')",
            "@pytest.mark.pypto_arch('x86'): unknown architecture; valid are a2a3, a5",
        ),
        ("pypto_arch()", "@pytest.mark.pypto_arch needs at least one architecture"),
        ("platforms('a6')", "@pytest.mark.platforms: unknown platform 'a6'"),
        ("platforms()", "@pytest.mark.platforms needs at least one platform string"),
    ],
)
def test_bad_marker_is_a_collection_error_without_traceback(
    pytester: pytest.Pytester, marker: str, message: str
) -> None:
    pytester.makepyfile(test_m=f"import pytest\n@pytest.mark.{marker}\ndef test_x(): pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    assert f"test_m.py::test_x: {message}" in out
    assert "Traceback" not in out


def test_onboard_and_sim_together_is_an_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_m="import pytest\n@pytest.mark.pypto_onboard\n@pytest.mark.pypto_sim\n"
        "def test_x(pypto_platform): pass\n"
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*cannot be both @pytest.mark.pypto_onboard and pypto_sim*"])


def test_stacked_arch_markers_intersect(pytester: pytest.Pytester, skip_reasons) -> None:
    pytester.makepyfile(
        test_m="import pytest\n"
        "pytestmark = pytest.mark.pypto_arch('a2a3', 'a5')\n"
        "@pytest.mark.pypto_arch('a5')\n"
        "def test_x(pypto_platform): pass\n"
    )
    reprec = pytester.inline_run("--pypto-arch=all")
    assert list(skip_reasons(reprec)) == ["test_m.py::test_x[a2a3sim]"]


NAMING_TEST = """
import pytest

@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_x(my_runner, platform, request):
    cell = dict(request.node.user_properties).get("pypto_platform")
    assert cell == ({expected}), cell
"""


@pytest.mark.parametrize("registered", [True, False])
def test_a_registered_naming_fixture_names_the_cell_by_platform(
    pytester: pytest.Pytester, registered: bool
) -> None:
    # Another plugin's kernel fixture (the compat plugin's test_runner, here a stand-in):
    # registered, a test using it names its cell by its platform parameter; otherwise the
    # test is a plain parametrized one.  Neither is multiplied per cell.
    register = "    add_cell_naming_fixtures(config, 'my_runner')\n" if registered else "    pass\n"
    pytester.makeconftest(
        "import pytest\n"
        "from pytest_pypto.plugin.cells import add_cell_naming_fixtures\n"
        "def pytest_configure(config):\n"
        + register
        + "@pytest.fixture\ndef my_runner():\n    return 1\n"
    )
    expected = "platform" if registered else "None"
    pytester.makepyfile(NAMING_TEST.format(expected=expected))
    result = pytester.runpytest("-v", "--pypto-arch=all")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random(
        ["*test_x[[]a2a3sim[]] PASSED*", "*test_x[[]a5sim[]] PASSED*"]
    )

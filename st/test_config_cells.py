"""Each requested cell hands the test a RunConfig whose arch and mode round-trip its platform."""

from pytest_pypto import RunConfig
from pytest_pypto.arch import parse_platform


def test_platform_round_trip(pypto_config, pypto_platform):
    arch, mode = parse_platform(pypto_platform)
    assert (pypto_config.arch, pypto_config.execution_mode) == (arch, mode)
    assert pypto_config.platform == pypto_platform
    assert RunConfig(arch=arch, execution_mode=mode).platform == pypto_platform

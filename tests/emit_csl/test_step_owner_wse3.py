"""The step-owner plans of test_step_owner.py on WSE-3, which binds each fabric queue to one colour for the
whole program: from 8x8 the multicasts are relayed hop by hop (a file of its own so that the two run on
different test workers)."""

import pytest

from .test_step_owner import KERNELS, _check


@pytest.mark.parametrize("name, mesh", [(k, m) for k in KERNELS for m in ((4, 3), (3, 7))]
                         + [("trisolv", (8, 8)), ("cholesky", (8, 8)), ("gramschmidt", (8, 8)),
                            pytest.param("lu", (8, 8), marks=pytest.mark.slow)])
def test_step_owner_multicasts_execute_on_wse3(name, mesh):
    plan = _check(name, mesh, "wse3")
    if mesh == (8, 8):      # more roots than WSE-3's fabric queues: relayed hop by hop
        assert plan["relayed_multicasts"]

"""The step-owner plans of test_step_owner.py on WSE-3, which binds each fabric queue to one colour for the
whole program: from 8x8 the multicasts are relayed hop by hop (a file of its own so that the two run on
different test workers)."""

import pytest

from .test_step_owner import KERNELS, _check


# CI: every kernel on 4x3, trisolv also on 3x7 and relayed on 8x8; the rest (1-2 minutes) with -m slow.
@pytest.mark.parametrize("name, mesh", [(k, (4, 3)) for k in KERNELS] + [("trisolv", (3, 7)), ("trisolv", (8, 8))]
                         + [pytest.param(k, (3, 7), marks=pytest.mark.slow) for k in KERNELS if k != "trisolv"]
                         + [pytest.param(k, (8, 8), marks=pytest.mark.slow) for k in ("cholesky", "gramschmidt", "lu")])
def test_step_owner_multicasts_execute_on_wse3(name, mesh):
    plan = _check(name, mesh, "wse3")
    if mesh == (8, 8):      # more roots than WSE-3's fabric queues: relayed hop by hop
        assert plan["relayed_multicasts"]

"""python -m bench.speed.route_kernels: two router sources compiled and timed side by side on the same rows, each
line saying whether they routed and predicted alike. No speed is asserted."""

from __future__ import annotations

import pytest

from bench.speed import route_kernels
from get_core.model import routing


@pytest.mark.skipif(routing.library() is None, reason="the compiled router could not be built (g++)")
def test_a_tiny_run_of_one_source_against_itself_reports_every_row_alike(capsys):
    route_kernels.main([str(routing.SOURCE), str(routing.SOURCE), "--rows", "200", "--features", "9",
                        "--repeats", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [f"depth {d}, {leaf} leaves" for d in (1, 8)
                                                       for leaf in ("constant", "linear")]
    assert all(line.endswith("identical: True") and "0:route.cpp" in line and "1:route.cpp" in line
               for line in lines)


@pytest.mark.skipif(routing.library() is None, reason="the compiled router could not be built (g++)")
def test_the_checkpoint_routing_of_one_source_against_itself_reports_every_row_alike(capsys):
    route_kernels.main([str(routing.SOURCE), str(routing.SOURCE), "--models", "--rows", "300", "--features", "4",
                        "--starts", "3", "--repeats", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [f"depth {d}, 3 starts, checkpoint routing" for d in (4, 6, 8)]
    assert all(line.endswith("identical: True") for line in lines)

import time

import pytest
import torch

from bench.studies import class_throughput


def test_a_cpu_fit_is_timed_by_this_process_cpu_clock_and_takes_some():
    assert class_throughput._clock("cpu") is time.process_time
    assert class_throughput.fit_ms("classes", depth=2, epochs=2) > 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_cuda_fit_is_timed_in_wall_seconds_after_the_gpu_finishes():
    assert class_throughput.fit_ms("regression", depth=2, epochs=2, device="cuda") > 0

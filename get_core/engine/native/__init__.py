"""The fused CPU kernel for the soft pass (soft_pass.cpp), compiled on first use and cached.

Why a small C++ file and not torch ops: on the CPU the soft pass is memory-bound in eager torch (a dozen passes over
(models x nodes x rows) arrays); the kernel keeps a tile of rows in cache and does all of it in one sweep. It is
plain C++ with std::thread, built with the system's g++ into a per-user cache keyed by the source, the compiler
flags and the CPU (``get_core.model.native``: the build rule shared with the model's router), and loaded with
ctypes (no torch headers, builds in about a second). When it cannot be built, ``load()`` returns None and training
uses the torch implementation in ``soft.py`` (which is also the one used on CUDA).
"""

from __future__ import annotations

import ctypes
from functools import lru_cache
from pathlib import Path

import torch

from get_core.engine import classes
from get_core.engine.soft import Params
from get_core.model import native

SOURCE = Path(__file__).with_name("soft_pass.cpp")
FLAGS = ["-O3", "-march=native", "-ffast-math", "-pthread", "-fPIC"]  # compile; linked without -ffast-math
MAX_FEATURES = 63  # the kernel's tile holds at most 64 columns of [x, 1]


@lru_cache(maxsize=1)
def load() -> ctypes.CDLL | None:
    """The compiled kernel, building it if needed (``get_core.model.native``); None (and training falls back to
    torch) if that fails."""
    built = native.build(SOURCE, FLAGS, (["-lmvec"], []))  # glibc's vector math library gives vectorized expf
    if built is None:
        return None
    lib = ctypes.CDLL(str(built))
    lib.get_soft_pass.restype = ctypes.c_int
    lib.get_soft_pass.argtypes = [ctypes.c_int] * 7 + [ctypes.c_void_p] * 9 + [ctypes.c_int]
    return lib


def available(device: torch.device, n_features: int) -> bool:
    return device.type == "cpu" and n_features <= MAX_FEATURES and load() is not None


def soft_loss_and_grad(params: Params, alpha: torch.Tensor, Xat: torch.Tensor, y: torch.Tensor, w: torch.Tensor,
                       starts: int, n_rows: torch.Tensor | None = None,
                       class_loss: str = classes.SOFT_LOSS) -> tuple[torch.Tensor, Params]:
    """Same contract as ``soft.soft_loss_and_grad`` for float32 CPU tensors; Xat (B, p+1, n) contiguous, the rows
    transposed (``Problems.Xat``: a tile's columns are then contiguous floats).

    ``n_rows`` (B,) lets the kernel skip each problem's trailing padding rows (weight 0). A classification problem
    (one-hot y (B, n, C)) passes each row's class index and, per leaf, the loss's terms [G (C), A]
    (``classes.leaf_terms``: R = A + G[class]); the kernel returns per leaf the reach summed by class and in all,
    from which ``classes.gradient_from_sums`` makes the leaf gradient.
    """
    B, p1, n = Xat.shape
    M, N, p = params.weights.shape
    L = N + 1
    linear = params.coefs is not None
    n_classes = y.shape[2] if y.dim() == 3 else 0
    a = alpha.view(M, 1, 1)
    split = torch.cat([params.weights, params.thresholds.unsqueeze(2).neg()], dim=2).mul_(-a).contiguous()
    if n_classes:
        y = y.argmax(dim=2).to(torch.float32)
        leafp = torch.cat(classes.leaf_terms(params.intercepts, class_loss), dim=2).contiguous()
    else:
        leafp = (torch.cat([params.coefs, params.intercepts.unsqueeze(2)], dim=2) if linear
                 else params.intercepts).contiguous()
    loss = torch.empty(M, dtype=torch.float32)
    g_split = torch.empty(M, N, p1, dtype=torch.float32)
    g_leaf = torch.empty_like(leafp)
    tensors = (Xat, y, w, split, leafp, loss, g_split, g_leaf)
    if any(t.dtype != torch.float32 or not t.is_contiguous() for t in tensors):
        raise TypeError("the native soft pass needs contiguous float32 tensors")
    rows = torch.full((B,), n, dtype=torch.int64) if n_rows is None else n_rows.to(torch.int64).contiguous()
    pointers = [t.data_ptr() for t in tensors]
    status = load().get_soft_pass(B, starts, n, p1, L.bit_length() - 1, int(linear), n_classes, *pointers[:3],
                                  rows.data_ptr(),
                                  *pointers[3:], torch.get_num_threads())
    if status:
        raise ValueError(f"the native soft pass supports at most {MAX_FEATURES} features")
    g_weights = g_split[:, :, :p].mul(-a)
    g_thresholds = g_split[:, :, p].mul(alpha.view(M, 1))
    if n_classes:
        g_class = classes.gradient_from_sums(params.intercepts, g_leaf[:, :, :n_classes], g_leaf[:, :, n_classes:],
                                             class_loss)
        return loss, Params(g_weights, g_thresholds, g_class, None)
    g_leaf.mul_(-2.0)
    if linear:
        return loss, Params(g_weights, g_thresholds, g_leaf[:, :, p].contiguous(), g_leaf[:, :, :p].contiguous())
    return loss, Params(g_weights, g_thresholds, g_leaf, None)

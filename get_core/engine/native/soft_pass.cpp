// Fused soft-tree loss and gradient on the CPU (see get_core/engine/soft.py for the math and the batched conventions).
//
// One task = one model (a start of a problem) x one block of rows. Rows are processed in tiles of T rows laid out
// [node][row] so every inner loop runs over T contiguous floats and vectorizes (-O3 -ffast-math; expf comes from
// glibc's vector math library). The rows arrive transposed (Xat: [feature][row]), so a tile's columns are copies of
// T contiguous floats. Per tile: top-down reach Q with s = sigmoid(split . xa) computed only where the tile arrives;
// leaf residuals; bottom-up R (loss) and differences d = R_left - R_right; dL/du. Gradient sums stay T wide
// ([node][feature][row lane]) across the task's tiles and are reduced over the lanes once per task: a horizontal sum
// per (node, feature) per tile measured as the bottleneck. Those sums (nodes x features x T floats: 88 KB at depth 6
// and 10 features) do not fit the L1 cache, so they are added to once per group of G tiles (from each tile's dL/du,
// kept for the group), each (node, feature) loaded and stored once per group instead of once per tile: every lane
// still adds the same products in the same tile order, so the sums are the same floats.
// Nothing of size (nodes x all rows) is materialized. Each task reduces into its own scratch row; models' partial
// sums are added at the end.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#if defined(__AVX512F__)
#include <immintrin.h>
extern "C" __m512 _ZGVeN16v_expf(__m512);  // glibc's libmvec: expf on 16 lanes (what -ffast-math vectorizes to)
#endif

namespace {
constexpr int T = 32;  // rows per tile (measured: 32 is ~3x faster than 16 on this machine, 64+ no better)
constexpr int G = 8;   // tiles per group between additions to the gradient sums

struct Shape {
    int B, S, n, p1, depth, linear, classes;
    int N() const { return (1 << depth) - 1; }
    int L() const { return 1 << depth; }
    int M() const { return B * S; }
    int leaf_width() const { return linear ? p1 : (classes ? classes + 1 : 1); }
    long scratch() const { return (long)N() * p1 + (long)L() * leaf_width() + 1; }
};

// A node is "reached" by a tile when some row's reach probability there exceeds REACH * (the largest row weight).
// Unreached subtrees are skipped (no split, exp, residual or gradient work; their R counts as 0): what they would
// add to the loss or any gradient is below float32 resolution, and once the splits sharpen most of a deep tree is
// unreached by any given tile of 32 rows.
constexpr float REACH = 1e-7f;

// Whether some q[r] > floor (floor >= 0): one compare per 16 lanes instead of a horizontal maximum.
inline bool any_above(const float* q, float floor) {
#if defined(__AVX512F__)
    static_assert(T == 32, "two 16-lane vectors per tile");
    const __m512 f = _mm512_set1_ps(floor);
    return (_mm512_cmp_ps_mask(_mm512_loadu_ps(q), f, _CMP_GT_OQ) |
            _mm512_cmp_ps_mask(_mm512_loadu_ps(q + 16), f, _CMP_GT_OQ)) != 0;
#else
    float m = 0.f;
    for (int r = 0; r < T; ++r) m = std::max(m, q[r]);
    return m > floor;
#endif
}

// acc[r] = sum over j of a[j] xt[j][r], added in feature order (one fused multiply-add per feature).
inline void dot(const float* a, const float* xt, int p1, float* acc) {
#if defined(__AVX512F__)
    __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
    for (int j = 0; j < p1; ++j) {
        const __m512 aj = _mm512_set1_ps(a[j]);
        lo = _mm512_fmadd_ps(aj, _mm512_loadu_ps(xt + j * T), lo);
        hi = _mm512_fmadd_ps(aj, _mm512_loadu_ps(xt + j * T + 16), hi);
    }
    _mm512_storeu_ps(acc, lo);
    _mm512_storeu_ps(acc + 16, hi);
#else
    for (int r = 0; r < T; ++r) acc[r] = 0.f;
    for (int j = 0; j < p1; ++j) {
        const float aj = a[j];
        for (int r = 0; r < T; ++r) acc[r] += aj * xt[j * T + r];
    }
#endif
}

// s[r] = 1 / (1 + exp(-u)), u = acc[r] clamped to [-80, 80] (so exp neither overflows nor underflows). The AVX-512
// path calls glibc's vector expf on the clamped argument and divides exactly: left to -ffast-math, g++ computed exp
// of the unclamped argument (sending every lane past 88 through glibc's slow scalar path) and blended the clamp in
// after, or replaced the division by an approximate reciprocal (other bits).
inline void sigmoid(const float* acc, float* s) {
#if defined(__AVX512F__)
    const __m512 one = _mm512_set1_ps(1.f), low = _mm512_set1_ps(-80.f), high = _mm512_set1_ps(80.f);
    for (int h = 0; h < T; h += 16) {
        const __m512 u = _mm512_min_ps(high, _mm512_max_ps(low, _mm512_loadu_ps(acc + h)));
        const __m512 e = _ZGVeN16v_expf(_mm512_sub_ps(_mm512_setzero_ps(), u));
        _mm512_storeu_ps(s + h, _mm512_div_round_ps(one, _mm512_add_ps(one, e), _MM_FROUND_CUR_DIRECTION));
    }
#else
    for (int r = 0; r < T; ++r) {
        const float u = std::min(80.f, std::max(-80.f, acc[r]));
        s[r] = 1.f / (1.f + std::exp(-u));
    }
#endif
}

// One tile's rows: columns xt [feature][row], targets and weights, zero past the tile's real rows.
struct Tile {
    const float* xt;
    const float* yt;
    const float* wt;
    float wmax;
};

// Four dot products at once (each as ``dot``): four independent chains of fused multiply-adds keep the FMA units
// busy where one chain waits on each addition's latency.
inline void dot4(const float* const* a, const float* xt, int p1, float* const* acc) {
#if defined(__AVX512F__)
    __m512 lo[4], hi[4];
    for (int q = 0; q < 4; ++q) lo[q] = hi[q] = _mm512_setzero_ps();
    for (int j = 0; j < p1; ++j) {
        const __m512 xl = _mm512_loadu_ps(xt + j * T), xh = _mm512_loadu_ps(xt + j * T + 16);
        for (int q = 0; q < 4; ++q) {
            const __m512 aj = _mm512_set1_ps(a[q][j]);
            lo[q] = _mm512_fmadd_ps(aj, xl, lo[q]);
            hi[q] = _mm512_fmadd_ps(aj, xh, hi[q]);
        }
    }
    for (int q = 0; q < 4; ++q) {
        _mm512_storeu_ps(acc[q], lo[q]);
        _mm512_storeu_ps(acc[q] + 16, hi[q]);
    }
#else
    for (int q = 0; q < 4; ++q) dot(a[q], xt, p1, acc[q]);
#endif
}

#if defined(__AVX512F__)
// Single vector operations the compiler may not reassociate or fuse with their neighbours under -ffast-math (the
// _round forms are opaque builtins): the kernel's sums keep one order, that of the version they were first
// measured with.
inline __m512 mul(__m512 a, __m512 b) { return _mm512_mul_round_ps(a, b, _MM_FROUND_CUR_DIRECTION); }
inline __m512 add(__m512 a, __m512 b) { return _mm512_add_round_ps(a, b, _MM_FROUND_CUR_DIRECTION); }
inline __m512 sub(__m512 a, __m512 b) { return _mm512_sub_round_ps(a, b, _MM_FROUND_CUR_DIRECTION); }
#endif

// One model on one tile: fills s, Q, R, res (scratch), the reached flags, d (dL/du per node, [node][row]) and, for
// linear leaves, e (the leaf gradient's row factors, [leaf][row]); adds the loss and the constant or class leaves'
// gradients. The split and linear leaves' gradients are added per group (``add_products``). ``order`` lists the
// reached nodes level by level, then the reached leaves: every loop runs over reached nodes only (no branch per node
// that the data decide), and an unreached child's R reads as 0.
__attribute__((noinline)) void tile(const Shape& sh, const Tile& tl, const float* split, const float* leafp, float* s,
                                    float* d, float* Q, float* R, float* res, float* e, unsigned char* reached,
                                    int* order, float* lacc, float* lossacc) {
    const int N = sh.N(), p1 = sh.p1, lw = sh.leaf_width(), depth = sh.depth;
    const float* xt = tl.xt;
    const float* yt = tl.yt;
    const float* wt = tl.wt;
    const float floor = REACH * tl.wmax;
    std::memset(reached, 0, 2 * N + 1);
    if (!(tl.wmax > 0.f)) return;  // no weight: nothing reached, nothing added
    // Level l's reached nodes are order[first[l] .. first[l + 1]), the reached leaves' from first[depth] (depth <= 30).
    int first[32];
    int n = 0;
    reached[0] = 1;
    order[n++] = 0;
    first[0] = 0;
    for (int r = 0; r < T; ++r) Q[r] = wt[r];  // top-down: Q_l = Q s, Q_r = Q - Q_l, s only where reached
    for (int level = 0; level < depth; ++level) {
        const int begin = first[level], end = n;
        first[level + 1] = end;
        int i = begin;
        for (; i + 4 <= end; i += 4) {  // u = split . xa into s, four nodes at a time
            const float* a[4];
            float* u[4];
            for (int q = 0; q < 4; ++q) {
                a[q] = split + (long)order[i + q] * p1;
                u[q] = s + (long)order[i + q] * T;
            }
            dot4(a, xt, p1, u);
        }
        for (; i < end; ++i) dot(split + (long)order[i] * p1, xt, p1, s + (long)order[i] * T);
        for (i = begin; i < end; ++i) {
            const int t = order[i];
            float* st = s + (long)t * T;
            const float* Qt = Q + (long)t * T;
            float* Ql = Q + (long)(2 * t + 1) * T;
            float* Qr = Q + (long)(2 * t + 2) * T;
            sigmoid(st, st);
            for (int r = 0; r < T; ++r) {
                Ql[r] = Qt[r] * st[r];
                Qr[r] = Qt[r] - Ql[r];
            }
            if (any_above(Ql, floor)) {
                reached[2 * t + 1] = 1;
                order[n++] = 2 * t + 1;
            }
            if (any_above(Qr, floor)) {
                reached[2 * t + 2] = 1;
                order[n++] = 2 * t + 2;
            }
        }
    }
    const int leaves = first[depth];
    for (int i = leaves; i < n; ++i) {
        const int l = order[i] - N;
        float* Rl = R + (long)(N + l) * T;
        float pred[T];
        const float* k = leafp + (long)l * lw;
        if (sh.classes) {  // R = A_l + G_l[class of the row]: leafp holds [G_l (C), A_l] (see native.py)
            for (int r = 0; r < T; ++r) Rl[r] = k[sh.classes] + k[(int)yt[r]];
            continue;
        }
        if (sh.linear) {
            dot(k, xt, p1, pred);
        } else {
            for (int r = 0; r < T; ++r) pred[r] = k[0];
        }
        float* rl = res + (long)l * T;
        for (int r = 0; r < T; ++r) {
            rl[r] = yt[r] - pred[r];
            Rl[r] = rl[r] * rl[r];
        }
    }
    for (int level = depth - 1; level >= 0; --level) {  // bottom-up: R_t = R_r + s (R_l - R_r)
        for (int i = first[level]; i < first[level + 1]; ++i) {
            const int t = order[i];
            float* Rt = R + (long)t * T;
            const float* Rl = R + (long)(2 * t + 1) * T;
            const float* Rr = R + (long)(2 * t + 2) * T;
            float* dt = d + (long)t * T;
            const float* st = s + (long)t * T;
#if defined(__AVX512F__)
            const __mmask16 left = reached[2 * t + 1] ? 0xFFFF : 0, right = reached[2 * t + 2] ? 0xFFFF : 0;
            for (int h = 0; h < T; h += 16) {
                const __m512 rr = _mm512_maskz_loadu_ps(right, Rr + h);
                const __m512 diff = sub(_mm512_maskz_loadu_ps(left, Rl + h), rr);
                _mm512_storeu_ps(dt + h, diff);
                _mm512_storeu_ps(Rt + h, _mm512_fmadd_ps(diff, _mm512_loadu_ps(st + h), rr));
            }
#else
            const bool left = reached[2 * t + 1], right = reached[2 * t + 2];
            for (int r = 0; r < T; ++r) {
                const float rr = right ? Rr[r] : 0.f;
                dt[r] = (left ? Rl[r] : 0.f) - rr;
                Rt[r] = rr + st[r] * dt[r];
            }
#endif
        }
    }
    for (int r = 0; r < T; ++r) lossacc[r] += wt[r] * R[r];
    for (int i = 0; i < leaves; ++i) {  // dL/du = Q_l (1 - s) (R_l - R_r)
        const int t = order[i];
        const float* Ql = Q + (long)(2 * t + 1) * T;
        const float* st = s + (long)t * T;
        float* dt = d + (long)t * T;
#if defined(__AVX512F__)
        const __m512 one = _mm512_set1_ps(1.f);
        for (int h = 0; h < T; h += 16)
            _mm512_storeu_ps(dt + h, mul(mul(_mm512_loadu_ps(dt + h), _mm512_loadu_ps(Ql + h)),
                                         sub(one, _mm512_loadu_ps(st + h))));
#else
        for (int r = 0; r < T; ++r) dt[r] = Ql[r] * (1.f - st[r]) * dt[r];
#endif
    }
    for (int i = leaves; i < n; ++i) {
        const int l = order[i] - N;
        const float* Ql = Q + (long)(N + l) * T;
        float* g = lacc + (long)l * lw * T;
        if (sh.classes) {  // per leaf: the reach summed by the rows' class, and in all (g_leaf [QY (C), reach])
            for (int r = 0; r < T; ++r) {
                g[(long)((int)yt[r]) * T + r] += Ql[r];
                g[(long)sh.classes * T + r] += Ql[r];
            }
            continue;
        }
        const float* rl = res + (long)l * T;
#if defined(__AVX512F__)
        for (int h = 0; h < T; h += 16) {
            const __m512 el = mul(_mm512_loadu_ps(Ql + h), _mm512_loadu_ps(rl + h));
            if (sh.linear)
                _mm512_storeu_ps(e + (long)l * T + h, el);
            else
                _mm512_storeu_ps(g + h, add(_mm512_loadu_ps(g + h), el));
        }
#else
        float el[T];
        for (int r = 0; r < T; ++r) el[r] = Ql[r] * rl[r];
        if (sh.linear) {
            std::memcpy(e + (long)l * T, el, sizeof el);
        } else {
            for (int r = 0; r < T; ++r) g[r] += el[r];
        }
#endif
    }
}

// g[i][j][r] += f_k[i][r] * xt_k[j][r] for the group's tiles k in order, where tile k reached row i of f (``flags``
// [k][i], ``count`` rows i, e.g. the branch nodes): each (i, j) sum is loaded and stored once per group.
void add_products(float* g, int count, int p1, const float* const* f, const unsigned char* const* flags,
                  const float* const* xt, int tiles) {
    for (int i = 0; i < count; ++i) {
        int ks[G], nk = 0;
        for (int k = 0; k < tiles; ++k)
            if (flags[k][i]) ks[nk++] = k;
        if (!nk) continue;
        float* gi = g + (long)i * p1 * T;
#if defined(__AVX512F__)
        __m512 fl[G], fh[G];
        for (int q = 0; q < nk; ++q) {
            fl[q] = _mm512_loadu_ps(f[ks[q]] + (long)i * T);
            fh[q] = _mm512_loadu_ps(f[ks[q]] + (long)i * T + 16);
        }
        for (int j = 0; j < p1; ++j) {
            __m512 lo = _mm512_loadu_ps(gi + j * T), hi = _mm512_loadu_ps(gi + j * T + 16);
            for (int q = 0; q < nk; ++q) {
                const float* xk = xt[ks[q]] + j * T;
                lo = _mm512_fmadd_ps(fl[q], _mm512_loadu_ps(xk), lo);
                hi = _mm512_fmadd_ps(fh[q], _mm512_loadu_ps(xk + 16), hi);
            }
            _mm512_storeu_ps(gi + j * T, lo);
            _mm512_storeu_ps(gi + j * T + 16, hi);
        }
#else
        for (int j = 0; j < p1; ++j) {
            float sum[T];
            for (int r = 0; r < T; ++r) sum[r] = gi[j * T + r];
            for (int q = 0; q < nk; ++q) {
                const float* fk = f[ks[q]] + (long)i * T;
                const float* xk = xt[ks[q]] + j * T;
                for (int r = 0; r < T; ++r) sum[r] += fk[r] * xk[r];
            }
            for (int r = 0; r < T; ++r) gi[j * T + r] = sum[r];
        }
#endif
    }
}

// Flush-to-zero and denormals-are-zero for this thread while the kernel runs, restored after: -ffast-math code
// expects them (subnormal floats take a slow microcode path), but a shared library must not change the whole
// process's arithmetic, which linking with -ffast-math would do at load time (crtfastmath.o).
class FlushDenormals {
   public:
#if defined(__SSE__)
    FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040); }
    ~FlushDenormals() { _mm_setcsr(saved_); }

   private:
    unsigned int saved_;
#endif
};
}  // namespace

// Xat (B, p1, n): each problem's rows transposed. n_rows[b] <= n real rows of problem b (its padding rows, all of
// weight 0, are skipped). classes > 0: classification, y holds each row's class index (as a float) and leafp /
// g_leaf are C + 1 wide.
extern "C" int get_soft_pass(int B, int S, int n, int p1, int depth, int linear, int classes, const float* Xat,
                             const float* y, const float* w, const long* n_rows, const float* split,
                             const float* leafp, float* loss, float* g_split, float* g_leaf, int n_threads) {
    const Shape sh{B, S, n, p1, depth, linear, classes};
    if (p1 > 64) return 1;
    const FlushDenormals calling_thread;
    const int M = sh.M(), N = sh.N(), L = sh.L(), lw = sh.leaf_width();
    const int want = std::max(1, 4 * n_threads);
    int blocks = std::max(1, std::min((n + 63) / 64, (want + M - 1) / M));
    const int rows_per_block = ((n + blocks - 1) / blocks + T - 1) / T * T;
    blocks = (n + rows_per_block - 1) / rows_per_block;
    const long tasks = (long)M * blocks;
    std::vector<float> scratch((size_t)tasks * sh.scratch(), 0.f);
    // std::thread, not OpenMP: torch ships its own libgomp, and two OpenMP runtimes spin-waiting on two cores
    // measured 10-100x slowdowns of the torch ops that run between kernel calls.
    std::atomic<long> next{0};
    auto worker = [&]() {
        const FlushDenormals this_thread;
        std::vector<float> s((size_t)N * T), Q((size_t)(2 * N + 1) * T), R((size_t)(2 * N + 1) * T);
        std::vector<float> res((size_t)L * T), d((size_t)G * N * T), e(linear ? (size_t)G * L * T : 0);
        std::vector<unsigned char> reached((size_t)G * (2 * N + 1));
        std::vector<int> order((size_t)(2 * N + 1));
        std::vector<float> cols((size_t)G * p1 * T), ys((size_t)G * T), ws((size_t)G * T);
        std::vector<float> acc(sh.scratch() * T);  // [gacc | lacc | lossacc], each entry T lanes wide
        // The group's tile k: its rows (xt[k], yt[k], wt[k]), dL/du (dk[k]), linear leaves' factors (ek[k]) and
        // reached flags (nodes[k], its leaves' from leaves[k]).
        float *xt[G], *yt[G], *wt[G], *dk[G], *ek[G];
        unsigned char *nodes[G], *leaves[G];
        for (int k = 0; k < G; ++k) {
            xt[k] = cols.data() + (long)k * p1 * T;
            yt[k] = ys.data() + (long)k * T;
            wt[k] = ws.data() + (long)k * T;
            dk[k] = d.data() + (long)k * N * T;
            ek[k] = linear ? e.data() + (long)k * L * T : nullptr;
            nodes[k] = reached.data() + (long)k * (2 * N + 1);
            leaves[k] = nodes[k] + N;
        }
        for (long task = next++; task < tasks; task = next++) {
            const int m = (int)(task / blocks), blk = (int)(task % blocks), b = m / S;
            const int r0 = blk * rows_per_block, r1 = std::min((int)n_rows[b], r0 + rows_per_block);
            float* out = scratch.data() + task * sh.scratch();
            std::fill(acc.begin(), acc.end(), 0.f);
            float* gacc = acc.data();
            float* lacc = gacc + (long)N * p1 * T;
            float* lossacc = lacc + (long)L * lw * T;
            const float* split_m = split + (long)m * N * p1;
            const float* leafp_m = leafp + (long)m * L * lw;
            for (int g0 = r0; g0 < r1; g0 += G * T) {
                const int count = std::min(G, (r1 - g0 + T - 1) / T);
                for (int k = 0; k < count; ++k) {  // the group's tiles, zero past the block's real rows
                    const int r = g0 + k * T, rows = std::min(T, r1 - r);
                    for (int j = 0; j < p1; ++j) {
                        const float* column = Xat + ((long)b * p1 + j) * n + r;
                        for (int i = 0; i < T; ++i) xt[k][j * T + i] = i < rows ? column[i] : 0.f;
                    }
                    float wmax = 0.f;
                    for (int i = 0; i < T; ++i) {
                        yt[k][i] = i < rows ? y[(long)b * n + r + i] : 0.f;
                        wt[k][i] = i < rows ? w[(long)b * n + r + i] : 0.f;
                        wmax = std::max(wmax, wt[k][i]);
                    }
                    tile(sh, Tile{xt[k], yt[k], wt[k], wmax}, split_m, leafp_m, s.data(), dk[k], Q.data(), R.data(),
                         res.data(), ek[k], nodes[k], order.data(), lacc, lossacc);
                }
                add_products(gacc, N, p1, dk, nodes, xt, count);
                if (linear) add_products(lacc, L, p1, ek, leaves, xt, count);
            }
            for (long i = 0; i < sh.scratch(); ++i) {
                float total = 0.f;
                for (int r = 0; r < T; ++r) total += acc[i * T + r];
                out[i] = total;
            }
        }
    };
    // Small passes stay on the calling thread: starting and joining a thread costs tens of microseconds when idle
    // and a whole scheduler time slice when the machine is busy, more than such a pass takes.
    const double work = (double)M * (N + L) * n;
    const int threads = work < 1e6 ? 1 : (int)std::min<long>(n_threads, tasks);
    std::vector<std::thread> pool;
    for (int i = 1; i < threads; ++i) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
    for (int m = 0; m < M; ++m) {
        float* gs = g_split + (long)m * N * p1;
        float* gl = g_leaf + (long)m * L * lw;
        std::memset(gs, 0, sizeof(float) * N * p1);
        std::memset(gl, 0, sizeof(float) * L * lw);
        loss[m] = 0.f;
        for (int blk = 0; blk < blocks; ++blk) {
            const float* part = scratch.data() + ((long)m * blocks + blk) * sh.scratch();
            for (long i = 0; i < (long)N * p1; ++i) gs[i] += part[i];
            for (long i = 0; i < (long)L * lw; ++i) gl[i] += part[(long)N * p1 + i];
            loss[m] += part[sh.scratch() - 1];
        }
    }
    return 0;
}

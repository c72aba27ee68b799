// Fused soft-tree loss and gradient on the CPU (see get_core/engine/soft.py for the math and the batched conventions).
//
// One task = one model (a start of a problem) x one block of rows. Rows are processed in tiles of T rows laid out
// [node][row] so every inner loop runs over T contiguous floats and vectorizes (-O3 -ffast-math; expf comes from
// glibc's vector math library). Per tile: top-down reach Q with s = sigmoid(split . xa) computed only where the
// tile arrives; leaf residuals; bottom-up R (loss) and differences d = R_left - R_right; dL/du; then the gradient
// contributions. Gradient sums stay T wide ([node][feature][row lane]) across the task's tiles and are reduced over
// the lanes once per task: a horizontal sum per (node, feature) per tile measured as the bottleneck.
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

namespace {
constexpr int T = 32;  // rows per tile (measured: 32 is ~3x faster than 16 on this machine, 64+ no better)

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

void tile(const Shape& sh, const float* xa, const float* y, const float* w, int rows, const float* split,
          const float* leafp, float* s, float* d, float* Q, float* R, float* res, unsigned char* reached,
          float* gacc, float* lacc, float* lossacc) {
    const int N = sh.N(), L = sh.L(), p1 = sh.p1, lw = sh.leaf_width();
    float xt[64 * T];  // p1 <= 64 handled by the caller's guard; transposed tile [feature][row]
    float yt[T], wt[T];
    float wmax = 0.f;
    for (int r = 0; r < T; ++r) {
        const bool real = r < rows;
        yt[r] = real ? y[r] : 0.f;
        wt[r] = real ? w[r] : 0.f;
        wmax = std::max(wmax, wt[r]);
        for (int j = 0; j < p1; ++j) xt[j * T + r] = real ? xa[(long)r * p1 + j] : 0.f;
    }
    const float floor = REACH * wmax;
    auto is_reached = [&](const float* q) {
        float m = 0.f;
        for (int r = 0; r < T; ++r) m = std::max(m, q[r]);
        return m > floor;
    };
    for (int r = 0; r < T; ++r) Q[r] = wt[r];  // top-down: Q_l = Q s, Q_r = Q - Q_l, s only where reached
    reached[0] = wmax > 0.f;
    for (int t = 0; t < N; ++t) {
        if (!reached[t]) {
            reached[2 * t + 1] = reached[2 * t + 2] = 0;
            continue;
        }
        float acc[T] = {0};
        const float* a = split + (long)t * p1;
        for (int j = 0; j < p1; ++j) {
            const float aj = a[j];
            for (int r = 0; r < T; ++r) acc[r] += aj * xt[j * T + r];
        }
        float* st = s + (long)t * T;
        const float* Qt = Q + (long)t * T;
        float* Ql = Q + (long)(2 * t + 1) * T;
        float* Qr = Q + (long)(2 * t + 2) * T;
        for (int r = 0; r < T; ++r) {
            const float u = std::min(80.f, std::max(-80.f, acc[r]));
            st[r] = 1.f / (1.f + std::exp(-u));
            Ql[r] = Qt[r] * st[r];
            Qr[r] = Qt[r] - Ql[r];
        }
        reached[2 * t + 1] = is_reached(Ql);
        reached[2 * t + 2] = is_reached(Qr);
    }
    for (int l = 0; l < L; ++l) {
        float* Rl = R + (long)(N + l) * T;
        if (!reached[N + l]) {
            for (int r = 0; r < T; ++r) Rl[r] = 0.f;
            continue;
        }
        float pred[T];
        const float* k = leafp + (long)l * lw;
        if (sh.classes) {  // R = A_l + G_l[class of the row]: leafp holds [G_l (C), A_l] (see native.py)
            for (int r = 0; r < T; ++r) Rl[r] = k[sh.classes] + k[(int)yt[r]];
            continue;
        }
        if (sh.linear) {
            for (int r = 0; r < T; ++r) pred[r] = 0.f;
            for (int j = 0; j < p1; ++j) {
                const float kj = k[j];
                for (int r = 0; r < T; ++r) pred[r] += kj * xt[j * T + r];
            }
        } else {
            for (int r = 0; r < T; ++r) pred[r] = k[0];
        }
        float* rl = res + (long)l * T;
        for (int r = 0; r < T; ++r) {
            rl[r] = yt[r] - pred[r];
            Rl[r] = rl[r] * rl[r];
        }
    }
    for (int t = N - 1; t >= 0; --t) {  // bottom-up: R_t = R_r + s (R_l - R_r)
        float* Rt = R + (long)t * T;
        if (!reached[t]) {
            for (int r = 0; r < T; ++r) Rt[r] = 0.f;
            continue;
        }
        const float* Rl = R + (long)(2 * t + 1) * T;
        const float* Rr = R + (long)(2 * t + 2) * T;
        float* dt = d + (long)t * T;
        const float* st = s + (long)t * T;
        for (int r = 0; r < T; ++r) {
            dt[r] = Rl[r] - Rr[r];
            Rt[r] = Rr[r] + st[r] * dt[r];
        }
    }
    for (int r = 0; r < T; ++r) lossacc[r] += wt[r] * R[r];
    for (int t = 0; t < N; ++t) {  // dL/du = Q_l (1 - s) (R_l - R_r)
        if (!reached[t]) continue;
        const float* Ql = Q + (long)(2 * t + 1) * T;
        const float* st = s + (long)t * T;
        float* dt = d + (long)t * T;
        for (int r = 0; r < T; ++r) dt[r] = Ql[r] * (1.f - st[r]) * dt[r];
        float* g = gacc + (long)t * p1 * T;
        for (int j = 0; j < p1; ++j)
            for (int r = 0; r < T; ++r) g[j * T + r] += dt[r] * xt[j * T + r];
    }
    for (int l = 0; l < L; ++l) {
        if (!reached[N + l]) continue;
        const float* Ql = Q + (long)(N + l) * T;
        if (sh.classes) {  // per leaf: the reach summed by the rows' class, and in all (g_leaf [QY (C), reach])
            float* g = lacc + (long)l * lw * T;
            for (int r = 0; r < T; ++r) {
                g[(long)((int)yt[r]) * T + r] += Ql[r];
                g[(long)sh.classes * T + r] += Ql[r];
            }
            continue;
        }
        const float* rl = res + (long)l * T;
        float e[T];
        for (int r = 0; r < T; ++r) e[r] = Ql[r] * rl[r];
        float* g = lacc + (long)l * lw * T;
        if (sh.linear) {
            for (int j = 0; j < p1; ++j)
                for (int r = 0; r < T; ++r) g[j * T + r] += e[r] * xt[j * T + r];
        } else {
            for (int r = 0; r < T; ++r) g[r] += e[r];
        }
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

// n_rows[b] <= n real rows of problem b (its padding rows, all of weight 0, are skipped).
// classes > 0: classification, y holds each row's class index (as a float) and leafp / g_leaf are C + 1 wide.
extern "C" int get_soft_pass(int B, int S, int n, int p1, int depth, int linear, int classes, const float* Xa,
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
        std::vector<float> s((size_t)N * T), d((size_t)N * T), Q((size_t)(2 * N + 1) * T), R((size_t)(2 * N + 1) * T);
        std::vector<float> res((size_t)L * T);
        std::vector<unsigned char> reached((size_t)(2 * N + 1));
        std::vector<float> acc(sh.scratch() * T);  // [gacc | lacc | lossacc], each entry T lanes wide
        for (long task = next++; task < tasks; task = next++) {
            const int m = (int)(task / blocks), blk = (int)(task % blocks), b = m / S;
            const int r0 = blk * rows_per_block, r1 = std::min((int)n_rows[b], r0 + rows_per_block);
            float* out = scratch.data() + task * sh.scratch();
            std::fill(acc.begin(), acc.end(), 0.f);
            float* gacc = acc.data();
            float* lacc = gacc + (long)N * p1 * T;
            float* lossacc = lacc + (long)L * lw * T;
            for (int r = r0; r < r1; r += T) {
                tile(sh, Xa + ((long)b * n + r) * p1, y + (long)b * n + r, w + (long)b * n + r, std::min(T, r1 - r),
                     split + (long)m * N * p1, leafp + (long)m * L * lw, s.data(), d.data(), Q.data(), R.data(),
                     res.data(), reached.data(), gacc, lacc, lossacc);
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

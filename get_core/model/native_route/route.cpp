// Hard routing of rows through oblique trees, visiting only each row's path (see get_core/model/routing.py).
//
// Two entry points, both plain C ABI over raw arrays (no Python or torch headers):
//   get_route_tree: one float64 ObliqueTree. At node t the row goes right when sum_k W_VALUE[k] * xs[W_FEATURE[k]]
//     > threshold, the sum over the split's non-zero terms in feature order, added left to right from 0.0: the
//     arithmetic of ObliqueTree's numpy routing and of every export, so all agree bit for bit. Compiled without
//     -ffast-math and with -ffp-contract=off: no reassociation and no fused multiply-add. Dense trees on finite rows
//     take a faster loop over all p weights, 16 rows at a time: a zero weight times a finite value adds a signed zero,
//     which changes no comparison, so the decisions are the same; a row with a NaN or infinity takes the exact
//     sparse loop (a split must ignore a NaN in a feature it does not use). With AVX-512 the tile of 16 rows is
//     transposed in registers (8 x 8 blocks) and scaled, and each level loads 8 weights of every row's node side by
//     side and transposes them instead of gathering weight by weight; a linear leaf's sums are taken the same way.
//     Each row's terms are still added one at a time in feature order, so every sum rounds as before.
//   get_route_models: the trainer's batched float32 models (the checkpoints' hard routing). Its margins are what
//     torch's matmul of [weights, -threshold] with [x, 1] gives on the CPU: one fused multiply-add per feature in
//     feature order from 0 (engine/leaves.py checks this against torch once per process before the trainer uses it).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>
#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace {

struct Tree {
    int64_t p;
    int depth;
    const double* x_min;    // null: the rows are already scaled
    const double* x_scale;
    const int64_t* w_start;   // B + 1 offsets into w_feature / w_value
    const int64_t* w_feature;
    const double* w_value;
    const double* thresholds;
    const double* dense;      // B x p weights, or null: the sparse loop for every row
    const double* leaf_coefs; // L x p, or null: no linear sum
};

constexpr int R = 16;  // rows per tile of the dense loop

inline int64_t descend_sparse(const Tree& t, const double* xs, int64_t* path) {
    int64_t node = 1;
    if (path) path[0] = 1;
    for (int level = 0; level < t.depth; ++level) {
        double s = 0.0;
        for (int64_t k = t.w_start[node - 1]; k < t.w_start[node]; ++k) s += t.w_value[k] * xs[t.w_feature[k]];
        node = 2 * node + (s > t.thresholds[node - 1] ? 1 : 0);
        if (path) path[level + 1] = node;
    }
    return node;
}

// Scales row x into b (or points at x when the rows are scaled); returns whether every value is finite.
inline bool scaled_row(const Tree& t, const double* x, double* b, const double** xs) {
    int ok = 1;
    if (t.x_min) {
        for (int64_t j = 0; j < t.p; ++j) {
            const double v = (x[j] - t.x_min[j]) / t.x_scale[j];
            b[j] = v;
            ok &= (v - v == 0.0);  // false for NaN and for an infinity (inf - inf is NaN)
        }
        *xs = b;
    } else {
        for (int64_t j = 0; j < t.p; ++j) ok &= (x[j] - x[j] == 0.0);
        *xs = x;
    }
    return ok;
}

#if defined(__AVX512F__)
// c[m] = lane k holding a[k][m]: 8 rows of 8 doubles (at a[0..7]) transposed, the first of the three shuffle stages
// done by the loads (each register filled from two rows' halves), so 16 shuffles instead of 24.
inline void load_transposed8(const double* const* a, __m512d* c) {
    const __m512i even = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
    const __m512i odd = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    for (int half = 0; half < 8; half += 4) {  // columns 0-3, then 4-7
        __m512d u[4];
        for (int k = 0; k < 4; ++k)  // row k's four columns, then row k + 4's
            u[k] = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(a[k] + half)),
                                      _mm256_loadu_pd(a[k + 4] + half), 1);
        const __m512d t0 = _mm512_unpacklo_pd(u[0], u[1]), t1 = _mm512_unpackhi_pd(u[0], u[1]);
        const __m512d t2 = _mm512_unpacklo_pd(u[2], u[3]), t3 = _mm512_unpackhi_pd(u[2], u[3]);
        c[half + 0] = _mm512_permutex2var_pd(t0, even, t2);  // columns half + 0 and half + 2 of rows 0-7
        c[half + 2] = _mm512_permutex2var_pd(t0, odd, t2);
        c[half + 1] = _mm512_permutex2var_pd(t1, even, t3);
        c[half + 3] = _mm512_permutex2var_pd(t1, odd, t3);
    }
}
#endif

// 0.0 plus k[j] * xs[j] for j = 0 .. p-1, left to right: a linear leaf's sum.
inline double linear_sum(const double* k, const double* xs, int64_t p) {
    double f = 0.0;
    for (int64_t j = 0; j < p; ++j) f += k[j] * xs[j];
    return f;
}

// Scales R rows starting at X (row-major, p per row) straight into tile[j * R + r] (or only transposes them when
// the rows are scaled): the same subtraction and division per value as scaled_row. Returns whether every value is
// finite. With AVX-512, 8 rows x 8 features are transposed in registers and scaled as vectors, one feature per
// vector; the next tile's rows are prefetched meanwhile.
inline bool scaled_tile(const Tree& t, const double* X, double* tile) {
    const int64_t p = t.p;
    int64_t j0 = 0;
    int ok = 1;
#if defined(__AVX512F__)
    static_assert(R % 8 == 0, "blocks of 8 rows");
    __mmask8 good = 0xFF;
    for (; j0 + 8 <= p; j0 += 8)
        for (int r0 = 0; r0 < R; r0 += 8) {
            const double* a[8];
            __m512d c[8];
            for (int k = 0; k < 8; ++k) {
                a[k] = X + (r0 + k) * p + j0;
                _mm_prefetch(reinterpret_cast<const char*>(a[k] + R * p), _MM_HINT_T0);  // the next tile's rows
            }
            load_transposed8(a, c);
            for (int m = 0; m < 8; ++m) {  // feature j0 + m of the 8 rows, scaled as vectors
                if (t.x_min) c[m] = _mm512_div_pd(_mm512_sub_pd(c[m], _mm512_set1_pd(t.x_min[j0 + m])),
                                                  _mm512_set1_pd(t.x_scale[j0 + m]));
                good &= _mm512_cmp_pd_mask(_mm512_sub_pd(c[m], c[m]), _mm512_setzero_pd(), _CMP_EQ_OQ);
                _mm512_storeu_pd(tile + (j0 + m) * R + r0, c[m]);
            }
        }
    ok = good == 0xFF;
#endif
    for (int r = 0; r < R; ++r)
        for (int64_t j = j0; j < p; ++j) {
            const double x = X[r * p + j];
            const double v = t.x_min ? (x - t.x_min[j]) / t.x_scale[j] : x;
            tile[j * R + r] = v;
            ok &= (v - v == 0.0);
        }
    return ok;
}

// s[r] += dense[off[r] + j] * tile[j * R + r] for j = 0 .. p-1, in that order for every row r: each row's weights
// gathered from its own node. The compiler builds the gathers from scalar loads, so with AVX-512 or AVX2 they are
// written out (a separate multiply and add per term: no fused multiply-add, as everywhere in this file).
inline void gathered_sums(const double* dense, int64_t p, const int64_t* off, const double* tile, double* s) {
#if defined(__AVX512F__)
    static_assert(R == 16, "two 8-lane vectors of rows");
    __m512d acc[2] = {_mm512_loadu_pd(s), _mm512_loadu_pd(s + 8)};
    int64_t j = 0;
    for (; j + 8 <= p; j += 8)  // 8 weights of each row's node loaded side by side and transposed: no gathers
        for (int h = 0; h < 2; ++h) {
            const double* a[8];
            __m512d c[8];
            for (int k = 0; k < 8; ++k) a[k] = dense + off[8 * h + k] + j;
            load_transposed8(a, c);
            for (int m = 0; m < 8; ++m)
                acc[h] = _mm512_add_pd(acc[h], _mm512_mul_pd(c[m], _mm512_loadu_pd(tile + (j + m) * R + 8 * h)));
        }
    const __m512i i0 = _mm512_loadu_si512(off), i1 = _mm512_loadu_si512(off + 8);
    for (; j < p; ++j) {
        const __m512d w0 = _mm512_i64gather_pd(i0, dense + j, 8), w1 = _mm512_i64gather_pd(i1, dense + j, 8);
        acc[0] = _mm512_add_pd(acc[0], _mm512_mul_pd(w0, _mm512_loadu_pd(tile + j * R)));
        acc[1] = _mm512_add_pd(acc[1], _mm512_mul_pd(w1, _mm512_loadu_pd(tile + j * R + 8)));
    }
    _mm512_storeu_pd(s, acc[0]);
    _mm512_storeu_pd(s + 8, acc[1]);
#elif defined(__AVX2__)
    static_assert(R == 16, "four 4-lane vectors of rows");
    __m256i idx[4];
    __m256d acc[4];
    for (int k = 0; k < 4; ++k) {
        idx[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(off + 4 * k));
        acc[k] = _mm256_loadu_pd(s + 4 * k);
    }
    for (int64_t j = 0; j < p; ++j)
        for (int k = 0; k < 4; ++k)
            acc[k] = _mm256_add_pd(acc[k], _mm256_mul_pd(_mm256_i64gather_pd(dense + j, idx[k], 8),
                                                         _mm256_loadu_pd(tile + j * R + 4 * k)));
    for (int k = 0; k < 4; ++k) _mm256_storeu_pd(s + 4 * k, acc[k]);
#else
    for (int64_t j = 0; j < p; ++j)
        for (int r = 0; r < R; ++r) s[r] += dense[off[r] + j] * tile[j * R + r];
#endif
}

// s[r] += w[j] * tile[j * R + r] for j = 0 .. p-1, in that order for every row r: rows at one node. Written out for
// AVX-512 (left to the compiler, the loop became a long chain of permutes).
inline void shared_sums(const double* w, int64_t p, const double* tile, double* s) {
#if defined(__AVX512F__)
    __m512d acc0 = _mm512_loadu_pd(s), acc1 = _mm512_loadu_pd(s + 8);
    for (int64_t j = 0; j < p; ++j) {
        const __m512d wj = _mm512_set1_pd(w[j]);
        acc0 = _mm512_add_pd(acc0, _mm512_mul_pd(wj, _mm512_loadu_pd(tile + j * R)));
        acc1 = _mm512_add_pd(acc1, _mm512_mul_pd(wj, _mm512_loadu_pd(tile + j * R + 8)));
    }
    _mm512_storeu_pd(s, acc0);
    _mm512_storeu_pd(s + 8, acc1);
#else
    for (int64_t j = 0; j < p; ++j)
        for (int r = 0; r < R; ++r) s[r] += w[j] * tile[j * R + r];
#endif
}

// The dense loop for R finite rows: every level sums all p weights of each row's node, rows side by side.
inline void descend_dense(const Tree& t, const double* tile, int64_t* node, int64_t* const* paths) {
    const int64_t p = t.p;
    for (int r = 0; r < R; ++r) {
        node[r] = 1;
        if (paths[r]) paths[r][0] = 1;
    }
    for (int level = 0; level < t.depth; ++level) {
        double s[R];
        int64_t off[R];
        bool shared = true;
        for (int r = 0; r < R; ++r) {
            s[r] = 0.0;
            off[r] = (node[r] - 1) * p;
            shared = shared && node[r] == node[0];
        }
        if (shared) {  // the whole tile at one node (always at the root): one weight for all rows
            shared_sums(t.dense + off[0], p, tile, s);
        } else {
            gathered_sums(t.dense, p, off, tile, s);
        }
        for (int r = 0; r < R; ++r) {
            node[r] = 2 * node[r] + (s[r] > t.thresholds[node[r] - 1] ? 1 : 0);
            if (paths[r]) paths[r][level + 1] = node[r];
        }
    }
}

void tree_rows(const Tree& t, const double* X, int64_t lo, int64_t hi, int64_t* path, int64_t* leaf, double* lin) {
    const int64_t p = t.p;
    const int D = t.depth;
    const int64_t L = int64_t(1) << D;
    const size_t width = size_t(std::max<int64_t>(p, 1));
    std::vector<double> buf(R * width), tile(R * width);
    for (int64_t i0 = lo; i0 < hi; i0 += R) {
        const int rows = int(std::min<int64_t>(R, hi - i0));
        const double* xs[R];
        int64_t node[R];
        int64_t* paths[R];
        for (int r = 0; r < R; ++r) paths[r] = path && r < rows ? path + (i0 + r) * (D + 1) : nullptr;
        if (t.dense && rows == R && scaled_tile(t, X + i0 * p, tile.data())) {
            descend_dense(t, tile.data(), node, paths);
            if (leaf)
                for (int r = 0; r < R; ++r) leaf[i0 + r] = node[r];
            if (lin) {  // the same sums as linear_sum (0.0 plus each term in feature order), 16 rows side by side
                int64_t off[R];
                for (int r = 0; r < R; ++r) {
                    lin[i0 + r] = 0.0;
                    off[r] = (node[r] - L) * p;
                }
                gathered_sums(t.leaf_coefs, p, off, tile.data(), lin + i0);
            }
            continue;
        }
        for (int r = 0; r < rows; ++r) scaled_row(t, X + (i0 + r) * p, buf.data() + r * width, &xs[r]);
        for (int r = 0; r < rows; ++r) node[r] = descend_sparse(t, xs[r], paths[r]);
        for (int r = 0; r < rows; ++r) {
            if (leaf) leaf[i0 + r] = node[r];
            if (lin) lin[i0 + r] = linear_sum(t.leaf_coefs + (node[r] - L) * p, xs[r], p);
        }
    }
}

// work(lo, hi) over [0, n) split among at most ``threads`` threads, each given at least ``grain`` items.
template <class Work>
void parallel(int64_t n, int threads, int64_t grain, Work work) {
    threads = int(std::max<int64_t>(1, std::min<int64_t>(threads, n / grain)));
    if (threads <= 1) {
        work(0, n);
        return;
    }
    std::vector<std::thread> pool;
    const int64_t step = (n + threads - 1) / threads;
    for (int k = 0; k < threads; ++k) {
        const int64_t lo = k * step, hi = std::min(n, lo + step);
        if (lo < hi) pool.emplace_back([=] { work(lo, hi); });
    }
    for (auto& th : pool) th.join();
}

constexpr int F = 16;  // rows per tile of the float32 model routing
constexpr int64_t BLOCK = 4096;  // rows per unit of work

// acc[r] = the fused multiply-add chain from 0 of A[off[r] + k] * tile[k * stride + r] over k = 0 .. p1-1 (a
// single rounding per term, as fmaf and torch's CPU matmul give it), with hardware gathers where the CPU has them.
template <int stride>
inline void fused_sums(const float* A, int p1, const int32_t* off, const float* tile, float* acc) {
#if defined(__AVX512F__)
    static_assert(F == 16, "one 16-lane vector of rows");
    const __m512i idx = _mm512_loadu_si512(off);
    __m512 sum = _mm512_setzero_ps();
    for (int k = 0; k < p1; ++k)
        sum = _mm512_fmadd_ps(_mm512_i32gather_ps(idx, A + k, 4), _mm512_loadu_ps(tile + k * stride), sum);
    _mm512_storeu_ps(acc, sum);
#elif defined(__AVX2__) && defined(__FMA__)
    static_assert(F == 16, "two 8-lane vectors of rows");
    const __m256i i0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(off));
    const __m256i i1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(off + 8));
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    for (int k = 0; k < p1; ++k) {
        s0 = _mm256_fmadd_ps(_mm256_i32gather_ps(A + k, i0, 4), _mm256_loadu_ps(tile + k * stride), s0);
        s1 = _mm256_fmadd_ps(_mm256_i32gather_ps(A + k, i1, 4), _mm256_loadu_ps(tile + k * stride + 8), s1);
    }
    _mm256_storeu_ps(acc, s0);
    _mm256_storeu_ps(acc + 8, s1);
#else
    for (int r = 0; r < F; ++r) acc[r] = 0.f;
    for (int k = 0; k < p1; ++k)
        for (int r = 0; r < F; ++r) acc[r] = std::fma(A[off[r] + k], tile[k * stride + r], acc[r]);
#endif
}

#if defined(__AVX512F__)
//: levels whose weights a permute picks (up to 32 nodes: one two-table permute) instead of a gather
constexpr int PERMUTED_LEVELS = 6;

// Each model's weights of the levels 0 .. PERMUTED_LEVELS-1 laid out [model][level][feature][node of the level, 32
// wide]: a tile's weights at such a level are one permute of the rows' node indices, not a gather. The products and
// their order are the gathers' (one fused multiply-add per feature from 0), so the leaves are the same.
std::vector<float> level_tables(const float* split, int p1, int depth, int64_t S, int64_t b) {
    const int64_t N = (int64_t(1) << depth) - 1;
    const int levels = std::min(depth, PERMUTED_LEVELS);
    std::vector<float> table(size_t(S) * levels * p1 * 32, 0.f);
    for (int64_t s = 0; s < S; ++s) {
        const float* A = split + (b * S + s) * N * p1;
        for (int level = 0; level < levels; ++level)
            for (int j = 0; j < (1 << level); ++j)
                for (int k = 0; k < p1; ++k)
                    table[((size_t(s) * levels + level) * p1 + k) * 32 + j] = A[((1 << level) - 1 + j) * p1 + k];
    }
    return table;
}
#endif

//: 16-row vectors per tile of the model routing. With AVX-512 a level's table (its nodes' weights, p1 x 32 floats)
//: is loaded once per feature for all Q vectors, not once per vector: a tile of one vector re-read a model's tables
//: (84 KB at depth 6 and 11 columns, more than L1) for every 16 rows (the checkpoints' routing at 1,000,000 rows: 1.9x
//: faster). Without tables (the gathers) a larger tile only spills out of L1 at many features: one vector.
#if defined(__AVX512F__)
constexpr int Q = 4;
#else
constexpr int Q = 1;
#endif
constexpr int TR = F * Q;  // rows per tile

// Rows lo..hi of problem b through each of its S models (b * S .. b * S + S - 1): every tile of rows is laid out
// [feature][row] once and routed by all of them. Each row's sums are the same chain in feature order however the
// tile is cut, so the leaves do not depend on Q.
void model_rows(const float* split, const float* Xa, int64_t n, int p1, int depth, int64_t S, int64_t b,
                int64_t lo, int64_t hi, int64_t* leaf) {
    const int64_t N = (int64_t(1) << depth) - 1;
    const float* X = Xa + b * n * p1;
    std::vector<float> tile(size_t(TR) * p1);
#if defined(__AVX512F__)
    const std::vector<float> tables = level_tables(split, p1, depth, S, b);
    const int levels = std::min(depth, PERMUTED_LEVELS);
#else
    const int levels = 0;
#endif
    for (int64_t i0 = lo; i0 < hi; i0 += TR) {
        const int rows = int(std::min<int64_t>(TR, hi - i0));
        for (int k = 0; k < p1; ++k)
            for (int r = 0; r < TR; ++r) tile[k * TR + r] = r < rows ? X[(i0 + r) * p1 + k] : 0.f;
        for (int64_t m = b * S; m < (b + 1) * S; ++m) {
            const float* A = split + m * N * p1;
            int node[TR];
            for (int r = 0; r < TR; ++r) node[r] = 0;
#if defined(__AVX512F__)
            const __m512i one = _mm512_set1_epi32(1);
            __m512i heap[Q];
            for (int q = 0; q < Q; ++q) heap[q] = _mm512_setzero_si512();
            for (int level = 0; level < levels; ++level) {
                const __m512i base = _mm512_set1_epi32((1 << level) - 1);
                const float* T = tables.data() + (size_t(m - b * S) * levels + level) * p1 * 32;
                __m512i j[Q];
                __m512 sum[Q];
                for (int q = 0; q < Q; ++q) {
                    j[q] = _mm512_sub_epi32(heap[q], base);
                    sum[q] = _mm512_setzero_ps();
                }
                for (int k = 0; k < p1; ++k) {
                    const __m512 low = _mm512_loadu_ps(T + k * 32), high = _mm512_loadu_ps(T + k * 32 + 16);
                    for (int q = 0; q < Q; ++q)
                        sum[q] = _mm512_fmadd_ps(_mm512_permutex2var_ps(low, j[q], high),
                                                 _mm512_loadu_ps(tile.data() + k * TR + q * F), sum[q]);
                }
                for (int q = 0; q < Q; ++q) {
                    const __mmask16 right = _mm512_cmp_ps_mask(sum[q], _mm512_setzero_ps(), _CMP_GT_OQ);
                    heap[q] = _mm512_add_epi32(_mm512_add_epi32(heap[q], heap[q]), one);
                    heap[q] = _mm512_mask_add_epi32(heap[q], right, heap[q], one);
                }
            }
            for (int q = 0; q < Q; ++q) _mm512_storeu_si512(node + q * F, heap[q]);
#endif
            for (int q = 0; q < Q; ++q) {  // the levels past the tables: each vector of rows gathers its weights
                int* at = node + q * F;
                int32_t off[F];
                float acc[F];
                for (int level = levels; level < depth; ++level) {
                    for (int r = 0; r < F; ++r) off[r] = at[r] * p1;
                    fused_sums<TR>(A, p1, off, tile.data() + q * F, acc);
                    for (int r = 0; r < F; ++r) at[r] = 2 * at[r] + 1 + (acc[r] > 0.f ? 1 : 0);
                }
            }
            for (int r = 0; r < rows; ++r) leaf[m * n + i0 + r] = node[r] - N;
        }
    }
}

}  // namespace

extern "C" {

// X (n, p) float64 row-major; x_min/x_scale null when X is already scaled. Outputs (each may be null): path
// (n, depth + 1) heap ids root to leaf, leaf (n) heap id of the leaf, lin (n) the linear sum 0.0 + sum_j
// leaf_coefs[leaf][j] * xs[j] in feature order (needs leaf_coefs).
int get_route_tree(int64_t n, int64_t p, int depth, const double* X, const double* x_min, const double* x_scale,
                   const int64_t* w_start, const int64_t* w_feature, const double* w_value, const double* thresholds,
                   const double* dense, const double* leaf_coefs, int64_t* path, int64_t* leaf, double* lin,
                   int threads) {
    const Tree t{p, depth, x_min, x_scale, w_start, w_feature, w_value, thresholds, dense, leaf_coefs};
    parallel(n, threads, 4096, [&](int64_t lo, int64_t hi) { tree_rows(t, X, lo, hi, path, leaf, lin); });
    return 0;
}

// split (B * S, N, p1) float32 with the last column -threshold; Xa (B, n, p1) float32 ending in a ones column.
// leaf (B * S, n) int64: each row's leaf index 0..N of model m = b * S + s on problem b's rows.
int get_route_models(int64_t B, int64_t S, int64_t n, int p1, int depth, const float* split, const float* Xa,
                     int64_t* leaf, int threads) {
    const int64_t blocks = (n + BLOCK - 1) / BLOCK;  // a unit of work: one problem's block of rows
    parallel(B * blocks, threads, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t u = lo; u < hi; ++u) {
            const int64_t b = u / blocks, r0 = (u % blocks) * BLOCK;
            model_rows(split, Xa, n, p1, depth, S, b, r0, std::min(n, r0 + BLOCK), leaf);
        }
    });
    return 0;
}

}

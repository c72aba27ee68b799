// A probe, not the product (issue 37, November 27, 2026): how fast could a depth-8 tree route 50,000 x 200 float64
// rows on one thread if each split's terms were summed in another order than the exports' (8 lanes by feature
// index mod 8, then a fixed tree of lane sums), with and without the scaling, with and without fused multiply-adds?
// Build and run: g++ -O3 -march=native -ffp-contract=off -o lanes results/predict-lane-order-probe.cpp && ./lanes
// Output beside the current predict and the 100-tree forest: results/predict-lane-order-probe.txt
// Prototype: depth-8 dense routing, 50,000 x 200, one thread, feature-lane order (lane = j mod 8).
#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <random>
#include <algorithm>
using namespace std;
constexpr int P = 200, D = 8, N = 50000, NN = (1 << D) - 1;
static inline double hsum(__m512d v) {  // ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7))
  __m256d a = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
  __m128d b = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
  return _mm_cvtsd_f64(_mm_add_sd(b, _mm_unpackhi_pd(b, b)));
}
// variant: rows in blocks of RB, each level each row sums 25 vectors (mul then add), RB chains interleaved
template <int RB, bool SCALE, bool FMA = false, bool COPY = false>
void route(const double* X, const double* W, const double* b, const double* lo, const double* inv, int64_t* leaf) {
  alignas(64) double tile[RB * P];
  for (int i0 = 0; i0 < N; i0 += RB) {
    const double* src;
    if (SCALE) {
      for (int r = 0; r < RB; ++r) {
        const double* x = X + (int64_t)(i0 + r) * P;
        _mm_prefetch((const char*)(x + RB * P), _MM_HINT_T0);
        for (int j = 0; j < P; j += 8) {
          __m512d v = _mm512_loadu_pd(x + j);
          if (!COPY) v = _mm512_div_pd(_mm512_sub_pd(v, _mm512_loadu_pd(lo + j)), _mm512_loadu_pd(inv + j));
          _mm512_store_pd(tile + r * P + j, v);
        }
      }
      src = tile;
    } else {
      src = X + (int64_t)i0 * P;
      for (int r = 0; r < RB; ++r) for (int j = 0; j < P; j += 8) _mm_prefetch((const char*)(src + (RB + r) * P + j), _MM_HINT_T0);
    }
    int node[RB];
    for (int r = 0; r < RB; ++r) node[r] = 0;
    for (int l = 0; l < D; ++l) {
      __m512d acc[RB];
      for (int r = 0; r < RB; ++r) acc[r] = _mm512_setzero_pd();
      for (int j = 0; j < P; j += 8)
        for (int r = 0; r < RB; ++r)
          acc[r] = FMA ? _mm512_fmadd_pd(_mm512_loadu_pd(W + node[r] * P + j), _mm512_loadu_pd(src + r * P + j), acc[r])
                       : _mm512_add_pd(acc[r], _mm512_mul_pd(_mm512_loadu_pd(W + node[r] * P + j), _mm512_loadu_pd(src + r * P + j)));
      for (int r = 0; r < RB; ++r) node[r] = 2 * node[r] + 1 + (hsum(acc[r]) > b[node[r]]);
    }
    for (int r = 0; r < RB; ++r) leaf[i0 + r] = node[r];
  }
}
int main() {
  mt19937_64 g(0); normal_distribution<double> nd;
  vector<double> X((size_t)N * P), W(NN * P), b(NN), lo(P), sc(P);
  for (auto& v : X) v = nd(g);
  for (auto& v : W) v = nd(g);
  for (int j = 0; j < P; ++j) { lo[j] = -4; sc[j] = 8; }
  for (auto& v : b) v = nd(g);
  vector<int64_t> leaf(N);
  auto t = [&](auto f, const char* name) {
    vector<double> ms;
    for (int k = 0; k < 15; ++k) {
      auto t0 = chrono::steady_clock::now(); f();
      ms.push_back(chrono::duration<double, milli>(chrono::steady_clock::now() - t0).count());
    }
    sort(ms.begin(), ms.end()); long s = 0; for (auto v : leaf) s += v;
    printf("%-28s median %.2f ms  min %.2f  (chk %ld)\n", name, ms[7], ms[0], s);
  };
  volatile double sink = 0;
  t([&] { __m512d a=_mm512_setzero_pd(),b2=a,c=a,d=a; for (size_t i=0;i<X.size();i+=32){a=_mm512_add_pd(a,_mm512_loadu_pd(&X[i]));b2=_mm512_add_pd(b2,_mm512_loadu_pd(&X[i+8]));c=_mm512_add_pd(c,_mm512_loadu_pd(&X[i+16]));d=_mm512_add_pd(d,_mm512_loadu_pd(&X[i+24]));} sink=hsum(a)+hsum(b2)+hsum(c)+hsum(d);}, "read once");
  t([&] { route<4, false>(X.data(), W.data(), b.data(), lo.data(), sc.data(), leaf.data()); }, "folded RB4");
  t([&] { route<8, false>(X.data(), W.data(), b.data(), lo.data(), sc.data(), leaf.data()); }, "folded RB8");
  t([&] { route<16, false>(X.data(), W.data(), b.data(), lo.data(), sc.data(), leaf.data()); }, "folded RB16");
  t([&] { route<8, true>(X.data(), W.data(), b.data(), lo.data(), sc.data(), leaf.data()); }, "scaled(div) RB8");
  t([&] { route<8, true, true>(X.data(), W.data(), b.data(), lo.data(), sc.data(), leaf.data()); }, "scaled(div) RB8 FMA");
  t([&] { route<8, true, false, true>(X.data(), W.data(), b.data(), lo.data(), sc.data(), leaf.data()); }, "folded copy RB8");
  t([&] { route<8, true, true, true>(X.data(), W.data(), b.data(), lo.data(), sc.data(), leaf.data()); }, "folded copy RB8 FMA");
  t([&] { route<16, true>(X.data(), W.data(), b.data(), lo.data(), sc.data(), leaf.data()); }, "scaled(div) RB16");
}

#pragma once
// Pieces the CPU's fused small-MLP paths share (rl/fused_mlp.cpp in fp32/fp64, rl/fused_mlp_bf16.cpp in
// bf16): padded widths, aligned tile buffers, the per-element activations, the check that packed weights
// still match their parameters, and the per-chunk gradient sums added in chunk order. Internal to those
// two files: plain C++, never seen by nvcc.
#include <omp.h>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "rl/fused_mlp.hpp"
#include "rl/mlp.hpp"
#include "rl/scalar_math.hpp"
#include "sim/runtime_internal.hpp"

namespace surge::rl::fused {

// The widest vector register the build compiles for: the fp32/fp64 path's vectors, and the unit its rows
// are padded to. A 64-byte vector on a machine without AVX-512 would be lowered through the stack.
#if defined(__AVX512F__)
constexpr int kVectorBytes = 64;
#elif defined(__AVX__)
constexpr int kVectorBytes = 32;
#else
constexpr int kVectorBytes = 16;
#endif

template <class Scalar>
constexpr int kLanes = static_cast<int>(kVectorBytes / sizeof(Scalar));

constexpr int kTileRows = 32;

// n rounded up to whole vectors of `lanes` scalars (this build's vectors unless a caller names its own).
template <class Scalar, int lanes = kLanes<Scalar>>
std::int64_t padded(std::int64_t n) {
  return (n + lanes - 1) / lanes * lanes;
}

// A growable buffer whose data starts on a 64-byte boundary, reused from call to call.
template <class Scalar>
Scalar* aligned(std::vector<Scalar>& storage, std::int64_t count) {
  const std::size_t need = static_cast<std::size_t>(count + static_cast<int>(64 / sizeof(Scalar)));
  if (storage.size() < need) storage.resize(need);
  const auto address = reinterpret_cast<std::uintptr_t>(storage.data());
  return storage.data() + (64 - address % 64) % 64 / sizeof(Scalar);
}

inline float tanh_of(float x) { return fast_tanh(x); }
inline double tanh_of(double x) { return scalar_tanh(x); }

// The operations of fast_tanh_lanes that the instruction sets spell differently, on one register of float
// lanes: loads, stores, fused multiply-adds and selects (masked operations under AVX-512, blends under AVX2:
// a / b or a * b where `where`, else `otherwise`; -x where `where`). Plain arithmetic is written with the
// vector extensions' operators, as GCC's intrinsics themselves are.
#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
#define SURGE_FAST_TANH_LANES 1
struct TanhOps {
  using Lanes = __m512;
  using Mask = __mmask16;
  static Lanes load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Lanes x) { _mm512_storeu_ps(p, x); }
  static Lanes set1(float value) { return _mm512_set1_ps(value); }
  static Lanes abs(Lanes x) { return _mm512_abs_ps(x); }
  static Lanes fmadd(Lanes a, Lanes b, Lanes c) { return _mm512_fmadd_ps(a, b, c); }
  static Lanes fmsub(Lanes a, Lanes b, Lanes c) { return _mm512_fmsub_ps(a, b, c); }
  static Lanes fnmadd(Lanes a, Lanes b, Lanes c) { return _mm512_fnmadd_ps(a, b, c); }
  static Mask less(Lanes a, Lanes b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static Lanes div_where(Lanes otherwise, Mask where, Lanes a, Lanes b) {
    return _mm512_mask_div_ps(otherwise, where, a, b);
  }
  static Lanes mul_where(Lanes otherwise, Mask where, Lanes a, Lanes b) {
    return _mm512_mask_mul_ps(otherwise, where, a, b);
  }
  static Lanes negate_where(Lanes x, Mask where) {
    const __m512i bits = _mm512_castps_si512(x);
    return _mm512_castsi512_ps(_mm512_mask_xor_epi32(bits, where, bits, _mm512_set1_epi32(INT32_MIN)));
  }
};
#elif defined(__AVX2__) && defined(__FMA__) && defined(__GNUC__) && !defined(__clang__)
#define SURGE_FAST_TANH_LANES 1
struct TanhOps {
  using Lanes = __m256;
  using Mask = __m256;
  static Lanes set1(float value) { return _mm256_set1_ps(value); }
  static Lanes abs(Lanes x) { return _mm256_andnot_ps(set1(-0.0f), x); }
  static Lanes load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Lanes x) { _mm256_storeu_ps(p, x); }
  static Mask less(Lanes a, Lanes b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static Lanes fmadd(Lanes a, Lanes b, Lanes c) { return _mm256_fmadd_ps(a, b, c); }
  static Lanes fmsub(Lanes a, Lanes b, Lanes c) { return _mm256_fmsub_ps(a, b, c); }
  static Lanes fnmadd(Lanes a, Lanes b, Lanes c) { return _mm256_fnmadd_ps(a, b, c); }
  static Lanes div_where(Lanes otherwise, Mask where, Lanes a, Lanes b) {
    return _mm256_blendv_ps(otherwise, a / b, where);
  }
  static Lanes mul_where(Lanes otherwise, Mask where, Lanes a, Lanes b) {
    return _mm256_blendv_ps(otherwise, a * b, where);
  }
  static Lanes negate_where(Lanes x, Mask where) { return _mm256_xor_ps(x, _mm256_and_ps(where, set1(-0.0f))); }
};
#endif

#if defined(SURGE_FAST_TANH_LANES)
using TanhLanes = TanhOps::Lanes;
// fast_tanh on a register's lanes (16 under AVX-512, 8 under AVX2) in fewer instructions than the
// compiler makes of its loop, and the same bits for every float (tests/test_fused_mlp_tanh.cpp). Each
// rounding operation is the one GCC makes of fast_tanh (-ffp-contract=fast fuses its multiply-adds, across
// statements too), so this is GCC's only; what it saves is bookkeeping: 2^k from the rounded exponent's low
// bits instead of a conversion, and the selects folded into masked operations or blends (the division only
// where |x| < 9, where fast_tanh's clamp to 9 yields 1; the series' last multiply only where |x| < 0.5; the
// sign flipped only where x < 0).
inline TanhLanes fast_tanh_lanes(TanhLanes x) {
  using Ops = TanhOps;
  const TanhLanes one = Ops::set1(1.0f);
  const TanhLanes a = Ops::abs(x), s = x * x;
  TanhLanes series = Ops::fmadd(s, Ops::set1(21844.0f / 6081075.0f), Ops::set1(-1382.0f / 155925));
  series = Ops::fmadd(series, s, Ops::set1(62.0f / 2835));
  series = Ops::fmadd(series, s, Ops::set1(-17.0f / 315));
  series = Ops::fmadd(series, s, Ops::set1(2.0f / 15));
  series = Ops::fmadd(series, s, Ops::set1(-1.0f / 3));
  series = Ops::fmadd(series, s, one);
  const TanhLanes to_base2 = Ops::set1(-2.0f * 1.44269504088896341f), rounder = Ops::set1(12582912.0f);
  const TanhLanes rounded = Ops::fmadd(a, to_base2, rounder);  // the rounder plus k, an integer in [-26, 0]
  const TanhLanes k = rounded - rounder;
  const TanhLanes g = Ops::fmsub(a, to_base2, k) * Ops::set1(0.693147180559945309f);
  TanhLanes two_f = Ops::fmadd(g, Ops::set1(1.0f / 5040), Ops::set1(1.0f / 720));
  for (const float c : {1.0f / 120, 1.0f / 24, 1.0f / 6, 1.0f / 2, 1.0f, 1.0f})
    two_f = Ops::fmadd(two_f, g, Ops::set1(c));
  typedef std::int32_t Int32Lanes __attribute__((vector_size(sizeof(TanhLanes))));
  const Int32Lanes biased = (Int32Lanes)rounded + (127 - (Int32Lanes)rounder);
  const TanhLanes scale = (TanhLanes)(biased << 23);
  const TanhLanes numerator = Ops::fnmadd(two_f, scale, one), denominator = Ops::fmadd(two_f, scale, one);
  const TanhOps::Mask below_9 = Ops::less(a, Ops::set1(9.0f)), below_half = Ops::less(a, Ops::set1(0.5f));
  const TanhOps::Mask negative = Ops::less(x, Ops::set1(0.0f));
  const TanhLanes magnitude =
      Ops::mul_where(Ops::div_where(one, below_9, numerator, denominator), below_half, a, series);
  return Ops::negate_where(magnitude, negative);
}
inline void fast_tanh_lanes_at(float* values) { TanhOps::store(values, fast_tanh_lanes(TanhOps::load(values))); }
#endif

template <class Scalar>
void activate(Activation activation, Scalar* values, std::int64_t count) {
  if (activation == Activation::Tanh) {
    std::int64_t i = 0;
#if defined(SURGE_FAST_TANH_LANES)
    constexpr int lanes = sizeof(TanhLanes) / sizeof(float);
    if constexpr (std::is_same_v<Scalar, float>)
      for (; i + lanes <= count; i += lanes) fast_tanh_lanes_at(values + i);
#endif
    for (; i < count; ++i) values[i] = tanh_of(values[i]);
  } else
    for (std::int64_t i = 0; i < count; ++i) values[i] = values[i] > Scalar(0) ? values[i] : Scalar(0);
}

// gradient *= the activation's derivative, expressed in its output.
template <class Scalar>
void activation_backward(Activation activation, Scalar* gradient, const Scalar* output, std::int64_t count) {
  if (activation == Activation::Tanh)
    for (std::int64_t i = 0; i < count; ++i) gradient[i] *= Scalar(1) - output[i] * output[i];
  else
    for (std::int64_t i = 0; i < count; ++i) gradient[i] = output[i] > Scalar(0) ? gradient[i] : Scalar(0);
}

// rows x width values from src (leading dimension width) into dst [rows][padded(width)], zeros in the padding.
template <class Scalar, int lanes = kLanes<Scalar>>
void load_padded(const Scalar* src, int rows, int width, Scalar* dst) {
  const std::int64_t stride = padded<Scalar, lanes>(width);
  // One loop per row, not a copy and a fill: the compiler makes those two library calls for a few floats.
  for (int r = 0; r < rows; ++r)
    for (std::int64_t i = 0; i < stride; ++i) dst[r * stride + i] = i < width ? src[r * width + i] : Scalar(0);
}

// rows x width values from src [rows][padded(width)] into dst (leading dimension width). Each row's
// copy is a masked store over its padded width: a copy of a head's few columns would be a library call
// per row.
template <class Scalar, int lanes = kLanes<Scalar>>
void store_unpadded(const Scalar* src, int rows, int width, Scalar* dst) {
  const std::int64_t stride = padded<Scalar, lanes>(width);
  for (int r = 0; r < rows; ++r)
    for (std::int64_t i = 0; i < stride; ++i)
      if (i < width) dst[r * width + i] = src[r * stride + i];
}

template <class Scalar, int lanes = kLanes<Scalar>>
int widest_padded(const Mlp& mlp) {
  std::int64_t widest = 0;
  for (int l = 0; l <= mlp.num_layers(); ++l)
    widest = std::max(widest, padded<Scalar, lanes>(l == 0 ? mlp.input_dim() : mlp.layer_out(l - 1)));
  return static_cast<int>(widest);
}

// Inside an agent of rl/agent_set (a region that holds every active level) this is false: no region of one
// thread is entered (sim/runtime_internal.hpp).
inline bool run_parallel(std::int64_t batch) { return cpu_loop_forks(batch >= 2 * kFusedMlpChunkRows); }

// body(i) for i in [0, count): on OpenMP's threads when `parallel`, else on this thread outside any OpenMP
// region (a region whose `if` clause is false still enters libgomp, which allocates a team on each call: a
// rollout of 4 environments pays that on every step).
template <class Body>
void for_each_index(std::int64_t count, bool parallel, Body body) {
  if (parallel) {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < count; ++i) body(i);
  } else {
    for (std::int64_t i = 0; i < count; ++i) body(i);
  }
}

// The parameters a network's packed weights were made from, to tell when they must be made again: by
// their version (fused_mlp_new_version()) where the caller gives one, else by their bytes.
template <class Scalar>
struct PackedSource {
  std::vector<Scalar> source;        // empty when packed under a version
  std::vector<std::int64_t> layout;  // the network's widths and slice offsets
  const Mlp* owner = nullptr;
  const Scalar* at = nullptr;
  std::uint64_t version = 0;
  // Per layer, where pack() put the layer's forward operand (W^T), backward operand (W) and bias.
  std::vector<std::int64_t> transposed, rows, bias;

  // In place: the vector's storage, like the others', is reused by every later packing of this entry.
  void set_layout(const Mlp& mlp) {
    layout.clear();
    layout.push_back(mlp.input_dim());
    for (int l = 0; l < mlp.num_layers(); ++l)
      layout.insert(layout.end(), {mlp.layer_out(l), mlp.weight_offset(l), mlp.bias_offset(l)});
  }
  bool same_layout(const Mlp& mlp) const {  // without building the layout: this runs on every call
    if (layout.size() != static_cast<std::size_t>(1 + 3 * mlp.num_layers()) || layout[0] != mlp.input_dim())
      return false;
    for (int l = 0; l < mlp.num_layers(); ++l)
      if (layout[1 + 3 * l] != mlp.layer_out(l) || layout[2 + 3 * l] != mlp.weight_offset(l) ||
          layout[3 + 3 * l] != mlp.bias_offset(l))
        return false;
    return true;
  }
  // The network's parameters: one contiguous range of the table, its layers' slices in order.
  static std::pair<std::int64_t, std::int64_t> source_range(const Mlp& mlp) {
    const int last = mlp.num_layers() - 1;
    return {mlp.weight_offset(0), mlp.bias_offset(last) + mlp.layer_out(last)};
  }
  // The parameters it was packed from: the same buffer under the same version, or (version 0) bit for bit
  // the same values (memcmp: a byte compare runs at memory speed, where a float compare would not vectorise).
  bool holds(const Mlp& mlp, const Scalar* params, std::uint64_t params_version) const {
    if (&mlp != owner) return false;
    if (params_version != 0) return params_version == version && params == at && same_layout(mlp);
    const auto [begin, end] = source_range(mlp);
    return static_cast<std::size_t>(end - begin) == source.size() && same_layout(mlp) &&
           std::memcmp(params + begin, source.data(), source.size() * sizeof(Scalar)) == 0;
  }
  void remember(const Mlp& mlp, const Scalar* params, std::uint64_t params_version) {
    owner = &mlp;
    at = params;
    version = params_version;
    set_layout(mlp);
    transposed.assign(mlp.num_layers(), 0);
    rows.assign(mlp.num_layers(), 0);
    bias.assign(mlp.num_layers(), 0);
    const auto [begin, end] = source_range(mlp);
    if (params_version == 0)
      source.assign(params + begin, params + end);
    else
      source.clear();
  }
};

// The packed weights of `mlp` at `params` (Packed: a PackedSource with pack()), packed again only when
// they changed: a rollout runs the same weights for every step, an update's backward pass those of its
// forward pass, so the weights are packed (and, in bf16, rounded) once per optimiser step. A nonzero
// `params_version` says which values the buffer holds (a new version after every write), so nothing is
// compared; with 0 the values are.
template <class Packed, class Scalar>
const Packed& packed_cache(const Mlp& mlp, const Scalar* params, std::uint64_t params_version) {
  constexpr int kEntries = 4;  // actor and critic, with room to spare
  thread_local Packed cache[kEntries];
  thread_local int next = 0;
  for (const Packed& entry : cache)
    if (entry.holds(mlp, params, params_version)) return entry;
  Packed& entry = cache[next];
  next = (next + 1) % kEntries;
  entry.remember(mlp, params, params_version);
  entry.pack(mlp, params);
  return entry;
}

// Per chunk of rows, every layer's gradient sums: weights [out][padded in], then biases [padded out]; the
// chunks' sums are added in chunk order, so the result does not depend on the number of threads. With
// `transposable`, a hidden layer much narrower in than out (the first, on 4 observations) keeps its weight
// sums as [in][padded out] instead: dW^T += x^T dy takes a quarter of the products that dW += dy^T x takes
// with 4 inputs padded to a vector's lanes (16 floats under AVX-512, 8 under AVX2), each element the same products
// added in the same order. With `first_tile_writes`, the caller's first tile of each chunk writes its weight sums
// instead of adding to them (its products start from zero either way), so only the bias sums are zeroed here. A pass
// keeps one per thread and plans it again on every call: its vectors keep their storage, so nothing is allocated.
template <class Scalar, int lanes = kLanes<Scalar>>
struct GradientSums {
  std::vector<std::int64_t> weight, bias;
  std::vector<char> transposed;  // per layer: weight sums [in][padded out]
  std::int64_t per_chunk = 0, chunks = 0;
  Scalar* base = nullptr;
  std::vector<Scalar> storage;

  void plan(const Mlp& mlp, std::int64_t batch, bool transposable = false, bool first_tile_writes = false) {
    weight.assign(mlp.num_layers(), 0);
    bias.assign(mlp.num_layers(), 0);
    transposed.assign(mlp.num_layers(), 0);
    per_chunk = 0;
    for (int l = 0; l < mlp.num_layers(); ++l) {
      const std::int64_t in = mlp.layer_in(l), out = mlp.layer_out(l);
      transposed[l] =
          transposable && l + 1 < mlp.num_layers() && in * padded<Scalar, lanes>(out) < out * padded<Scalar, lanes>(in);
      weight[l] = per_chunk;
      per_chunk += transposed[l] ? in * padded<Scalar, lanes>(out) : out * padded<Scalar, lanes>(in);
      bias[l] = per_chunk;
      per_chunk += padded<Scalar, lanes>(out);
    }
    chunks = std::max<std::int64_t>(1, (batch + kFusedMlpChunkRows - 1) / kFusedMlpChunkRows);
    base = aligned(storage, chunks * per_chunk);
    if (!first_tile_writes || batch == 0) {
      std::fill(base, base + chunks * per_chunk, Scalar(0));
      return;
    }
    for (std::int64_t c = 0; c < chunks; ++c)
      for (int l = 0; l < mlp.num_layers(); ++l)
        std::fill(chunk(c) + bias[l], chunk(c) + bias[l] + padded<Scalar, lanes>(mlp.layer_out(l)), Scalar(0));
  }
  Scalar* chunk(std::int64_t c) const { return base + c * per_chunk; }

  // The chunks' sums, added in chunk order, into the unpadded gradient slices: each element is chunk 0's
  // sum, then plus chunk 1's, and so on, walked a row of a chunk at a time so that the loops vectorise.
  void add_into(const Mlp& mlp, Scalar* grads) const {
    for (int l = 0; l < mlp.num_layers(); ++l) {
      const int in = mlp.layer_in(l), out = mlp.layer_out(l);
      Scalar* w = grads + mlp.weight_offset(l);
      if (transposed[l]) {
        const std::int64_t out_p = padded<Scalar, lanes>(out);
        for (int i = 0; i < in; ++i)
          for (int o = 0; o < out; ++o) w[o * in + i] = total(weight[l] + i * out_p + o);
      } else if (in == padded<Scalar, lanes>(in)) {  // rows without padding: one run, not a copy per row
        add_chunks(weight[l], out * in, w);
      } else {
        const std::int64_t in_p = padded<Scalar, lanes>(in);
        for (int o = 0; o < out; ++o) add_chunks(weight[l] + o * in_p, in, w + o * in);
      }
      add_chunks(bias[l], out, grads + mlp.bias_offset(l));
    }
  }
  void add_chunks(std::int64_t at, int count, Scalar* out) const {
    std::copy(base + at, base + at + count, out);
    for (std::int64_t c = 1; c < chunks; ++c) {
      const Scalar* chunk_sum = base + c * per_chunk + at;
      for (int i = 0; i < count; ++i) out[i] += chunk_sum[i];
    }
  }
  Scalar total(std::int64_t at) const {
    Scalar sum = base[at];
    for (std::int64_t c = 1; c < chunks; ++c) sum += base[c * per_chunk + at];
    return sum;
  }
};

}  // namespace surge::rl::fused

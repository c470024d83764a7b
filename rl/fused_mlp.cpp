// The fused small-MLP path of the CPU backend (rl/fused_mlp.hpp).
//
// Vectors are GCC/Clang vector extensions as wide as the build's widest register (kVectorBytes: 64 bytes
// under AVX-512, 32 under AVX2, 16 otherwise), so the same source is its own portable fallback. Each pass
// repacks the network's weights with every row padded to whole vectors (zeros in the padding), as W^T
// [in][out] for the forward products and, where the parameters' own W [out][in] is not whole vectors
// already, as W for the input gradients, so that no lane is masked; padded columns stay zero through every
// layer (tanh(0) = relu(0) = 0). A tile of kTileRows rows then goes through the whole layer stack in L1, in
// register blocks of up to kBlockRows rows x kBlockVecs vectors, sized to the machine's vector registers.
// Every element of a product is its initial value plus its products in the order of the summed index,
// whatever the vector width and blocking, so the results do not depend on them.
#include "rl/fused_mlp.hpp"

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <type_traits>
#include <utility>
#include <vector>

#include "rl/fused_mlp_common.hpp"
#include "rl/fused_mlp_transpose.hpp"
#include "rl/mlp.hpp"

namespace surge::rl {
namespace {

using namespace fused;

typedef float FloatVec __attribute__((vector_size(kVectorBytes)));
typedef double DoubleVec __attribute__((vector_size(kVectorBytes)));
// The same vectors in memory, at any address of their scalars.
typedef float FloatVecInMemory __attribute__((vector_size(kVectorBytes), aligned(alignof(float))));
typedef double DoubleVecInMemory __attribute__((vector_size(kVectorBytes), aligned(alignof(double))));

template <class Scalar>
struct VecOf;
template <>
struct VecOf<float> {
  using type = FloatVec;
  using in_memory = FloatVecInMemory;
};
template <>
struct VecOf<double> {
  using type = DoubleVec;
  using in_memory = DoubleVecInMemory;
};
template <class Scalar>
using Vec = typename VecOf<Scalar>::type;
// Vector types alias their scalars in GCC and Clang.
template <class Scalar>
inline typename VecOf<Scalar>::in_memory& vec_at(Scalar* p) {
  return *reinterpret_cast<typename VecOf<Scalar>::in_memory*>(p);
}
template <class Scalar>
inline const typename VecOf<Scalar>::in_memory& vec_at(const Scalar* p) {
  return *reinterpret_cast<const typename VecOf<Scalar>::in_memory*>(p);
}

// ============================== register blocks ==============================

// What a product does to its accumulators before it stores them: nothing (weight gradients, the head),
// a hidden layer's activation (forward), or the activation's derivative, expressed in the layer's output
// `gate` (an input gradient): applied in registers instead of in a sweep that reads the stored tile back.
enum class Epilogue { None, Tanh, Relu, TanhGradient, ReluGradient };

template <Epilogue epilogue, class Scalar>
inline Vec<Scalar> finish(Vec<Scalar> values, const Scalar* gate) {
  if constexpr (epilogue == Epilogue::TanhGradient) {
    const Vec<Scalar> output = vec_at(gate);
    return values * (Scalar(1) - output * output);
  } else if constexpr (epilogue == Epilogue::ReluGradient) {
    return vec_at(gate) > Scalar(0) ? values : Vec<Scalar>{};
  } else if constexpr (epilogue == Epilogue::Relu) {
    return values > Scalar(0) ? values : Vec<Scalar>{};
  } else if constexpr (epilogue == Epilogue::Tanh) {
#if defined(SURGE_FAST_TANH_LANES)
    if constexpr (std::is_same_v<Scalar, float>) return (Vec<Scalar>)fast_tanh_lanes((TanhLanes)values);
#endif
    for (int i = 0; i < kLanes<Scalar>; ++i) values[i] = tanh_of(values[i]);
    return values;
  } else {
    return values;
  }
}

// acc + s row in one rounding, the fused multiply-add the AVX-512 path's `acc += s * row` contracts to.
// Written out where the machine has FMA: GCC's tuning for AMD's cores (avoid-fma-max-bits) leaves a chain
// of 256-bit or narrower multiply-adds carried round a loop as a multiply and an add, two roundings.
#if !defined(__AVX512F__)
#if defined(__FMA__)
inline FloatVec multiply_add(float s, FloatVec row, FloatVec acc) {
  return (FloatVec)_mm256_fmadd_ps(_mm256_set1_ps(s), (__m256)row, (__m256)acc);
}
inline DoubleVec multiply_add(double s, DoubleVec row, DoubleVec acc) {
  return (DoubleVec)_mm256_fmadd_pd(_mm256_set1_pd(s), (__m256d)row, (__m256d)acc);
}
#else
template <class Scalar>
inline Vec<Scalar> multiply_add(Scalar s, Vec<Scalar> row, Vec<Scalar> acc) {
  return acc + s * row;
}
#endif
#endif

// The one register block: c[r][0 .. NV lanes) = finish(init[r][..] + sum_p a(r, p) b[p][..]) for NR rows,
// where a(r, p) = a[r * a_row + p * a_col] (so a or a^T), init [NR][init_ld] (init_ld 0: one row for all,
// as a bias; null: 0), gate [NR][ldc] for the gradient epilogues. `by_rows`: a_col is 1 (a), else a_row
// is 1 (a^T); a stride known to the compiler leaves one loop, whose accumulators GCC keeps in registers
// from the loads of init to the stores.
template <class Scalar, int NR, int NV, Epilogue epilogue, bool by_rows>
void block(const Scalar* a, std::int64_t a_row, std::int64_t a_col, int k, const Scalar* b, std::int64_t ldb,
           const Scalar* init, std::int64_t init_ld, Scalar* c, std::int64_t ldc, const Scalar* gate) {
  constexpr int lanes = kLanes<Scalar>;
  if constexpr (by_rows)
    a_col = 1;
  else
    a_row = 1;
  Vec<Scalar> acc[NR][NV];
  for (int r = 0; r < NR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = init ? vec_at(init + r * init_ld + v * lanes) : Vec<Scalar>{};
  if (k < 1) __builtin_unreachable();  // a layer's width or a tile's rows: knowing it saves a spill of acc
  for (int p = 0; p < k; ++p) {
    Vec<Scalar> row[NV];
    for (int v = 0; v < NV; ++v) row[v] = vec_at(b + p * ldb + v * lanes);
    for (int r = 0; r < NR; ++r) {
      const Scalar s = a[r * a_row + p * a_col];
#if defined(__AVX512F__)
      for (int v = 0; v < NV; ++v) acc[r][v] += s * row[v];
#else
      for (int v = 0; v < NV; ++v) acc[r][v] = multiply_add(s, row[v], acc[r][v]);
#endif
    }
  }
  // The gate (the layer's output, for a derivative) is read only by the gradients' epilogues, and is null
  // for the others: no offset is added to it there.
  constexpr bool gated = epilogue == Epilogue::TanhGradient || epilogue == Epilogue::ReluGradient;
  for (int r = 0; r < NR; ++r)
    for (int v = 0; v < NV; ++v)
      vec_at(c + r * ldc + v * lanes) =
          finish<epilogue, Scalar>(acc[r][v], gated ? gate + r * ldc + v * lanes : nullptr);
}

// Register blocks: up to kBlockRows rows x kBlockVecs vectors, and kWideRows[NV - 1] rows for a block NV
// vectors wide where a whole block of them remains: enough accumulators to hide the FMA's latency behind
// independent sums, few enough that they, a row of b and a broadcast of a fit the registers. Every element
// is still init plus its products in the order of p, so the blocking changes no bit.
#if defined(__AVX512F__)
// 32 registers. A 1-vector-wide product (a 2-wide head, a 4-wide input's weight gradient) in blocks of 4
// rows waits on its 4 chains. 4 x 4 stays: 6 x 4 (24 accumulators) was no faster on a 32-row tile, whose
// last 2 rows then take a block of their own.
constexpr int kBlockRows = 4;
constexpr int kBlockVecs = 4;
constexpr int kWideRows[kBlockVecs] = {16, 8, 4, 4};
#else
// 16 registers (AVX2's ymm, SSE's xmm): at most 12 accumulators, the rest for a row of b and a broadcast.
// 6 x 2 ran CleanRL's 64-wide layers faster than 4 x 2, 4 x 3 or 4 x 4.
constexpr int kBlockRows = 4;
constexpr int kBlockVecs = 2;
constexpr int kWideRows[kBlockVecs] = {8, 6};
#endif

// The register blocks of one kind of product with NR rows: at[NV - 1] has NV vectors.
template <class Scalar, Epilogue epilogue, bool by_rows>
struct BlockRow {
  using Block = void (*)(const Scalar*, std::int64_t, std::int64_t, int, const Scalar*, std::int64_t, const Scalar*,
                         std::int64_t, Scalar*, std::int64_t, const Scalar*);
  Block at[kBlockVecs];
};
template <class Scalar, Epilogue epilogue, bool by_rows, int NR, int... v>
constexpr BlockRow<Scalar, epilogue, by_rows> block_row(std::integer_sequence<int, v...>) {
  return {{block<Scalar, NR, v + 1, epilogue, by_rows>...}};
}

// All of them: small[NR - 1].at[NV - 1], and wide[NV - 1] with kWideRows[NV - 1] rows.
template <class Scalar, Epilogue epilogue, bool by_rows, class Rows = std::make_integer_sequence<int, kBlockRows>,
          class Vecs = std::make_integer_sequence<int, kBlockVecs>>
struct BlockTable;
template <class Scalar, Epilogue epilogue, bool by_rows, int... r, int... v>
struct BlockTable<Scalar, epilogue, by_rows, std::integer_sequence<int, r...>, std::integer_sequence<int, v...>> {
  using Block = typename BlockRow<Scalar, epilogue, by_rows>::Block;
  static constexpr BlockRow<Scalar, epilogue, by_rows> small[kBlockRows] = {
      block_row<Scalar, epilogue, by_rows, r + 1>(std::integer_sequence<int, v...>())...};
  static constexpr Block wide[kBlockVecs] = {block<Scalar, kWideRows[v], v + 1, epilogue, by_rows>...};
};

// c [rows][n_padded] (leading dimension ldc) = init + a(r, p) b [k][n_padded], in register blocks, then
// the epilogue (gate, for a gradient's, [rows][ldc]).
template <class Scalar, bool by_rows, Epilogue epilogue = Epilogue::None>
void product(const Scalar* a, std::int64_t a_row, std::int64_t a_col, int rows, int k, const Scalar* b,
             std::int64_t n_padded, const Scalar* init, std::int64_t init_ld, Scalar* c, std::int64_t ldc,
             const Scalar* gate = nullptr) {
  using Blocks = BlockTable<Scalar, epilogue, by_rows>;
  using Block = typename Blocks::Block;
  constexpr int lanes = kLanes<Scalar>;
  for (std::int64_t c0 = 0; c0 < n_padded; c0 += kBlockVecs * lanes) {
    const int vecs = static_cast<int>(std::min<std::int64_t>(kBlockVecs, (n_padded - c0) / lanes));
    for (int r0 = 0; r0 < rows;) {
      const int wide = kWideRows[vecs - 1], step = rows - r0 >= wide ? wide : std::min(kBlockRows, rows - r0);
      const Block run = step == wide ? Blocks::wide[vecs - 1] : Blocks::small[step - 1].at[vecs - 1];
      run(a + r0 * a_row, a_row, a_col, k, b + c0, n_padded, init ? init + r0 * init_ld + c0 : nullptr, init_ld,
          c + r0 * ldc + c0, ldc, gate ? gate + r0 * ldc + c0 : nullptr);
      r0 += step;
    }
  }
}

// c [rows][ldc] = a [rows][k] (leading dimension lda) times b [k][n_padded] (+ bias [n_padded]), then
// the activation where one is given.
template <class Scalar>
void dense(const Scalar* a, std::int64_t lda, int rows, int k, const Scalar* b, std::int64_t n_padded,
           const Scalar* bias, Scalar* c, std::int64_t ldc, const Activation* activation = nullptr) {
  if (!activation)
    product<Scalar, true>(a, lda, 1, rows, k, b, n_padded, bias, 0, c, ldc);
  else if (*activation == Activation::Tanh)
    product<Scalar, true, Epilogue::Tanh>(a, lda, 1, rows, k, b, n_padded, bias, 0, c, ldc);
  else
    product<Scalar, true, Epilogue::Relu>(a, lda, 1, rows, k, b, n_padded, bias, 0, c, ldc);
}

// dx [rows][n_padded] = (dy [rows][k] (leading dimension ldy) times w [k][n_padded]) times the activation's
// derivative at the layer's input x [rows][n_padded] (the layer below's output).
template <class Scalar>
void input_gradient(const Scalar* dy, std::int64_t ldy, int rows, int k, const Scalar* w, std::int64_t n_padded,
                    Activation activation, const Scalar* x, Scalar* dx) {
  if (activation == Activation::Tanh)
    product<Scalar, true, Epilogue::TanhGradient>(dy, ldy, 1, rows, k, w, n_padded, nullptr, 0, dx, n_padded, x);
  else
    product<Scalar, true, Epilogue::ReluGradient>(dy, ldy, 1, rows, k, w, n_padded, nullptr, 0, dx, n_padded, x);
}

// sum [m][n_padded] += dy^T x over `rows` rows: dy [rows][ldy] (its first m columns), x [rows][n_padded]; with
// `start`, sum = dy^T x (the products then start from zero, as they would from a zeroed sum).
template <class Scalar>
void outer(const Scalar* dy, std::int64_t ldy, int m, int rows, const Scalar* x, std::int64_t n_padded, Scalar* sum,
           bool start) {
  product<Scalar, false>(dy, 1, ldy, m, rows, x, n_padded, start ? nullptr : sum, n_padded, sum, n_padded);
}

// sum [out] += the column sums of dy [rows][ldy] (its first out columns), each column's rows added in
// order: whole vectors of columns stay in registers across the rows (added in memory, each row's
// addition would wait for the previous row's store), the rest one column at a time.
template <class Scalar>
void add_column_sums(const Scalar* dy, std::int64_t ldy, int rows, int out, Scalar* sum) {
  constexpr int lanes = kLanes<Scalar>;
  int o = 0;
  for (; o + lanes <= out; o += lanes) {
    Vec<Scalar> acc = vec_at(sum + o);
    for (int r = 0; r < rows; ++r) acc += vec_at(dy + r * ldy + o);
    vec_at(sum + o) = acc;
  }
  for (; o < out; ++o)
    for (int r = 0; r < rows; ++r) sum[o] += dy[r * ldy + o];
}

// ============================== the network, repacked ==============================

// One network's weights repacked for the tile kernels, with the parameters and layout it was made from.
template <class Scalar>
struct Packed : PackedSource<Scalar> {
  std::vector<Scalar> storage;  // per layer: W^T [in][out], b [out], W [out][in] where needed, padded
  Scalar* base = nullptr;
  using PackedSource<Scalar>::transposed;
  using PackedSource<Scalar>::rows;
  using PackedSource<Scalar>::bias;

  // W [out][in] is read by the input gradient, which the first layer does not take; a layer whose input is
  // whole vectors reads it where it lies in the parameters (rows[l] = -1), already padded.
  static bool needs_rows(const Mlp& mlp, int l) { return l > 0 && mlp.layer_in(l) != padded<Scalar>(mlp.layer_in(l)); }
  const Scalar* input_rows(const Mlp& mlp, const Scalar* params, int l) const {
    return rows[l] < 0 ? params + mlp.weight_offset(l) : base + rows[l];
  }

  void pack(const Mlp& mlp, const Scalar* params) {
    const int layers = mlp.num_layers();
    std::int64_t total = 0;
    for (int l = 0; l < layers; ++l) {
      const std::int64_t in = mlp.layer_in(l), out = mlp.layer_out(l);
      transposed[l] = total;
      total += in * padded<Scalar>(out);
      bias[l] = total;
      total += padded<Scalar>(out);
      rows[l] = needs_rows(mlp, l) ? total : -1;
      total += needs_rows(mlp, l) ? out * padded<Scalar>(in) : 0;
    }
    base = aligned(storage, total);
    for (int l = 0; l < layers; ++l) {  // every element is written once: the values, then zeros in the padding
      const int in = mlp.layer_in(l), out = mlp.layer_out(l);
      const Scalar* w = params + mlp.weight_offset(l);
      const std::int64_t out_p = padded<Scalar>(out);
      Scalar* w_t = base + transposed[l];
      transpose(w, out, in, w_t, out_p);
      // The padding zeroed by a select over whole rows: a fill of each row's few padding lanes would be a
      // library call per row.
      if (out < out_p)
        for (std::int64_t i = 0; i < in * out_p; i += out_p)
          for (std::int64_t o = 0; o < out_p; ++o) w_t[i + o] = o < out ? w_t[i + o] : Scalar(0);
      load_padded(params + mlp.bias_offset(l), 1, out, base + bias[l]);
      if (rows[l] >= 0) load_padded(w, out, in, base + rows[l]);
    }
  }
};

template <class Scalar>
const Packed<Scalar>& packed(const Mlp& mlp, const Scalar* params, std::uint64_t params_version) {
  return packed_cache<Packed<Scalar>>(mlp, params, params_version);
}

// ============================== one tile ==============================

// A tile of `rows` rows forward through the layer stack from x [rows][ldx]: layer l's output, its bias
// added and (below the head) activated, goes to output_of(l) [rows][padded out]; then settle(l, y) may
// move it elsewhere. Returns the head's output.
template <class Scalar, class OutputOf, class Settle>
const Scalar* forward_tile(const Mlp& mlp, const Packed<Scalar>& weights, const Scalar* x, std::int64_t ldx, int rows,
                           OutputOf output_of, Settle settle) {
  const int layers = mlp.num_layers();
  for (int l = 0; l < layers; ++l) {
    const int in = mlp.layer_in(l), out = mlp.layer_out(l);
    const std::int64_t out_p = padded<Scalar>(out);
    Scalar* y = output_of(l);
    const Activation activation = mlp.activation();
    dense(x, ldx, rows, in, weights.base + weights.transposed[l], out_p, weights.base + weights.bias[l], y, out_p,
          l + 1 < layers ? &activation : nullptr);
    settle(l, y);
    x = y;
    ldx = out_p;
  }
  return x;
}

// A tile of `rows` rows back through the layer stack from the head's output gradient dy [rows][ldy]:
// each layer's weight and bias gradients are added into the chunk's sums, and the input gradient, times
// the activation's derivative, flows down through buffers. input_of(l) is layer l's input for the tile,
// [rows][padded in] (its padding zero). The chunk's first tile (`first`) writes the weight sums.
template <class Scalar, class InputOf>
void backward_tile(const Mlp& mlp, const Packed<Scalar>& weights, const Scalar* params, const Scalar* dy,
                   std::int64_t ldy, int rows, InputOf input_of, Scalar* const buffers[2],
                   const GradientSums<Scalar>& sums, Scalar* sum, bool first) {
  int next = 0;
  for (int l = mlp.num_layers() - 1; l >= 0; --l) {
    const int in = mlp.layer_in(l), out = mlp.layer_out(l);
    const std::int64_t in_p = padded<Scalar>(in);
    const Scalar* x = input_of(l);
    if (sums.transposed[l])  // dy's rows are padded here: a hidden layer's gradient buffer
      outer(x, in_p, in, rows, dy, padded<Scalar>(out), sum + sums.weight[l], first);
    else
      outer(dy, ldy, out, rows, x, in_p, sum + sums.weight[l], first);
    add_column_sums(dy, ldy, rows, out, sum + sums.bias[l]);
    if (l == 0) break;
    Scalar* dx = buffers[next ^= 1];
    input_gradient(dy, ldy, rows, out, weights.input_rows(mlp, params, l), in_p, mlp.activation(), x, dx);
    dy = dx;
    ldy = in_p;
  }
}

}  // namespace

std::uint64_t fused_mlp_new_version() {
  static std::atomic<std::uint64_t> last{0};
  return last.fetch_add(1) + 1;
}

bool fused_mlp_fits(const Mlp& mlp) {
  for (int l = 0; l < mlp.num_layers(); ++l)
    if (mlp.layer_in(l) > kFusedMlpMaxWidth || mlp.layer_out(l) > kFusedMlpMaxWidth) return false;
  return true;
}

template <class Scalar>
void fused_mlp_forward(const Mlp& mlp, const Scalar* params, const Scalar* input, std::int64_t batch,
                       Scalar* activations, Scalar* output, std::uint64_t params_version) {
  const Packed<Scalar>& weights = packed(mlp, params, params_version);
  const int widest = widest_padded<Scalar>(mlp), layers = mlp.num_layers();
  const std::int64_t tiles = (batch + kTileRows - 1) / kTileRows;
  for_each_index(tiles, run_parallel(batch), [&](std::int64_t tile) {
    thread_local std::vector<Scalar> storage;
    Scalar* buffers[2] = {aligned(storage, 2 * kTileRows * widest), nullptr};
    buffers[1] = buffers[0] + kTileRows * widest;
    int next = 0;
    const std::int64_t row0 = tile * kTileRows;
    const int rows = static_cast<int>(std::min<std::int64_t>(kTileRows, batch - row0));
    const auto target = [&](int l) {
      return (l + 1 == layers ? output : activations + mlp.activation_offset(l, batch)) + row0 * mlp.layer_out(l);
    };
    // A layer of whole vectors is written in place; another goes through a padded tile. The products read
    // their left operand one scalar at a time: the rows are used where they lie.
    forward_tile(
        mlp, weights, input + row0 * mlp.input_dim(), mlp.input_dim(), rows,
        [&](int l) { return mlp.layer_out(l) == padded<Scalar>(mlp.layer_out(l)) ? target(l) : buffers[next ^= 1]; },
        [&](int l, const Scalar* y) {
          if (y != target(l)) store_unpadded(y, rows, mlp.layer_out(l), target(l));
        });
  });
}

template <class Scalar>
void fused_mlp_backward(const Mlp& mlp, const Scalar* params, const Scalar* input, std::int64_t batch,
                        const Scalar* activations, const Scalar* d_output, Scalar* grads,
                        std::uint64_t params_version) {
  const Packed<Scalar>& weights = packed(mlp, params, params_version);
  thread_local GradientSums<Scalar> sums_of_thread;
  GradientSums<Scalar>& sums = sums_of_thread;  // one name for every thread of the loop below
  sums.plan(mlp, batch, true, true);
  const int widest = widest_padded<Scalar>(mlp);
  const std::int64_t chunks = sums.chunks;

  for_each_index(chunks, run_parallel(batch), [&](std::int64_t chunk) {
    thread_local std::vector<Scalar> storage;
    Scalar* x_tile = aligned(storage, 3 * kTileRows * widest);
    Scalar* const buffers[2] = {x_tile + kTileRows * widest, x_tile + 2 * kTileRows * widest};
    const std::int64_t end = std::min(batch, (chunk + 1) * kFusedMlpChunkRows);
    for (std::int64_t row0 = chunk * kFusedMlpChunkRows; row0 < end; row0 += kTileRows) {
      const int rows = static_cast<int>(std::min<std::int64_t>(kTileRows, end - row0));
      // dy is read one scalar at a time; the layer inputs x as whole vectors, padded when they are not.
      const auto input_of = [&](int l) {
        const int in = mlp.layer_in(l);
        const Scalar* x = (l == 0 ? input : activations + mlp.activation_offset(l - 1, batch)) + row0 * in;
        if (in == padded<Scalar>(in)) return x;
        load_padded(x, rows, in, x_tile);
        return static_cast<const Scalar*>(x_tile);
      };
      backward_tile(mlp, weights, params, d_output + row0 * mlp.output_dim(), mlp.output_dim(), rows, input_of, buffers,
                    sums, sums.chunk(chunk), row0 == chunk * kFusedMlpChunkRows);
    }
  });

  sums.add_into(mlp, grads);
}

template <class Scalar>
void fused_mlp_train_pass(const Mlp& mlp, const Scalar* params, const Scalar* input, std::int64_t batch,
                          HeadGradient<Scalar> head, Scalar* grads, std::uint64_t params_version) {
  const Packed<Scalar>& weights = packed(mlp, params, params_version);
  thread_local GradientSums<Scalar> sums;
  thread_local std::vector<Scalar> storage;
  sums.plan(mlp, batch, true, true);
  const int widest = widest_padded<Scalar>(mlp), layers = mlp.num_layers();
  // Per tile: every layer's output [layers][kTileRows][widest], the padded input, two gradient buffers and
  // the head's gradient.
  const std::int64_t tile = kTileRows * widest;
  Scalar* outputs = aligned(storage, (layers + 4) * tile);
  Scalar* x_tile = outputs + layers * tile;
  Scalar* const buffers[2] = {x_tile + tile, x_tile + 2 * tile};
  Scalar* d_head = x_tile + 3 * tile;
  const std::int64_t ld_head = padded<Scalar>(mlp.output_dim());
  for (std::int64_t row0 = 0; row0 < batch; row0 += kTileRows) {
    // Tiles start at the same rows as fused_mlp_backward's, whose chunks are whole tiles.
    const int rows = static_cast<int>(std::min<std::int64_t>(kTileRows, batch - row0));
    const Scalar* x = input + row0 * mlp.input_dim();
    const Scalar* head_output = forward_tile(
        mlp, weights, x, mlp.input_dim(), rows, [&](int l) { return outputs + l * tile; }, [](int, const Scalar*) {});
    head.function(head.context, row0, rows, head_output, ld_head, d_head);
    const auto input_of = [&](int l) {
      if (l > 0) return static_cast<const Scalar*>(outputs + (l - 1) * tile);
      if (mlp.input_dim() == padded<Scalar>(mlp.input_dim())) return x;
      load_padded(x, rows, mlp.input_dim(), x_tile);
      return static_cast<const Scalar*>(x_tile);
    };
    backward_tile(mlp, weights, params, d_head, ld_head, rows, input_of, buffers, sums,
                  sums.chunk(row0 / kFusedMlpChunkRows), row0 % kFusedMlpChunkRows == 0);
  }
  sums.add_into(mlp, grads);
}

template void fused_mlp_forward<float>(const Mlp&, const float*, const float*, std::int64_t, float*, float*,
                                       std::uint64_t);
template void fused_mlp_forward<double>(const Mlp&, const double*, const double*, std::int64_t, double*, double*,
                                        std::uint64_t);
template void fused_mlp_backward<float>(const Mlp&, const float*, const float*, std::int64_t, const float*,
                                        const float*, float*, std::uint64_t);
template void fused_mlp_backward<double>(const Mlp&, const double*, const double*, std::int64_t, const double*,
                                         const double*, double*, std::uint64_t);
template void fused_mlp_train_pass<float>(const Mlp&, const float*, const float*, std::int64_t, HeadGradient<float>,
                                          float*, std::uint64_t);
template void fused_mlp_train_pass<double>(const Mlp&, const double*, const double*, std::int64_t, HeadGradient<double>,
                                           double*, std::uint64_t);

}  // namespace surge::rl

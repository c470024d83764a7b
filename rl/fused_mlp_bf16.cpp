// The fused small-MLP path in bf16 (rl/fused_mlp_bf16.hpp).
//
// Every product is c[r][j] = init[r][j] + sum_p a(r, p) . b(p, j) over pairs p of the summed index,
// where a(r, p) and b(p, j) are 32-bit words holding two bf16 values (the even element in the low half):
// vdpbf16ps's operands. For each pair it adds the odd element's product, then the even one's, to the
// fp32 lane; both products are exact in fp32 (8-bit by 8-bit significands), so the only roundings are the
// inputs' to bf16 and one fp32 rounding per addition. The portable kernel does those additions in that
// order, so the two kernels agree bit for bit on normal numbers (vdpbf16ps flushes denormals to zero).
//
// Operands, all [..][padded to 16 words] so that a row of b is whole 64-byte vectors:
//   forward  y = x W^T + b:  a = x's rows as pairs along `in`,  b = W^T as pairs along `in`  [in/2][out]
//   weights dW = dy^T x:      a = dy^T as pairs along rows,      b = x as pairs along rows    [rows/2][in]
//   input   dx = dy W:        a = dy's rows as pairs along `out`, b = W as pairs along `out`  [out/2][in]
#include "rl/fused_mlp_bf16.hpp"

#include <algorithm>
#include <bit>
#include <vector>

#include "rl/bf16.hpp"
#include "rl/fused_mlp_common.hpp"
#include "rl/mlp.hpp"

#if defined(__x86_64__) && (defined(__clang__) ? __clang_major__ >= 9 : __GNUC__ >= 10)
#define SURGE_BF16_NATIVE 1
#include <immintrin.h>
#endif

namespace surge::rl {

std::uint16_t to_bf16(float value) { return static_cast<std::uint16_t>(rounded_bf16(value)); }

float from_bf16(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

bool bf16_native_built() {
#ifdef SURGE_BF16_NATIVE
  return true;
#else
  return false;
#endif
}

bool bf16_native_supported() {
#ifdef SURGE_BF16_NATIVE
  return __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

namespace {

using namespace fused;
using Word = std::uint32_t;

// Rows padded to 16 words, whole 64-byte vectors (vdpbf16ps's) on any machine, and register blocks of up
// to 4 rows x 4 such vectors.
constexpr int kPadWords = 16;
constexpr int kBlockRows = 4;
constexpr int kBlockVecs = 4;

inline Word pair(float even, float odd) { return rounded_bf16(even) | rounded_bf16(odd) << 16; }

// ============================== register blocks ==============================

using Block = void (*)(const Word*, std::int64_t, int, const Word*, std::int64_t, const float*, std::int64_t, float*,
                       std::int64_t);

typedef float FloatVec __attribute__((vector_size(64)));
typedef Word WordVec __attribute__((vector_size(64)));
typedef float FloatVecInMemory __attribute__((vector_size(64), aligned(alignof(float))));
typedef Word WordVecInMemory __attribute__((vector_size(64), aligned(alignof(Word))));

// c [NR][NV x 16] = init (init_ld 0: one row for all; null: 0) + sum over `pairs` of a(r, p) . b(p, ..).
template <int NR, int NV>
void block_portable(const Word* a, std::int64_t a_row, int pairs, const Word* b, std::int64_t ldb, const float* init,
                    std::int64_t init_ld, float* c, std::int64_t ldc) {
  FloatVec acc[NR][NV];
  for (int r = 0; r < NR; ++r)
    for (int v = 0; v < NV; ++v)
      acc[r][v] = init ? *reinterpret_cast<const FloatVecInMemory*>(init + r * init_ld + v * 16) : FloatVec{};
  for (int p = 0; p < pairs; ++p) {
    FloatVec even[NV], odd[NV];
    for (int v = 0; v < NV; ++v) {
      const WordVec w = *reinterpret_cast<const WordVecInMemory*>(b + p * ldb + v * 16);
      even[v] = reinterpret_cast<FloatVec>(w << 16);
      odd[v] = reinterpret_cast<FloatVec>(w & 0xffff0000u);
    }
    for (int r = 0; r < NR; ++r) {
      const Word s = a[r * a_row + p];
      const float s_even = std::bit_cast<float>(s << 16), s_odd = std::bit_cast<float>(s & 0xffff0000u);
      for (int v = 0; v < NV; ++v) {
        acc[r][v] += s_odd * odd[v];
        acc[r][v] += s_even * even[v];
      }
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int v = 0; v < NV; ++v) *reinterpret_cast<FloatVecInMemory*>(c + r * ldc + v * 16) = acc[r][v];
}

#ifdef SURGE_BF16_NATIVE
template <int NR, int NV>
__attribute__((target("avx512f,avx512bf16"))) void block_native(const Word* a, std::int64_t a_row, int pairs,
                                                                const Word* b, std::int64_t ldb, const float* init,
                                                                std::int64_t init_ld, float* c, std::int64_t ldc) {
  __m512 acc[NR][NV];
  for (int r = 0; r < NR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = init ? _mm512_loadu_ps(init + r * init_ld + v * 16) : _mm512_setzero_ps();
  for (int p = 0; p < pairs; ++p) {
    __m512i row[NV];
    for (int v = 0; v < NV; ++v) row[v] = _mm512_loadu_si512(b + p * ldb + v * 16);
    for (int r = 0; r < NR; ++r) {
      const __m512i s = _mm512_set1_epi32(static_cast<int>(a[r * a_row + p]));
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], (__m512bh)s, (__m512bh)row[v]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(c + r * ldc + v * 16, acc[r][v]);
}
#define SURGE_NATIVE_BLOCK(n, v) block_native<n, v>
#else
#define SURGE_NATIVE_BLOCK(n, v) block_portable<n, v>
#endif

#define SURGE_BLOCK_ROW(kind, n) \
  { kind(n, 1), kind(n, 2), kind(n, 3), kind(n, 4) }
#define SURGE_PORTABLE_BLOCK(n, v) block_portable<n, v>
constexpr Block kBlocks[2][kBlockRows][kBlockVecs] = {
    {SURGE_BLOCK_ROW(SURGE_NATIVE_BLOCK, 1), SURGE_BLOCK_ROW(SURGE_NATIVE_BLOCK, 2),
     SURGE_BLOCK_ROW(SURGE_NATIVE_BLOCK, 3), SURGE_BLOCK_ROW(SURGE_NATIVE_BLOCK, 4)},
    {SURGE_BLOCK_ROW(SURGE_PORTABLE_BLOCK, 1), SURGE_BLOCK_ROW(SURGE_PORTABLE_BLOCK, 2),
     SURGE_BLOCK_ROW(SURGE_PORTABLE_BLOCK, 3), SURGE_BLOCK_ROW(SURGE_PORTABLE_BLOCK, 4)}};
#undef SURGE_BLOCK_ROW
#undef SURGE_PORTABLE_BLOCK
#undef SURGE_NATIVE_BLOCK

// c [rows][n_padded] (leading dimension ldc) = init + a [rows][pairs] (leading dimension a_row) times
// b [pairs][n_padded], in register blocks.
void product(Bf16Kernel kernel, const Word* a, std::int64_t a_row, int rows, int pairs, const Word* b,
             std::int64_t n_padded, const float* init, std::int64_t init_ld, float* c, std::int64_t ldc) {
  // Where the CPU lacks AVX-512 BF16 (surge eval of a bf16 run; training refuses), the portable kernel
  // gives the same bits.
  static const bool native = bf16_native_supported();
  const auto& blocks = kBlocks[kernel == Bf16Kernel::Portable || !native ? 1 : 0];
  for (std::int64_t c0 = 0; c0 < n_padded; c0 += kBlockVecs * 16) {
    const int vecs = static_cast<int>(std::min<std::int64_t>(kBlockVecs, (n_padded - c0) / 16));
    for (int r0 = 0; r0 < rows; r0 += kBlockRows)
      blocks[std::min(kBlockRows, rows - r0) - 1][vecs - 1](a + r0 * a_row, a_row, pairs, b + c0, n_padded,
                                                            init ? init + r0 * init_ld + c0 : nullptr, init_ld,
                                                            c + r0 * ldc + c0, ldc);
  }
}

// ============================== operands ==============================

std::int64_t pairs_of(std::int64_t n) { return (n + 1) / 2; }

// dst [rows][pairs_of(width)] = src's rows [rows][width] (leading dimension ld) as pairs along the row.
void pairs_along_rows(const float* src, std::int64_t ld, int rows, int width, Word* dst) {
  const std::int64_t words = pairs_of(width);
  for (int r = 0; r < rows; ++r) {
    const float* row = src + r * ld;
    for (int j = 0; j + 1 < width; j += 2) dst[r * words + j / 2] = pair(row[j], row[j + 1]);
    if (width % 2) dst[r * words + words - 1] = pair(row[width - 1], 0.0f);
  }
}

// dst [pairs_of(rows)][padded(width)] = src [rows][width] (leading dimension ld) as pairs down the columns,
// zeros in the padding.
void pairs_down_columns(const float* src, std::int64_t ld, int rows, int width, Word* dst) {
  const std::int64_t stride = padded<float, kPadWords>(width);
  for (int q = 0; q < pairs_of(rows); ++q) {
    const float* even = src + 2 * q * ld;
    const float* odd = 2 * q + 1 < rows ? even + ld : nullptr;
    for (int j = 0; j < width; ++j) dst[q * stride + j] = pair(even[j], odd ? odd[j] : 0.0f);
    std::fill(dst + q * stride + width, dst + (q + 1) * stride, Word(0));
  }
}

// dst [width][pairs_of(rows)] = src^T (src [rows][width], leading dimension ld) as pairs along its rows.
void pairs_transposed(const float* src, std::int64_t ld, int rows, int width, Word* dst) {
  const std::int64_t words = pairs_of(rows);
  for (int q = 0; q < words; ++q) {
    const float* even = src + 2 * q * ld;
    const float* odd = 2 * q + 1 < rows ? even + ld : nullptr;
    for (int j = 0; j < width; ++j) dst[j * words + q] = pair(even[j], odd ? odd[j] : 0.0f);
  }
}

// One network's weights as bf16 pairs: per layer W^T [in/2][out] and W [out/2][in], and the fp32 biases.
struct PackedBf16 : PackedSource<float> {
  std::vector<Word> word_storage;
  std::vector<float> bias_storage;
  Word* words = nullptr;  // transposed and rows index it, bias indexes biases
  float* biases = nullptr;

  void pack(const Mlp& mlp, const float* params) {
    const int layers = mlp.num_layers();
    std::int64_t total = 0, bias_total = 0;
    for (int l = 0; l < layers; ++l) {
      const std::int64_t in = mlp.layer_in(l), out = mlp.layer_out(l);
      transposed[l] = total;
      total += pairs_of(in) * padded<float, kPadWords>(out);
      rows[l] = total;
      total += pairs_of(out) * padded<float, kPadWords>(in);
      bias[l] = bias_total;
      bias_total += padded<float, kPadWords>(out);
    }
    words = aligned(word_storage, total);
    biases = aligned(bias_storage, bias_total);
    std::fill(biases, biases + bias_total, 0.0f);
    std::vector<float> w_t;
    for (int l = 0; l < layers; ++l) {
      const int in = mlp.layer_in(l), out = mlp.layer_out(l);
      const float* w = params + mlp.weight_offset(l);
      w_t.assign(static_cast<std::size_t>(in) * out, 0.0f);
      for (int o = 0; o < out; ++o)
        for (int i = 0; i < in; ++i) w_t[i * out + o] = w[o * in + i];
      pairs_down_columns(w_t.data(), out, in, out, words + transposed[l]);
      pairs_down_columns(w, in, out, in, words + rows[l]);
      std::copy(params + mlp.bias_offset(l), params + mlp.bias_offset(l) + out, biases + bias[l]);
    }
  }
};

}  // namespace

void fused_mlp_bf16_forward(const Mlp& mlp, const float* params, const float* input, std::int64_t batch,
                            float* activations, float* output, Bf16Kernel kernel, std::uint64_t params_version) {
  const PackedBf16& weights = packed_cache<PackedBf16>(mlp, params, params_version);
  const int widest = widest_padded<float, kPadWords>(mlp), layers = mlp.num_layers();
  const std::int64_t tiles = (batch + kTileRows - 1) / kTileRows;
  for_each_index(tiles, run_parallel(batch), [&](std::int64_t tile) {
    thread_local std::vector<float> storage;
    thread_local std::vector<Word> word_storage;
    float* y = aligned(storage, kTileRows * widest);
    Word* x = aligned(word_storage, kTileRows * widest);
    const std::int64_t row0 = tile * kTileRows;
    const int rows = static_cast<int>(std::min<std::int64_t>(kTileRows, batch - row0));
    pairs_along_rows(input + row0 * mlp.input_dim(), mlp.input_dim(), rows, mlp.input_dim(), x);
    for (int l = 0; l < layers; ++l) {
      const int in = mlp.layer_in(l), out = mlp.layer_out(l);
      const std::int64_t out_p = padded<float, kPadWords>(out);
      const bool head = l + 1 == layers;
      float* target = (head ? output : activations + mlp.activation_offset(l, batch)) + row0 * out;
      float* z = out == out_p ? target : y;  // a layer of whole vectors is written in place
      product(kernel, x, pairs_of(in), rows, static_cast<int>(pairs_of(in)), weights.words + weights.transposed[l],
              out_p, weights.biases + weights.bias[l], 0, z, out_p);
      if (!head) activate(mlp.activation(), z, rows * out_p);
      if (z != target) store_unpadded<float, kPadWords>(z, rows, out, target);
      if (!head) pairs_along_rows(z, out_p, rows, out, x);
    }
  });
}

void fused_mlp_bf16_backward(const Mlp& mlp, const float* params, const float* input, std::int64_t batch,
                             const float* activations, const float* d_output, float* grads, Bf16Kernel kernel,
                             std::uint64_t params_version) {
  const PackedBf16& weights = packed_cache<PackedBf16>(mlp, params, params_version);
  thread_local GradientSums<float, kPadWords> sums_of_thread;
  GradientSums<float, kPadWords>& sums = sums_of_thread;  // one name for every thread of the loop below
  const int widest = widest_padded<float, kPadWords>(mlp), layers = mlp.num_layers();
  sums.plan(mlp, batch);

  for_each_index(sums.chunks, run_parallel(batch), [&](std::int64_t chunk) {
    thread_local std::vector<float> storage;
    thread_local std::vector<Word> word_storage;
    float* x_tile = aligned(storage, 3 * kTileRows * widest);
    float* buffers[2] = {x_tile + kTileRows * widest, x_tile + 2 * kTileRows * widest};
    Word* x_words = aligned(word_storage, 3 * kTileRows * widest);
    Word* dy_words = x_words + kTileRows * widest;  // dy^T for the weight gradients, then dy for dx
    int next = 0;
    float* sum = sums.chunk(chunk);
    const std::int64_t end = std::min(batch, (chunk + 1) * kFusedMlpChunkRows);
    for (std::int64_t row0 = chunk * kFusedMlpChunkRows; row0 < end; row0 += kTileRows) {
      const int rows = static_cast<int>(std::min<std::int64_t>(kTileRows, end - row0));
      const int row_pairs = static_cast<int>(pairs_of(rows));
      const float* dy = d_output + row0 * mlp.output_dim();
      std::int64_t ldy = mlp.output_dim();
      for (int l = layers - 1; l >= 0; --l) {
        const int in = mlp.layer_in(l), out = mlp.layer_out(l);
        const std::int64_t in_p = padded<float, kPadWords>(in);
        const float* x = (l == 0 ? input : activations + mlp.activation_offset(l - 1, batch)) + row0 * in;
        pairs_down_columns(x, in, rows, in, x_words);
        pairs_transposed(dy, ldy, rows, out, dy_words);
        product(kernel, dy_words, row_pairs, out, row_pairs, x_words, in_p, sum + sums.weight[l], in_p,
                sum + sums.weight[l], in_p);
        float* bias = sum + sums.bias[l];
        for (int r = 0; r < rows; ++r)
          for (int o = 0; o < out; ++o) bias[o] += dy[r * ldy + o];
        if (l == 0) break;
        if (in != in_p) {
          load_padded<float, kPadWords>(x, rows, in, x_tile);
          x = x_tile;
        }
        pairs_along_rows(dy, ldy, rows, out, dy_words);
        float* dx = buffers[next ^= 1];
        product(kernel, dy_words, pairs_of(out), rows, static_cast<int>(pairs_of(out)), weights.words + weights.rows[l],
                in_p, nullptr, 0, dx, in_p);
        activation_backward(mlp.activation(), dx, x, rows * in_p);
        dy = dx;
        ldy = in_p;
      }
    }
  });
  sums.add_into(mlp, grads);
}

}  // namespace surge::rl

// The GEMM launcher against a plain double-precision product, for every transpose combination, with
// and without the fused bias, with beta 0 and not, and with padded leading dimensions.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "rl/gemm.hpp"
#include "sim/philox.hpp"

using surge::rl::Transpose;

namespace {

template <class Scalar>
void check_gemm(Transpose ta, Transpose tb, bool with_bias, double beta) {
  const std::int64_t m = 7, n = 5, k = 9, pad = 3;
  const std::int64_t a_rows = ta == Transpose::No ? m : k, a_cols = ta == Transpose::No ? k : m;
  const std::int64_t b_rows = tb == Transpose::No ? k : n, b_cols = tb == Transpose::No ? n : k;
  const std::int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
  surge::Rng rng(11, static_cast<std::uint64_t>(ta) * 4 + static_cast<std::uint64_t>(tb), 0);
  auto draw = [&](std::int64_t count) {
    std::vector<Scalar> v(static_cast<std::size_t>(count));
    for (auto& x : v) x = static_cast<Scalar>(rng.uniform(-1.0f, 1.0f));
    return v;
  };
  const auto a = draw(a_rows * lda), b = draw(b_rows * ldb), bias = draw(n);
  auto c = draw(m * ldc);
  const auto c_before = c;
  const Scalar alpha = Scalar(0.75);
  surge::Stream stream(surge::Device::cpu());
  surge::rl::gemm<Scalar>(stream, ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, static_cast<Scalar>(beta),
                          c.data(), ldc, with_bias ? bias.data() : nullptr);
  const double tolerance = sizeof(Scalar) == 4 ? 1e-5 : 1e-12;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double expected = 0.0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double a_ip = ta == Transpose::No ? a[i * lda + p] : a[p * lda + i];
        const double b_pj = tb == Transpose::No ? b[p * ldb + j] : b[j * ldb + p];
        expected += a_ip * b_pj;
      }
      expected = alpha * expected + beta * c_before[i * ldc + j] + (with_bias ? bias[j] : 0.0);
      CHECK(std::abs(c[i * ldc + j] - expected) <= tolerance + tolerance * std::abs(expected));
    }
    for (std::int64_t j = n; j < ldc; ++j) CHECK(c[i * ldc + j] == c_before[i * ldc + j]);  // padding untouched
  }
}

}  // namespace

TEST_CASE("gemm matches a plain product for every transpose, bias and beta", "[gemm]") {
  for (Transpose ta : {Transpose::No, Transpose::Yes})
    for (Transpose tb : {Transpose::No, Transpose::Yes})
      for (bool bias : {false, true})
        for (double beta : {0.0, 0.5}) {
          INFO("ta " << int(ta) << " tb " << int(tb) << " bias " << bias << " beta " << beta);
          check_gemm<float>(ta, tb, bias, beta);
          check_gemm<double>(ta, tb, bias, beta);
        }
}

TEST_CASE("gemm with k = 0 is beta * C plus the bias, ignoring C when beta is 0", "[gemm]") {
  const std::int64_t m = 3, n = 4, ldc = 6;
  const std::vector<double> bias = {0.5, -1.0, 2.0, 0.25};
  for (bool with_bias : {false, true})
    for (double beta : {0.0, 0.5}) {
      INFO("bias " << with_bias << " beta " << beta);
      std::vector<double> c(static_cast<std::size_t>(m * ldc));
      for (std::size_t i = 0; i < c.size(); ++i) c[i] = beta == 0.0 ? std::nan("") : 1.0 + static_cast<double>(i);
      const auto c_before = c;
      const double unused = 0.0;  // A and B have no elements
      surge::Stream stream(surge::Device::cpu());
      surge::rl::gemm<double>(stream, Transpose::No, Transpose::No, m, n, 0, 2.0, &unused, 1, &unused, n, beta,
                              c.data(), ldc, with_bias ? bias.data() : nullptr);
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
          const double kept = beta == 0.0 ? 0.0 : beta * c_before[i * ldc + j];
          CHECK(c[i * ldc + j] == kept + (with_bias ? bias[j] : 0.0));
        }
        for (std::int64_t j = n; j < ldc; ++j) CHECK(std::isnan(c[i * ldc + j]) == std::isnan(c_before[i * ldc + j]));
      }
    }
}

TEST_CASE("prepare_gemm does nothing on the CPU", "[gemm]") {
  CHECK_NOTHROW(surge::rl::prepare_gemm(surge::Device::cpu()));
}

TEST_CASE("gemm names the CPU library it uses", "[gemm]") { CHECK_FALSE(surge::rl::cpu_gemm_library().empty()); }

// Network construction and initialisation: host code, run once.
#include <algorithm>
#include <cmath>
#include <utility>

#include "rl/mlp.hpp"
#include "sim/error.hpp"

namespace surge::rl {
namespace {

// A standard normal draw by Box-Muller from two uniforms in (0, 1].
double standard_normal(Rng& rng) {
  const double u1 = rng.uniform(), u2 = rng.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
}

}  // namespace

Activation parse_activation(const std::string& name) {
  if (name == "tanh") return Activation::Tanh;
  if (name == "relu") return Activation::Relu;
  throw InputError("unknown activation '" + name + "': use tanh or relu");
}

const char* activation_name(Activation activation) { return activation == Activation::Tanh ? "tanh" : "relu"; }

Mlp::Mlp(ParamTable& table, const std::string& prefix, int input_dim, const std::vector<int>& hidden, int output_dim,
         Activation activation, double head_gain)
    : activation_(activation), head_gain_(head_gain) {
  SURGE_CHECK(input_dim > 0 && output_dim > 0, "an MLP needs positive input and output sizes");
  dims_.push_back(input_dim);
  for (int width : hidden) {
    if (width <= 0) throw InputError("hidden layer sizes must be positive, got " + std::to_string(width));
    dims_.push_back(width);
  }
  dims_.push_back(output_dim);
  for (int layer = 0; layer < num_layers(); ++layer) {
    const std::string name = prefix + "." + std::to_string(layer);
    weight_offsets_.push_back(table[table.add(name + ".weight", layer_out(layer), layer_in(layer))].offset);
    bias_offsets_.push_back(table[table.add(name + ".bias", layer_out(layer), 1)].offset);
  }
}

std::int64_t Mlp::activation_size(std::int64_t batch) const {
  std::int64_t sum = 0;
  for (int layer = 0; layer + 1 < num_layers(); ++layer) sum += batch * layer_out(layer);
  return sum;
}

std::int64_t Mlp::activation_offset(int layer, std::int64_t batch) const {
  std::int64_t offset = 0;
  for (int l = 0; l < layer; ++l) offset += batch * layer_out(l);
  return offset;
}

std::int64_t Mlp::scratch_size(std::int64_t batch) const {
  int widest = 1;
  for (int layer = 0; layer + 1 < num_layers(); ++layer) widest = std::max(widest, layer_out(layer));
  return 2 * batch * widest;
}

void Mlp::initialize(std::vector<double>& params, Rng& rng) const {
  for (int layer = 0; layer < num_layers(); ++layer) {
    const bool head = layer + 1 == num_layers();
    SURGE_CHECK(static_cast<std::int64_t>(params.size()) >= weight_offset(layer) + layer_out(layer) * layer_in(layer),
                "parameter vector smaller than the table");
    orthogonal_matrix(layer_out(layer), layer_in(layer), head ? head_gain_ : std::sqrt(2.0), rng,
                      params.data() + weight_offset(layer));
    for (int j = 0; j < layer_out(layer); ++j) params[static_cast<std::size_t>(bias_offset(layer) + j)] = 0.0;
  }
}

void orthogonal_matrix(std::int64_t rows, std::int64_t cols, double gain, Rng& rng, double* out) {
  // Work on the tall orientation: tall[r][c] with r >= c, whose columns Gram-Schmidt makes orthonormal
  // (twice, for accuracy). Modified Gram-Schmidt yields R with a positive diagonal, which is the
  // sign convention torch applies after its QR.
  const bool transpose = rows < cols;
  const std::int64_t r = transpose ? cols : rows, c = transpose ? rows : cols;
  std::vector<double> tall(static_cast<std::size_t>(r * c));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const double z = standard_normal(rng);
      if (transpose)
        tall[static_cast<std::size_t>(j * c + i)] = z;
      else
        tall[static_cast<std::size_t>(i * c + j)] = z;
    }
  auto at = [&](std::int64_t i, std::int64_t j) -> double& { return tall[static_cast<std::size_t>(i * c + j)]; };
  for (std::int64_t j = 0; j < c; ++j) {
    for (int pass = 0; pass < 2; ++pass)
      for (std::int64_t q = 0; q < j; ++q) {
        double dot = 0.0;
        for (std::int64_t i = 0; i < r; ++i) dot += at(i, q) * at(i, j);
        for (std::int64_t i = 0; i < r; ++i) at(i, j) -= dot * at(i, q);
      }
    double norm = 0.0;
    for (std::int64_t i = 0; i < r; ++i) norm += at(i, j) * at(i, j);
    norm = std::sqrt(norm);
    SURGE_CHECK(norm > 0.0, "degenerate random matrix in orthogonal initialisation");
    for (std::int64_t i = 0; i < r; ++i) at(i, j) /= norm;
  }
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) out[i * cols + j] = gain * (transpose ? at(j, i) : at(i, j));
}

}  // namespace surge::rl

// oneDNN convolutions (rl/conv_onednn.hpp): primitives and weight reorders made once per layer.
#include "rl/conv_onednn.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <vector>

#include "sim/error.hpp"

namespace surge::rl {

struct OnednnConv::State {
  using Tag = dnnl::memory::format_tag;
  using Type = dnnl::memory::data_type;

  ConvShape shape;
  std::int64_t rows;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  // Ours: NHWC images, ohwi ([out][kh][kw][in]) weights, a plain bias.
  dnnl::memory::desc image, weights, bias, output;
  dnnl::convolution_forward::primitive_desc forward_pd;
  dnnl::convolution_backward_data::primitive_desc data_pd;
  dnnl::convolution_backward_weights::primitive_desc filter_pd;
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data data;
  dnnl::convolution_backward_weights filter;
  // The weights (and their gradient) in the layouts the primitives chose.
  dnnl::memory forward_weights, data_weights, filter_d_weights;
  std::vector<float> zero_bias, unused_d_bias;  // stand in for a null bias pointer

  State(const ConvShape& s, std::int64_t n) : shape(s), rows(n) {
    const dnnl::memory::dims strides{s.stride, s.stride}, padding{s.padding, s.padding};
    image = {{n, s.in_channels, s.in_height, s.in_width}, Type::f32, Tag::nhwc};
    weights = {{s.out_channels, s.in_channels, s.kernel_height, s.kernel_width}, Type::f32, Tag::ohwi};
    bias = {{s.out_channels}, Type::f32, Tag::a};
    output = {{n, s.out_channels, s.out_height(), s.out_width()}, Type::f32, Tag::nhwc};
    const dnnl::memory::desc any_weights(weights.dims(), Type::f32, Tag::any);
    using Forward = dnnl::convolution_forward;
    using Data = dnnl::convolution_backward_data;
    using Filter = dnnl::convolution_backward_weights;
    const auto direct = dnnl::algorithm::convolution_direct;
    forward_pd = Forward::primitive_desc(Forward::desc(dnnl::prop_kind::forward_training, direct, image, any_weights,
                                                       bias, output, strides, padding, padding),
                                         engine);
    data_pd = Data::primitive_desc(Data::desc(direct, image, any_weights, output, strides, padding, padding), engine,
                                   forward_pd);
    filter_pd = Filter::primitive_desc(
        Filter::desc(direct, image, any_weights, bias, output, strides, padding, padding), engine, forward_pd);
    forward = dnnl::convolution_forward(forward_pd);
    data = dnnl::convolution_backward_data(data_pd);
    filter = dnnl::convolution_backward_weights(filter_pd);
    forward_weights = dnnl::memory(forward_pd.weights_desc(), engine);
    data_weights = dnnl::memory(data_pd.weights_desc(), engine);
    filter_d_weights = dnnl::memory(filter_pd.diff_weights_desc(), engine);
    zero_bias.assign(static_cast<std::size_t>(s.out_channels), 0.0f);
    unused_d_bias.assign(static_cast<std::size_t>(s.out_channels), 0.0f);
  }

  // A view of caller memory; oneDNN takes a non-const handle, and reads only what the pass reads.
  dnnl::memory view(const dnnl::memory::desc& desc, const float* data) const {
    return dnnl::memory(desc, engine, const_cast<float*>(data));
  }
  // Our weights reordered into `target`, the layout a primitive chose.
  void weights_into(const float* weight, dnnl::memory& target) {
    dnnl::memory source = view(weights, weight);
    dnnl::reorder(source, target).execute(stream, source, target);
  }
};

OnednnConv::OnednnConv(const ConvShape& shape, std::int64_t rows) {
  check_conv_shape(shape, "oneDNN convolution");
  SURGE_CHECK(rows >= 1, "a oneDNN convolution needs at least one row");
  state_ = std::make_unique<State>(shape, rows);
}
OnednnConv::~OnednnConv() = default;
OnednnConv::OnednnConv(OnednnConv&&) noexcept = default;
OnednnConv& OnednnConv::operator=(OnednnConv&&) noexcept = default;

const ConvShape& OnednnConv::shape() const { return state_->shape; }
std::int64_t OnednnConv::rows() const { return state_->rows; }
std::string OnednnConv::kernels() const {
  return std::string(state_->forward_pd.impl_info_str()) + ", " + state_->data_pd.impl_info_str() + ", " +
         state_->filter_pd.impl_info_str();
}

void OnednnConv::forward(const float* input, const float* weight, const float* bias, float* output) const {
  State& s = *state_;
  s.weights_into(weight, s.forward_weights);
  s.forward.execute(s.stream, {{DNNL_ARG_SRC, s.view(s.image, input)},
                               {DNNL_ARG_WEIGHTS, s.forward_weights},
                               {DNNL_ARG_BIAS, s.view(s.bias, bias ? bias : s.zero_bias.data())},
                               {DNNL_ARG_DST, s.view(s.output, output)}});
  s.stream.wait();
}

void OnednnConv::backward_data(const float* d_output, const float* weight, float* d_input) const {
  State& s = *state_;
  s.weights_into(weight, s.data_weights);
  s.data.execute(s.stream, {{DNNL_ARG_DIFF_DST, s.view(s.output, d_output)},
                            {DNNL_ARG_WEIGHTS, s.data_weights},
                            {DNNL_ARG_DIFF_SRC, s.view(s.image, d_input)}});
  s.stream.wait();
}

void OnednnConv::backward_filter(const float* input, const float* d_output, float* d_weight, float* d_bias) const {
  State& s = *state_;
  s.filter.execute(s.stream, {{DNNL_ARG_SRC, s.view(s.image, input)},
                              {DNNL_ARG_DIFF_DST, s.view(s.output, d_output)},
                              {DNNL_ARG_DIFF_WEIGHTS, s.filter_d_weights},
                              {DNNL_ARG_DIFF_BIAS, s.view(s.bias, d_bias ? d_bias : s.unused_d_bias.data())}});
  dnnl::memory ours = s.view(s.weights, d_weight);
  dnnl::reorder(s.filter_d_weights, ours).execute(s.stream, s.filter_d_weights, ours);
  s.stream.wait();
}

}  // namespace surge::rl

#include "tools/cli/plot_chart.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/bench/svg_chart.hpp"

namespace surge::cli {
namespace {

using throughput::xml_escape;

constexpr double kWidth = 820, kLeft = 80, kRight = 120, kTop = 70, kPlotHeight = 360;
constexpr double kPlotWidth = kWidth - kLeft - kRight, kBottom = kTop + kPlotHeight;
constexpr double kLegendTop = kBottom + 68, kLegendRow = 20;

std::string coordinate(double value) { return format_number("%.2f", value); }

struct Axis {
  double low, high;
  double step;  // between ticks
};

// The y range holds every value drawn and the threshold, with 5% of the span free above and below:
// a plateau at the maximum return does not lie on the frame.
Axis y_axis(const LineFigure& figure) {
  double low = INFINITY, high = -INFINITY;
  auto take = [&](const std::vector<double>& values) {
    for (double v : values)
      if (std::isfinite(v)) {
        low = std::min(low, v);
        high = std::max(high, v);
      }
  };
  for (const LineCurve& curve : figure.curves) {
    take(curve.y);
    take(curve.low);
    take(curve.high);
  }
  if (figure.has_threshold) take({figure.threshold});
  SURGE_CHECK(low <= high, "a learning-curve figure needs at least one value");
  double span = high - low;
  if (span <= 0) span = std::max(1.0, 0.1 * std::abs(high));
  return {low - 0.05 * span, high + 0.05 * span, nice_step(1.1 * span, 6)};
}

// The x range runs from zero (or below, if some x is negative) to the first tick at or past the largest x.
Axis x_axis(const LineFigure& figure) {
  double low = 0, high = -INFINITY;
  for (const LineCurve& curve : figure.curves)
    for (double x : curve.x) {
      low = std::min(low, x);
      high = std::max(high, x);
    }
  if (!(high > low)) high = low + 1;
  const double step = nice_step(high - low, 6);
  return {low, std::ceil(high / step - 1e-9) * step, step};
}

std::vector<double> ticks(const Axis& axis) {
  std::vector<double> values;
  const double first = std::ceil(axis.low / axis.step - 1e-9);
  for (double k = first; k * axis.step <= axis.high + 1e-9 * axis.step; ++k)
    values.push_back(k == 0 ? 0.0 : k * axis.step);  // never "-0"
  return values;
}

// "M x,y L x,y ..." through the finite values; a missing value starts a new piece.
std::string line_path(const std::vector<double>& xs, const std::vector<double>& ys, auto px, auto py) {
  std::string d;
  bool drawing = false;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    if (!std::isfinite(ys[k])) {
      drawing = false;
      continue;
    }
    d += (drawing ? " L " : d.empty() ? "M " : " M ") + coordinate(px(xs[k])) + "," + coordinate(py(ys[k]));
    drawing = true;
  }
  return d;
}

// One closed piece per stretch without a missing value: along the top edge, back along the bottom.
std::string band_path(const LineCurve& curve, auto px, auto py) {
  std::string d;
  std::size_t k = 0;
  while (k < curve.x.size()) {
    if (!std::isfinite(curve.low[k]) || !std::isfinite(curve.high[k])) {
      ++k;
      continue;
    }
    std::size_t end = k;
    while (end < curve.x.size() && std::isfinite(curve.low[end]) && std::isfinite(curve.high[end])) ++end;
    for (std::size_t j = k; j < end; ++j)
      d += (j == k ? (d.empty() ? "M " : " M ") : " L ") + coordinate(px(curve.x[j])) + "," +
           coordinate(py(curve.high[j]));
    for (std::size_t j = end; j-- > k;) d += " L " + coordinate(px(curve.x[j])) + "," + coordinate(py(curve.low[j]));
    d += " Z";
    k = end;
  }
  return d;
}

}  // namespace

const std::vector<std::string>& okabe_ito() {
  static const std::vector<std::string> colours = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                   "#E69F00", "#56B4E9", "#000000"};
  return colours;
}

double nice_step(double span, int count) {
  SURGE_CHECK(span > 0 && count > 0, "axis ticks need a positive span and count");
  const double raw = span / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * magnitude >= raw * (1 - 1e-9)) return m * magnitude;
  return 10.0 * magnitude;
}

std::string si_label(double value) {
  const double size = std::abs(value);
  if (size >= 1e9) return format_number("%.4g", value / 1e9) + "G";
  if (size >= 1e6) return format_number("%.4g", value / 1e6) + "M";
  if (size >= 1e3) return format_number("%.4g", value / 1e3) + "k";
  return format_number("%.4g", value);
}

std::string line_figure_svg(const LineFigure& figure) {
  const Axis xa = x_axis(figure), ya = y_axis(figure);
  auto px = [&](double x) { return kLeft + (x - xa.low) / (xa.high - xa.low) * kPlotWidth; };
  auto py = [&](double y) { return kBottom - (y - ya.low) / (ya.high - ya.low) * kPlotHeight; };
  const double height = kLegendTop + kLegendRow * static_cast<double>(figure.curves.size() - 1) + 16;

  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << kWidth << " " << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<title>" << xml_escape(figure.title) << "</title>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << kLeft + kPlotWidth / 2 << "\" y=\"26\" text-anchor=\"middle\" font-size=\"16\">"
      << xml_escape(figure.title) << "</text>\n";
  if (!figure.subtitle.empty())
    out << "<text x=\"" << kLeft + kPlotWidth / 2
        << "\" y=\"46\" text-anchor=\"middle\" font-size=\"11\" fill=\"#555\">" << xml_escape(figure.subtitle)
        << "</text>\n";

  for (double x : ticks(xa))
    out << "<line x1=\"" << coordinate(px(x)) << "\" y1=\"" << kTop << "\" x2=\"" << coordinate(px(x)) << "\" y2=\""
        << kBottom << "\" stroke=\"#e4e4e4\"/>\n<text class=\"x-tick\" x=\"" << coordinate(px(x)) << "\" y=\""
        << kBottom + 18 << "\" text-anchor=\"middle\" font-size=\"11\">" << si_label(x) << "</text>\n";
  for (double y : ticks(ya))
    out << "<line x1=\"" << kLeft << "\" y1=\"" << coordinate(py(y)) << "\" x2=\"" << kLeft + kPlotWidth << "\" y2=\""
        << coordinate(py(y)) << "\" stroke=\"#e4e4e4\"/>\n<text class=\"y-tick\" x=\"" << kLeft - 8 << "\" y=\""
        << coordinate(py(y) + 4) << "\" text-anchor=\"end\" font-size=\"11\">" << si_label(y) << "</text>\n";
  out << "<text x=\"" << kLeft + kPlotWidth / 2 << "\" y=\"" << kBottom + 42 << "\" text-anchor=\"middle\">"
      << xml_escape(figure.x_label) << "</text>\n"
      << "<text transform=\"translate(24 " << kTop + kPlotHeight / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
      << xml_escape(figure.y_label) << "</text>\n";

  // Bands first, so that no band covers another group's line.
  for (const LineCurve& curve : figure.curves)
    if (!curve.low.empty())
      out << "<path class=\"band\" d=\"" << band_path(curve, px, py) << "\" fill=\"" << curve.colour
          << "\" fill-opacity=\"0.2\" stroke=\"none\"/>\n";
  if (figure.has_threshold) {
    const std::string y = coordinate(py(figure.threshold));
    out << "<line class=\"threshold\" x1=\"" << kLeft << "\" y1=\"" << y << "\" x2=\"" << kLeft + kPlotWidth
        << "\" y2=\"" << y << "\" stroke=\"#333\" stroke-width=\"1.2\" stroke-dasharray=\"7 5\"/>\n"
        << "<text class=\"threshold-label\" x=\"" << kLeft + kPlotWidth + 6 << "\" y=\""
        << coordinate(py(figure.threshold) + 4) << "\" font-size=\"11\" fill=\"#333\">threshold "
        << format_number("%g", figure.threshold) << "</text>\n";
  }
  for (const LineCurve& curve : figure.curves)
    out << "<path class=\"" << (curve.low.empty() ? "run" : "mean") << "\" d=\"" << line_path(curve.x, curve.y, px, py)
        << "\" fill=\"none\" stroke=\"" << curve.colour << "\" stroke-width=\"2\" stroke-linejoin=\"round\"/>\n";
  out << "<rect class=\"data-area\" x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kPlotWidth << "\" height=\""
      << kPlotHeight << "\" fill=\"none\" stroke=\"#333\"/>\n";

  // The legend lies below the x axis label, outside the data area.
  out << "<g class=\"legend\">\n";
  for (std::size_t k = 0; k < figure.curves.size(); ++k) {
    const LineCurve& curve = figure.curves[k];
    const double baseline = kLegendTop + kLegendRow * static_cast<double>(k);
    const bool band = !curve.low.empty();
    out << "<rect class=\"legend-swatch\" x=\"" << kLeft << "\" y=\"" << baseline - 11 << "\" width=\"28\" height=\""
        << 14 << "\" fill=\"" << curve.colour << "\" fill-opacity=\"" << (band ? "0.2" : "0") << "\"/>\n"
        << "<line x1=\"" << kLeft << "\" y1=\"" << baseline - 4 << "\" x2=\"" << kLeft + 28 << "\" y2=\""
        << baseline - 4 << "\" stroke=\"" << curve.colour << "\" stroke-width=\"2\"/>\n"
        << "<text class=\"legend-label\" x=\"" << kLeft + 36 << "\" y=\"" << baseline << "\">"
        << xml_escape(curve.label) << "</text>\n";
  }
  out << "</g>\n</svg>\n";
  return out.str();
}

}  // namespace surge::cli

#include "tools/bench/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/error.hpp"
#include "sim/format.hpp"

namespace surge::throughput {
namespace {

constexpr double kWidth = 760, kHeight = 500;
constexpr double kLeft = 90, kRight = 30, kTop = 70, kBottom = 60;
constexpr double kPlotWidth = kWidth - kLeft - kRight, kPlotHeight = kHeight - kTop - kBottom;

// Coordinates to a hundredth of a pixel.
std::string coordinate(double value) { return format_number("%.2f", value); }

// The log-scale range that holds [low, high], widened to whole ticks of the axis's style.
struct Range {
  double low, high;  // exponents in the axis's base
  double base;
};

Range axis_range(TickStyle style, double min_value, double max_value) {
  const double base = style == TickStyle::PowersOfTwo ? 2.0 : 10.0;
  const double low = std::floor(std::log(min_value) / std::log(base) + 1e-9);
  double high = std::ceil(std::log(max_value) / std::log(base) - 1e-9);
  if (high <= low) high = low + 1;
  return {low, high, base};
}

double position(const Range& range, double value) {
  return (std::log(value) / std::log(range.base) - range.low) / (range.high - range.low);
}

struct Tick {
  double value;
  std::string label;  // SVG text content (may hold a tspan); empty for an unlabelled grid line
  bool major;
};

std::string power_label(int base, int exponent) {
  return std::to_string(base) + "<tspan dy=\"-7\" font-size=\"10\">" + std::to_string(exponent) + "</tspan>";
}

std::vector<Tick> axis_ticks(TickStyle style, const Range& range) {
  std::vector<Tick> ticks;
  const int low = static_cast<int>(range.low), high = static_cast<int>(range.high);
  if (style == TickStyle::PowersOfTwo) {
    const int stride = std::max(1, (high - low + 11) / 12);  // at most about a dozen labels
    for (int k = low; k <= high; ++k)
      ticks.push_back({std::ldexp(1.0, k), (k - low) % stride == 0 ? power_label(2, k) : "", (k - low) % stride == 0});
    return ticks;
  }
  const bool label_minor = high - low < 2;
  for (int k = low; k <= high; ++k) {
    const double decade = std::pow(10.0, k);
    ticks.push_back({decade, power_label(10, k), true});
    if (k == high) break;
    for (int m = 2; m <= 9; ++m) {
      const bool labelled = label_minor && (m == 2 || m == 5);
      ticks.push_back({m * decade, labelled ? std::to_string(m) + "\u00d7" + power_label(10, k) : "", false});
    }
  }
  return ticks;
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters other than tab and newline are not allowed in XML 1.0 at all.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n')
          out += ' ';
        else
          out += c;
    }
  }
  return out;
}

LogLogChart& LogLogChart::add(ChartSeries series) {
  series_.push_back(std::move(series));
  return *this;
}

LogLogChart& LogLogChart::add(ChartMarker marker) {
  markers_.push_back(std::move(marker));
  return *this;
}

LogLogChart& LogLogChart::subtitle(std::string text) {
  subtitle_ = std::move(text);
  return *this;
}

std::string LogLogChart::svg() const {
  double min_x = INFINITY, max_x = 0, min_y = INFINITY, max_y = 0;
  auto take = [&](const ChartPoint& p) {
    SURGE_CHECK(std::isfinite(p.x) && std::isfinite(p.y) && p.x > 0 && p.y > 0,
                "log-log chart '" + title_ + "' got a point that is not positive and finite");
    min_x = std::min(min_x, p.x);
    max_x = std::max(max_x, p.x);
    min_y = std::min(min_y, p.y);
    max_y = std::max(max_y, p.y);
  };
  for (const ChartSeries& s : series_)
    for (const ChartPoint& p : s.points) take(p);
  for (const ChartMarker& m : markers_) take(m.at);
  SURGE_CHECK(max_x > 0, "log-log chart '" + title_ + "' has nothing to draw");
  const Range xr = axis_range(x_.ticks, min_x, max_x), yr = axis_range(y_.ticks, min_y, max_y);
  auto px = [&](double x) { return kLeft + position(xr, x) * kPlotWidth; };
  auto py = [&](double y) { return kTop + (1.0 - position(yr, y)) * kPlotHeight; };

  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" viewBox=\"0 0 " << kWidth << " " << kHeight << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<title>" << xml_escape(title_) << "</title>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << kWidth / 2 << "\" y=\"26\" text-anchor=\"middle\" font-size=\"16\">" << xml_escape(title_)
      << "</text>\n";
  if (!subtitle_.empty()) {
    // Small print on up to two lines: a long command line is broken at the last space that fits.
    constexpr std::size_t kLineChars = 115;
    std::vector<std::string> lines{subtitle_};
    if (subtitle_.size() > kLineChars) {
      const std::size_t cut = subtitle_.rfind(' ', kLineChars);
      const std::size_t at = cut == std::string::npos || cut == 0 ? kLineChars : cut;
      lines = {subtitle_.substr(0, at), subtitle_.substr(at + (cut == at ? 1 : 0))};
    }
    for (std::size_t k = 0; k < lines.size(); ++k)
      out << "<text x=\"" << kWidth / 2 << "\" y=\"" << 44 + 13 * k
          << "\" text-anchor=\"middle\" font-size=\"10\" fill=\"#555\">" << xml_escape(lines[k]) << "</text>\n";
  }

  // Grid and tick labels.
  out << "<g class=\"x-ticks\">\n";
  for (const Tick& t : axis_ticks(x_.ticks, xr)) {
    const std::string x = coordinate(px(t.value));
    out << "<line x1=\"" << x << "\" y1=\"" << kTop << "\" x2=\"" << x << "\" y2=\"" << kTop + kPlotHeight
        << "\" stroke=\"" << (t.major ? "#ddd" : "#f0f0f0") << "\"/>\n";
    if (!t.label.empty())
      out << "<text x=\"" << x << "\" y=\"" << kTop + kPlotHeight + 20 << "\" text-anchor=\"middle\">" << t.label
          << "</text>\n";
  }
  out << "</g>\n<g class=\"y-ticks\">\n";
  for (const Tick& t : axis_ticks(y_.ticks, yr)) {
    const std::string y = coordinate(py(t.value));
    out << "<line x1=\"" << kLeft << "\" y1=\"" << y << "\" x2=\"" << kLeft + kPlotWidth << "\" y2=\"" << y
        << "\" stroke=\"" << (t.major ? "#ddd" : "#f0f0f0") << "\"/>\n";
    if (!t.label.empty())
      out << "<text x=\"" << kLeft - 8 << "\" y=\"" << coordinate(py(t.value) + 4) << "\" text-anchor=\"end\">"
          << t.label << "</text>\n";
  }
  out << "</g>\n";
  out << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kPlotWidth << "\" height=\"" << kPlotHeight
      << "\" fill=\"none\" stroke=\"#333\"/>\n";
  out << "<text x=\"" << kLeft + kPlotWidth / 2 << "\" y=\"" << kHeight - 14 << "\" text-anchor=\"middle\">"
      << xml_escape(x_.label) << "</text>\n";
  out << "<text transform=\"translate(22 " << kTop + kPlotHeight / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
      << xml_escape(y_.label) << "</text>\n";

  // Series, then markers on top, then the legend.
  for (const ChartSeries& s : series_) {
    out << "<g class=\"series\"><title>" << xml_escape(s.name) << "</title>\n<polyline fill=\"none\" stroke=\""
        << xml_escape(s.colour) << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"6 4\"" : "")
        << " points=\"";
    for (std::size_t k = 0; k < s.points.size(); ++k)
      out << (k ? " " : "") << coordinate(px(s.points[k].x)) << "," << coordinate(py(s.points[k].y));
    out << "\"/>\n";
    if (s.markers)
      for (const ChartPoint& p : s.points)
        out << "<circle cx=\"" << coordinate(px(p.x)) << "\" cy=\"" << coordinate(py(p.y)) << "\" r=\"3\" fill=\""
            << xml_escape(s.colour) << "\"/>\n";
    out << "</g>\n";
  }
  // Labels are placed one by one, each at the first of a few heights beside its marker where it
  // overlaps no label placed before it (widths estimated at 6.5 px per character).
  struct Box {
    double left, right, top, bottom;
  };
  std::vector<Box> placed;
  for (const ChartMarker& m : markers_) {
    const double x = px(m.at.x), y = py(m.at.y);
    const bool right_side = x > kLeft + 0.65 * kPlotWidth;  // keep the label inside the plot
    const double width = 6.5 * static_cast<double>(m.label.size());
    const double text_x = right_side ? x - 10 : x + 10;
    const double left = right_side ? text_x - width : text_x, right = right_side ? text_x : text_x + width;
    const double preferred = m.label_below ? y + 22 : y - 10;
    double baseline = preferred;
    for (double shift : {0.0, 14.0, -14.0, 28.0, -28.0, 42.0, -42.0}) {
      const double candidate = preferred + shift;
      bool clear = true;
      for (const Box& b : placed)
        if (left < b.right && b.left < right && candidate - 11 < b.bottom && b.top < candidate + 3) clear = false;
      if (clear) {
        baseline = candidate;
        break;
      }
    }
    placed.push_back({left, right, baseline - 11, baseline + 3});
    out << "<g class=\"marker\"><circle cx=\"" << coordinate(x) << "\" cy=\"" << coordinate(y)
        << "\" r=\"7\" fill=\"none\" stroke=\"" << xml_escape(m.colour) << "\" stroke-width=\"2\"/>\n<text x=\""
        << coordinate(text_x) << "\" y=\"" << coordinate(baseline) << "\" text-anchor=\""
        << (right_side ? "end" : "start") << "\" fill=\"" << xml_escape(m.colour) << "\">" << xml_escape(m.label)
        << "</text></g>\n";
  }
  out << "<g class=\"legend\">\n";
  double legend_y = kTop + 18;
  for (const ChartSeries& s : series_) {
    out << "<line x1=\"" << kLeft + 12 << "\" y1=\"" << legend_y - 4 << "\" x2=\"" << kLeft + 36 << "\" y2=\""
        << legend_y - 4 << "\" stroke=\"" << xml_escape(s.colour) << "\" stroke-width=\"2\""
        << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << "/>\n<text x=\"" << kLeft + 42 << "\" y=\"" << legend_y
        << "\">" << xml_escape(s.name) << "</text>\n";
    legend_y += 18;
  }
  out << "</g>\n</svg>\n";
  return out.str();
}

}  // namespace surge::throughput

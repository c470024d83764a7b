#include "tools/bench/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string_view>

#include "sim/error.hpp"
#include "sim/format.hpp"

namespace surge::throughput {
namespace {

constexpr double kWidth = 760, kLeft = 90, kRight = 30, kTop = 70, kPlotHeight = 370;
constexpr double kPlotWidth = kWidth - kLeft - kRight, kPlotBottom = kTop + kPlotHeight;
constexpr double kLegendTop = kPlotBottom + 72;  // the first legend line's baseline, under the x axis label
constexpr double kLabelFont = 12;                // marker labels
constexpr double kLegendLeft = 24;

// Coordinates to a hundredth of a pixel.
std::string coordinate(double value) { return format_number("%.2f", value); }

// The log-scale range that holds [low, high], widened to whole ticks of the axis's style.
struct Range {
  double low, high;  // exponents in the axis's base
  double base;
};

// With `margin`, the range also leaves 6% of its span free beyond the extreme values, so that a
// value at a whole power (a roof just under 10^10) does not lie on the frame.
Range axis_range(TickStyle style, double min_value, double max_value, bool margin) {
  const double base = style == TickStyle::PowersOfTwo ? 2.0 : 10.0;
  const double log_min = std::log(min_value) / std::log(base), log_max = std::log(max_value) / std::log(base);
  double low = std::floor(log_min + 1e-9), high = std::ceil(log_max - 1e-9);
  if (high <= low) high = low + 1;
  if (margin) {
    const double room = 0.06 * (high - low);
    low = std::min(low, log_min - room);
    high = std::max(high, log_max + room);
  }
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
  // Whole powers inside the range; a range widened by a margin may start or end between two.
  const int low = static_cast<int>(std::ceil(range.low - 1e-9)), high = static_cast<int>(std::floor(range.high + 1e-9));
  if (style == TickStyle::PowersOfTwo) {
    const int stride = std::max(1, (high - low + 11) / 12);  // at most about a dozen labels
    for (int k = low; k <= high; ++k)
      ticks.push_back({std::ldexp(1.0, k), (k - low) % stride == 0 ? power_label(2, k) : "", (k - low) % stride == 0});
    return ticks;
  }
  const bool label_minor = high - low < 2;
  for (int k = low - 1; k <= high; ++k) {
    const double decade = std::pow(10.0, k);
    if (k >= low) ticks.push_back({decade, power_label(10, k), true});
    for (int m = 2; m <= 9; ++m) {
      const double at = std::log10(m * decade);
      if (at < range.low || at > range.high) continue;
      const bool labelled = label_minor && (m == 2 || m == 5);
      ticks.push_back({m * decade, labelled ? std::to_string(m) + "\u00d7" + power_label(10, k) : "", false});
    }
  }
  return ticks;
}

// `text` broken at spaces into lines of at most `width` characters (a longer word stands alone).
std::vector<std::string> wrap(const std::string& text, std::size_t width) {
  std::vector<std::string> lines;
  std::string line, word;
  std::istringstream words(text);
  while (words >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

struct Box {
  double left, top, right, bottom;
  bool overlaps(const Box& b, double gap) const {
    return left < b.right + gap && b.left < right + gap && top < b.bottom + gap && b.top < bottom + gap;
  }
  bool inside(const Box& b, double gap) const {
    return left >= b.left + gap && right <= b.right - gap && top >= b.top + gap && bottom <= b.bottom - gap;
  }
};

// Whether the segment from (x0, y0) to (x1, y1) passes through the box (Liang-Barsky clipping).
bool segment_hits(const Box& box, double x0, double y0, double x1, double y1) {
  double t0 = 0, t1 = 1;
  const double dx = x1 - x0, dy = y1 - y0;
  const double p[] = {-dx, dx, -dy, dy};
  const double q[] = {x0 - box.left, box.right - x0, y0 - box.top, box.bottom - y0};
  for (int k = 0; k < 4; ++k) {
    if (p[k] == 0) {
      if (q[k] < 0) return false;
      continue;
    }
    const double t = q[k] / p[k];
    if (p[k] < 0)
      t0 = std::max(t0, t);
    else
      t1 = std::min(t1, t);
    if (t0 > t1) return false;
  }
  return true;
}

// A label's place: where its text starts, ends or is centred, and its baseline.
struct LabelPlace {
  double x, baseline;
  const char* anchor;  // "start", "end", "middle"
  Box box(double width) const {
    const double left = anchor[0] == 's' ? x : anchor[0] == 'e' ? x - width : x - width / 2;
    return {left, baseline - 0.8 * kLabelFont, left + width, baseline + 0.25 * kLabelFont};
  }
};

// Places beside the marker at (x, y) to try, nearest first: the label's usual place (above, or
// below, on the side towards the middle) moved up or down by whole lines, then rings around it.
std::vector<LabelPlace> candidate_places(const ChartMarker& marker, double x, double y) {
  std::vector<LabelPlace> places;
  const bool right_side = x > kLeft + 0.65 * kPlotWidth;
  const double preferred = marker.label_below ? y + 22 : y - 10;
  for (double shift : {0.0, 14.0, -14.0, 28.0, -28.0, 42.0, -42.0})
    places.push_back({right_side ? x - 10 : x + 10, preferred + shift, right_side ? "end" : "start"});
  for (double radius = 14; radius <= 240; radius *= 1.3)
    for (int k = 0; k < 16; ++k) {
      const double angle = k * 3.14159265358979 / 8, c = std::cos(angle), s = std::sin(angle);
      const double at_x = x + radius * c, at_y = y - radius * s;
      const char* anchor = c > 0.3 ? "start" : c < -0.3 ? "end" : "middle";
      const double baseline = s > 0.3 ? at_y : s < -0.3 ? at_y + 0.8 * kLabelFont : at_y + 0.35 * kLabelFont;
      places.push_back({at_x, baseline, anchor});
    }
  return places;
}

// Each marker's circle and label, labels placed in turn: a place must keep the label inside the
// frame and clear of every label placed before it; among those, the first that also clears every
// marker and line is taken, else the one that touches the fewest. A label set away from its marker
// is joined to it by a thin leader line.
void place_marker_labels(std::ostringstream& out, const std::vector<ChartMarker>& markers,
                         const std::vector<ChartSeries>& series, auto px, auto py) {
  const Box frame{kLeft, kTop, kLeft + kPlotWidth, kPlotBottom};
  std::vector<Box> placed, circles;
  for (const ChartMarker& m : markers)
    circles.push_back({px(m.at.x) - 8, py(m.at.y) - 8, px(m.at.x) + 8, py(m.at.y) + 8});
  auto obstacles = [&](const Box& label) {
    const Box box{label.left - 3, label.top - 3, label.right + 3, label.bottom + 3};  // keep lines a little away
    int count = 0;
    for (const Box& c : circles) count += box.overlaps(c, 0) ? 1 : 0;
    for (const ChartSeries& s : series)
      for (std::size_t k = 1; k < s.points.size(); ++k)
        count += segment_hits(box, px(s.points[k - 1].x), py(s.points[k - 1].y), px(s.points[k].x), py(s.points[k].y))
                     ? 1
                     : 0;
    return count;
  };
  for (const ChartMarker& m : markers) {
    const double x = px(m.at.x), y = py(m.at.y), width = text_width(m.label, kLabelFont);
    std::vector<LabelPlace> places = candidate_places(m, x, y);
    const std::size_t nearby = places.size();
    // Last resort: anywhere in the frame, on an 8 px grid, nearest first.
    for (double gx = kLeft; gx < kLeft + kPlotWidth; gx += 8)
      for (double gy = kTop + 12; gy < kPlotBottom; gy += 8) places.push_back({gx, gy, "start"});
    std::size_t best = places.size();
    int best_count = std::numeric_limits<int>::max();
    double best_distance = INFINITY;
    for (std::size_t k = 0; k < places.size(); ++k) {
      const Box box = places[k].box(width);
      if (!box.inside(frame, 3)) continue;
      if (std::any_of(placed.begin(), placed.end(), [&](const Box& b) { return box.overlaps(b, 2); })) continue;
      const int count = obstacles(box);
      const double distance = std::hypot((box.left + box.right) / 2 - x, (box.top + box.bottom) / 2 - y);
      const bool nearer_on_grid = k >= nearby && best >= nearby && count == best_count && distance < best_distance;
      if (count < best_count || nearer_on_grid) {
        best = k;
        best_count = count;
        best_distance = distance;
      }
      if (count == 0 && k < nearby) break;
    }
    out << "<g class=\"marker\"><circle cx=\"" << coordinate(x) << "\" cy=\"" << coordinate(y)
        << "\" r=\"7\" fill=\"none\" stroke=\"" << xml_escape(m.colour) << "\" stroke-width=\"2\"/>\n";
    const LabelPlace place = best < places.size() ? places[best] : places.front();  // no room at all: overlap
    const Box box = place.box(width);
    placed.push_back(box);
    // The leader runs from the circle's edge to the nearest point of the label's box.
    const double near_x = std::clamp(x, box.left, box.right), near_y = std::clamp(y, box.top, box.bottom);
    const double gap = std::hypot(near_x - x, near_y - y);
    if (gap > 18)
      out << "<line class=\"leader\" x1=\"" << coordinate(x + 7 * (near_x - x) / gap) << "\" y1=\""
          << coordinate(y + 7 * (near_y - y) / gap) << "\" x2=\"" << coordinate(near_x) << "\" y2=\""
          << coordinate(near_y) << "\" stroke=\"" << xml_escape(m.colour) << "\" stroke-opacity=\"0.6\"/>\n";
    out << "<text class=\"marker-label\" x=\"" << coordinate(place.x) << "\" y=\"" << coordinate(place.baseline)
        << "\" text-anchor=\"" << place.anchor << "\" font-size=\"" << kLabelFont << "\" fill=\""
        << xml_escape(m.colour) << "\">" << xml_escape(m.label) << "</text></g>\n";
  }
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

LogLogChart& LogLogChart::note(std::string text) {
  notes_.push_back(std::move(text));
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
  const Range xr = axis_range(x_.ticks, min_x, max_x, false), yr = axis_range(y_.ticks, min_y, max_y, true);
  auto px = [&](double x) { return kLeft + position(xr, x) * kPlotWidth; };
  auto py = [&](double y) { return kTop + (1.0 - position(yr, y)) * kPlotHeight; };
  std::vector<std::string> wrapped_notes;
  for (const std::string& note : notes_)
    for (std::string& line : wrap(note, 115)) wrapped_notes.push_back(std::move(line));
  const double height =
      kLegendTop + 18.0 * static_cast<double>(series_.size()) + 14.0 * static_cast<double>(wrapped_notes.size());

  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << kWidth << " " << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
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
  out << "<rect class=\"data-area\" x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kPlotWidth << "\" height=\""
      << kPlotHeight << "\" fill=\"none\" stroke=\"#333\"/>\n";
  out << "<text x=\"" << kLeft + kPlotWidth / 2 << "\" y=\"" << kPlotBottom + 46 << "\" text-anchor=\"middle\">"
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
  place_marker_labels(out, markers_, series_, px, py);
  out << "<g class=\"legend\">\n";
  double legend_y = kLegendTop;
  const double legend_height = 18.0 * static_cast<double>(series_.size()) + 14.0 * wrapped_notes.size();
  out << "<rect class=\"legend-area\" x=\"" << kLegendLeft << "\" y=\"" << kLegendTop - 13 << "\" width=\""
      << kWidth - 2 * kLegendLeft << "\" height=\"" << legend_height << "\" fill=\"none\"/>\n";
  for (const ChartSeries& s : series_) {
    out << "<line x1=\"" << kLegendLeft << "\" y1=\"" << legend_y - 4 << "\" x2=\"" << kLegendLeft + 24 << "\" y2=\""
        << legend_y - 4 << "\" stroke=\"" << xml_escape(s.colour) << "\" stroke-width=\"2\""
        << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << "/>\n<text x=\"" << kLegendLeft + 30 << "\" y=\""
        << legend_y << "\">" << xml_escape(s.name) << "</text>\n";
    legend_y += 18;
  }
  for (const std::string& line : wrapped_notes) {
    out << "<text class=\"note\" x=\"" << kLegendLeft << "\" y=\"" << legend_y << "\" font-size=\"10\" fill=\"#444\">"
        << xml_escape(line) << "</text>\n";
    legend_y += 14;
  }
  out << "</g>\n</svg>\n";
  return out.str();
}

double text_width(const std::string& text, double font_size) {
  double ems = 0;
  std::size_t characters = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) == 0x80) continue;  // a UTF-8 continuation byte
    ++characters;
    if (std::string_view("il.,:;'|!").find(static_cast<char>(c)) != std::string_view::npos)
      ems += 0.3;
    else if (std::string_view("fjrt()[] -").find(static_cast<char>(c)) != std::string_view::npos)
      ems += 0.4;
    else if (std::string_view("mwMW%@").find(static_cast<char>(c)) != std::string_view::npos)
      ems += 1.0;
    else if (c >= 'A' && c <= 'Z')
      ems += 0.75;
    else
      ems += 0.65;
  }
  return font_size * std::max(ems, 0.62 * static_cast<double>(characters));
}

}  // namespace surge::throughput

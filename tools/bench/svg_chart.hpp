#pragma once
// A small SVG writer for log-log charts: the sweep's throughput against N and the roofline. Lines
// with point markers, labelled markers (the knee, a phase), labelled ticks on both axes, a light
// grid, and the legend with its notes below the data area. Marker labels are placed where they
// overlap no other label and stay inside the frame (boxes estimated from font size and text, see
// text_width). Self-contained: the document needs no fonts, scripts or styles from outside.
#include <string>
#include <vector>

namespace surge::throughput {

struct ChartPoint {
  double x = 0, y = 0;  // both positive: the axes are logarithmic
};

// How an axis places and names its ticks.
enum class TickStyle {
  PowersOfTwo,  // 2^k, labelled "2^k" with a superscript (numbers of environments)
  PowersOfTen,  // 10^k, labelled "10^k"; 2 and 5 times them labelled too when the axis spans under two decades
};

struct ChartAxis {
  std::string label;
  TickStyle ticks = TickStyle::PowersOfTen;
};

struct ChartSeries {
  std::string name;                // shown in the legend
  std::vector<ChartPoint> points;  // joined in order
  std::string colour = "#1f77b4";
  bool markers = true;  // a dot at every point
  bool dashed = false;
};

struct ChartMarker {
  ChartPoint at;
  std::string label;  // written beside the marker
  std::string colour = "#d62728";
  bool label_below = false;  // under the marker rather than above it, to keep two labels apart
};

class LogLogChart {
 public:
  LogLogChart(std::string title, ChartAxis x, ChartAxis y)
      : title_(std::move(title)), x_(std::move(x)), y_(std::move(y)) {}

  LogLogChart& add(ChartSeries series);
  LogLogChart& add(ChartMarker marker);
  // A line of small print under the title (the command, the machine).
  LogLogChart& subtitle(std::string text);
  // A line of small print in the legend, under the series (what a number means, a caveat); long
  // lines are broken at spaces.
  LogLogChart& note(std::string text);

  // The whole SVG document. Throws surge::Error when a point is not positive and finite, or when the
  // chart has nothing to draw.
  std::string svg() const;

 private:
  std::string title_, subtitle_;
  ChartAxis x_, y_;
  std::vector<ChartSeries> series_;
  std::vector<ChartMarker> markers_;
  std::vector<std::string> notes_;
};

// A generous estimate of the width in pixels of `text` in a sans-serif font of `font_size` px: at
// least 0.62 em per character, more for wide letters (DejaVu Sans, the common default, is wide).
double text_width(const std::string& text, double font_size);

// Text made safe for XML character data and attribute values.
std::string xml_escape(const std::string& text);

}  // namespace surge::throughput

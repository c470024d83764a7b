#pragma once
// A small SVG writer for log-log charts: the sweep's throughput against N and the roofline. Lines
// with point markers, labelled markers (the knee, a phase), labelled ticks on both axes and a light
// grid. Self-contained: the document needs no fonts, scripts or styles from outside.
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

  // The whole SVG document. Throws surge::Error when a point is not positive and finite, or when the
  // chart has nothing to draw.
  std::string svg() const;

 private:
  std::string title_, subtitle_;
  ChartAxis x_, y_;
  std::vector<ChartSeries> series_;
  std::vector<ChartMarker> markers_;
};

// Text made safe for XML character data and attribute values.
std::string xml_escape(const std::string& text);

}  // namespace surge::throughput

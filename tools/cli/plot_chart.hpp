#pragma once
// The learning-curve figure of `surge plot`: curves on linear axes, each a line or a mean with a
// shaded band, a dashed threshold, and the legend below the data area so it never covers a curve.
#include <string>
#include <vector>

namespace surge::cli {

struct LineCurve {
  std::string label, colour;
  std::vector<double> x, y;       // NaN in y is a gap
  std::vector<double> low, high;  // the band around y, same length as x; empty: a plain line
};

struct LineFigure {
  std::string title, subtitle, x_label, y_label;
  std::vector<LineCurve> curves;
  bool has_threshold = false;
  double threshold = 0;
};

// The SVG document. Elements carry classes a reader can find them by: data-area (the frame), x-tick
// and y-tick (labels), band, mean (a group's mean), run (a single run), threshold, legend-swatch.
std::string line_figure_svg(const LineFigure& figure);

// Okabe and Ito's colour-blind-safe palette, darkest first, without its yellow (too pale on white).
const std::vector<std::string>& okabe_ito();

// A step of 1, 2 or 5 times a power of ten giving about `count` ticks over `span`.
double nice_step(double span, int count);
// A tick value with an SI suffix: 0, 500, 100k, 1.5M, 2G.
std::string si_label(double value);

}  // namespace surge::cli

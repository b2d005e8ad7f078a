#pragma once
// Small, dependency-free SVG charts for the HTML report (scatter, lines, steps, horizontal
// reference lines; linear or log x axis), and the colour/marker conventions the GUI uses too, so a
// format has the same colour and a sparsity the same marker everywhere.
#include <optional>
#include <string>
#include <vector>

#include "reports/analysis/tradeoff.h"
#include "reports/format.h"

namespace cibench::reports {

// "#rrggbb" for a weight format (fixed for the known formats, stable hash for others).
std::string format_color(const std::string& format);
// The grey of points below the quality floor.
inline const char* kBelowFloorColor = "#b0b0b0";
// circle | square | triangle | diamond | star, by sparsity (0 or unknown: circle).
std::string sparsity_marker(std::optional<double> sparsity);

// XML/HTML text escaping.
std::string xml_escape(const std::string& s);

namespace svg {

struct Series {
  // hbar: one horizontal bar per point, from pts[i].x to ends[i] at row pts[i].y (a timeline).
  enum class Kind { scatter, line, step, hbar };
  std::string name;
  Kind kind = Kind::scatter;
  std::string color = "#1f77b4";
  std::string marker = "circle";
  bool dashed = false;
  bool in_legend = true;
  std::vector<Point> pts;
  std::vector<std::string> tips;    // per point, shown as <title> (hover in a browser)
  std::vector<std::string> labels;  // per point, drawn next to it ("" = none)
  std::vector<double> ends;         // hbar: per point, where its bar ends on x
};

struct RefLine {
  double value = 0;
  std::string label;
  std::string color = "#d62728";
};

struct Chart {
  std::string title;
  std::string x_title, y_title;
  bool log_x = false;
  bool integer_x = false;  // x is a count (threads): ticks on whole numbers only
  bool integer_y = false;  // y is a count or a row number
  bool invert_y = false;   // y grows downwards (row 1 at the top of a timeline)
  int width = 760;
  int height = 420;
  std::vector<Series> series;
  std::vector<RefLine> hlines;  // horizontal (y = value)
  std::vector<RefLine> vlines;  // vertical (x = value)
};

// A complete <svg> element (no XML declaration), self-contained.
std::string render(const Chart& c);

// Tick positions for [lo, hi]: "nice" linear steps (whole numbers only when `integer`), each a
// whole multiple of the step, at most 12; or 1-2-5 per decade on a log axis (more per decade when
// the range is narrow). One tick when lo == hi or when the range is below a double's resolution
// at that magnitude; none when an end is not finite.
std::vector<double> ticks(double lo, double hi, bool log, bool integer = false);
// The labels of those ticks, all distinct: on a linear axis the same number of decimals on
// each, as many as the step needs ("51.75", "51.80"), on a log axis or at a magnitude beyond
// 1e7 or below 1e-4 the fewest significant digits (from 3) that tell them apart.
std::vector<std::string> tick_labels(const std::vector<double>& ticks, bool log);

}  // namespace svg
}  // namespace cibench::reports

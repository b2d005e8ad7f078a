#include "reports/render/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace cibench::reports {

std::string format_color(const std::string& format) {
  static const std::map<std::string, std::string> known{
      {"f32", "#1f77b4"},      {"bf16", "#ff7f0e"},       {"f16", "#8c564b"},
      {"int8", "#2ca02c"},     {"w8a8", "#9467bd"},       {"w8a8_static", "#17becf"},
      {"int4", "#d62728"},     {"int4_sym_g32", "#d62728"}, {"int4_sym_g64", "#e377c2"},
      {"int4_sym_g128", "#bcbd22"}, {"int4_asym_g32", "#7f3b08"}, {"int4_asym_g64", "#b35806"},
      {"int4_asym_g128", "#542788"},
  };
  auto it = known.find(format);
  if (it != known.end()) return it->second;
  static const char* palette[] = {"#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
                                  "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363"};
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : format) h = (h ^ ch) * 1099511628211ull;
  return palette[h % (sizeof palette / sizeof *palette)];
}

std::string sparsity_marker(std::optional<double> sparsity) {
  const double s = sparsity.value_or(0);
  if (s <= 0) return "circle";
  if (s <= 0.3) return "square";
  if (s <= 0.55) return "triangle";
  if (s <= 0.8) return "diamond";
  return "star";
}

std::string xml_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

namespace svg {
namespace {

std::string num(double v) {
  std::ostringstream os;
  os.precision(2);
  os << std::fixed << v;
  std::string s = os.str();
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

std::string marker_svg(const std::string& shape, double x, double y, double r, const std::string& fill,
                       const std::string& extra) {
  std::ostringstream os;
  const std::string style = " fill=\"" + fill + "\" stroke=\"#333\" stroke-width=\"0.6\"" + extra;
  if (shape == "square") {
    os << "<rect x=\"" << num(x - r) << "\" y=\"" << num(y - r) << "\" width=\"" << num(2 * r)
       << "\" height=\"" << num(2 * r) << "\"" << style << "/>";
  } else if (shape == "triangle") {
    os << "<polygon points=\"" << num(x) << "," << num(y - r * 1.2) << " " << num(x - r * 1.1) << ","
       << num(y + r * 0.8) << " " << num(x + r * 1.1) << "," << num(y + r * 0.8) << "\"" << style << "/>";
  } else if (shape == "diamond") {
    os << "<polygon points=\"" << num(x) << "," << num(y - r * 1.3) << " " << num(x + r * 1.3) << ","
       << num(y) << " " << num(x) << "," << num(y + r * 1.3) << " " << num(x - r * 1.3) << "," << num(y)
       << "\"" << style << "/>";
  } else if (shape == "star") {
    os << "<polygon points=\"";
    for (int i = 0; i < 10; ++i) {
      const double a = -M_PI / 2 + i * M_PI / 5;
      const double rr = i % 2 ? r * 0.6 : r * 1.4;
      os << (i ? " " : "") << num(x + rr * std::cos(a)) << "," << num(y + rr * std::sin(a));
    }
    os << "\"" << style << "/>";
  } else {
    os << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"" << num(r) << "\"" << style << "/>";
  }
  return os.str();
}

}  // namespace

std::vector<double> ticks(double lo, double hi, bool log, bool integer) {
  std::vector<double> t;
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {};
  if (!(hi > lo)) return {lo};
  // A range narrower than a double resolves at this magnitude: one tick in the middle.
  if (hi - lo <= std::max(std::fabs(lo), std::fabs(hi)) * 1e-12) return {lo + (hi - lo) / 2};
  if (log && lo > 0) {
    const int d0 = static_cast<int>(std::floor(std::log10(lo)));
    const int d1 = static_cast<int>(std::ceil(std::log10(hi)));
    const std::vector<std::vector<double>> mantissas{{1}, {1, 2, 5}, {1, 1.5, 2, 3, 5, 7}};
    for (size_t level = d1 - d0 > 4 ? 0 : 1; level < mantissas.size(); ++level) {
      t.clear();
      for (int d = d0; d <= d1; ++d)
        for (double m : mantissas[level]) {
          const double v = m * std::pow(10.0, d);
          if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) t.push_back(v);
        }
      if (t.size() >= 4) break;
    }
    if (t.size() < 2) t = {lo, hi};
    return t;
  }
  const double span = hi - lo;
  if (!std::isfinite(span)) return {lo, 0, hi};  // beyond the largest double: the ends and zero
  const double raw = span / 6;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) { step = m * mag; break; }
  if (integer) step = std::max(1.0, std::round(step));
  // Each tick a whole multiple of the step (no accumulated error), at most a dozen of them.
  const double k0 = std::ceil(lo / step - 1e-9), k1 = std::floor(hi / step + 1e-9);
  for (double k = k0; k <= k1 && t.size() < 12; ++k) t.push_back(k == 0 ? 0 : k * step);
  if (t.empty()) t.push_back(lo + span / 2);  // an integer axis narrower than 1 between two integers
  return t;
}

std::vector<std::string> tick_labels(const std::vector<double>& t, bool log) {
  auto distinct = [](const std::vector<std::string>& l) {
    std::vector<std::string> s = l;
    std::sort(s.begin(), s.end());
    return std::adjacent_find(s.begin(), s.end()) == s.end();
  };
  std::vector<std::string> out(t.size());
  double big = 0, step = INFINITY;
  for (size_t i = 0; i < t.size(); ++i) {
    big = std::max(big, std::fabs(t[i]));
    if (i) step = std::min(step, std::fabs(t[i] - t[i - 1]));
  }
  // A linear axis of ordinary magnitude: the same number of decimals on every label, as many as
  // the step needs (2.5 -> 1, 0.25 -> 2, 0.01 -> 2), more if two labels would still read alike.
  const bool fixed = !log && t.size() >= 2 && big < 1e7 && (step >= 1e-4 || big == 0);
  if (fixed) {
    int d = 0;
    if (t.size() >= 2 && step > 0)
      while (d < 10 && std::fabs(std::round(step * std::pow(10.0, d)) - step * std::pow(10.0, d)) >
                           1e-6 * step * std::pow(10.0, d))
        ++d;
    for (; d <= 15; ++d) {
      char buf[64];
      for (size_t i = 0; i < t.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%.*f", d, t[i]);
        out[i] = buf;
        if (out[i][0] == '-' && out[i].find_first_not_of("-0.") == std::string::npos) out[i].erase(0, 1);  // "-0.0"
      }
      if (distinct(out)) return out;
    }
    return out;
  }
  // Log axes (0.5, 1, 2, 5 ...), huge or tiny values: the fewest significant digits (from 3)
  // that tell every label apart. A lone tick (one value) is shown as the value, to 6 digits.
  for (int p = t.size() < 2 ? 6 : 3; p <= 17; ++p) {
    for (size_t i = 0; i < t.size(); ++i) out[i] = fmt_num(t[i], p);
    if (distinct(out)) break;
  }
  return out;
}

std::string render(const Chart& c) {
  const int W = c.width, H = c.height;
  const double L = 70, R = 200, T = 34, B = 52;  // margins (legend on the right)
  const double pw = W - L - R, ph = H - T - B;
  // Data range.
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const auto& s : c.series)
    for (size_t i = 0; i < s.pts.size(); ++i) {
      const auto& p = s.pts[i];
      if (c.log_x && p.x <= 0) continue;
      x0 = std::min(x0, p.x), x1 = std::max(x1, p.x);
      y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
      if (s.kind == Series::Kind::hbar && i < s.ends.size()) x0 = std::min(x0, s.ends[i]), x1 = std::max(x1, s.ends[i]);
    }
  for (const auto& h : c.hlines) y0 = std::min(y0, h.value), y1 = std::max(y1, h.value);
  for (const auto& v : c.vlines)
    if (!c.log_x || v.value > 0) x0 = std::min(x0, v.value), x1 = std::max(x1, v.value);
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
     << "\" viewBox=\"0 0 " << W << " " << H << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << "<text x=\"" << W / 2 << "\" y=\"18\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">"
     << xml_escape(c.title) << "</text>\n";
  if (!std::isfinite(x0)) {
    os << "<text x=\"" << W / 2 << "\" y=\"" << H / 2 << "\" text-anchor=\"middle\" fill=\"#666\">"
       << "no data to draw</text>\n</svg>";
    return os.str();
  }
  // Padding so points are not on the frame.
  if (c.log_x) {
    x0 /= 1.15, x1 *= 1.15;
  } else {
    const double dx = x1 > x0 ? (x1 - x0) * 0.06 : std::max(std::fabs(x0) * 0.1, 1.0);
    // Values that are all >= 0 (latencies, rates, counts) never get an axis below 0.
    x0 = x0 >= 0 ? std::max(0.0, x0 - dx) : x0 - dx, x1 += dx;
  }
  bool bars = false;
  for (const auto& s : c.series) bars = bars || (s.kind == Series::Kind::hbar && !s.pts.empty());
  if (bars) {
    y0 -= 0.6, y1 += 0.6;  // half a row and a little around the first and last bar
  } else {
    const double dy = y1 > y0 ? (y1 - y0) * 0.08 : std::max(std::fabs(y0) * 0.05, 0.01);
    y0 = y0 >= 0 ? std::max(0.0, y0 - dy) : y0 - dy, y1 += dy;
  }
  auto X = [&](double x) {
    return c.log_x ? L + (std::log10(x) - std::log10(x0)) / (std::log10(x1) - std::log10(x0)) * pw
                   : L + (x - x0) / (x1 - x0) * pw;
  };
  auto Y = [&](double y) { return c.invert_y ? T + (y - y0) / (y1 - y0) * ph : T + ph - (y - y0) / (y1 - y0) * ph; };
  // Frame, grid and ticks.
  os << "<g stroke=\"#e3e3e3\" stroke-width=\"1\">\n";
  const auto xt = ticks(x0, x1, c.log_x, c.integer_x), yt = ticks(y0, y1, false, c.integer_y);
  for (double x : xt) os << "<line x1=\"" << num(X(x)) << "\" y1=\"" << T << "\" x2=\"" << num(X(x)) << "\" y2=\"" << T + ph << "\"/>";
  for (double y : yt) os << "<line x1=\"" << L << "\" y1=\"" << num(Y(y)) << "\" x2=\"" << L + pw << "\" y2=\"" << num(Y(y)) << "\"/>";
  os << "\n</g>\n<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << pw << "\" height=\"" << ph
     << "\" fill=\"none\" stroke=\"#555\"/>\n<g fill=\"#333\">\n";
  const auto xl = tick_labels(xt, c.log_x), yl = tick_labels(yt, false);
  for (size_t i = 0; i < xt.size(); ++i)
    os << "<text x=\"" << num(X(xt[i])) << "\" y=\"" << T + ph + 15 << "\" text-anchor=\"middle\">" << xl[i] << "</text>";
  for (size_t i = 0; i < yt.size(); ++i)
    os << "<text x=\"" << L - 5 << "\" y=\"" << num(Y(yt[i]) + 4) << "\" text-anchor=\"end\">" << yl[i] << "</text>";
  os << "\n<text x=\"" << num(L + pw / 2) << "\" y=\"" << H - 12 << "\" text-anchor=\"middle\">"
     << xml_escape(c.x_title) << (c.log_x ? " (log scale)" : "") << "</text>\n";
  os << "<text transform=\"translate(14," << num(T + ph / 2) << ") rotate(-90)\" text-anchor=\"middle\">"
     << xml_escape(c.y_title) << "</text>\n</g>\n";
  // Reference lines.
  for (const auto& h : c.hlines)
    os << "<g class=\"hline\"><line x1=\"" << L << "\" y1=\"" << num(Y(h.value)) << "\" x2=\"" << L + pw << "\" y2=\""
       << num(Y(h.value)) << "\" stroke=\"" << h.color << "\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>"
       << "<text x=\"" << L + pw - 4 << "\" y=\"" << num(Y(h.value) - 4) << "\" text-anchor=\"end\" fill=\"" << h.color
       << "\">" << xml_escape(h.label) << "</text></g>\n";
  for (const auto& v : c.vlines) {
    if (c.log_x && v.value <= 0) continue;
    os << "<g class=\"vline\"><line x1=\"" << num(X(v.value)) << "\" y1=\"" << T << "\" x2=\"" << num(X(v.value))
       << "\" y2=\"" << T + ph << "\" stroke=\"" << v.color << "\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>"
       << "<text x=\"" << num(X(v.value) + 4) << "\" y=\"" << T + 12 << "\" fill=\"" << v.color << "\">"
       << xml_escape(v.label) << "</text></g>\n";
  }
  // Series: bars, then lines, then markers on top.
  os << "<g>\n";
  const double row_px = ph / (y1 - y0);
  const double bar_h = std::clamp(row_px * 0.7, 1.0, 16.0);
  for (const auto& s : c.series) {
    if (s.kind != Series::Kind::hbar || s.pts.empty()) continue;
    os << "<g class=\"series bars\" data-name=\"" << xml_escape(s.name) << "\" fill=\"" << s.color << "\">";
    for (size_t i = 0; i < s.pts.size() && i < s.ends.size(); ++i) {
      const double a = X(std::min(s.pts[i].x, s.ends[i])), b = X(std::max(s.pts[i].x, s.ends[i]));
      os << "<rect class=\"bar\" x=\"" << num(a) << "\" y=\"" << num(Y(s.pts[i].y) - bar_h / 2) << "\" width=\""
         << num(std::max(b - a, 0.5)) << "\" height=\"" << num(bar_h) << "\">";
      if (i < s.tips.size() && !s.tips[i].empty()) os << "<title>" << xml_escape(s.tips[i]) << "</title>";
      os << "</rect>";
    }
    os << "</g>\n";
  }
  for (const auto& s : c.series) {
    if (s.kind == Series::Kind::scatter || s.kind == Series::Kind::hbar || s.pts.empty()) continue;
    os << "<polyline class=\"series\" data-name=\"" << xml_escape(s.name) << "\" fill=\"none\" stroke=\"" << s.color
       << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"5,3\"" : "") << " points=\"";
    bool first = true;
    double prev_y = 0;
    for (const auto& p : s.pts) {
      if (c.log_x && p.x <= 0) continue;
      if (s.kind == Series::Kind::step && !first) os << num(X(p.x)) << "," << num(Y(prev_y)) << " ";
      os << num(X(p.x)) << "," << num(Y(p.y)) << " ";
      prev_y = p.y;
      first = false;
    }
    os << "\"/>\n";
  }
  for (const auto& s : c.series) {
    if (s.kind != Series::Kind::scatter) continue;
    os << "<g class=\"series\" data-name=\"" << xml_escape(s.name) << "\">";
    for (size_t i = 0; i < s.pts.size(); ++i) {
      const auto& p = s.pts[i];
      if (c.log_x && p.x <= 0) continue;
      const std::string tip = i < s.tips.size() ? s.tips[i] : "";
      os << "<g class=\"point\">" << marker_svg(s.marker, X(p.x), Y(p.y), 5, s.color, "");
      if (!tip.empty()) os << "<title>" << xml_escape(tip) << "</title>";
      os << "</g>";
      if (i < s.labels.size() && !s.labels[i].empty())
        os << "<text x=\"" << num(X(p.x) + 7) << "\" y=\"" << num(Y(p.y) - 6) << "\" font-size=\"9\" fill=\"#333\">"
           << xml_escape(s.labels[i]) << "</text>";
    }
    os << "</g>\n";
  }
  os << "</g>\n";
  // Legend.
  double ly = T + 6;
  const double lx = L + pw + 14;
  size_t entries = 0, shown = 0;
  for (const auto& s : c.series) entries += s.in_legend;
  for (const auto& s : c.series) {
    if (!s.in_legend) continue;
    if (ly + 16 > H - B && shown + 1 < entries) {  // no room for this one and the rest: say so
      os << "<text x=\"" << lx << "\" y=\"" << ly + 8 << "\" fill=\"#666\">... and " << entries - shown
         << " more</text>\n";
      break;
    }
    ++shown;
    if (s.kind == Series::Kind::scatter) os << marker_svg(s.marker, lx + 8, ly + 4, 4.5, s.color, "");
    else if (s.kind == Series::Kind::hbar)
      os << "<rect x=\"" << lx << "\" y=\"" << ly << "\" width=\"16\" height=\"8\" fill=\"" << s.color << "\"/>";
    else
      os << "<line x1=\"" << lx << "\" y1=\"" << ly + 4 << "\" x2=\"" << lx + 16 << "\" y2=\"" << ly + 4
         << "\" stroke=\"" << s.color << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"5,3\"" : "") << "/>";
    std::string name = s.name;
    if (name.size() > 30) name = name.substr(0, 29) + "…";
    os << "<text x=\"" << lx + 22 << "\" y=\"" << ly + 8 << "\">" << xml_escape(name) << "</text>\n";
    ly += 16;
  }
  os << "</svg>";
  return os.str();
}

}  // namespace svg
}  // namespace cibench::reports

#include "reports/render/html_report.h"

#include <sstream>

#include "reports/render/charts.h"
#include "reports/render/sections.h"
#include "reports/render/svg.h"

namespace cibench::reports {
namespace {

std::string html_table(const Table& t, const std::string& cls = "") {
  std::ostringstream os;
  os << "<table" << (cls.empty() ? "" : " class=\"" + cls + "\"") << ">\n<thead><tr>";
  for (const auto& h : t.head) os << "<th>" << xml_escape(h) << "</th>";
  os << "</tr></thead>\n<tbody>\n";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const std::string c = r < t.row_class.size() ? t.row_class[r] : "";
    os << "<tr" << (c.empty() ? "" : " class=\"" + c + "\"") << ">";
    for (const auto& cell : t.rows[r]) {
      // A multi-line cell (a configuration, one "key: value" per line) keeps its lines.
      std::string html = xml_escape(cell);
      for (size_t at = html.find('\n'); at != std::string::npos; at = html.find('\n', at + 4)) html.replace(at, 1, "<br>");
      os << "<td>" << html << "</td>";
    }
    os << "</tr>\n";
  }
  os << "</tbody></table>\n";
  return os.str();
}
const char* kCss = R"CSS(
body { font-family: sans-serif; margin: 24px auto; max-width: 1200px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 12px; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: left; vertical-align: top; overflow-wrap: break-word; }
td { max-width: 360px; }
th { background: #f2f2f2; }
tr.frontier td { background: #eef6ee; font-weight: bold; }
tr.below td { color: #888; }
.note { color: #555; font-size: 12px; }
.warning { color: #a00; font-weight: bold; }
tr.warn td { background: #fff4e5; }
details { margin: 6px 0; } pre { background: #f7f7f7; padding: 8px; font-size: 11px; overflow-x: auto; }
)CSS";
std::string html_list(const std::vector<std::string>& lines, const std::string& cls = "") {
  if (lines.empty()) return "";
  std::string s = "<ul" + (cls.empty() ? std::string() : " class=\"" + cls + "\"") + ">";
  for (const auto& l : lines) s += "<li>" + xml_escape(l) + "</li>";
  return s + "</ul>\n";
}
}  // namespace

std::string render_html(const ReportData& d) {
  const Tradeoff& t = d.tradeoff;
  std::ostringstream os;
  std::string ids;
  for (const auto& r : d.runs) ids += (ids.empty() ? "" : ", ") + std::to_string(r.run_id);
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
     << "<title>cibench report: run " << xml_escape(ids) << "</title>\n<style>" << kCss << "</style>\n</head>\n<body>\n";
  os << "<h1>cibench report: run" << (d.runs.size() > 1 ? "s " : " ") << xml_escape(ids) << "</h1>\n";
  os << "<p class=\"note\">Generated " << utc_now()
     << " by <code>cibench report</code> from the results database; every number below is a stored "
        "measurement or computed from stored measurements by the same queries as cibench-gui. "
        "n/a = not measured.</p>\n";
  for (const auto& r : d.runs) {
    os << "<p><b>Run " << r.run_id << "</b> — "
       << (r.kind == "scenario" ? "scenario <b>" + xml_escape(r.scenario_name) + "</b>"
                                : "<code>" + xml_escape(r.origin()) + "</code>")
       << ", "
       << xml_escape(r.status) << ", started " << xml_escape(r.started_utc) << " on " << xml_escape(r.hostname)
       << " (" << xml_escape(r.cpu_model) << "), model <code>" << xml_escape(r.model_spec) << "</code>.";
    if (!r.question.empty()) os << "<br>Question: <i>" << xml_escape(r.question) << "</i>";
    if (!r.error.empty()) os << "<br>Error: " << xml_escape(r.error);
    os << "</p>\n";
  }
  if (d.comparison)
    for (const auto& w : d.comparison->warnings) os << "<p class=\"warning\">WARNING (compare): " << xml_escape(w) << "</p>\n";
  os << "<h2>Summary</h2>\n<p class=\"note\">" << kLeadNote << "</p>\n" << html_table(lead_table(d), "lead");

  os << "<h2>Verdicts</h2>\n" << html_list(verdict_lines(d)) << html_table(slo_table(d));
  if (const Table at = accuracy_table(d); !at.rows.empty()) os << "<h3>Task accuracy</h3>\n" << html_table(at, "accuracy");

  os << "<h2>Trade-off and Pareto frontier</h2>\n" << svg::render(tradeoff_chart(d)) << "\n";
  os << "<p class=\"note\">Colour = weight format, marker = sparsity, grey = below a quality floor; "
        "the dashed line joins the Pareto frontier of the variants meeting the floors "
        "(no other variant is better on both axes). Hover a point for its configuration.</p>\n";
  os << "<h3>Frontier</h3>\n"
     << (t.frontier.empty() ? "<p>No variant meets the floor with both values measured.</p>\n"
                            : html_table(frontier_table(d), "frontier"));

  os << "<h2>Variants ranked</h2>\n" << html_table(ranked_table(d), "ranked");

  os << "<h2>Latency</h2>\n" << svg::render(cdf_chart(d)) << "\n";
  for (const auto& c : load_charts(d)) os << svg::render(c) << "\n";
  if (!d.serving.empty()) {
    os << "<h2>Serving</h2>\n<p class=\"note\">" << kServingNote << "</p>\n";
    for (const auto& c : serving_charts(d)) os << svg::render(c) << "\n";
    os << html_table(serving_table(d), "serving") << html_list(serving_notes(d), "note");
    for (const Timeline& tl : d.timelines)
      os << "<details><summary>Requests of " << xml_escape(tl.name) << " (" << xml_escape(tl.why) << "): "
         << xml_escape(tl.coverage()) << "</summary>\n" << html_table(timeline_table(tl), "timeline") << "</details>\n";
  }
  if (!d.speculative.empty()) {
    os << "<h2>Speculative decoding</h2>\n<p class=\"note\">" << xml_escape(kSpeculativeNote) << "</p>\n";
    for (const auto& c : speculative_charts(d)) os << svg::render(c) << "\n";
    os << html_list(speculative_notes(d), "note");
    for (const SpecTable& st : speculative_tables(d)) {
      if (d.runs.size() > 1) os << "<h3>Run " << st.run << "</h3>\n";
      os << html_table(st.t, "speculative") << html_list(st.footnotes, "note");
    }
  }
  if (!d.hosts.empty()) {
    os << "<h2>Cost per answer by host type</h2>\n<p class=\"note\">" << xml_escape(kHostsNote) << "</p>\n";
    for (const HostsScenario& s : d.hosts.scenarios) {
      os << "<h3>" << xml_escape(s.scenario) << ": host types, cheapest first</h3>\n"
         << html_table(host_rank_table(s), "hosts") << svg::render(host_cost_chart(s)) << "\n"
         << "<details><summary>every priced variant</summary>\n" << html_table(host_cost_table(s), "hosts")
         << "</details>\n";
    }
  }
  const auto sc = scaling_charts(d);
  if (!sc.empty()) {
    os << "<h2>Scaling</h2>\n";
    for (const auto& c : sc) os << svg::render(c) << "\n";
  } else if (const std::string one = single_core_count(d); !one.empty()) {
    os << "<h2>Scaling</h2>\n<p class=\"note\">" << xml_escape(one) << "</p>\n";
  }
  if (const Table ct = cache_table(d); !ct.rows.empty())
    os << "<h2>Result cache</h2>\n<p class=\"note\">" << kCacheNote << "</p>\n" << html_table(ct, "cache");
  if (d.comparison) {
    const Comparison& c = *d.comparison;
    os << "<h2>Compare: run " << c.a.run_id << " (A) and run " << c.b.run_id << " (B)</h2>\n";
    for (const auto& w : c.warnings) os << "<p class=\"warning\">WARNING: " << xml_escape(w) << "</p>\n";
    os << "<p class=\"note\">Differences B - A with " << static_cast<int>(c.confidence * 100)
       << "% percentile-bootstrap intervals, as <code>cibench compare " << c.a.run_id << " " << c.b.run_id
       << "</code> computes them (" << c.resamples << " resamples, seed " << c.seed
       << "); n = requests behind a percentile; (!) = the percentile is the sample maximum.</p>\n"
       << html_table(compare_table(c), "compare") << html_list(compare_notes(c), "note");
  }
  os << "<h2>Counters</h2>\n<p class=\"note\">" << kCountersNote << "</p>\n";
  if (const Table ct = counters_table(d); !ct.rows.empty()) os << html_table(ct, "counters");
  os << html_list(counter_gap_lines(d), "note");
  os << "<h2>Provenance</h2>\n";
  for (size_t i = 0; i < d.runs.size(); ++i)
    os << "<details" << (i == 0 ? " open" : "") << "><summary>Run " << d.runs[i].run_id << "</summary>\n"
       << html_table(provenance_table(d.runs[i], d.provenance[i])) << "</details>\n";
  os << "</body>\n</html>\n";
  return os.str();
}
}  // namespace cibench::reports

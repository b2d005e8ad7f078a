#include "reports/render/markdown_report.h"

#include <sstream>

#include "reports/render/sections.h"

namespace cibench::reports {
namespace {

// Markdown table cell: no pipes or newlines.
// Stored text (a scenario's name and question, a model path, a host) in Markdown: HTML is shown,
// never interpreted (Markdown passes raw HTML through), emphasis, links and table cells are
// escaped, and a newline cannot start a new block.
std::string md(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '\n': o += "; "; break;
      case '\r': break;
      case '|': case '\\': case '`': case '*': case '[': case ']':  // ('_' inside words is literal)
        o += '\\';
        o += c;
        break;
      default: o += c;
    }
  }
  return o;
}

// Stored text shown as code (`...`): a backtick or newline would end the span or the line.
std::string md_code(const std::string& s) {
  std::string o = "`";
  for (char c : s) o += c == '`' ? '\'' : (c == '\n' || c == '\r') ? ' ' : c;
  return o + "`";
}

std::string md_table(const Table& t) {
  std::ostringstream os;
  os << "|";
  for (const auto& h : t.head) os << " " << md(h) << " |";
  os << "\n|";
  for (size_t i = 0; i < t.head.size(); ++i) os << "---|";
  os << "\n";
  for (const auto& r : t.rows) {
    os << "|";
    for (const auto& cell : r) os << " " << md(cell) << " |";
    os << "\n";
  }
  return os.str();
}
}  // namespace

std::string render_markdown(const ReportData& d) {
  const Tradeoff& t = d.tradeoff;
  std::ostringstream os;
  std::string ids;
  for (const auto& r : d.runs) ids += (ids.empty() ? "" : ", ") + std::to_string(r.run_id);
  os << "# cibench report: run" << (d.runs.size() > 1 ? "s " : " ") << ids << "\n\n";
  if (d.comparison)
    for (const auto& w : d.comparison->warnings) os << "**WARNING (compare): " << md(w) << "**\n\n";
  os << md_table(lead_table(d)) << "\n" << kLeadNote << "\n\n";
  os << "Generated " << utc_now() << " by `cibench report`; charts are in report.html. n/a = not measured.\n\n";
  for (const auto& r : d.runs) {
    os << "- **Run " << r.run_id << "**: "
       << (r.kind == "scenario" ? "scenario **" + md(r.scenario_name) + "**" : md_code(r.origin())) << ", " << md(r.status)
       << ", started " << md(r.started_utc) << " on " << md(r.hostname) << " (" << md(r.cpu_model) << "), model "
       << md_code(r.model_spec);
    if (!r.question.empty()) os << ". Question: *" << md(r.question) << "*";
    os << "\n";
  }
  os << "\n## Verdicts\n\n";
  for (const auto& l : verdict_lines(d)) os << "- " << md(l) << "\n";
  os << "\n" << md_table(slo_table(d));
  if (const Table at = accuracy_table(d); !at.rows.empty()) os << "\n### Task accuracy\n\n" << md_table(at);
  os << "\n## Pareto frontier\n\n";
  os << (t.frontier.empty() ? "No variant meets the floor with both values measured.\n" : md_table(frontier_table(d)));
  os << "\n## Variants ranked\n\n" << md_table(ranked_table(d));
  if (!d.serving.empty()) {
    os << "\n## Serving\n\n" << kServingNote << "\n\n" << md_table(serving_table(d)) << "\n";
    for (const auto& l : serving_notes(d)) os << "- " << md(l) << "\n";
    for (const Timeline& tl : d.timelines)
      os << "\n### Requests of " << md(tl.name) << " (" << md(tl.why) << "): " << md(tl.coverage()) << "\n\n"
         << md_table(timeline_table(tl));
  }
  if (!d.speculative.empty()) {
    os << "\n## Speculative decoding\n\n" << md(kSpeculativeNote) << "\n\n";
    for (const auto& l : speculative_notes(d)) os << "- " << md(l) << "\n";
    for (const SpecTable& st : speculative_tables(d)) {
      os << "\n";
      if (d.runs.size() > 1) os << "### Run " << st.run << "\n\n";
      os << md_table(st.t) << "\n";
      for (const auto& f : st.footnotes) os << md(f) << "  \n";
    }
  }
  if (!d.hosts.empty()) {
    os << "\n## Cost per answer by host type\n\n" << md(kHostsNote) << "\n";
    for (const HostsScenario& s : d.hosts.scenarios)
      os << "\n### " << md(s.scenario) << ": host types, cheapest first\n\n" << md_table(host_rank_table(s))
         << "\n### " << md(s.scenario) << ": every priced variant\n\n" << md_table(host_cost_table(s));
  }
  if (const Table ct = cache_table(d); !ct.rows.empty())
    os << "\n## Result cache\n\n" << kCacheNote << "\n\n" << md_table(ct);
  if (d.comparison) {
    const Comparison& c = *d.comparison;
    os << "\n## Compare: run " << c.a.run_id << " (A) and run " << c.b.run_id << " (B)\n\n";
    for (const auto& w : c.warnings) os << "**WARNING: " << md(w) << "**\n\n";
    os << "Differences B - A with " << static_cast<int>(c.confidence * 100)
       << "% percentile-bootstrap intervals, as `cibench compare " << c.a.run_id << " " << c.b.run_id
       << "` computes them (" << c.resamples << " resamples, seed " << c.seed
       << "); n = requests behind a percentile; (!) = the percentile is the sample maximum.\n\n"
       << md_table(compare_table(c));
    const auto notes = compare_notes(c);
    if (!notes.empty()) os << "\n";
    for (const auto& n : notes) os << "- " << md(n) << "\n";
  }
  os << "\n## Counters\n\n" << kCountersNote << "\n\n";
  if (const Table ct = counters_table(d); !ct.rows.empty()) os << md_table(ct) << "\n";
  for (const auto& g : counter_gap_lines(d)) os << "- unavailable: " << md(g) << "\n";
  os << "\n## Provenance\n";
  for (size_t i = 0; i < d.runs.size(); ++i)
    os << "\n### Run " << d.runs[i].run_id << "\n\n" << md_table(provenance_table(d.runs[i], d.provenance[i]));
  return os.str();
}
}  // namespace cibench::reports

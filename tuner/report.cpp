// Markdown and SVG rendering of tuning sessions (best-so-far per run, per strategy).
#include "tuner/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace syspilot::tuner {

namespace {

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string md_cell(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|') o += "\\|";
    else if (c == '\n') o += ' ';
    else o += c;
  }
  return o;
}

std::string fmt(double v, int prec = 3) {
  std::ostringstream os;
  os << std::setprecision(prec) << v;
  return os.str();
}

// (runs spent after the trial, best value so far) for each successful trial.
std::vector<std::pair<double, double>> best_so_far(const TuneResult& r) {
  std::vector<std::pair<double, double>> pts;
  double best = 0;
  bool have = false;
  int runs = 0;
  for (const auto& t : r.trials) {
    runs = t.runs_before + t.m.repeats;
    if (t.m.ok && (!have || t.m.value < best)) best = t.m.value, have = true;
    if (have) pts.push_back({static_cast<double>(runs), best});
  }
  return pts;
}

const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

}  // namespace

std::string render_svg(const std::vector<ReportRun>& runs, const std::string& title, bool maximize,
                       const std::string& y_label) {
  const double W = 640, H = 400, L = 70, R = 170, T = 40, B = 50;
  double xmax = 1, ymin = 0, ymax = 0;
  bool have = false;
  std::vector<std::vector<std::pair<double, double>>> series;
  for (const auto& r : runs) {
    auto pts = best_so_far(r.result);
    for (auto& p : pts) {
      p.second = maximize ? -p.second : p.second;
      xmax = std::max(xmax, p.first);
      if (!have) ymin = ymax = p.second, have = true;
      ymin = std::min(ymin, p.second);
      ymax = std::max(ymax, p.second);
    }
    series.push_back(pts);
  }
  if (!have) ymin = 0, ymax = 1;
  double pad = (ymax - ymin) * 0.1 + (ymax == ymin ? std::fabs(ymax) * 0.1 + 1e-9 : 0);
  ymin -= pad;
  ymax += pad;
  auto X = [&](double x) { return L + (x / xmax) * (W - L - R); };
  auto Y = [&](double y) { return T + (1 - (y - ymin) / (ymax - ymin)) * (H - T - B); };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W
    << " " << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << W / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">" << xml_escape(title) << "</text>\n";
  s << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B << "\" stroke=\"black\"/>\n";
  s << "<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << H - B << "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    double y = ymin + (ymax - ymin) * i / 4;
    s << "<text x=\"" << L - 6 << "\" y=\"" << Y(y) + 4 << "\" text-anchor=\"end\">" << fmt(y) << "</text>\n";
    s << "<line x1=\"" << L << "\" y1=\"" << Y(y) << "\" x2=\"" << W - R << "\" y2=\"" << Y(y)
      << "\" stroke=\"#ddd\"/>\n";
  }
  int step = std::max(1, static_cast<int>(std::ceil(xmax / 10)));
  for (int x = 0; x <= xmax; x += step)
    s << "<text x=\"" << X(x) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\">" << x << "</text>\n";
  s << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 12 << "\" text-anchor=\"middle\">runs spent</text>\n";
  s << "<text x=\"16\" y=\"" << (T + H - B) / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 16 "
    << (T + H - B) / 2 << ")\">" << xml_escape(y_label) << "</text>\n";
  for (size_t i = 0; i < series.size(); ++i) {
    const char* col = kColours[i % 8];
    const auto& pts = series[i];
    if (!pts.empty()) {
      // Step line: the best so far holds until the next improvement.
      std::ostringstream d;
      for (size_t k = 0; k < pts.size(); ++k) {
        if (k == 0) d << "M" << X(pts[k].first) << "," << Y(pts[k].second);
        else d << " H" << X(pts[k].first) << " V" << Y(pts[k].second);
      }
      s << "<path d=\"" << d.str() << "\" fill=\"none\" stroke=\"" << col << "\" stroke-width=\"2\"/>\n";
      for (const auto& p : pts)
        s << "<circle cx=\"" << X(p.first) << "\" cy=\"" << Y(p.second) << "\" r=\"2.5\" fill=\"" << col << "\"/>\n";
    }
    double ly = T + 10 + 18 * static_cast<double>(i);
    s << "<line x1=\"" << W - R + 12 << "\" y1=\"" << ly << "\" x2=\"" << W - R + 32 << "\" y2=\"" << ly
      << "\" stroke=\"" << col << "\" stroke-width=\"2\"/>\n";
    s << "<text x=\"" << W - R + 38 << "\" y=\"" << ly + 4 << "\">" << xml_escape(runs[i].label) << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

std::string render_markdown(const ReportInput& in, const std::string& svg_name) {
  std::ostringstream md;
  auto shown = [&](double v) { return fmt(in.maximize ? -v : v, 4); };
  md << "# " << in.title << "\n\n";
  if (!in.argv.empty()) {
    md << "Application: `";
    for (size_t i = 0; i < in.argv.size(); ++i) md << (i ? " " : "") << in.argv[i];
    md << "`; objective: " << in.objective << (in.maximize ? " (higher is better)" : " (lower is better)") << ".\n\n";
  }
  md << "![best so far per run](" << svg_name << ")\n\n";
  md << "## Summary\n\n| strategy | trials | runs | best | speedup over default | stop |\n|---|---|---|---|---|---|\n";
  for (const auto& r : in.runs) {
    const auto& res = r.result;
    md << "| " << md_cell(r.label) << " | " << res.trials.size() << " | " << res.runs << " | "
       << (res.best >= 0 ? "`" + md_cell(to_string(res.trials[res.best].config)) + "`" : "none") << " | "
       << (res.speedup > 0 ? fmt(res.speedup) + "x +-" + fmt(res.speedup_spread * 100, 2) + "%" : "n/a") << " | "
       << res.stop_reason << " |\n";
  }
  if (in.verification) {
    const auto& v = *in.verification;
    md << "\nFresh re-measurement (default and best interleaved, median of " << v.reference.size() << "): ";
    if (v.ok)
      md << fmt(v.speedup) << "x +-" << fmt(v.spread * 100, 2) << "%.\n";
    else
      md << "failed: " << v.failure << ".\n";
  }
  if (!in.guides.empty()) {
    md << "\n## Hypotheses that guided the search\n\n| id | kind | controls | constraint |\n|---|---|---|---|\n";
    for (const auto& g : in.guides) {
      std::string ctl;
      for (const auto& c : g.controls) ctl += (ctl.empty() ? "" : ", ") + c;
      md << "| " << md_cell(g.id) << " | " << md_cell(g.kind) << " | " << md_cell(ctl) << " | `"
         << md_cell(g.constraint) << "` |\n";
    }
  }
  md << "\n## Search space\n\n| control | kind | values | default |\n|---|---|---|---|\n";
  for (const auto& p : in.space.params) {
    std::string vals;
    for (const auto& v : p.values) vals += (vals.empty() ? "" : ", ") + v;
    const char* kind = p.kind == Param::Kind::Api ? "api" : p.kind == Param::Kind::Option ? "option" : "env";
    md << "| " << md_cell(p.name) << " | " << kind << " | " << md_cell(vals) << " | " << md_cell(p.default_value)
       << " |\n";
  }
  for (const auto& c : in.space.constraints) md << "\nConstraint: `" << md_cell(c) << "`\n";
  for (const auto& r : in.runs) {
    md << "\n## Trials: " << r.label << "\n\n| # | configuration | runs | value | spread | note |\n|---|---|---|---|---|---|\n";
    for (const auto& t : r.result.trials) {
      md << "| " << t.index + 1 << " | `" << md_cell(to_string(t.config)) << "` | " << t.m.repeats << " | "
         << (t.m.ok ? shown(t.m.value) : "-") << " | " << (t.m.ok ? "+-" + fmt(t.m.spread * 100, 2) + "%" : "-")
         << " | " << md_cell(t.m.ok ? (t.index == r.result.best ? "best" : "") : "failed: " + t.m.failure) << " |\n";
    }
  }
  return md.str();
}

std::string write_report(const std::string& path, const ReportInput& in) {
  std::filesystem::path p(path);
  std::filesystem::path svg = p;
  svg.replace_extension(".svg");
  if (svg == p) svg += ".svg";
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream s(svg);
  if (!s) throw std::runtime_error("cannot write " + svg.string());
  s << render_svg(in.runs, in.title, in.maximize, in.maximize ? "best metric so far" : "best " + in.objective + " so far");
  std::ofstream m(p);
  if (!m) throw std::runtime_error("cannot write " + p.string());
  m << render_markdown(in, svg.filename().string());
  if (!s || !m) throw std::runtime_error("writing the report to " + p.string() + " failed");
  return svg.string();
}

}  // namespace syspilot::tuner

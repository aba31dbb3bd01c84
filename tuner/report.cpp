// Markdown and SVG rendering of tuning sessions: one headline speedup, the session's conditions,
// and every trial per strategy run.
#include "tuner/report.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <set>
#include <sstream>
#include <stdexcept>

#include "lpcl/lpcl.h"

namespace syspilot::tuner {

namespace {

// The load average and the time when this process started: read at static initialisation, so
// that a report written after the analysis and the trials still says how loaded the machine
// was before they ran.
struct AtStart {
  std::optional<std::vector<double>> load;
  std::time_t when = 0;
};

const AtStart& at_start() {
  static const AtStart s = [] {
    AtStart a;
    double l[3];
    if (getloadavg(l, 3) == 3) a.load = std::vector<double>{l[0], l[1], l[2]};
    a.when = std::time(nullptr);
    return a;
  }();
  return s;
}

[[maybe_unused]] const AtStart& kAtStart = at_start();

std::string iso_utc(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

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

std::string fmt(double v, int prec = 3) {
  std::ostringstream os;
  os << std::setprecision(prec) << v;
  return os.str();
}

std::string fixed(double v, int prec = 2) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

std::string pct(double v) { return std::to_string(std::lround(v * 100)) + "%"; }

// Successful runs behind a trial's value: one run has no spread to show.
int runs_measured(const Measurement& m) { return m.samples.empty() ? m.repeats : static_cast<int>(m.samples.size()); }

std::string runs_text(int n) { return n == 1 ? "1 run" : std::to_string(n) + " runs"; }

// "1.29x (1.21x to 1.37x)"; without an interval when `measured_once` (no spread to give one).
std::string speedup_text(double speedup, double spread, bool measured_once) {
  if (speedup <= 0) return "n/a (a metric or score of 0 has no ratio)";
  std::string s = fixed(speedup) + "x";
  if (measured_once) return s + " (single runs, no interval)";
  return s + " (" + fixed(speedup * (1 - spread)) + "x to " + fixed(speedup * (1 + spread)) + "x)";
}

// The search's own estimate for a run: its best trial against its reference, trial medians.
std::string estimate_text(const TuneResult& r) {
  if (r.best < 0 || r.reference < 0) return "n/a";
  bool once = runs_measured(r.trials[r.best].m) < 2 && runs_measured(r.trials[r.reference].m) < 2;
  return speedup_text(r.speedup, r.speedup_spread, once);
}

std::string remeasured_text(const std::optional<Verification>& v) {
  if (!v) return "not re-measured";
  if (!v->ok) return "failed: " + v->failure;
  return speedup_text(v->speedup, v->spread, v->reference.size() < 2);
}

std::string config_text(const Config& c) { return c.empty() ? "default" : to_string(c); }

// Every constraint once, with the hypotheses that imply it.
std::vector<std::pair<std::string, std::vector<std::string>>> constraints_of(const ReportInput& in) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  auto add = [&](const std::string& c, const std::string& by) {
    if (c.empty()) return;
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == c; });
    if (it == out.end()) it = out.insert(out.end(), {c, {}});
    if (!by.empty() && std::find(it->second.begin(), it->second.end(), by) == it->second.end())
      it->second.push_back(by);
  };
  for (const auto& g : in.guides) add(g.constraint, g.id);
  for (const auto& c : in.space.constraints) add(c, "");
  return out;
}

const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

}  // namespace

std::string md_cell(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|') o += "\\|";
    else if (c == '\n') o += ' ';
    else o += c;
  }
  return o;
}

RunConditions observe_conditions(const Space& space, const std::map<std::string, std::string>& environment) {
  RunConditions rc;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      rc.cpu_model = line.substr(line.find(':') + 1);
      rc.cpu_model.erase(0, rc.cpu_model.find_first_not_of(" \t"));
      break;
    }
  rc.online_cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  rc.mem_total = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  rc.load_at_start = at_start().load;
  rc.started = iso_utc(at_start().when);
  std::set<std::string> names;
  for (const auto& p : space.params) {
    if (p.kind == Param::Kind::Env) names.insert(p.name);
    if (p.kind == Param::Kind::Option) names.insert(p.carrier);
    names.insert(p.falls_back_on.begin(), p.falls_back_on.end());
    // `OPENBLAS_NUM_THREADS ?? OMP_NUM_THREADS ?? ncpus`: the variables the default reads.
    std::string word;
    for (char c : p.default_expr + " ") {
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
        word += c;
        continue;
      }
      if (!word.empty() && !std::isdigit(static_cast<unsigned char>(word[0]))) names.insert(word);
      word.clear();
    }
  }
  for (const auto& n : names)
    if (auto it = environment.find(n); it != environment.end()) rc.inherited[n] = it->second;
  return rc;
}

bool is_setter(const std::string& control, const Space& space) {
  const Param* p = space.find(control);
  if (p && p->kind != Param::Kind::Api) return true;
  // Not in the space, or an API control: a function named for reading is a query.
  return !lpcl::is_query_name(control);
}

std::string render_svg(const ReportInput& in) {
  const double W = 680, H = 420, L = 70, R = 190, T = 40, B = 50;
  // Capped runs were stopped after lower_bound wall seconds: a value on a wall-time axis only.
  const bool wall_axis = !in.maximize && in.objective.rfind("wall time", 0) == 0;
  auto shown = [&](double v) { return in.maximize ? -v : v; };
  double xmax = 1, ymin = 0, ymax = 0;
  bool have = false;
  auto extend = [&](double y) {
    if (!have) ymin = ymax = y, have = true;
    ymin = std::min(ymin, y);
    ymax = std::max(ymax, y);
  };
  for (const auto& r : in.runs)
    for (const auto& t : r.result.trials) {
      xmax = std::max(xmax, static_cast<double>(t.runs_before + t.m.repeats));
      if (t.m.ok) extend(shown(t.m.value));
      else if (t.m.capped && wall_axis) extend(t.m.lower_bound);
    }
  if (!have) ymin = 0, ymax = 1;
  double pad = (ymax - ymin) * 0.1 + (ymax == ymin ? std::fabs(ymax) * 0.1 + 1e-9 : 0);
  ymin -= pad;
  ymax += pad;
  auto X = [&](double x) { return L + (x / xmax) * (W - L - R); };
  auto Y = [&](double y) { return T + (1 - (y - ymin) / (ymax - ymin)) * (H - T - B); };
  const double top = T, axis = H - B;
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W
    << " " << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << W / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">" << xml_escape(in.title)
    << "</text>\n";
  s << "<line x1=\"" << L << "\" y1=\"" << axis << "\" x2=\"" << W - R << "\" y2=\"" << axis << "\" stroke=\"black\"/>\n";
  s << "<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << axis << "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    double y = ymin + (ymax - ymin) * i / 4;
    s << "<text x=\"" << L - 6 << "\" y=\"" << Y(y) + 4 << "\" text-anchor=\"end\">" << fmt(y) << "</text>\n";
    s << "<line x1=\"" << L << "\" y1=\"" << Y(y) << "\" x2=\"" << W - R << "\" y2=\"" << Y(y)
      << "\" stroke=\"#ddd\"/>\n";
  }
  int step = std::max(1, static_cast<int>(std::ceil(xmax / 10)));
  for (int x = 0; x <= xmax; x += step)
    s << "<text x=\"" << X(x) << "\" y=\"" << axis + 16 << "\" text-anchor=\"middle\">" << x << "</text>\n";
  s << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 12 << "\" text-anchor=\"middle\">runs spent</text>\n";
  std::string y_label = in.maximize ? "metric (higher is better)" : in.objective;
  s << "<text x=\"16\" y=\"" << (T + axis) / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 16 "
    << (T + axis) / 2 << ")\">" << xml_escape(y_label) << "</text>\n";

  auto cross = [&](double x, double y, const char* col) {
    s << "<path d=\"M" << x - 4 << "," << y - 4 << " L" << x + 4 << "," << y + 4 << " M" << x - 4 << "," << y + 4
      << " L" << x + 4 << "," << y - 4 << "\" stroke=\"" << col << "\" stroke-width=\"2\" class=\"failed\"/>\n";
  };
  auto triangle = [&](double x, double y, const char* col) {
    s << "<path d=\"M" << x << "," << y - 5 << " L" << x + 5 << "," << y + 4 << " L" << x - 5 << "," << y + 4
      << " Z\" fill=\"none\" stroke=\"" << col << "\" stroke-width=\"1.5\" class=\"capped\"/>\n";
  };
  for (size_t i = 0; i < in.runs.size(); ++i) {
    const char* col = kColours[i % 8];
    const TuneResult& res = in.runs[i].result;
    if (res.reference >= 0 && res.trials[res.reference].m.ok) {
      double y = Y(shown(res.trials[res.reference].m.value));
      s << "<line x1=\"" << L << "\" y1=\"" << y << "\" x2=\"" << W - R << "\" y2=\"" << y << "\" stroke=\"" << col
        << "\" stroke-dasharray=\"6,4\" class=\"default\"/>\n";
    }
    // Step line: the best so far holds until the next improvement.
    std::ostringstream d;
    double best = 0;
    bool any = false;
    for (const auto& t : res.trials) {
      if (!t.m.ok || (any && t.m.value >= best)) continue;
      double x = X(t.runs_before + t.m.repeats), y = Y(shown(t.m.value));
      if (!any) d << "M" << x << "," << y;
      else d << " H" << x << " V" << y;
      best = t.m.value, any = true;
    }
    if (any) {
      d << " H" << X(xmax);
      s << "<path d=\"" << d.str() << "\" fill=\"none\" stroke=\"" << col
        << "\" stroke-width=\"2\" class=\"best-so-far\"/>\n";
    }
    for (const auto& t : res.trials) {
      double x = X(t.runs_before + t.m.repeats);
      if (t.m.ok)
        s << "<circle cx=\"" << x << "\" cy=\"" << Y(shown(t.m.value)) << "\" r=\"3\" fill=\"" << col
          << "\" class=\"trial\"/>\n";
      else if (t.m.capped)
        triangle(x, wall_axis ? Y(t.m.lower_bound) : top + 6, col);
      else
        cross(x, axis, col);
    }
  }
  // Legend: a colour per strategy run, then the marks.
  double lx = W - R + 12, ly = T + 10;
  for (size_t i = 0; i < in.runs.size(); ++i, ly += 18) {
    s << "<line x1=\"" << lx << "\" y1=\"" << ly << "\" x2=\"" << lx + 20 << "\" y2=\"" << ly << "\" stroke=\""
      << kColours[i % 8] << "\" stroke-width=\"2\"/>\n";
    s << "<text x=\"" << lx + 26 << "\" y=\"" << ly + 4 << "\">" << xml_escape(in.runs[i].label) << "</text>\n";
  }
  ly += 8;
  const char* ink = "#333";
  s << "<line x1=\"" << lx << "\" y1=\"" << ly << "\" x2=\"" << lx + 20 << "\" y2=\"" << ly << "\" stroke=\"" << ink
    << "\" stroke-width=\"2\"/><text x=\"" << lx + 26 << "\" y=\"" << ly + 4 << "\">best so far</text>\n";
  ly += 18;
  s << "<line x1=\"" << lx << "\" y1=\"" << ly << "\" x2=\"" << lx + 20 << "\" y2=\"" << ly << "\" stroke=\"" << ink
    << "\" stroke-dasharray=\"6,4\"/><text x=\"" << lx + 26 << "\" y=\"" << ly + 4 << "\">default</text>\n";
  ly += 18;
  s << "<circle cx=\"" << lx + 10 << "\" cy=\"" << ly << "\" r=\"3\" fill=\"" << ink << "\"/><text x=\"" << lx + 26
    << "\" y=\"" << ly + 4 << "\">trial (median)</text>\n";
  ly += 18;
  cross(lx + 10, ly, ink);
  s << "<text x=\"" << lx + 26 << "\" y=\"" << ly + 4 << "\">failed (on the axis)</text>\n";
  ly += 18;
  triangle(lx + 10, ly, ink);
  s << "<text x=\"" << lx + 26 << "\" y=\"" << ly + 4 << "\">" << (wall_axis ? "capped (at least)" : "capped (slower)")
    << "</text>\n";
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

  // The headline: one speedup, the first run's, re-measured when it was.
  if (!in.runs.empty()) {
    const ReportRun& head = in.runs.front();
    const TuneResult& res = head.result;
    const auto& v = head.verification;
    if (res.best < 0) {
      md << "**No speedup**: every trial failed" << (res.trials.empty() ? " (none ran)" : "") << ".\n\n";
    } else if (res.trials[res.best].config.empty()) {
      md << "**No speedup**: the default was the best configuration tried.\n\n";
    } else {
      double sp = res.speedup, spread = res.speedup_spread;
      std::string basis;
      if (v && v->ok) {
        sp = v->speedup, spread = v->spread;
        md << "**Speedup " << remeasured_text(v) << "** over the default, re-measured: median of "
           << v->reference.size() << " interleaved default/best pairs";
      } else {
        md << "**Speedup " << estimate_text(res) << "** over the default, from the search's trial medians ("
           << (v ? "the re-measurement " + remeasured_text(v) : std::string("not re-measured")) << ")";
      }
      md << "; best configuration (" << head.label << "): `" << md_cell(config_text(res.trials[res.best].config))
         << "`.\n\n";
      if (!in.answer && sp > 0 && sp * (1 - spread) <= 1)
        md << "The interval reaches 1: no configuration beat the default beyond noise; keep the defaults.\n\n";
    }
  }
  if (in.answer) {
    if (in.answer->keep_defaults)
      md << "**Answer: keep your defaults.** No configuration beat the default beyond noise; nothing is exported.\n\n";
    else
      md << "**Answer: apply `" << md_cell(config_text(in.answer->config)) << "`** (what the command exported"
         << (in.answer->minimise.empty() ? "" : "; minimised: " + in.answer->minimise) << ").\n\n";
  }
  md << "![trials, default and best so far per run](" << svg_name << ")\n\n";

  const RunConditions& c = in.conditions;
  md << "## Conditions\n\n| | |\n|---|---|\n";
  md << "| machine | " << md_cell(c.cpu_model.empty() ? "CPU model unknown" : c.cpu_model) << "; "
     << c.online_cpus << " online CPUs; " << fixed(c.mem_total / (1024.0 * 1024 * 1024), 1) << " GiB memory |\n";
  md << "| load average at start | ";
  if (c.load_at_start && c.load_at_start->size() == 3)
    md << fixed((*c.load_at_start)[0]) << ", " << fixed((*c.load_at_start)[1]) << ", " << fixed((*c.load_at_start)[2])
       << " (1, 5, 15 min)";
  else
    md << "unknown";
  md << " |\n| inherited environment | ";
  if (c.inherited.empty()) md << "none of the controls' variables set";
  for (auto it = c.inherited.begin(); it != c.inherited.end(); ++it)
    md << (it == c.inherited.begin() ? "" : ", ") << "`" << md_cell(it->first + "=" + it->second) << "`";
  md << " |\n| syspilot | " << md_cell(c.version.empty() ? "unknown" : c.version) << " |\n";
  md << "| started (UTC) | " << (c.started.empty() ? "unknown" : c.started) << " |\n";

  md << "\n## Strategies\n\nDetails per strategy run; the re-measured speedup is the interleaved fresh one, the "
        "search's estimate compares trial medians.\n\n"
     << "| strategy | trials | runs | best configuration | re-measured speedup | search's estimate | stop |\n"
     << "|---|---|---|---|---|---|---|\n";
  for (const auto& r : in.runs) {
    const auto& res = r.result;
    md << "| " << md_cell(r.label) << " | " << res.trials.size() << " | " << res.runs << " | "
       << (res.best >= 0 ? "`" + md_cell(config_text(res.trials[res.best].config)) + "`" : "none") << " | "
       << md_cell(remeasured_text(r.verification)) << " | " << estimate_text(res) << " | " << res.stop_reason
       << " |\n";
  }

  auto setters = [&](const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names)
      if (is_setter(n, in.space)) out += (out.empty() ? "" : ", ") + n;
    return out;
  };
  if (!in.guides.empty()) {
    md << "\n## Hypotheses that guided the search\n\n| id | kind | controls |\n|---|---|---|\n";
    for (const auto& g : in.guides)
      md << "| " << md_cell(g.id) << " | " << md_cell(g.kind) << " | " << md_cell(setters(g.controls)) << " |\n";
  }
  md << "\n## Search space\n\n| control | kind | values | default |\n|---|---|---|---|\n";
  for (const auto& p : in.space.params) {
    if (!is_setter(p.name, in.space)) continue;
    std::string vals;
    for (const auto& v : p.values) vals += (vals.empty() ? "" : ", ") + v;
    const char* kind = p.kind == Param::Kind::Api ? "api" : p.kind == Param::Kind::Option ? "option" : "env";
    md << "| " << md_cell(p.name) << " | " << kind << " | " << md_cell(vals) << " | " << md_cell(p.default_value)
       << " |\n";
  }
  auto constraints = constraints_of(in);
  if (!constraints.empty()) {
    md << "\n| constraint | implied by |\n|---|---|\n";
    for (const auto& [text, by] : constraints) {
      std::string ids;
      for (const auto& id : by) ids += (ids.empty() ? "" : ", ") + id;
      md << "| `" << md_cell(text) << "` | " << md_cell(ids.empty() ? "the space" : ids) << " |\n";
    }
  }
  if (!in.node_defaults.empty()) {
    md << "\n## Nodes\n\nEach node's default, measured first there; a value measured on another node than "
       << "the reference is scaled by the reference's default over that node's.\n\n| node | default | ratio |\n"
       << "|---|---|---|\n";
    const double ref = in.node_defaults.count(in.reference_node) ? in.node_defaults.at(in.reference_node) : 0;
    for (const auto& [node, value] : in.node_defaults)
      md << "| " << md_cell(node) << (node == in.reference_node ? " (reference)" : "") << " | " << shown(value) << " | "
         << (value != 0 && ref != 0 ? fmt(ref / value, 3) : "-") << " |\n";
  }
  for (const auto& r : in.runs) {
    const bool nodes = std::any_of(r.result.trials.begin(), r.result.trials.end(),
                                   [](const Trial& t) { return !t.m.node.empty(); });
    md << "\n## Trials: " << r.label << "\n\n| # | configuration | value | runs | " << (nodes ? "node | " : "")
       << "note |\n|---|---|---|---|" << (nodes ? "---|" : "") << "---|\n";
    for (const auto& t : r.result.trials) {
      const Measurement& m = t.m;
      std::string value = "-", note;
      if (m.ok) {
        int n = runs_measured(m);
        value = shown(m.value) + (n > 1 ? " +-" + pct(m.spread) : "");
        note = t.index == r.result.best ? "best" : t.index == r.result.reference ? "default" : "";
      } else if (m.capped) {
        value = ">= " + fmt(m.lower_bound, 4) + " s";
        note = m.failure;
      } else {
        note = "failed: " + m.failure;
      }
      md << "| " << t.index + 1 << " | `" << md_cell(config_text(t.config)) << "` | " << value << " | "
         << runs_text(m.ok ? runs_measured(m) : m.repeats) << " | " << (nodes ? md_cell(m.node) + " | " : "")
         << md_cell(note) << " |\n";
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
  s << render_svg(in);
  std::ofstream m(p);
  if (!m) throw std::runtime_error("cannot write " + p.string());
  m << render_markdown(in, svg.filename().string());
  if (!s || !m) throw std::runtime_error("writing the report to " + p.string() + " failed");
  return svg.string();
}

}  // namespace syspilot::tuner

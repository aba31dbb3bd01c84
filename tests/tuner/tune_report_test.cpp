// The tuning report (tuner/report.h): one headline speedup with its interval, single runs
// without an interval, setters only as controls, each constraint once, the session's conditions,
// and a plot that renders to a picture that is not blank; from sessions built here and from a
// real `syspilot tune --report` on omp_loop.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "tests/tuner/analyze_support.h"
#include "tests/tuner/tune_cli_support.h"
#include "tuner/report.h"
#include "tuner/run.h"
#include "tuner/space.h"

using namespace syspilot::tuner;
using testing_support::Scratch;

namespace {

Trial trial(int index, Config c, int runs_before, std::vector<double> samples) {
  Trial t;
  t.index = index;
  t.config = std::move(c);
  t.runs_before = runs_before;
  t.m.ok = true;
  t.m.samples = samples;
  t.m.repeats = static_cast<int>(samples.size());
  t.m.value = median(samples);
  t.m.spread = relative_spread(samples);
  return t;
}

Trial failed(int index, Config c, int runs_before, const std::string& why, double capped_after = 0) {
  Trial t;
  t.index = index;
  t.config = std::move(c);
  t.runs_before = runs_before;
  t.m.repeats = 1;
  t.m.failure = why;
  if (capped_after > 0) t.m.capped = true, t.m.lower_bound = t.m.value = capped_after;
  return t;
}

Param param(const std::string& name, Param::Kind kind, std::vector<std::string> values) {
  Param p;
  p.name = name;
  p.kind = kind;
  p.values = std::move(values);
  p.numeric = true;
  return p;
}

// Two strategy runs: syspilot (re-measured; a failed and a capped trial among its five) and
// random (two single runs, not re-measured).
ReportInput session() {
  const std::string split = "OMP_NUM_THREADS * OPENBLAS_NUM_THREADS <= ncores";
  ReportInput in;
  in.argv = {"omp_blas", "1500"};
  in.space.params = {param("OMP_NUM_THREADS", Param::Kind::Env, {"1", "2", "4"}),
                     param("OPENBLAS_NUM_THREADS", Param::Kind::Env, {"1", "2", "4"}),
                     param("openblas_set_num_threads", Param::Kind::Api, {"1", "2"}),
                     param("openblas_get_num_threads", Param::Kind::Api, {"1", "2"})};
  in.space.params[1].falls_back_on = {"GOTO_NUM_THREADS", "OMP_NUM_THREADS"};
  in.space.params[1].default_expr = "OPENBLAS_NUM_THREADS ?? OMP_NUM_THREADS ?? ncpus";
  in.space.constraints = {split, split};
  Guide nested;
  nested.id = "nested_oversubscription:libgomp>openblas";
  nested.kind = "nested_oversubscription";
  nested.controls = {"OMP_NUM_THREADS", "omp_get_max_threads", "openblas_set_num_threads", "openblas_get_num_threads"};
  nested.constraint = split;
  Guide corun = nested;
  corun.id = "corun_oversubscription:libgomp+openblas";
  corun.kind = "corun_oversubscription";
  in.guides = {nested, corun};

  TuneResult s;
  s.trials = {trial(0, {}, 0, {0.98, 1.0, 1.02}), trial(1, {{"OMP_NUM_THREADS", "1"}}, 3, {0.85}),
              failed(2, {{"OMP_NUM_THREADS", "4"}}, 4, "exit 3"),
              failed(3, {{"OPENBLAS_NUM_THREADS", "4"}}, 5, "capped at 4 s (3x the incumbent's 1 s + 1 s)", 4),
              trial(4, {{"OMP_NUM_THREADS", "1"}, {"OPENBLAS_NUM_THREADS", "1"}}, 6, {0.8})};
  s.reference = 0, s.best = 4, s.runs = 7, s.capped = 1;
  s.speedup = 1.25, s.speedup_spread = 0.04, s.stop_reason = "budget";
  Verification v;
  v.ok = true, v.speedup = 1.2, v.spread = 0.05;
  v.reference = {1, 1, 1, 1, 1};
  v.candidate = {0.8, 0.8, 0.8, 0.8, 0.8};
  in.runs.push_back({"syspilot", s, v});

  TuneResult r;
  r.trials = {trial(0, {}, 0, {1.0}), trial(1, {{"OMP_NUM_THREADS", "2"}}, 1, {0.9})};
  r.reference = 0, r.best = 1, r.runs = 2, r.speedup = 1.0 / 0.9, r.stop_reason = "budget";
  in.runs.push_back({"random", r, std::nullopt});
  in.conditions = observe_conditions(in.space, {{"OMP_NUM_THREADS", "4"},
                                                {"GOTO_NUM_THREADS", "2"},
                                                {"HOME", "/root"},
                                                {"OMP_WAIT_POLICY", "active"}});
  in.conditions.version = "1.2.3";
  return in;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), {}};
}

RunResult command(std::vector<std::string> argv, std::map<std::string, std::string> env = {}) {
  RunSpec rs;
  rs.argv = std::move(argv);
  rs.env_set = std::move(env);
  rs.timeout_s = 120;
  rs.sample_interval_s = 0;
  rs.perf = false;
  rs.placeholders = false;
  return run(rs);
}

}  // namespace

TEST(TuneReport, OneHeadlineSpeedupReMeasuredWithItsInterval) {
  std::string md = render_markdown(session(), "r.svg");
  EXPECT_EQ(count(md, "**Speedup"), 1u) << md;
  EXPECT_NE(md.find("**Speedup 1.20x (1.14x to 1.26x)** over the default, re-measured: median of 5 interleaved"),
            std::string::npos)
      << md;
  // The search's own estimate is a labelled detail of the strategies' table, nowhere above it.
  size_t details = md.find("## Strategies");
  ASSERT_NE(details, std::string::npos) << md;
  EXPECT_EQ(md.find("1.25x"), md.find("| 1.25x (1.20x to 1.30x) |", details) + 2) << md;
  EXPECT_GT(md.find("1.25x"), details) << md;
  EXPECT_NE(md.find("search's estimate"), std::string::npos) << md;
  // Single runs carry no interval: random's two trials, the best's lone run.
  EXPECT_EQ(md.find("+-0%"), std::string::npos) << md;
  EXPECT_NE(md.find("| random | 2 | 2 | `OMP_NUM_THREADS=2` | not re-measured | 1.11x (single runs, no interval) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 2 | `OMP_NUM_THREADS=1` | 0.85 | 1 run |  |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 | `default` | 1 +-2% | 3 runs | default |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 3 | `OMP_NUM_THREADS=4` | - | 1 run | failed: exit 3 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| >= 4 s | 1 run | capped at 4 s"), std::string::npos) << md;
}

// The report ends where the command ends: the configuration it exported after minimisation, or
// "keep your defaults"; without an answer (--compare) it shows none.
TEST(TuneReport, TheAnswerIsWhatTheCommandExported) {
  ReportInput in = session();
  EXPECT_EQ(render_markdown(in, "r.svg").find("**Answer"), std::string::npos);
  in.answer.emplace();
  in.answer->config = {{"OPENBLAS_NUM_THREADS", "1"}};
  in.answer->minimise = "4 runs, dropped 1 of 2 controls of OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1";
  std::string md = render_markdown(in, "r.svg");
  EXPECT_NE(md.find("**Answer: apply `OPENBLAS_NUM_THREADS=1`** (what the command exported; minimised: 4 runs, dropped 1 "
                    "of 2 controls of OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1)"),
            std::string::npos)
      << md;
  EXPECT_LT(md.find("**Speedup"), md.find("**Answer")) << md;
  in.answer = ReportInput::Answer{true, {}, ""};
  md = render_markdown(in, "r.svg");
  EXPECT_NE(md.find("**Answer: keep your defaults.**"), std::string::npos) << md;
  EXPECT_EQ(count(md, "keep"), 1u) << md;
}

TEST(TuneReport, SettersOnlyAndEveryConstraintOnce) {
  std::string md = render_markdown(session(), "r.svg");
  EXPECT_EQ(md.find("_get_"), std::string::npos) << md;  // queries are no controls
  EXPECT_NE(md.find("| OMP_NUM_THREADS, openblas_set_num_threads |"), std::string::npos) << md;
  EXPECT_NE(md.find("| openblas_set_num_threads | api | 1, 2 |"), std::string::npos) << md;
  EXPECT_EQ(count(md, "OMP_NUM_THREADS * OPENBLAS_NUM_THREADS <= ncores"), 1u) << md;
  EXPECT_NE(md.find("| `OMP_NUM_THREADS * OPENBLAS_NUM_THREADS <= ncores` | nested_oversubscription:libgomp>openblas, "
                    "corun_oversubscription:libgomp+openblas |"),
            std::string::npos)
      << md;
  Space s;
  s.params = {param("omp_set_num_threads", Param::Kind::Api, {"1"}), param("cudaGetDevice", Param::Kind::Api, {"1"}),
              param("GET_READY", Param::Kind::Env, {"1"})};
  EXPECT_TRUE(is_setter("omp_set_num_threads", s));
  EXPECT_FALSE(is_setter("cudaGetDevice", s));
  EXPECT_FALSE(is_setter("omp_get_max_threads", s));  // named by a guide, outside the space
  EXPECT_TRUE(is_setter("GET_READY", s));              // an env variable is set whatever its name
  EXPECT_TRUE(is_setter("budget_gate", s));
}

TEST(TuneReport, ConditionsOfTheSession) {
  ReportInput in = session();
  std::string md = render_markdown(in, "r.svg");
  // The controls' variables the caller set, the one a default falls back on included; nothing else.
  EXPECT_EQ(in.conditions.inherited,
            (std::map<std::string, std::string>{{"GOTO_NUM_THREADS", "2"}, {"OMP_NUM_THREADS", "4"}}));
  EXPECT_NE(md.find("| inherited environment | `GOTO_NUM_THREADS=2`, `OMP_NUM_THREADS=4` |"), std::string::npos) << md;
  EXPECT_EQ(md.find("HOME"), std::string::npos) << md;
  EXPECT_NE(md.find(std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + " online CPUs"), std::string::npos) << md;
  EXPECT_GT(in.conditions.mem_total, 0);
  EXPECT_NE(md.find("| syspilot | 1.2.3 |"), std::string::npos) << md;
  EXPECT_TRUE(std::regex_search(md, std::regex(R"(\| started \(UTC\) \| 20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]Z \|)")))
      << md;
  ASSERT_TRUE(in.conditions.load_at_start);
  EXPECT_NE(md.find("(1, 5, 15 min)"), std::string::npos) << md;
  // Another environment: none of the controls' variables set.
  in.conditions = observe_conditions(in.space, {{"PATH", "/bin"}});
  EXPECT_NE(render_markdown(in, "r.svg").find("none of the controls' variables set"), std::string::npos);
}

TEST(TuneReport, HeadlineWithoutReMeasurement) {
  ReportInput in = session();
  in.runs.resize(1);
  in.runs[0].verification->ok = false;
  in.runs[0].verification->failure = "every run of the best failed";
  std::string md = render_markdown(in, "r.svg");
  EXPECT_EQ(count(md, "**Speedup"), 1u) << md;
  EXPECT_NE(md.find("**Speedup 1.25x (1.20x to 1.30x)** over the default, from the search's trial medians (the "
                    "re-measurement failed: every run of the best failed)"),
            std::string::npos)
      << md;
  // A re-measured speedup whose interval reaches 1 says to keep the defaults.
  in.runs[0].verification->ok = true;
  in.runs[0].verification->speedup = 1.02;
  in.runs[0].verification->spread = 0.04;
  md = render_markdown(in, "r.svg");
  EXPECT_NE(md.find("**Speedup 1.02x (0.98x to 1.06x)**"), std::string::npos) << md;
  EXPECT_NE(md.find("keep the defaults"), std::string::npos) << md;
  // The default as the best: no speedup at all.
  in.runs[0].result.best = 0;
  md = render_markdown(in, "r.svg");
  EXPECT_EQ(md.find("**Speedup"), std::string::npos) << md;
  EXPECT_NE(md.find("**No speedup**: the default was the best configuration tried."), std::string::npos) << md;
}

TEST(TuneReport, PlotMarksEveryTrialAndRendersToAPicture) {
  Scratch s("report-plot");
  ReportInput in = session();
  std::string svg = write_report(s / "r.md", in);
  EXPECT_EQ(svg, s / "r.svg");
  std::string plot = slurp(svg);
  // Five successful trials in all, one failed, one capped (plus one of each in the legend).
  EXPECT_EQ(count(plot, "class=\"trial\""), 5u) << plot;
  EXPECT_EQ(count(plot, "class=\"failed\""), 2u) << plot;
  EXPECT_EQ(count(plot, "class=\"capped\""), 2u) << plot;
  EXPECT_EQ(count(plot, "class=\"default\""), 2u) << plot;
  EXPECT_EQ(count(plot, "class=\"best-so-far\""), 2u) << plot;
  for (const char* legend : {">syspilot</text>", ">random</text>", ">default</text>", ">best so far</text>",
                             ">failed (on the axis)</text>", ">capped (at least)</text>"})
    EXPECT_NE(plot.find(legend), std::string::npos) << legend;
  EXPECT_NE(slurp(s / "r.md").find("](r.svg)"), std::string::npos);

  // ImageMagick renders SVG through rsvg-convert (librsvg2-bin); rsvg-convert alone does too.
  auto render = [&](const std::string& from, const std::string& to) {
    return command({"convert", from, to}).ok() || command({"rsvg-convert", "-o", to, from}).ok();
  };
  std::string png = s / "r.png";
  if (!render(svg, png) || !std::filesystem::exists(png)) GTEST_SKIP() << "no SVG renderer (install librsvg2-bin)";
  auto stats = [&](const std::string& file) {
    RunResult r = command({"convert", file, "-format", "%[fx:standard_deviation] %k", "info:"});
    EXPECT_TRUE(r.ok()) << r.failure << r.stderr_text;
    double sd = -1;
    long colours = 0;
    std::istringstream(r.stdout_text) >> sd >> colours;
    return std::make_pair(sd, colours);
  };
  auto [sd, colours] = stats(png);
  EXPECT_GT(sd, 0.01) << "the plot rendered blank";
  EXPECT_GE(colours, 8) << "strategies, marks and text should give many colours";
  // Each strategy's colour is drawn.
  RunResult hist = command({"convert", png, "-format", "%c", "histogram:info:"});
  ASSERT_TRUE(hist.ok()) << hist.stderr_text;
  EXPECT_NE(hist.stdout_text.find("#1F77B4"), std::string::npos) << "syspilot's blue is missing";
  EXPECT_NE(hist.stdout_text.find("#D62728"), std::string::npos) << "random's red is missing";
  // The check tells a blank picture apart.
  std::ofstream(s / "blank.svg") << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"60\" height=\"40\">"
                                    "<rect width=\"100%\" height=\"100%\" fill=\"white\"/></svg>\n";
  ASSERT_TRUE(render(s / "blank.svg", s / "blank.png"));
  EXPECT_LT(stats(s / "blank.png").first, 0.001);
}

#ifdef SYSPILOT_CLI
// A real session: `syspilot tune --report` on omp_loop with a control set in the caller's
// environment. The report's headline is the speedup the command prints, its conditions name
// the version `syspilot --version` gives and the inherited OMP_WAIT_POLICY, and no query
// function is listed as a control.
TEST(TuneReport, FromARealSession) {
  Scratch s("report-cli");
  RunResult r = command({SYSPILOT_CLI, "tune", "--db", s / "t.db", "--space", "all", "--budget", "6", "--max-repeats",
                         "1", "--verify", "2", "--report", s / "r.md", "--", std::string(SYSPILOT_TEST_PROGRAMS) +
                         "/omp_loop", "200", "20000"},
                        {{"OMP_WAIT_POLICY", "active"}});
  ASSERT_TRUE(r.ok()) << r.failure << r.stderr_text;
  std::string md = slurp(s / "r.md"), plot = slurp(s / "r.svg");
  ASSERT_FALSE(md.empty()) << r.stderr_text;
  EXPECT_EQ(plot.rfind("<svg", 0), 0u);
  EXPECT_GE(count(plot, "class=\"trial\""), 1u);

  RunResult v = command({SYSPILOT_CLI, "--version"});
  ASSERT_TRUE(v.ok());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(v.stdout_text, m, std::regex("syspilot ([^\\s]+)"))) << v.stdout_text;
  EXPECT_NE(md.find("| syspilot | " + m[1].str() + " |"), std::string::npos) << md;
  EXPECT_NE(md.find("`OMP_WAIT_POLICY=active`"), std::string::npos) << md;
  EXPECT_NE(md.find("load average at start | "), std::string::npos) << md;
  EXPECT_EQ(md.find("| unknown"), std::string::npos) << md;
  EXPECT_EQ(md.find("+-0%"), std::string::npos) << md;

  // Controls listed: no query among them.
  size_t space = md.find("## Search space"), trials = md.find("## Trials");
  ASSERT_NE(space, std::string::npos) << md;
  std::string listed = md.substr(0, trials).substr(md.find("## Hypotheses") == std::string::npos ? space
                                                                                                : md.find("## Hypotheses"));
  EXPECT_TRUE(listed.find("_get_") == std::string::npos && listed.find("Get") == std::string::npos) << listed;

  // The answer is the exported configuration: every line the command printed for it.
  std::smatch ans;
  ASSERT_TRUE(std::regex_search(md, ans, std::regex(R"(\*\*Answer: (apply `([^`]*)`|keep your defaults))"))) << md;
  if (ans[2].matched) {
    std::string exported;
    std::istringstream out(r.stdout_text);
    for (std::string line; std::getline(out, line);)
      if (!line.empty() && line[0] != '#' && line.rfind("LD_PRELOAD=", 0) != 0) exported += (exported.empty() ? "" : " ") + line;
    EXPECT_EQ(ans[2].str(), exported) << md << r.stdout_text;
  }

  // One headline; when it is a speedup, it is the command's.
  size_t heads = count(md, "**Speedup") + count(md, "**No speedup");
  EXPECT_EQ(heads, 1u) << md;
  std::smatch said, shown;
  if (std::regex_search(md, shown, std::regex(R"(\*\*Speedup ([0-9.]+)x)"))) {
    ASSERT_TRUE(std::regex_search(r.stdout_text, said, std::regex(R"(speedup ([0-9.]+)x)"))) << r.stdout_text;
    EXPECT_EQ(shown[1].str(), said[1].str()) << md << r.stdout_text;
  }
}
#endif

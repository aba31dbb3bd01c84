// Time to first render of the dashboard's session page for a session of N trials (default 500):
// a store holding one such session, `syspilot serve` in this process, Debian's headless
// Chromium loading /#/session/1 again and again. The figure is the page's own mark
// (performance.mark when the page is rendered), counted from the start of navigation: the
// HTML, the scripts, the API call and the DOM with the plot and the table of every trial.
// Usage: dashboard_bench [TRIALS] [LOADS]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>

#include "service/service.h"
#include "tests/support/browser.h"
#include "tuner/session.h"

namespace fs = std::filesystem;
using namespace syspilot;

namespace {

// A session as a long tune leaves it: values that improve with noise, some failed and some
// capped trials, three controls, tune's conclusion.
void fill(const std::string& db, int trials) {
  tuner::SessionStore st(db);
  tuner::SessionInfo s;
  s.argv = {"/usr/bin/app", "--size", "4096"};
  s.strategy = "syspilot";
  s.budget = trials;
  s.space_json = R"({"params":[{"name":"OMP_NUM_THREADS","values":["1","2","4","8","16"],"kind":"env"},)"
                 R"({"name":"OPENBLAS_NUM_THREADS","values":["1","2","4","8","16"],"kind":"env"},)"
                 R"({"name":"OMP_WAIT_POLICY","values":["active","passive"],"kind":"env"}]})";
  s.options_json = R"({"machine":{"host":"bench","ncpus":16,"ncores":16,"nnuma":1,"ngpus":0}})";
  const std::int64_t id = st.create(s);
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  const char* threads[] = {"1", "2", "4", "8", "16"};
  int runs = 0;
  for (int i = 0; i < trials; ++i) {
    tuner::Trial t;
    t.index = i;
    t.strategy = "syspilot";
    if (i > 0)
      t.config = {{"OMP_NUM_THREADS", threads[rng() % 5]}, {"OPENBLAS_NUM_THREADS", threads[rng() % 5]},
                  {"OMP_WAIT_POLICY", rng() % 2 ? "active" : "passive"}};
    const double r = u(rng);
    t.m.repeats = 1 + static_cast<int>(rng() % 3);
    t.runs_before = runs;
    runs += t.m.repeats;
    if (r < 0.03) {
      t.m.ok = false;
      t.m.failure = "exit status 1";
    } else if (r < 0.08) {
      t.m.ok = false;
      t.m.value = 6.0;
      t.m.failure = "capped at 6.0 s";
    } else {
      t.m.ok = true;
      t.m.value = 1.0 + 2.0 * std::exp(-i / 80.0) * u(rng) + 0.05 * u(rng);
      t.m.spread = 0.02;
      for (int k = 0; k < t.m.repeats; ++k) t.m.samples.push_back(t.m.value);
    }
    st.add_trial(id, t);
  }
  st.finish(id, "finished");
  st.set_result(id, R"({"verdict":"configuration","config":{"OMP_NUM_THREADS":"4","OPENBLAS_NUM_THREADS":"1"},)"
                    R"("speedup":2.4,"speedup_spread":0.03,"speedup_basis":"fresh re-measurement","minimise":null})");
}

}  // namespace

int main(int argc, char** argv) {
  const int trials = argc > 1 ? std::max(1, std::atoi(argv[1])) : 500;
  const int loads = argc > 2 ? std::max(1, std::atoi(argv[2])) : 10;
  const std::string chromium = testsupport::find_chromium();
  if (chromium.empty()) {
    std::cerr << "dashboard_bench: chromium is not installed (scripts/setup.sh installs it)\n";
    return 2;
  }
  std::string tmpl = (fs::temp_directory_path() / "syspilot-dashboard-bench-XXXXXX").string();
  const fs::path dir = mkdtemp(tmpl.data());
  const std::string db = (dir / "bench.db").string();
  fill(db, trials);

  service::ServiceOptions o;
  o.db_path = db;
  o.port = 0;
  o.public_read = true;
  o.work_dir = (dir / "work").string();
  Diagnostics d;
  auto svc = service::Service::create(o, d);
  if (!svc || !svc->start(d)) {
    std::cerr << "dashboard_bench: " << d.str();
    return 2;
  }
  testsupport::RecordingProxy proxy;
  std::string why;
  auto browser = testsupport::Browser::launch(chromium, (dir / "profile").string(), proxy.port(), why);
  if (!browser) {
    std::cerr << "dashboard_bench: " << why << "\n";
    return 2;
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(svc->port()) + "/#/session/1";
  std::vector<double> ms;
  for (int i = 0; i <= loads; ++i) {  // the first load warms the caches and is not counted
    if (!browser->load(url) ||
        !browser->wait_for("document.body.dataset.page === 'session' && document.body.dataset.state === 'ready'", 30)) {
      std::cerr << "dashboard_bench: the session page did not render\n";
      return 1;
    }
    double t = browser->eval("performance.getEntriesByName('syspilot:rendered:session')[0].startTime").get<double>();
    if (i > 0) ms.push_back(t);
  }
  const int rows = browser->eval("document.querySelectorAll('table.trials tbody tr').length").get<int>();
  std::sort(ms.begin(), ms.end());
  std::printf("session page, %d trials (%d rows, one SVG plot): time to first render %.0f ms median of %d loads "
              "(min %.0f, max %.0f), from navigation start\n",
              trials, rows, ms[ms.size() / 2], loads, ms.front(), ms.back());
  browser.reset();
  svc->stop();
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}

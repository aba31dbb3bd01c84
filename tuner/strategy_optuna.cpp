// Optuna baselines (TPE, CMA-ES) through tuner/bridge/optuna_bridge.py: a Debian python3
// process driven over stdin/stdout JSON lines with Optuna's ask-and-tell API.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "lpcl/source_dir.h"
#include "tuner/search.h"

namespace syspilot::tuner {

std::unique_ptr<Strategy> make_optuna_strategy(const std::string& sampler, const Space& space,
                                               const StrategyContext& ctx);

namespace {

std::string bridge_script() {
  if (const char* s = std::getenv("SYSPILOT_OPTUNA_BRIDGE"); s && *s) return s;
  return std::string(SYSPILOT_SOURCE_DIR) + "/tuner/bridge/optuna_bridge.py";
}

// Debian's interpreter, where python3-optuna lives (a pyenv or venv python3 may lack it).
std::string python() {
  if (const char* s = std::getenv("SYSPILOT_PYTHON"); s && *s) return s;
  return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

class Bridge {
 public:
  Bridge() {
    std::string script = bridge_script();
    if (!std::filesystem::exists(script))
      throw std::runtime_error("Optuna bridge not found at " + script + "; set SYSPILOT_OPTUNA_BRIDGE");
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
      throw std::runtime_error(std::string("cannot start the Optuna bridge: ") + std::strerror(errno));
    std::string py = python();
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error(std::string("cannot fork the Optuna bridge: ") + std::strerror(errno));
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      execl(py.c_str(), py.c_str(), script.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  ~Bridge() {
    if (to_ >= 0) close(to_);  // EOF ends the bridge's loop
    if (from_ >= 0) close(from_);
    if (pid_ > 0) {
      int st;
      for (int i = 0; i < 50; ++i) {
        if (waitpid(pid_, &st, WNOHANG) == pid_) return;
        usleep(20000);
      }
      kill(pid_, SIGKILL);
      waitpid(pid_, &st, 0);
    }
  }
  Bridge(const Bridge&) = delete;
  Bridge& operator=(const Bridge&) = delete;

  nlohmann::json call(const nlohmann::json& req) {
    std::string line = req.dump() + "\n";
    signal(SIGPIPE, SIG_IGN);
    for (size_t off = 0; off < line.size();) {
      ssize_t n = write(to_, line.data() + off, line.size() - off);
      if (n <= 0) throw std::runtime_error("the Optuna bridge stopped (is python3-optuna installed?)");
      off += static_cast<size_t>(n);
    }
    // Importing Optuna takes seconds; an answer slower than a minute means the bridge is stuck.
    for (;;) {
      auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string ans = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        auto j = nlohmann::json::parse(ans, nullptr, false);
        if (j.is_discarded()) throw std::runtime_error("the Optuna bridge answered garbage: " + ans);
        if (j.contains("error")) throw std::runtime_error("Optuna bridge: " + j["error"].get<std::string>());
        return j;
      }
      pollfd p{from_, POLLIN, 0};
      int r = poll(&p, 1, 60000);
      if (r <= 0) throw std::runtime_error("the Optuna bridge did not answer within 60 s");
      char tmp[4096];
      ssize_t n = read(from_, tmp, sizeof tmp);
      if (n <= 0) throw std::runtime_error("the Optuna bridge exited (is python3-optuna installed? try: apt-get install python3-optuna)");
      buf_.append(tmp, static_cast<size_t>(n));
    }
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buf_;
};

class OptunaSearch : public Strategy {
 public:
  OptunaSearch(std::string sampler, const Space& space, std::uint64_t seed) : sampler_(std::move(sampler)) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : space.params)
      params.push_back({{"name", p.name}, {"values", p.values}, {"ordinal", p.numeric}});
    bridge_.call({{"op", "init"}, {"sampler", sampler_}, {"seed", seed % 2147483647}, {"params", params}});
    empty_ = space.params.empty();
  }
  std::string name() const override { return "optuna-" + sampler_; }

  std::optional<Config> next(const std::vector<Trial>& history) override {
    if (empty_) return std::nullopt;
    if (!replayed_) {
      // A resumed session: Optuna learns the trials this strategy measured before.
      replayed_ = true;
      for (const auto& t : history) {
        if (t.strategy != name() || t.m.repeats == 0) continue;
        nlohmann::json req = {{"op", "add"}, {"config", t.config}};
        if (t.m.ok)
          req["value"] = t.m.value;
        else
          req["failed"] = true;
        try {
          bridge_.call(req);
        } catch (const std::runtime_error&) {
          // A stored configuration outside the current domains is simply not taught.
        }
      }
    }
    if (pending_) {
      // Tell the outcome of the configuration asked last (the newest trial measuring it).
      for (auto it = history.rbegin(); it != history.rend(); ++it) {
        if (it->config != pending_config_) continue;
        if (it->m.ok)
          bridge_.call({{"op", "tell"}, {"trial", *pending_}, {"value", it->m.value}});
        else
          bridge_.call({{"op", "tell"}, {"trial", *pending_}, {"failed", true}});
        break;
      }
      pending_.reset();
    }
    auto ans = bridge_.call({{"op", "ask"}});
    Config c;
    for (auto& [k, v] : ans["config"].items()) c[k] = v.get<std::string>();
    pending_ = ans["trial"].get<int>();
    pending_config_ = c;
    return c;
  }

 private:
  std::string sampler_;
  Bridge bridge_;
  bool empty_ = false;
  bool replayed_ = false;
  std::optional<int> pending_;
  Config pending_config_;
};

}  // namespace

std::unique_ptr<Strategy> make_optuna_strategy(const std::string& sampler, const Space& space,
                                               const StrategyContext& ctx) {
  return std::make_unique<OptunaSearch>(sampler, space, ctx.seed);
}

}  // namespace syspilot::tuner

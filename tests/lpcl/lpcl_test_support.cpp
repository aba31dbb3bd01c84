// Helpers for the LPCL tests: parse-and-check, temporary files, child processes.
#include "lpcl_test_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace syspilot::lpcl::testing {

Result run(const std::string& text, bool checker) {
  Result r;
  r.doc = parse(text, "t.lpcl", r.diags);
  r.parsed = !r.diags.has_errors();
  if (checker && r.parsed) check(r.doc, r.diags);
  return r;
}

std::string first(const std::string& text) {
  Result r = run(text);
  return r.diags.empty() ? std::string("(no diagnostics)") : r.diags.items()[0].str();
}

std::vector<std::string> codes(const Diagnostics& d) {
  std::vector<std::string> out;
  for (auto& x : d.items()) out.push_back(x.code);
  return out;
}

std::string temp_dir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/lpcl-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
  return buf.data();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Process syspilot(const std::vector<std::string>& args, const std::string& input) {
  std::string dir = temp_dir();
  std::string in = dir + "/in", out = dir + "/out", err = dir + "/err";
  write_file(in, input);
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    std::string bin = SYSPILOT_BINARY;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (!std::freopen(in.c_str(), "rb", stdin) || !std::freopen(out.c_str(), "wb", stdout) ||
        !std::freopen(err.c_str(), "wb", stderr))
      ::_exit(127);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  Process p;
  int st = 0;
  ::waitpid(pid, &st, 0);
  p.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  p.out = read_file(out);
  p.err = read_file(err);
  fs::remove_all(dir);
  return p;
}

std::vector<std::string> repository_lpcl_files() {
  std::vector<std::string> out;
  fs::path root = SYSPILOT_SOURCE_DIR;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied);
       it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name.rfind("build", 0) == 0 || name == ".deps" || name == ".git" || name == "node_modules")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && it->path().extension() == ".lpcl") out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace syspilot::lpcl::testing

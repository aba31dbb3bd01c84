// libFuzzer target for the HTTP surface of `syspilot serve`: each input is the bytes a client
// sends on one connection, served in process (Service::serve_bytes) by the real connection
// layer, parser, authentication and routes over a temporary store. "@READ@" and "@WRITE@" in
// an input become valid tokens, so that the fuzzer reaches authenticated routes too.
// Properties: nothing crashes, every response is framed HTTP/1.1, and no request ends in an
// unhandled exception (500 "internal"). Built without libFuzzer, main() replays files.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "service/service.h"

using namespace syspilot;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<service::Service> g_service;
std::string g_read, g_write, g_dir;

[[noreturn]] void broken(const char* property, const std::string& in, const std::string& out) {
  std::fprintf(stderr, "HTTP property broken: %s\n--- request (%zu bytes) ---\n%.2000s\n--- response ---\n%.2000s\n",
               property, in.size(), in.c_str(), out.c_str());
  std::abort();
}

void setup() {
  if (g_service) return;
  char tmpl[] = "/tmp/syspilot-http-fuzz-XXXXXX";
  g_dir = mkdtemp(tmpl);
  fs::create_directories(g_dir + "/root/foo");
  std::ofstream(g_dir + "/root/foo/foo.c") << "#include <stdlib.h>\nint n(void){return atoi(getenv(\"FOO_N\"));}\n";
  service::ServiceOptions o;
  o.db_path = g_dir + "/db.sqlite";
  o.work_dir = g_dir + "/work";
  o.source_roots = {g_dir + "/root"};
  o.limits.max_body_bytes = 64 << 10;
  Diagnostics d;
  g_service = service::Service::create(o, d);
  if (!g_service) {
    std::cerr << d.str();
    std::abort();
  }
  g_read = service::create_token(o.db_path, service::Scope::Read, "fuzz");
  g_write = service::create_token(o.db_path, service::Scope::Write, "fuzz");
  std::atexit([] {
    g_service.reset();
    std::error_code ec;
    fs::remove_all(g_dir, ec);
  });
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
}

// Walks the responses of one connection by their framing; checks each status line.
void check_responses(const std::string& in, const std::string& out) {
  size_t pos = 0;
  while (pos < out.size()) {
    if (out.compare(pos, 9, "HTTP/1.1 ") != 0) broken("response starts with a status line", in, out.substr(pos));
    size_t head_end = out.find("\r\n\r\n", pos);
    if (head_end == std::string::npos) broken("response head is complete", in, out.substr(pos));
    int status = std::atoi(out.c_str() + pos + 9);
    std::string head = out.substr(pos, head_end - pos);
    if (status >= 100 && status < 200) {  // interim: no body
      pos = head_end + 4;
      continue;
    }
    size_t cl = head.find("\r\nContent-Length: ");
    if (cl == std::string::npos) broken("response has a Content-Length", in, head);
    size_t length = std::strtoull(head.c_str() + cl + 18, nullptr, 10);
    // A response to HEAD states the length of the body it leaves out; bodies of this service
    // are JSON, LPCL or metrics text, never a status line.
    if (out.compare(head_end + 4, 9, "HTTP/1.1 ") == 0) length = 0;
    std::string body = out.substr(head_end + 4, length);
    if (status == 500 && body.find("\"internal\"") != std::string::npos)
      broken("no request ends in an unhandled exception", in, head + "\r\n\r\n" + body);
    if (status < 100 || status > 599) broken("status is 1xx-5xx", in, head);
    pos = head_end + 4 + length;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  setup();
  std::string in(reinterpret_cast<const char*>(data), size);
  replace_all(in, "@READ@", g_read);
  replace_all(in, "@WRITE@", g_write);
  std::string out = g_service->serve_bytes(in);
  check_responses(in, out);
  return 0;
}

#ifndef SYSPILOT_LIBFUZZER
// Replays files and folders of inputs (the committed corpus) without libFuzzer.
int main(int argc, char** argv) {
  size_t n = 0;
  for (int i = 1; i < argc; ++i) {
    std::vector<fs::path> files;
    if (fs::is_directory(argv[i])) {
      for (auto& e : fs::directory_iterator(argv[i]))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.push_back(argv[i]);
    }
    std::sort(files.begin(), files.end());
    for (auto& f : files) {
      std::ifstream s(f, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(s)), {});
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++n;
    }
  }
  std::printf("http_fuzz: replayed %zu inputs, no property broken\n", n);
  return n > 0 ? 0 : 1;
}
#endif

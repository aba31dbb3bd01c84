// The application's source scan: tree-sitter finds library call sites and the parallel regions
// and thread start routines they run in, through a call graph within the application. Which
// constructs open regions is data (tuner/rules/regions.json).
#include <tree_sitter/api.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tuner/compose.h"

extern "C" {
const TSLanguage* tree_sitter_c(void);
const TSLanguage* tree_sitter_cpp(void);
}

namespace fs = std::filesystem;

namespace syspilot::tuner::compose_detail {

std::vector<RegionRule> load_region_rules(const std::string& rules_dir, Diagnostics& diags) {
  std::vector<RegionRule> rules;
  std::string path = rules_dir_or_default(rules_dir) + "/regions.json";
  std::ifstream in(path);
  if (!in) {
    diags.warning({path, 0, 0}, "no parallel-region rules: the source scan will not see nesting", "no-region-rules",
                  "restore tuner/rules/regions.json or set SYSPILOT_RULES_DIR");
    return rules;
  }
  try {
    auto j = nlohmann::json::parse(in);
    for (auto& r : j.at("regions")) {
      RegionRule rr;
      rr.kind = r.at("kind").get<std::string>();
      rr.match = r.at("match").get<std::string>();
      rr.region = r.at("region").get<std::string>();
      rr.runtime = r.value("runtime", std::string());
      rr.start_arg = r.value("start_arg", -1);
      rules.push_back(rr);
    }
  } catch (const std::exception& e) {
    diags.error({path, 0, 0}, std::string("malformed region rules: ") + e.what(), "bad-region-rules",
                "fix the JSON (see docs/analysis.md)");
  }
  return rules;
}

namespace {

struct Text {
  const std::string& src;
  std::string of(TSNode n) const {
    if (ts_node_is_null(n)) return {};
    uint32_t b = ts_node_start_byte(n), e = ts_node_end_byte(n);
    if (e > src.size() || b > e) return {};
    return src.substr(b, e - b);
  }
};

std::string type_of(TSNode n) { return ts_node_is_null(n) ? "" : ts_node_type(n); }

TSNode field(TSNode n, const char* name) {
  return ts_node_child_by_field_name(n, name, static_cast<uint32_t>(std::strlen(name)));
}

// The last identifier of a callee or declarator: "ns::f" -> f, "obj.run" -> run.
std::string last_name(const std::string& text) {
  size_t end = text.size();
  while (end > 0 && !(std::isalnum(static_cast<unsigned char>(text[end - 1])) || text[end - 1] == '_')) --end;
  size_t b = end;
  while (b > 0 && (std::isalnum(static_cast<unsigned char>(text[b - 1])) || text[b - 1] == '_')) --b;
  return text.substr(b, end - b);
}

std::string collapse_ws(std::string s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One call from a function: to a library symbol or to another application function.
struct CallRec {
  std::string callee;   // last name
  std::string file;
  int line = 0;
  std::string function;
  std::vector<std::string> regions;  // local regions at the call
};

// A function handed to a region opener by name (pthread_create's start routine, a named
// function passed to std::thread or tbb::parallel_for).
struct StartRec {
  std::string function;
  std::string region_tag;
  std::vector<std::string> regions;  // local regions around the opener
  std::string caller;
};

class FileScan {
 public:
  FileScan(const std::string& file, const std::string& src, const std::vector<RegionRule>& rules,
           std::vector<Region>& regions, std::vector<CallRec>& calls, std::vector<StartRec>& starts,
           std::set<std::string>& defined)
      : file_(file), text_{src}, rules_(rules), regions_(regions), calls_(calls), starts_(starts), defined_(defined) {}

  void walk(TSNode n, const std::string& function, std::vector<std::string>& ctx) {
    std::string t = type_of(n);
    if (t == "function_definition") {
      TSNode decl = field(n, "declarator");
      while (!ts_node_is_null(decl) && type_of(decl) != "function_declarator") {
        TSNode inner = field(decl, "declarator");
        if (ts_node_is_null(inner)) break;
        decl = inner;
      }
      std::string name = last_name(text_.of(field(decl, "declarator")));
      if (!name.empty()) defined_.insert(name);
      std::vector<std::string> fresh;
      walk_children(n, name, fresh);
      return;
    }
    if (t == "call_expression") {
      on_call(n, function, ctx);
      return;
    }
    if (t == "declaration") {
      if (on_thread_decl(n, function, ctx)) return;
    }
    if (t == "compound_statement" || t == "translation_unit" || t == "declaration_list" ||
        t == "preproc_if" || t == "preproc_ifdef" || t == "preproc_else" || t == "case_statement") {
      walk_block(n, function, ctx);
      return;
    }
    walk_children(n, function, ctx);
  }

 private:
  int line_of(TSNode n) const { return static_cast<int>(ts_node_start_point(n).row) + 1; }

  std::string open_region(const RegionRule& r, TSNode at, const std::vector<std::string>& ctx,
                          const std::string& function) {
    Region reg;
    reg.function = function;
    reg.kind = r.region;
    reg.runtime = r.runtime;
    reg.file = file_;
    reg.line = line_of(at);
    reg.tag = r.region + "@" + file_ + ":" + std::to_string(reg.line);
    reg.enclosing = ctx;
    regions_.push_back(reg);
    return reg.tag;
  }

  void walk_children(TSNode n, const std::string& function, std::vector<std::string>& ctx) {
    uint32_t count = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < count; ++i) walk(ts_node_named_child(n, i), function, ctx);
  }

  // A statement list: `#pragma omp parallel ...` applies to the statement after it.
  void walk_block(TSNode n, const std::string& function, std::vector<std::string>& ctx) {
    uint32_t count = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < count; ++i) {
      TSNode child = ts_node_named_child(n, i);
      const RegionRule* pr = pragma_rule(child);
      if (pr && i + 1 < count) {
        std::string tag = open_region(*pr, child, ctx, function);
        ctx.push_back(tag);
        walk(ts_node_named_child(n, i + 1), function, ctx);
        ctx.pop_back();
        ++i;
        continue;
      }
      walk(child, function, ctx);
    }
  }

  const RegionRule* pragma_rule(TSNode n) const {
    std::string t = type_of(n);
    if (t != "preproc_call" && t != "preproc_pragma") return nullptr;
    std::string text = collapse_ws(text_.of(n));
    if (text.rfind("#pragma", 0) != 0 && text.rfind("# pragma", 0) != 0) return nullptr;
    std::string arg = collapse_ws(text.substr(text.find("pragma") + 6));
    for (auto& r : rules_)
      if (r.kind == "pragma" && arg.rfind(r.match, 0) == 0) return &r;
    return nullptr;
  }

  // Arguments that are code to run in a region: lambdas walked in place, function names recorded.
  void run_arguments(TSNode args, const RegionRule& r, const std::string& tag, const std::string& function,
                     std::vector<std::string>& ctx) {
    uint32_t count = ts_node_named_child_count(args);
    for (uint32_t i = 0; i < count; ++i) {
      TSNode a = ts_node_named_child(args, i);
      std::string at = type_of(a);
      bool chosen = r.start_arg < 0 || static_cast<int>(i) == r.start_arg;
      if (at == "lambda_expression") {
        ctx.push_back(tag);
        walk(field(a, "body"), function, ctx);
        ctx.pop_back();
      } else if (chosen && (at == "identifier" || at == "qualified_identifier" || at == "pointer_expression")) {
        std::string name = last_name(text_.of(a));
        if (!name.empty()) starts_.push_back({name, tag, ctx, function});
      } else {
        walk(a, function, ctx);
      }
    }
  }

  void on_call(TSNode n, const std::string& function, std::vector<std::string>& ctx) {
    TSNode fn = field(n, "function");
    TSNode args = field(n, "arguments");
    std::string callee_text = collapse_ws(text_.of(fn));
    std::string fn_type = type_of(fn);
    for (auto& r : rules_) {
      bool hit = false;
      if (r.kind == "call") hit = callee_text == r.match || ends_with(callee_text, "::" + r.match) ||
                                   (r.match.find("::") != std::string::npos && ends_with(callee_text, r.match));
      if (r.kind == "method") hit = fn_type == "field_expression" && ends_with(callee_text, r.match);
      if (r.kind == "thread_decl") hit = callee_text == r.match;  // std::thread(...) temporaries
      // `pool.emplace_back([&] {...})` on a container of threads starts one.
      if (r.kind == "thread_decl" && !hit && fn_type == "field_expression") {
        std::string object = collapse_ws(text_.of(field(fn, "argument")));
        std::string method = last_name(collapse_ws(text_.of(field(fn, "field"))));
        auto c = thread_containers_.find(object);
        hit = c != thread_containers_.end() && c->second == &r &&
              (method == "emplace_back" || method == "emplace" || method == "push_back" || method == "emplace_front");
      }
      if (!hit) continue;
      std::string tag = open_region(r, n, ctx, function);
      if (!ts_node_is_null(args)) run_arguments(args, r, tag, function, ctx);
      walk(fn, function, ctx);
      return;
    }
    CallRec c;
    c.callee = last_name(callee_text);
    c.file = file_;
    c.line = line_of(n);
    c.function = function;
    c.regions = ctx;
    if (!c.callee.empty()) calls_.push_back(c);
    walk_children(n, function, ctx);
  }

  // `std::thread t(f, ...)`, `std::jthread t([&]{...})`.
  bool on_thread_decl(TSNode n, const std::string& function, std::vector<std::string>& ctx) {
    std::string type = collapse_ws(text_.of(field(n, "type")));
    // Containers of threads (`std::vector<std::thread> pool;`): their emplace_back starts threads.
    for (auto& r : rules_) {
      if (r.kind != "thread_decl" || type == r.match) continue;
      std::string compact;
      for (char ch : type)
        if (ch != ' ') compact += ch;
      if (compact.find("<" + r.match + ">") == std::string::npos && compact.find("<" + r.match + ",") == std::string::npos)
        continue;
      uint32_t count = ts_node_named_child_count(n);
      for (uint32_t i = 0; i < count; ++i) {
        TSNode d = ts_node_named_child(n, i);
        std::string dt = type_of(d);
        TSNode name = dt == "init_declarator" ? field(d, "declarator") : d;
        if (dt == "identifier" || dt == "init_declarator") thread_containers_[collapse_ws(text_.of(name))] = &r;
      }
    }
    for (auto& r : rules_) {
      if (r.kind != "thread_decl" || type != r.match) continue;
      uint32_t count = ts_node_named_child_count(n);
      bool any = false;
      for (uint32_t i = 0; i < count; ++i) {
        TSNode d = ts_node_named_child(n, i);
        if (type_of(d) != "init_declarator") continue;
        TSNode value = field(d, "value");
        if (ts_node_is_null(value)) continue;
        std::string tag = open_region(r, d, ctx, function);
        run_arguments(value, r, tag, function, ctx);
        any = true;
      }
      return any;
    }
    return false;
  }

  std::string file_;
  Text text_;
  const std::vector<RegionRule>& rules_;
  std::vector<Region>& regions_;
  std::vector<CallRec>& calls_;
  std::vector<StartRec>& starts_;
  std::set<std::string>& defined_;
  std::map<std::string, const RegionRule*> thread_containers_;  // variable -> thread rule of its element type
};

bool source_file(const fs::path& p, bool& is_c) {
  std::string ext = p.extension().string();
  is_c = ext == ".c";
  static const std::set<std::string> exts = {".c", ".cc", ".cpp", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx"};
  return exts.count(ext) > 0;
}

}  // namespace

SourceScan scan_source(const std::string& root, const std::vector<RegionRule>& rules,
                       const std::map<std::string, std::string>& symbol_owner,
                       const std::vector<std::pair<std::string, std::string>>& owner_globs, Diagnostics& diags) {
  SourceScan out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    diags.error({root, 0, 0}, "--source is not a readable directory", "bad-source-dir",
                "pass the folder holding the application's C/C++ sources");
    return out;
  }
  std::vector<CallRec> calls;
  std::vector<StartRec> starts;
  std::set<std::string> defined;
  TSParser* parser = ts_parser_new();
  ts_parser_set_timeout_micros(parser, 10'000'000);
  constexpr size_t kMaxFile = 4u << 20;
  constexpr size_t kMaxFiles = 20000;
  auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const auto& entry = *it;
    std::string name = entry.path().filename().string();
    if (entry.is_directory(ec) && (name.rfind('.', 0) == 0 || name.rfind("build", 0) == 0)) {
      it.disable_recursion_pending();
      continue;
    }
    bool is_c = false;
    if (!entry.is_regular_file(ec) || !source_file(entry.path(), is_c)) continue;
    if (out.files >= kMaxFiles) {
      diags.warning({root, 0, 0}, "source scan stopped after " + std::to_string(kMaxFiles) + " files", "scan-limit");
      break;
    }
    if (entry.file_size(ec) > kMaxFile) {
      diags.note({entry.path().string(), 0, 0}, "skipped: larger than 4 MiB", "file-too-large");
      continue;
    }
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string src = ss.str();
    ts_parser_set_language(parser, is_c ? tree_sitter_c() : tree_sitter_cpp());
    TSTree* tree = ts_parser_parse_string(parser, nullptr, src.data(), static_cast<uint32_t>(src.size()));
    if (!tree) {
      ts_parser_reset(parser);
      diags.warning({entry.path().string(), 0, 0}, "could not be parsed in time; skipped", "parse-timeout");
      continue;
    }
    std::string rel = fs::relative(entry.path(), root, ec).string();
    FileScan scan(rel, src, rules, out.regions, calls, starts, defined);
    std::vector<std::string> ctx;
    scan.walk(ts_tree_root_node(tree), "", ctx);
    ts_tree_delete(tree);
    ++out.files;
  }
  ts_parser_delete(parser);

  // Call graph: a function runs in every region its callers run it in (fixpoint).
  std::map<std::string, std::set<std::string>> contexts;
  for (auto& s : starts) {
    auto& c = contexts[s.function];
    c.insert(s.region_tag);
    c.insert(s.regions.begin(), s.regions.end());
  }
  for (bool changed = true; changed;) {
    changed = false;
    auto absorb = [&](const std::string& callee, const std::vector<std::string>& local, const std::string& caller) {
      if (!defined.count(callee) || callee == caller) return;
      auto& c = contexts[callee];
      size_t before = c.size();
      c.insert(local.begin(), local.end());
      if (auto ci = contexts.find(caller); ci != contexts.end() && !caller.empty()) {
        c.insert(ci->second.begin(), ci->second.end());
      }
      changed |= c.size() != before;
    };
    for (auto& call : calls) absorb(call.callee, call.regions, call.function);
    for (auto& s : starts) {
      std::vector<std::string> local = s.regions;
      local.push_back(s.region_tag);
      absorb(s.function, local, s.caller);
    }
  }
  auto full_context = [&](const std::vector<std::string>& local, const std::string& function) {
    std::set<std::string> all(local.begin(), local.end());
    if (auto ci = contexts.find(function); ci != contexts.end()) all.insert(ci->second.begin(), ci->second.end());
    return std::vector<std::string>(all.begin(), all.end());
  };
  // Regions opened inside functions called from other regions run there too (an omp region
  // inside a thread's start routine runs in that thread).
  for (auto& r : out.regions) r.enclosing = full_context(r.enclosing, r.function);
  for (auto& call : calls) {
    std::string owner;
    if (auto o = symbol_owner.find(call.callee); o != symbol_owner.end()) owner = o->second;
    if (owner.empty())
      for (auto& [glob, lib] : owner_globs)
        if (glob_match(glob, call.callee)) {
          owner = lib;
          break;
        }
    if (owner.empty() || defined.count(call.callee)) continue;
    CallSite cs;
    cs.library = owner;
    cs.symbol = call.callee;
    cs.file = call.file;
    cs.line = call.line;
    cs.function = call.function;
    cs.regions = full_context(call.regions, call.function);
    out.calls.push_back(cs);
  }
  return out;
}

}  // namespace syspilot::tuner::compose_detail

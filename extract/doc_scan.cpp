// The doc scanner: strips the markup of each format to prose, splits it into sentences, and
// reports every knob-like name (FOO_BAR, foo_set_num_threads) with its sentence and line.
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "extract/extract.h"
#include "extract/scanners.h"

namespace syspilot::extract {

namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Words that look like knobs but name something else in most docs.
bool noise(const std::string& w) {
  static const std::set<std::string> words = {"CMAKE_BUILD_TYPE", "CMAKE_INSTALL_PREFIX", "NULL", "EOF", "UTF_8",
                                              "FILE_NAME", "SEEK_SET", "SEEK_END", "SEEK_CUR", "TODO", "FIXME",
                                              "EXIT_SUCCESS", "EXIT_FAILURE", "__FILE__", "__LINE__", "SIZE_MAX",
                                              "INT_MAX", "CHAR_BIT", "RAND_MAX", "LD_PRELOAD_"};
  return words.count(w) > 0;
}

}  // namespace

// Dotted option names in prose: opt.narenas (jemalloc's MALLOC_CONF), glibc.malloc.arena_max
// (GLIBC_TUNABLES). Only lower-case names of two or more parts whose last part names a
// resource, so file names (background_thread.c) and abbreviations (e.g.) stay out.
static void dotted_names_in(const std::string& s, std::vector<std::string>& out) {
  auto part_char = [](char c) { return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_'; };
  size_t i = 0, n = s.size();
  while (i < n) {
    if (!std::islower(static_cast<unsigned char>(s[i])) || (i > 0 && (ident_char(s[i - 1]) || s[i - 1] == '.'))) { ++i; continue; }
    size_t j = i;
    int parts = 1;
    while (j < n && (part_char(s[j]) || (s[j] == '.' && j + 1 < n && std::islower(static_cast<unsigned char>(s[j + 1]))))) {
      if (s[j] == '.') ++parts;
      ++j;
    }
    std::string w = s.substr(i, j - i);
    i = j;
    if (parts < 2 || w.size() > 64 || (j < n && (ident_char(s[j]) || std::isupper(static_cast<unsigned char>(s[j]))))) continue;
    std::string last = w.substr(w.rfind('.') + 1);
    bool knob = false;
    for (const char* k : {"thread", "worker", "arena", "affinity", "concurrency", "spin", "tcache"})
      if (last.find(k) != std::string::npos) knob = true;
    if (knob && std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
  }
}

// MALLOC_TOP_PAD_: upper case, three parts or more before the trailing underscore.
static bool trailing_underscore_name(const std::string& w) {
  if (w.size() < 2 || w[w.size() - 2] == '_') return false;
  size_t parts = 1;
  for (size_t k = 0; k + 1 < w.size(); ++k) {
    if (std::islower(static_cast<unsigned char>(w[k]))) return false;
    parts += w[k] == '_';
  }
  return parts >= 3;
}

std::vector<std::string> knob_names_in(const std::string& s) {
  std::vector<std::string> out;
  dotted_names_in(s, out);
  size_t i = 0, n = s.size();
  while (i < n) {
    if (!ident_char(s[i]) || (i > 0 && ident_char(s[i - 1]))) { ++i; continue; }
    size_t j = i;
    while (j < n && ident_char(s[j])) ++j;
    std::string w = s.substr(i, j - i);
    i = j;
    if (w.size() < 4 || w.size() > 64 || w.find('_') == std::string::npos || w.front() == '_') continue;
    // A trailing underscore ends a family's prefix ("the OMPI_MCA_ variables", "BLIS_*_NT"),
    // except on an upper-case name of three parts or more standing alone: glibc's
    // MALLOC_TOP_PAD_, MALLOC_MMAP_MAX_ (mallopt(3), ENVIRONMENT).
    if (w.back() == '_' && !(trailing_underscore_name(w) && (j >= n || !std::strchr("*<{", s[j])))) continue;
    bool upper = true, lower_only = true;
    for (char c : w) {
      if (std::islower(static_cast<unsigned char>(c))) upper = false;
      if (std::isupper(static_cast<unsigned char>(c))) lower_only = false;
    }
    bool knob = false;
    if (upper && std::isalpha(static_cast<unsigned char>(w[0]))) knob = true;  // FOO_NUM_THREADS
    if (!upper) {
      // API knobs in prose: openblas_set_num_threads, ZSTD_c_nbWorkers, omp_set_dynamic
      std::string low;
      for (char c : w) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      for (const char* k : {"thread", "worker", "affinity", "arena", "concurrency", "parallel", "tcache", "spin"})
        if (low.find(k) != std::string::npos) knob = true;
      if (lower_only && low.find("set_") == std::string::npos && low.find("num_") == std::string::npos &&
          low.find("max_") == std::string::npos)
        knob = knob && low.find("_") != std::string::npos && low.find("thread") != std::string::npos;
    }
    if (knob && !noise(w) && std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
  }
  return out;
}

namespace docs {
namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  size_t p = 0;
  while ((p = s.find(from, p)) != std::string::npos) {
    s.replace(p, from.size(), to);
    p += to.size();
  }
  return s;
}

// One line of markup to prose; `state` carries multi-line context (HTML <script>, ...).
std::string strip_line(std::string l, const std::string& fmt, bool& skip_block, bool& in_tag) {
  if (fmt == "man") {
    if (l.rfind(".\\\"", 0) == 0 || l.rfind("'\\\"", 0) == 0) return "";
    if (!l.empty() && (l[0] == '.' || l[0] == '\'')) {
      size_t sp = l.find(' ');
      l = sp == std::string::npos ? "" : l.substr(sp + 1);
      l = replace_all(l, "\"", "");
    }
    for (const char* f : {"\\fB", "\\fI", "\\fR", "\\fP", "\\f(CW", "\\fC", "\\&", "\\%"}) l = replace_all(l, f, "");
    l = replace_all(l, "\\-", "-");
    l = replace_all(l, "\\e", "\\");
    l = replace_all(l, "\\(em", "-");
    return l;
  }
  if (fmt == "texinfo") {
    if (l.rfind("@c ", 0) == 0 || l == "@c" || l.rfind("@comment", 0) == 0) return "";
    // @env{X}, @code{X}, @var{x}: keep the braces' content
    std::string o;
    for (size_t i = 0; i < l.size(); ++i) {
      if (l[i] == '@' && i + 1 < l.size() && std::isalpha(static_cast<unsigned char>(l[i + 1]))) {
        size_t j = i + 1;
        while (j < l.size() && std::isalpha(static_cast<unsigned char>(l[j]))) ++j;
        if (j < l.size() && l[j] == '{') { i = j; continue; }
        if (i == 0) { i = j; continue; }  // a line command: keep its argument
        o += l[i];
        continue;
      }
      if (l[i] == '{' || l[i] == '}') continue;
      o += l[i];
    }
    return o;
  }
  if (fmt == "html") {
    std::string o;
    size_t i = 0;
    if (in_tag) {
      // A tag opened on an earlier line (`<link\n linkend="opt.narenas">`): its attributes
      // are markup, not prose.
      size_t e = l.find('>');
      if (e == std::string::npos) return o;
      in_tag = false;
      i = e + 1;
      o += ' ';
    }
    while (i < l.size()) {
      if (skip_block) {
        size_t e = l.find("</", i);
        if (e == std::string::npos) return o;
        std::string tag = l.substr(e, 9);
        for (auto& c : tag) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (tag.rfind("</script", 0) == 0 || tag.rfind("</style", 0) == 0) skip_block = false;
        i = e + 2;
        continue;
      }
      if (l[i] == '<' && i + 1 < l.size() &&
          (std::isalpha(static_cast<unsigned char>(l[i + 1])) || l[i + 1] == '/' || l[i + 1] == '!' || l[i + 1] == '?')) {
        size_t e = l.find('>', i);
        std::string tag = l.substr(i, std::min<size_t>(8, l.size() - i));
        for (auto& c : tag) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (tag.rfind("<script", 0) == 0 || tag.rfind("<style", 0) == 0) skip_block = true;
        if (e == std::string::npos) {
          in_tag = !skip_block;
          return o;
        }
        i = e + 1;
        o += ' ';
        continue;
      }
      o += l[i++];
    }
    o = replace_all(o, "&lt;", "<");
    o = replace_all(o, "&gt;", ">");
    o = replace_all(o, "&quot;", "\"");
    o = replace_all(o, "&nbsp;", " ");
    o = replace_all(o, "&amp;", "&");
    return o;
  }
  // markdown, rst, text: inline markup is punctuation around the words; drop the marks
  for (const char* m : {"``", "`", "**", ":envvar:", ":c:func:", ":func:", ":code:"}) l = replace_all(l, m, "");
  return l;
}

// An rst section underline: a run of one punctuation mark ("OMP_DYNAMIC" over `"""""""""""`).
bool rst_underline(const std::string& l) {
  if (l.size() < 3 || !std::ispunct(static_cast<unsigned char>(l[0]))) return false;
  return l.find_first_not_of(l[0]) == std::string::npos;
}

// Reference pages in reStructuredText give each variable a section: the name is the heading,
// and its default and values stand in the paragraphs below it ("| **Default:** ``false``",
// "The values for this variable are ``serial``, ``turnaround``, or ``throughput``"), which never
// repeat the name. One mention per such section carries "NAME: " and those sentences, the
// "Default:" fields first, so that what is said of the variable stays with it.
void rst_sections(const std::string& rel, std::string_view text, std::vector<DocMention>& out) {
  std::vector<std::string> lines;
  for (size_t pos = 0; pos <= text.size();) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string l(text.substr(pos, nl - pos));
    if (!l.empty() && l.back() == '\r') l.pop_back();
    lines.push_back(std::move(l));
    pos = nl + 1;
  }
  auto heading = [&](size_t i) {
    return i + 1 < lines.size() && !lines[i].empty() && lines[i][0] != ' ' && !rst_underline(lines[i]) &&
           rst_underline(lines[i + 1]);
  };
  for (size_t h = 0; h < lines.size(); ++h) {
    if (!heading(h)) continue;
    // "OMP_PROC_BIND (Windows, Linux)": the heading's first word, when it is the whole name
    std::string name = lines[h].substr(0, lines[h].find(' '));
    auto names = knob_names_in(name);
    if (names.size() != 1 || names[0] != name) continue;
    std::vector<std::string> fields, said;
    std::string para;
    bool skip = false, in_tag = false;
    auto sentences = [&](const std::string& p) {
      for (size_t st = 0; st < p.size();) {
        size_t e = p.find(". ", st);
        e = e == std::string::npos ? p.size() : e + 1;
        std::string x = p.substr(st, e - st);
        st = e;
        x.erase(0, std::min(x.find_first_not_of(' '), x.size()));
        std::string low = x;
        for (auto& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (low.rfind("default:", 0) == 0) fields.push_back(x);
        else if (low.find("default") != std::string::npos || low.find("values") != std::string::npos) said.push_back(x);
      }
    };
    size_t end = h + 2;
    for (; end < lines.size() && !heading(end); ++end) {
      std::string l = strip_line(lines[end], "rst", skip, in_tag);
      // a line block item ("| Default: ...") is a sentence of its own
      bool item = l.rfind("| ", 0) == 0;
      if (item) l = l.substr(2);
      if (item || l.find_first_not_of(" \t") == std::string::npos) {
        sentences(para);
        para.clear();
      }
      if (l.find_first_not_of(" \t") == std::string::npos) continue;
      para += (para.empty() ? "" : " ") + l.substr(l.find_first_not_of(" \t"));
      if (item) {
        sentences(para);
        para.clear();
      }
    }
    sentences(para);
    if (fields.empty() && said.empty()) continue;
    std::string sentence = name + ":";
    for (auto* v : {&fields, &said})
      for (auto& x : *v) sentence += " " + x;
    if (sentence.size() > 400) sentence = sentence.substr(0, 400) + "...";
    out.push_back({name, sentence, rel, static_cast<int>(h + 1), "rst"});
  }
}

// "the default", "defaults to", "default to 1": a sentence that says what holds when nothing is set.
bool states_default(const std::string& sentence) {
  for (size_t at = sentence.find("efault"); at != std::string::npos; at = sentence.find("efault", at + 1))
    if (at > 0 && (sentence[at - 1] == 'd' || sentence[at - 1] == 'D') && (at < 2 || !ident_char(sentence[at - 2]))) return true;
  return false;
}

// "This option is disabled by default": the sentence speaks of what its entry is about.
bool speaks_of_subject(const std::string& sentence) {
  std::string low = sentence;
  for (auto& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* w : {"this option", "this variable", "this setting", "this parameter", "this function"})
    if (low.find(w) != std::string::npos) return true;
  return false;
}

}  // namespace

std::vector<DocMention> scan_doc(const std::string& rel, std::string_view text, const std::string& fmt) {
  std::vector<DocMention> out;
  std::string para;
  std::vector<std::pair<size_t, int>> starts;  // offset in para -> line
  bool skip_block = false, in_tag = false;
  auto flush = [&] {
    if (para.empty()) return;
    // split into sentences at ". ", "? ", "! " and keep the line each starts on
    size_t s = 0;
    // A sentence that names no knob but states a default speaks of knobs named before it in its
    // paragraph, and is reported for each as "NAME: sentence", so that the default stays with
    // them: of the paragraph's subject, the names of its first sentence that named any, when it
    // says "this option" (a reference entry: "opt.tcache (bool) ... This option is enabled by
    // default"); else of the names of the last sentence that named any ("If neither variable is
    // set, the default number of threads is 1", "an nthreads argument of 1 (the default)").
    std::vector<std::string> first_named, last_named;
    while (s < para.size()) {
      size_t e = s;
      while (e < para.size()) {
        if ((para[e] == '.' || para[e] == '?' || para[e] == '!') && (e + 1 == para.size() || para[e + 1] == ' ')) {
          ++e;
          break;
        }
        ++e;
      }
      std::string sentence = para.substr(s, e - s);
      auto names = knob_names_in(sentence);
      // the line the sentence's first word stands on, not the space before it
      size_t a = sentence.find_first_not_of(' ');
      const size_t first = s + (a == std::string::npos ? 0 : a);
      int line = starts.front().second;
      for (auto& [off, ln] : starts)
        if (off <= first) line = ln;
      sentence = a == std::string::npos ? "" : sentence.substr(a);
      if (sentence.size() > 400) sentence = sentence.substr(0, 400) + "...";
      if (!names.empty()) {
        for (auto& n : names) out.push_back({n, sentence, rel, line, fmt});
        if (first_named.empty()) first_named = names;
        last_named = names;
      } else if (!last_named.empty() && states_default(sentence)) {
        for (auto& n : speaks_of_subject(sentence) ? first_named : last_named)
          out.push_back({n, n + ": " + sentence, rel, line, fmt});
      }
      s = e;
    }
    para.clear();
    starts.clear();
  };
  int line = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string raw(text.substr(pos, nl - pos));
    pos = nl + 1;
    ++line;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    bool blank = raw.find_first_not_of(" \t") == std::string::npos;
    bool man_break = fmt == "man" && (raw.rfind(".SH", 0) == 0 || raw.rfind(".PP", 0) == 0 ||
                                      raw.rfind(".TP", 0) == 0 || raw.rfind(".IP", 0) == 0);
    if (blank || man_break) flush();
    std::string l = strip_line(raw, fmt, skip_block, in_tag);
    if (l.find_first_not_of(" \t") == std::string::npos) {
      if (pos > text.size()) break;
      continue;
    }
    if (!para.empty()) para += ' ';
    starts.emplace_back(para.size(), line);
    para += l;
    if (pos > text.size()) break;
  }
  flush();
  if (fmt == "rst") rst_sections(rel, text, out);
  return out;
}

bool gunzip(std::string_view in, std::string& out, std::string& err) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
    err = "zlib init failed";
    return false;
  }
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  char buf[65536];
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf, sizeof buf - zs.avail_out);
    if (out.size() > (64u << 20)) {
      rc = Z_DATA_ERROR;
      break;
    }
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) break;
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    err = rc == Z_BUF_ERROR ? "truncated gzip data" : "corrupt gzip data";
    return false;
  }
  return true;
}

}  // namespace docs
}  // namespace syspilot::extract

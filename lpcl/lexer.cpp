// The LPCL lexer: identifiers with dotted paths, strings with escapes, numbers with size and
// duration units, operators, and '#' comments that the parser attaches to statements.
#include "lpcl/lexer.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace syspilot::lpcl {

bool is_ident_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

bool is_identifier(std::string_view s) {
  if (s.empty() || !is_ident_start(s[0])) return false;
  for (char c : s)
    if (!is_ident_char(c)) return false;
  return true;
}

bool is_name_path(std::string_view s) {
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    if (!is_identifier(s.substr(start, dot == std::string_view::npos ? s.npos : dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool is_size_unit(std::string_view u) {
  for (const char* x : {"B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"})
    if (u == x) return true;
  return false;
}
bool is_duration_unit(std::string_view u) {
  for (const char* x : {"ns", "us", "ms", "s", "min", "h"})
    if (u == x) return true;
  return false;
}

const char* describe(Token::Kind k) {
  using K = Token::Kind;
  switch (k) {
    case K::End: return "end of file";
    case K::Ident: return "identifier";
    case K::String: return "string";
    case K::Int: return "integer";
    case K::Float: return "number";
    case K::Size: return "size";
    case K::Duration: return "duration";
    case K::LBrace: return "'{'";
    case K::RBrace: return "'}'";
    case K::LParen: return "'('";
    case K::RParen: return "')'";
    case K::LBracket: return "'['";
    case K::RBracket: return "']'";
    case K::Comma: return "','";
    case K::Semi: return "';'";
    case K::Colon: return "':'";
    case K::At: return "'@'";
    case K::Assign: return "'='";
    case K::Op: return "operator";
    case K::Invalid: return "invalid character";
  }
  return "token";
}

std::string describe(const Token& t) {
  using K = Token::Kind;
  auto clip = [](const std::string& s) { return s.size() > 40 ? s.substr(0, 40) + "..." : s; };
  switch (t.kind) {
    case K::Ident: return "identifier '" + clip(t.text) + "'";
    case K::String: return "string \"" + clip(t.text) + "\"";
    case K::Int: case K::Float: case K::Size: case K::Duration: return "number '" + clip(t.text) + "'";
    case K::Op: return "'" + t.text + "'";
    default: return describe(t.kind);
  }
}

Lexer::Lexer(std::string_view text, const std::string& file, Diagnostics& diags, std::vector<Comment>& comments)
    : text_(text), file_(file), diags_(diags), comments_(comments) {}

void Lexer::skip_space_and_comments() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '\n') {
      ++pos_;
      ++line_;
      line_start_ = pos_;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++pos_;
    } else if (c == '#') {
      size_t start = pos_ + 1;
      size_t end = text_.find('\n', start);
      if (end == std::string_view::npos) end = text_.size();
      size_t stop = end;
      while (stop > start && (text_[stop - 1] == '\r' || text_[stop - 1] == ' ' || text_[stop - 1] == '\t')) --stop;
      if (start < stop && text_[start] == ' ') ++start;
      comments_.push_back({std::string(text_.substr(start, stop - start)), line_});
      pos_ = end;
    } else {
      return;
    }
  }
}

Token Lexer::next() {
  Token t = scan();
  t.first_on_line = t.line != last_token_line_;
  last_token_line_ = line_;
  return t;
}

Token Lexer::scan() {
  skip_space_and_comments();
  Token t = start_token();
  if (pos_ >= text_.size()) {
    t.kind = Token::Kind::End;
    t.end = pos_;
    return t;
  }
  char c = text_[pos_];
  auto single = [&](Token::Kind k) {
    t.kind = k;
    t.text = std::string(1, c);
    ++pos_;
    t.end = pos_;
    return t;
  };
  if (is_ident_start(c)) {
    size_t start = pos_;
    while (true) {
      while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
      if (pos_ + 1 < text_.size() && text_[pos_] == '.' && is_ident_start(text_[pos_ + 1])) {
        ++pos_;
        continue;
      }
      break;
    }
    t.kind = Token::Kind::Ident;
    t.text = std::string(text_.substr(start, pos_ - start));
    t.end = pos_;
    return t;
  }
  if (c >= '0' && c <= '9') return lex_number();
  if (c == '"') return lex_string();
  char n = pos_ + 1 < text_.size() ? text_[pos_ + 1] : '\0';
  auto two = [&](const char* op) {
    t.kind = Token::Kind::Op;
    t.text = op;
    pos_ += std::strlen(op);
    t.end = pos_;
    return t;
  };
  switch (c) {
    case '{': return single(Token::Kind::LBrace);
    case '}': return single(Token::Kind::RBrace);
    case '(': return single(Token::Kind::LParen);
    case ')': return single(Token::Kind::RParen);
    case '[': return single(Token::Kind::LBracket);
    case ']': return single(Token::Kind::RBracket);
    case ',': return single(Token::Kind::Comma);
    case ';': return single(Token::Kind::Semi);
    case ':': return single(Token::Kind::Colon);
    case '@': return single(Token::Kind::At);
    case '?':
      if (n == '?') return two("??");
      break;
    case '=':
      if (n == '=') return two("==");
      return single(Token::Kind::Assign);
    case '!':
      if (n == '=') return two("!=");
      return two("!");
    case '<':
      if (n == '=') return two("<=");
      return two("<");
    case '>':
      if (n == '=') return two(">=");
      return two(">");
    case '&':
      if (n == '&') return two("&&");
      break;
    case '|':
      if (n == '|') return two("||");
      break;
    case '+': return two("+");
    case '-': return two("-");
    case '*': return two("*");
    case '/': return two("/");
    case '%': return two("%");
    default: break;
  }
  t.kind = Token::Kind::Invalid;
  unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x80) {
    // A whole UTF-8 sequence is one invalid token (encoding was validated before lexing).
    size_t len = u >= 0xF0 ? 4 : u >= 0xE0 ? 3 : 2;
    t.text = std::string(text_.substr(pos_, len));
    pos_ = std::min(text_.size(), pos_ + len);
  } else {
    t.text = std::string(1, c);
    ++pos_;
  }
  t.end = pos_;
  return t;
}

Token Lexer::start_token() const {
  Token t;
  t.line = line_;
  t.col = static_cast<int>(pos_ - line_start_) + 1;
  t.offset = pos_;
  return t;
}

Token Lexer::lex_number() {
  Token t = start_token();
  size_t start = pos_;
  auto digit = [&](size_t i) { return i < text_.size() && text_[i] >= '0' && text_[i] <= '9'; };
  bool is_float = false;
  if (text_[pos_] == '0' && pos_ + 1 < text_.size() && (text_[pos_ + 1] == 'x' || text_[pos_ + 1] == 'X')) {
    pos_ += 2;
    size_t digits = pos_;
    while (pos_ < text_.size() && std::isxdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    t.kind = Token::Kind::Int;
    if (pos_ == digits) {
      diags_.error(loc(t.line, t.col), "hexadecimal number '0x' has no digits", "bad-number",
                   "write hexadecimal numbers as 0x followed by digits, e.g. 0x10");
      t.kind = Token::Kind::Invalid;
      t.reported = true;
    }
  } else {
    while (digit(pos_)) ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '.' && digit(pos_ + 1)) {
      is_float = true;
      ++pos_;
      while (digit(pos_)) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < text_.size() && (text_[p] == '+' || text_[p] == '-')) ++p;
      if (digit(p)) {
        is_float = true;
        pos_ = p;
        while (digit(pos_)) ++pos_;
      }
    }
    t.kind = is_float ? Token::Kind::Float : Token::Kind::Int;
  }
  size_t unit_start = pos_;
  while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
  std::string_view unit = text_.substr(unit_start, pos_ - unit_start);
  if (!unit.empty() && t.kind != Token::Kind::Invalid) {
    bool is_hex = text_.substr(start, 2) == "0x" || text_.substr(start, 2) == "0X";
    if (!is_hex && is_size_unit(unit)) {
      t.kind = Token::Kind::Size;
    } else if (!is_hex && is_duration_unit(unit)) {
      t.kind = Token::Kind::Duration;
    } else {
      int col = static_cast<int>(unit_start - line_start_) + 1;
      std::string u(unit.substr(0, 40));
      diags_.error(loc(t.line, col), "unknown unit '" + u + "' after number", "bad-number",
                   "sizes take B, KB, MB, GB, TB, KiB, MiB, GiB, TiB; durations take ns, us, ms, s, min, h");
      t.kind = Token::Kind::Invalid;
      t.reported = true;
    }
  }
  t.text = std::string(text_.substr(start, pos_ - start));
  t.end = pos_;
  return t;
}

Token Lexer::lex_string() {
  Token t = start_token();
  t.kind = Token::Kind::String;
  ++pos_;
  std::string out;
  while (true) {
    if (pos_ >= text_.size() || text_[pos_] == '\n' || (text_[pos_] == '\r' && (pos_ + 1 >= text_.size() || text_[pos_ + 1] == '\n'))) {
      diags_.error(loc(t.line, t.col), "unterminated string", "unterminated-string",
                   "close the string with '\"' on the same line; write a line break as \\n");
      t.kind = Token::Kind::Invalid;
      t.reported = true;
      break;
    }
    char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      break;
    }
    if (c == '\\') {
      char e = pos_ + 1 < text_.size() ? text_[pos_ + 1] : '\0';
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        default: {
          int col = static_cast<int>(pos_ - line_start_) + 1;
          std::string shown = (e >= 0x20 && e < 0x7f) ? std::string(1, e) : std::string("?");
          diags_.error(loc(line_, col), "unknown escape '\\" + shown + "' in string", "bad-escape",
                       "strings accept \\\" \\\\ \\n and \\t; write a backslash as \\\\");
          if (e == '\n' || e == '\0' || pos_ + 1 >= text_.size()) {
            ++pos_;
            continue;
          }
        }
      }
      pos_ += 2;
      continue;
    }
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
      int col = static_cast<int>(pos_ - line_start_) + 1;
      diags_.error(loc(line_, col), "control character in string", "bad-character",
                   "write a tab as \\t and a line break as \\n");
      ++pos_;
      continue;
    }
    out += c;
    ++pos_;
  }
  t.text = std::move(out);
  t.end = pos_;
  return t;
}

bool Lexer::raw_until_close_paren(std::string& out, int open_line, int open_col) {
  int depth = 0;
  size_t start = pos_;
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '\n' || c == ';' || c == '{' || c == '}' || c == '#') break;
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\r') {
      diags_.error(loc(line_, static_cast<int>(pos_ - line_start_) + 1), "control character in the parameter list of an api control",
                   "bad-character", "write the C parameters as plain text: api(int n)");
      return false;
    }
    if (c == '(') ++depth;
    if (c == ')') {
      if (depth == 0) {
        out = std::string(text_.substr(start, pos_ - start));
        ++pos_;
        return true;
      }
      --depth;
    }
    ++pos_;
  }
  diags_.error(loc(open_line, open_col), "parameter list of api control is not closed", "expected-token",
               "write the C parameters on one line: api(int n)");
  return false;
}

}  // namespace syspilot::lpcl

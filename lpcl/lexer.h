// Tokens of LPCL text, produced on demand so that a 50 MB file never needs a token array.
// Internal to the lpcl library.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "lpcl/diagnostics.h"

namespace syspilot::lpcl {

struct Comment {
  std::string text;  // without '#' and one following space
  int line = 0;
};

struct Token {
  enum class Kind {
    End, Ident, String, Int, Float, Size, Duration,
    LBrace, RBrace, LParen, RParen, LBracket, RBracket, Comma, Semi, Colon, At,
    Assign, Op,  // Op: ?? == != < <= > >= && || + - * / % !
    Invalid,
  };
  Kind kind = Kind::End;
  std::string text;  // identifier, unescaped string, literal as written, operator
  int line = 0, col = 0;
  size_t offset = 0;  // byte offset of the first character
  size_t end = 0;     // byte offset just past the token
  bool first_on_line = false;
  bool reported = false;  // Invalid: the lexer already reported it
};

const char* describe(Token::Kind k);
std::string describe(const Token& t);  // "identifier 'foo'", "';'", "end of file"

class Lexer {
 public:
  // Comments go to `comments` in source order; lexical errors go to `diags`.
  Lexer(std::string_view text, const std::string& file, Diagnostics& diags, std::vector<Comment>& comments);
  Token next();
  // Raw text up to the parenthesis that closes an already consumed '(' (for api(...) parameter
  // lists); consumes that ')'. Returns false (and reports) when the line or file ends first.
  bool raw_until_close_paren(std::string& out, int open_line, int open_col);
  SourceLoc loc(int line, int col) const { return {file_, line, col}; }
  size_t position() const { return pos_; }

 private:
  Token scan();
  Token start_token() const;
  void skip_space_and_comments();
  Token lex_number();
  Token lex_string();
  std::string_view text_;
  const std::string& file_;
  Diagnostics& diags_;
  std::vector<Comment>& comments_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
  int last_token_line_ = 0;
};

bool is_ident_start(char c);
bool is_ident_char(char c);
bool is_identifier(std::string_view s);   // [A-Za-z_][A-Za-z0-9_]*
bool is_name_path(std::string_view s);    // identifier ('.' identifier)*
bool is_size_unit(std::string_view u);
bool is_duration_unit(std::string_view u);

}  // namespace syspilot::lpcl

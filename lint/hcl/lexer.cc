#include "lint/hcl/lexer.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>

#include "contract/strings.h"
#include "lint/hcl/unicode.h"

namespace captf::lint::hcl {

using contract::strCat;

namespace {

bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

// The lexer keeps a stack of frames because HCL's token grammar depends on
// context: inside a quoted string or heredoc, text is literal until "${" or
// "%{", which switch back to expression tokens until the matching "}".
enum class FrameKind { kNormal, kQuoted, kHeredoc, kBareTemplate };

struct Frame {
  FrameKind kind = FrameKind::kNormal;
  // kNormal: this frame is the inside of a ${...} or %{...} sequence, closed
  // by a "}" at brace depth 0.
  bool in_template = false;
  // kNormal: unmatched "{" seen in this frame.
  uint32_t braces = 0;
  // kQuoted / kHeredoc: where the string began, for "unterminated" errors.
  Pos opened{};
  // kHeredoc state.
  std::string_view delimiter{};
  bool at_line_start = true;
  std::size_t opener_token = 0;
  bool flush = false;
  std::optional<uint32_t> min_indent{};
};

class Lexer {
public:
  Lexer(std::string_view source, std::string_view filename, Pos start)
      : src_(source), filename_(filename), pos_(start), base_byte_(start.byte) {}

  absl::StatusOr<std::vector<Token>> run(LexMode mode) {
    if (src_.size() > std::numeric_limits<uint32_t>::max() - base_byte_) {
      return syntaxError(filename_, pos_, "input is too large (more than 4 GiB)");
    }
    if (absl::Status s = validateUtf8(src_, filename_, pos_); !s.ok()) {
      return s;
    }
    frames_.push_back(
        Frame{.kind = mode == LexMode::kTemplate ? FrameKind::kBareTemplate : FrameKind::kNormal});
    while (!done_) {
      absl::Status s;
      switch (frames_.back().kind) {
      case FrameKind::kNormal:
        s = lexNormal();
        break;
      case FrameKind::kQuoted:
        s = lexQuoted();
        break;
      case FrameKind::kHeredoc:
        s = lexHeredoc();
        break;
      case FrameKind::kBareTemplate:
        s = lexBareTemplate();
        break;
      }
      if (!s.ok()) {
        return s;
      }
    }
    return std::move(tokens_);
  }

private:
  std::size_t offset() const { return pos_.byte - base_byte_; }
  bool atEnd() const { return offset() >= src_.size(); }
  char peekChar(std::size_t ahead = 0) const {
    const std::size_t i = offset() + ahead;
    return i < src_.size() ? src_[i] : '\0';
  }
  bool lookingAt(std::string_view s) const { return src_.substr(offset()).starts_with(s); }

  void advance(std::size_t n) { pos_ = advancePos(pos_, src_.substr(offset(), n)); }

  char32_t peekCodePoint(std::size_t& len) const {
    char32_t cp = 0;
    len = decodeUtf8(src_.substr(offset()), cp);
    return cp;
  }

  absl::Status error(const Pos& at, std::string_view message) const {
    return syntaxError(filename_, at, message);
  }

  // Emits a token covering the next `n` bytes and consumes them.
  Token& emit(TokenType type, std::size_t n) {
    Token t;
    t.type = type;
    t.range.start = pos_;
    t.text = src_.substr(offset(), n);
    advance(n);
    t.range.end = pos_;
    tokens_.push_back(t);
    return tokens_.back();
  }

  void emitEof() {
    Token t;
    t.type = TokenType::kEOF;
    t.range = {pos_, pos_};
    tokens_.push_back(t);
    done_ = true;
  }

  // Opens a ${ or %{ sequence at the current position.
  void openSequence() {
    const TokenType type =
        peekChar() == '$' ? TokenType::kTemplateInterp : TokenType::kTemplateControl;
    const bool strip = peekChar(2) == '~';
    Token& t = emit(type, strip ? 3 : 2);
    t.strip = strip;
    frames_.push_back(Frame{.kind = FrameKind::kNormal, .in_template = true});
  }

  bool atSequenceStart() const {
    return (peekChar() == '$' || peekChar() == '%') && peekChar(1) == '{';
  }

  // Length of an escaped sequence opener ("$${" or "%%{") at the current
  // position, or 0.
  std::size_t escapedSequenceLength() const {
    const char c = peekChar();
    if ((c == '$' || c == '%') && peekChar(1) == c && peekChar(2) == '{') {
      return 3;
    }
    return 0;
  }

  absl::Status lexNormal() {
    while (!atEnd()) {
      const char c = peekChar();
      if (c == ' ' || c == '\t' || c == '\r') {
        advance(1);
      } else if (c == '#' || (c == '/' && peekChar(1) == '/')) {
        std::size_t n = 0;
        while (offset() + n < src_.size() && src_[offset() + n] != '\n') {
          ++n;
        }
        advance(n);
      } else if (c == '/' && peekChar(1) == '*') {
        const Pos opened = pos_;
        const std::size_t close = src_.find("*/", offset() + 2);
        if (close == std::string_view::npos) {
          return error(opened, R"(unterminated comment: "/*" has no matching "*/")");
        }
        advance(close + 2 - offset());
      } else {
        break;
      }
    }
    Frame& frame = frames_.back();
    if (atEnd()) {
      emitEof();
      return absl::OkStatus();
    }
    const char c = peekChar();
    const char c1 = peekChar(1);
    switch (c) {
    case '\n':
      emit(TokenType::kNewline, 1);
      return absl::OkStatus();
    case '{':
      ++frame.braces;
      emit(TokenType::kOBrace, 1);
      return absl::OkStatus();
    case '}':
      if (frame.in_template && frame.braces == 0) {
        emit(TokenType::kTemplateSeqEnd, 1);
        frames_.pop_back();
      } else {
        frame.braces -= frame.braces > 0 ? 1 : 0;
        emit(TokenType::kCBrace, 1);
      }
      return absl::OkStatus();
    case '~':
      if (c1 == '}' && frame.in_template && frame.braces == 0) {
        emit(TokenType::kTemplateSeqEnd, 2).strip = true;
        frames_.pop_back();
        return absl::OkStatus();
      }
      return error(pos_, "invalid character '~': a strip marker may only follow \"${\" or "
                         "\"%{\" or precede the \"}\" that closes a template sequence");
    case '[':
      emit(TokenType::kOBrack, 1);
      return absl::OkStatus();
    case ']':
      emit(TokenType::kCBrack, 1);
      return absl::OkStatus();
    case '(':
      emit(TokenType::kOParen, 1);
      return absl::OkStatus();
    case ')':
      emit(TokenType::kCParen, 1);
      return absl::OkStatus();
    case '"':
      frames_.push_back(Frame{.kind = FrameKind::kQuoted, .opened = pos_});
      emit(TokenType::kOQuote, 1);
      return absl::OkStatus();
    case '*':
      emit(TokenType::kStar, 1);
      return absl::OkStatus();
    case '/':
      emit(TokenType::kSlash, 1);
      return absl::OkStatus();
    case '+':
      emit(TokenType::kPlus, 1);
      return absl::OkStatus();
    case '-':
      emit(TokenType::kMinus, 1);
      return absl::OkStatus();
    case '%':
      if (c1 == '{') {
        return error(pos_, "a template directive (\"%{\") is only valid inside a string");
      }
      emit(TokenType::kPercent, 1);
      return absl::OkStatus();
    case '$':
      return error(pos_, c1 == '{' ? "a template interpolation (\"${\") is only valid inside a "
                                     "string"
                                   : "invalid character '$'");
    case '=':
      if (c1 == '=') {
        emit(TokenType::kEqualOp, 2);
      } else if (c1 == '>') {
        emit(TokenType::kFatArrow, 2);
      } else {
        emit(TokenType::kEqual, 1);
      }
      return absl::OkStatus();
    case '!':
      emit(c1 == '=' ? TokenType::kNotEqual : TokenType::kBang, c1 == '=' ? 2 : 1);
      return absl::OkStatus();
    case '<':
      if (c1 == '<') {
        return lexHeredocOpener();
      }
      emit(c1 == '=' ? TokenType::kLessThanEq : TokenType::kLessThan, c1 == '=' ? 2 : 1);
      return absl::OkStatus();
    case '>':
      emit(c1 == '=' ? TokenType::kGreaterThanEq : TokenType::kGreaterThan, c1 == '=' ? 2 : 1);
      return absl::OkStatus();
    case '&':
      if (c1 == '&') {
        emit(TokenType::kAnd, 2);
        return absl::OkStatus();
      }
      return error(pos_, "invalid character '&': did you mean \"&&\"?");
    case '|':
      if (c1 == '|') {
        emit(TokenType::kOr, 2);
        return absl::OkStatus();
      }
      return error(pos_, "invalid character '|': did you mean \"||\"?");
    case '.':
      if (c1 == '.' && peekChar(2) == '.') {
        emit(TokenType::kEllipsis, 3);
      } else {
        emit(TokenType::kDot, 1);
      }
      return absl::OkStatus();
    case ',':
      emit(TokenType::kComma, 1);
      return absl::OkStatus();
    case '?':
      emit(TokenType::kQuestion, 1);
      return absl::OkStatus();
    case ':':
      emit(c1 == ':' ? TokenType::kDoubleColon : TokenType::kColon, c1 == ':' ? 2 : 1);
      return absl::OkStatus();
    default:
      break;
    }
    if (isDigit(c)) {
      lexNumber();
      return absl::OkStatus();
    }
    std::size_t len = 0;
    const char32_t cp = peekCodePoint(len);
    if (cp == '_' || isIdStart(cp)) {
      std::size_t n = len;
      while (offset() + n < src_.size()) {
        char32_t next = 0;
        const std::size_t l = decodeUtf8(src_.substr(offset() + n), next);
        if (l == 0 || !(next == '-' || isIdContinue(next))) {
          break;
        }
        n += l;
      }
      emit(TokenType::kIdent, n);
      return absl::OkStatus();
    }
    return error(pos_, strCat("invalid character ", describeCodePoint(cp)));
  }

  void lexNumber() {
    std::size_t n = 0;
    const auto at = [&](std::size_t i) { return peekChar(n + i); };
    while (isDigit(at(0))) {
      ++n;
    }
    if (at(0) == '.' && isDigit(at(1))) {
      ++n;
      while (isDigit(at(0))) {
        ++n;
      }
    }
    if (at(0) == 'e' || at(0) == 'E') {
      if (isDigit(at(1))) {
        n += 1;
      } else if ((at(1) == '+' || at(1) == '-') && isDigit(at(2))) {
        n += 2;
      }
      while (n > 0 && isDigit(at(0))) {
        ++n;
      }
    }
    emit(TokenType::kNumberLit, n);
  }

  // "<<" [ "-" ] identifier newline. Anything else after "<<" is an error:
  // HCL has no shift operator, so "<<" can only start a heredoc.
  absl::Status lexHeredocOpener() {
    const Pos opened = pos_;
    std::size_t n = 2;
    const bool flush = peekChar(2) == '-';
    if (flush) {
      ++n;
    }
    const std::size_t name_begin = n;
    char32_t cp = 0;
    std::size_t len = offset() + n < src_.size() ? decodeUtf8(src_.substr(offset() + n), cp) : 0;
    if (len == 0 || !(cp == '_' || isIdStart(cp))) {
      return error(opened, "invalid heredoc: \"<<\" must be followed by an identifier naming the "
                           "end marker, as in <<EOT");
    }
    n += len;
    while (offset() + n < src_.size()) {
      len = decodeUtf8(src_.substr(offset() + n), cp);
      if (len == 0 || !(cp == '-' || isIdContinue(cp))) {
        break;
      }
      n += len;
    }
    const std::string_view name = src_.substr(offset() + name_begin, n - name_begin);
    if (peekChar(n) == '\r' && peekChar(n + 1) == '\n') {
      ++n;
    }
    if (peekChar(n) != '\n') {
      return error(opened, strCat("invalid heredoc: the marker <<", flush ? "-" : "", name,
                                  " must be followed by a newline"));
    }
    ++n;
    Token& t = emit(TokenType::kOHeredoc, n);
    t.text = name;
    t.flush = flush;
    frames_.push_back(Frame{.kind = FrameKind::kHeredoc,
                            .opened = opened,
                            .delimiter = name,
                            .at_line_start = true,
                            .opener_token = tokens_.size() - 1,
                            .flush = flush});
    return absl::OkStatus();
  }

  // Where literal template text ends, per template kind.
  enum class LiteralKind {
    kQuoted,      // before `"` or a line break; a backslash escapes the next ASCII character
    kHeredocLine, // after the next "\n" (included)
    kBare,        // only at an interpolation or directive
  };
  struct Literal {
    std::size_t length = 0;
    bool ends_line = false; // kHeredocLine: the literal includes its line's "\n"
  };

  // The length of the literal text at the current offset: it runs until
  // "${" or "%{" (a sequence start) or the kind's own end; the escapes "$${"
  // and "%%{" are part of the literal.
  Literal literalLength(LiteralKind kind) const {
    std::size_t n = 0;
    while (offset() + n < src_.size()) {
      const char d = src_[offset() + n];
      const char d1 = offset() + n + 1 < src_.size() ? src_[offset() + n + 1] : '\0';
      if (kind == LiteralKind::kHeredocLine && d == '\n') {
        return {n + 1, true};
      }
      if (kind == LiteralKind::kQuoted) {
        if (d == '"' || d == '\n' || (d == '\r' && d1 == '\n')) {
          break;
        }
        if (d == '\\') {
          const bool escapes_next =
              d1 != '\0' && d1 != '\n' && d1 != '\r' && static_cast<unsigned char>(d1) < 0x80;
          n += escapes_next ? 2 : 1;
          continue;
        }
      }
      if ((d == '$' || d == '%') && d1 == '{') {
        break;
      }
      if ((d == '$' || d == '%') && d1 == d && offset() + n + 2 < src_.size() &&
          src_[offset() + n + 2] == '{') {
        n += 3;
        continue;
      }
      ++n;
    }
    return {n, false};
  }

  absl::Status lexQuoted() {
    const Frame& frame = frames_.back();
    if (atEnd()) {
      return error(frame.opened, "unterminated string: the opening quote has no closing quote");
    }
    const char c = peekChar();
    if (c == '"') {
      emit(TokenType::kCQuote, 1);
      frames_.pop_back();
      return absl::OkStatus();
    }
    if (c == '\n' || (c == '\r' && peekChar(1) == '\n')) {
      return error(pos_, "a quoted string cannot span lines: use a heredoc (<<EOT) for "
                         "multi-line text, or the escape \\n");
    }
    if (atSequenceStart()) {
      openSequence();
      return absl::OkStatus();
    }
    emit(TokenType::kQuotedLit, literalLength(LiteralKind::kQuoted).length);
    return absl::OkStatus();
  }

  // If the current line (at its start) is the heredoc's end marker, returns
  // its length without the newline.
  std::optional<std::size_t> endMarkerLength(std::string_view delimiter) const {
    std::size_t n = 0;
    while (peekChar(n) == ' ' || peekChar(n) == '\t') {
      ++n;
    }
    if (src_.substr(offset() + std::min(n, src_.size() - offset())).starts_with(delimiter)) {
      const std::size_t end = n + delimiter.size();
      const char after = peekChar(end);
      if (offset() + end >= src_.size() || after == '\n' ||
          (after == '\r' && peekChar(end + 1) == '\n')) {
        return end;
      }
    }
    return std::nullopt;
  }

  // Records the indentation of a heredoc line for "<<-": leading spaces and
  // tabs (each one character); lines holding only whitespace do not count.
  void noteIndent(Frame& frame) const {
    std::size_t n = 0;
    while (peekChar(n) == ' ' || peekChar(n) == '\t') {
      ++n;
    }
    const char after = peekChar(n);
    const bool blank =
        offset() + n >= src_.size() || after == '\n' || (after == '\r' && peekChar(n + 1) == '\n');
    if (!blank) {
      const auto indent = static_cast<uint32_t>(n);
      frame.min_indent = std::min(frame.min_indent.value_or(indent), indent);
    }
  }

  absl::Status lexHeredoc() {
    Frame& frame = frames_.back();
    const bool line_start = frame.at_line_start;
    if (line_start) {
      if (const auto marker = endMarkerLength(frame.delimiter)) {
        tokens_[frame.opener_token].indent = frame.flush ? frame.min_indent.value_or(0) : 0;
        emit(TokenType::kCHeredoc, *marker);
        frames_.pop_back();
        return absl::OkStatus();
      }
      if (atEnd()) {
        return error(frame.opened, strCat("unterminated heredoc: no line containing only \"",
                                          frame.delimiter, "\" closes it"));
      }
      if (frame.flush) {
        noteIndent(frame);
      }
    }
    if (atEnd()) {
      return error(frame.opened, strCat("unterminated heredoc: no line containing only \"",
                                        frame.delimiter, "\" closes it"));
    }
    frame.at_line_start = false;
    if (atSequenceStart()) {
      openSequence();
      return absl::OkStatus();
    }
    const Literal literal = literalLength(LiteralKind::kHeredocLine);
    frame.at_line_start = literal.ends_line;
    emit(TokenType::kStringLit, literal.length).line_start = line_start;
    return absl::OkStatus();
  }

  absl::Status lexBareTemplate() {
    if (atEnd()) {
      emitEof();
      return absl::OkStatus();
    }
    if (atSequenceStart()) {
      openSequence();
      return absl::OkStatus();
    }
    emit(TokenType::kStringLit, literalLength(LiteralKind::kBare).length);
    return absl::OkStatus();
  }

  std::string_view src_;
  std::string_view filename_;
  Pos pos_;
  uint32_t base_byte_;
  std::vector<Frame> frames_;
  std::vector<Token> tokens_;
  bool done_ = false;
};

} // namespace

absl::StatusOr<std::vector<Token>> tokenize(std::string_view source, std::string_view filename,
                                            LexMode mode, Pos start) {
  return Lexer(source, filename, start).run(mode);
}

} // namespace captf::lint::hcl

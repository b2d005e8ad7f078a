// The pre-tokenizer regex subset (parser and backtracking matcher) and llama.cpp's named pattern
// sets. The matcher follows Perl/ECMAScript semantics: alternatives are tried left to right,
// quantifiers are greedy and give back one step at a time, the first successful path wins.
#include "engines/models/pretokenizer.h"

#include <algorithm>

#include "engines/core/error.h"
#include "engines/models/unicode_category.h"

namespace cibench::bpe {

namespace {

constexpr unsigned char kNoCategory = 30;  // llama.cpp's '~': in no \p{..} class

// A set of code points: ranges, categories, \s / \S, possibly negated.
struct CharSet {
  std::vector<std::pair<char32_t, char32_t>> ranges;
  uint32_t cats = 0;
  bool space = false, nonspace = false, negated = false;

  bool matches(char32_t cp, unsigned char cat, bool sp) const {
    bool in = (space && sp) || (nonspace && !sp) ||
              (cat < kNoCategory && (cats >> cat) & 1u);
    for (size_t i = 0; !in && i < ranges.size(); ++i)
      in = cp >= ranges[i].first && cp <= ranges[i].second;
    return in != negated;
  }
  // Adds [lo, hi], and under case-insensitivity the other case of its ASCII letters.
  void add(char32_t lo, char32_t hi, bool icase) {
    ranges.emplace_back(lo, hi);
    if (!icase) return;
    auto fold = [&](char32_t a, char32_t z, int32_t delta) {
      const char32_t l = std::max(lo, a), h = std::min(hi, z);
      if (l <= h) ranges.emplace_back(l + delta, h + delta);
    };
    fold('a', 'z', 'A' - 'a');
    fold('A', 'Z', 'a' - 'A');
  }
};

enum class Op { set, seq, alt, repeat, ahead, not_ahead, begin, end };

struct Node {
  Op op;
  CharSet set;
  std::vector<int> kids;
  int min = 0, max = -1;  // repeat: max -1 is unbounded
};

// A non-owning reference to a continuation `bool(size_t)`.
class Cont {
 public:
  template <typename F>
  Cont(const F& f)  // NOLINT(google-explicit-constructor)
      : obj_(&f), fn_([](const void* o, size_t i) { return (*static_cast<const F*>(o))(i); }) {}
  bool operator()(size_t i) const { return fn_(obj_, i); }

 private:
  const void* obj_;
  bool (*fn_)(const void*, size_t);
};

}  // namespace

struct SplitRegex::Impl {
  std::string pattern;
  std::vector<Node> nodes;
  int root = -1;

  // ---------------------------------------------------------------- parser
  std::vector<char32_t> p;  // the pattern's code points
  size_t at = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(str("pre-tokenizer regex \"", pattern, "\": ", what, " at character ", at));
  }
  bool more() const { return at < p.size(); }
  char32_t peek() const { return more() ? p[at] : 0; }
  bool eat(char32_t c) {
    if (peek() != c || !more()) return false;
    ++at;
    return true;
  }
  int add(Node n) {
    nodes.push_back(std::move(n));
    return static_cast<int>(nodes.size()) - 1;
  }

  int parse_alt(bool icase) {
    std::vector<int> alts{parse_seq(icase)};
    while (eat('|')) alts.push_back(parse_seq(icase));
    if (alts.size() == 1) return alts[0];
    Node n{Op::alt, {}, alts};
    return add(std::move(n));
  }

  int parse_seq(bool icase) {
    Node seq{Op::seq, {}, {}};
    while (more() && peek() != '|' && peek() != ')') {
      int atom = parse_atom(icase);
      atom = parse_quantifier(atom);
      seq.kids.push_back(atom);
    }
    if (seq.kids.size() == 1) return seq.kids[0];
    return add(std::move(seq));
  }

  size_t parse_number() {
    size_t v = 0, digits = 0;
    while (more() && peek() >= '0' && peek() <= '9') {
      v = v * 10 + (p[at++] - '0');
      if (++digits > 6) fail("repeat count too large");
    }
    if (digits == 0) fail("expected a number in {n,m}");
    return v;
  }

  int parse_quantifier(int atom) {
    for (;;) {
      int lo, hi;
      if (eat('?')) {
        lo = 0, hi = 1;
      } else if (eat('*')) {
        lo = 0, hi = -1;
      } else if (eat('+')) {
        lo = 1, hi = -1;
      } else if (peek() == '{') {
        ++at;
        lo = static_cast<int>(parse_number());
        hi = lo;
        if (eat(',')) hi = peek() == '}' ? -1 : static_cast<int>(parse_number());
        if (!eat('}')) fail("expected '}'");
        if (hi >= 0 && hi < lo) fail("{n,m} with m < n");
      } else {
        return atom;
      }
      if (peek() == '?' || peek() == '+') fail("lazy and possessive quantifiers are not supported");
      const Op kop = nodes[atom].op;
      if (kop == Op::ahead || kop == Op::not_ahead || kop == Op::begin || kop == Op::end)
        fail("a quantifier after an assertion");
      Node r{Op::repeat, {}, {atom}};
      r.min = lo;
      r.max = hi;
      atom = add(std::move(r));
    }
  }

  int set_node(CharSet s) {
    Node n{Op::set, std::move(s), {}};
    return add(std::move(n));
  }

  // After a backslash: \p{..} \P{..} \s \S or one code point (returned through `cp`).
  // Returns true when it filled `set` with a class instead.
  bool parse_escape(CharSet& set, char32_t& cp, bool icase) {
    if (!more()) fail("pattern ends with a backslash");
    const char32_t c = p[at++];
    switch (c) {
      case 'p':
      case 'P': {
        if (!eat('{')) fail("expected '{' after \\p");
        std::string name;
        while (more() && peek() != '}') name.push_back(static_cast<char>(p[at++]));
        if (!eat('}')) fail("expected '}' after \\p{");
        const uint32_t m = unicode::category_mask(name);
        if (m == 0 || name.size() > 2) fail(str("unknown Unicode category \\p{", name, "}"));
        if (c == 'p') {
          set.cats |= m;
        } else {
          set.cats |= ~m & ((1u << unicode::kCategoryCount) - 1);
        }
        return true;
      }
      case 's':
        set.space = true;
        return true;
      case 'S':
        set.nonspace = true;
        return true;
      case 'r': cp = '\r'; return false;
      case 'n': cp = '\n'; return false;
      case 't': cp = '\t'; return false;
      case 'f': cp = '\f'; return false;
      case 'v': cp = '\v'; return false;
      case 'x':
      case 'u': {
        const bool braced = eat('{');
        const size_t want = braced ? 8 : (c == 'x' ? 2 : 4);
        char32_t v = 0;
        size_t got = 0;
        while (more() && got < want) {
          const char32_t h = peek();
          int d = -1;
          if (h >= '0' && h <= '9') d = static_cast<int>(h - '0');
          else if (h >= 'a' && h <= 'f') d = static_cast<int>(h - 'a' + 10);
          else if (h >= 'A' && h <= 'F') d = static_cast<int>(h - 'A' + 10);
          if (d < 0) break;
          v = v * 16 + static_cast<char32_t>(d);
          ++at;
          ++got;
        }
        if (got == 0 || (!braced && got != want) || (braced && !eat('}')) || v > 0x10FFFF)
          fail(str("malformed \\", static_cast<char>(c), " escape"));
        cp = v;
        return false;
      }
      default:
        break;
    }
    (void)icase;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
      fail(str("unsupported escape \\", static_cast<char>(c)));
    cp = c;  // escaped punctuation or any other character stands for itself
    return false;
  }

  int parse_class(bool icase) {
    CharSet s;
    if (eat('^')) s.negated = true;
    bool first = true;
    for (;;) {
      if (!more()) fail("unterminated character class");
      if (peek() == ']' && !first) {
        ++at;
        break;
      }
      first = false;
      char32_t lo;
      if (eat('\\')) {
        if (parse_escape(s, lo, icase)) continue;
      } else {
        if (peek() == '[' && at + 1 < p.size() && p[at + 1] == ':') fail("POSIX classes are not supported");
        lo = p[at++];
      }
      char32_t hi = lo;
      if (peek() == '-' && at + 1 < p.size() && p[at + 1] != ']') {
        ++at;
        if (eat('\\')) {
          CharSet dummy;
          if (parse_escape(dummy, hi, icase)) fail("a class escape cannot end a range");
        } else {
          hi = p[at++];
        }
        if (hi < lo) fail("range out of order");
      }
      s.add(lo, hi, icase);
    }
    return set_node(std::move(s));
  }

  int parse_atom(bool icase) {
    const char32_t c = p[at++];
    switch (c) {
      case '(': {
        Op look = Op::seq;
        bool inner_icase = icase;
        if (eat('?')) {
          if (eat(':')) {
          } else if (eat('=')) {
            look = Op::ahead;
          } else if (eat('!')) {
            look = Op::not_ahead;
          } else if (eat('i')) {
            if (!eat(':')) fail("only the (?i:...) form of flags is supported");
            inner_icase = true;
          } else {
            fail("unsupported group kind (lookbehind, named group or inline flags)");
          }
        }
        const int inner = parse_alt(inner_icase);
        if (!eat(')')) fail("missing ')'");
        if (look == Op::seq) return inner;
        Node n{look, {}, {inner}};
        return add(std::move(n));
      }
      case ')':
        fail("unbalanced ')'");
      case '[':
        return parse_class(icase);
      case '.': {
        CharSet s;
        s.negated = true;
        s.ranges.emplace_back('\n', '\n');
        return set_node(std::move(s));
      }
      case '^': {
        Node n{Op::begin, {}, {}};
        return add(std::move(n));
      }
      case '$': {
        Node n{Op::end, {}, {}};
        return add(std::move(n));
      }
      case '?':
      case '*':
      case '+':
      case '{':
        --at;
        fail("a quantifier with nothing to repeat");
      case '\\': {
        CharSet s;
        char32_t cp;
        if (!parse_escape(s, cp, icase)) s.add(cp, cp, icase);
        return set_node(std::move(s));
      }
      default: {
        CharSet s;
        s.add(c, c, icase);
        return set_node(std::move(s));
      }
    }
  }

  // ---------------------------------------------------------------- matcher
  struct Ctx {
    const SplitText& t;
    size_t begin, end;
    // Matching steps left: a pattern that backtracks exponentially (say "(a|a)*b") is stopped
    // with an error instead of running for hours. Real pre-tokenizer patterns take a few steps
    // per code point.
    mutable size_t budget;
  };

  bool one(const Node& n, const Ctx& x, size_t i) const {
    return i < x.end && n.set.matches(x.t.cp[i], x.t.cat[i], x.t.space[i]);
  }

  bool match(int id, const Ctx& x, size_t i, Cont k) const {
    if (x.budget-- == 0)
      throw Error(str("pre-tokenizer regex \"", pattern, "\" backtracks too much on a piece of ",
                      x.end - x.begin, " characters"));
    const Node& n = nodes[static_cast<size_t>(id)];
    switch (n.op) {
      case Op::set:
        return one(n, x, i) && k(i + 1);
      case Op::seq:
        return match_seq(n, 0, x, i, k);
      case Op::alt:
        for (int kid : n.kids)
          if (match(kid, x, i, k)) return true;
        return false;
      case Op::repeat: {
        const Node& kid = nodes[static_cast<size_t>(n.kids[0])];
        if (kid.op == Op::set) {
          // One code point per step: count greedily, then give back one at a time.
          size_t count = 0;
          while ((n.max < 0 || count < static_cast<size_t>(n.max)) && one(kid, x, i + count)) ++count;
          for (size_t c = count + 1; c-- > static_cast<size_t>(n.min);)
            if (k(i + c)) return true;
          return false;
        }
        return match_repeat(n, 0, x, i, k);
      }
      case Op::ahead:
      case Op::not_ahead: {
        const bool hit = match(n.kids[0], x, i, [](size_t) { return true; });
        return hit == (n.op == Op::ahead) && k(i);
      }
      case Op::begin:
        return i == x.begin && k(i);
      case Op::end:
        return i == x.end && k(i);
    }
    return false;
  }

  bool match_seq(const Node& n, size_t idx, const Ctx& x, size_t i, Cont k) const {
    if (idx == n.kids.size()) return k(i);
    return match(n.kids[idx], x, i,
                 [&](size_t j) { return match_seq(n, idx + 1, x, j, k); });
  }

  bool match_repeat(const Node& n, int count, const Ctx& x, size_t i, Cont k) const {
    if (n.max < 0 || count < n.max) {
      const bool more_hit = match(n.kids[0], x, i, [&](size_t j) {
        // An iteration that consumed nothing cannot make progress: stop there.
        return j != i && match_repeat(n, count + 1, x, j, k);
      });
      if (more_hit) return true;
    }
    return count >= n.min && k(i);
  }
};

SplitRegex::SplitRegex(const std::string& pattern) : impl_(std::make_unique<Impl>()) {
  impl_->pattern = pattern;
  // Strict UTF-8: a pattern with malformed UTF-8 is an error, not U+FFFD.
  const std::vector<char32_t> cps = unicode::decode_utf8_lenient(pattern);
  std::string back;
  for (char32_t c : cps) unicode::append_utf8(back, c);
  if (back != pattern) throw Error(str("pre-tokenizer regex \"", pattern, "\" is not valid UTF-8"));
  impl_->p = cps;
  if (impl_->p.empty()) throw Error("pre-tokenizer regex is empty");
  impl_->root = impl_->parse_alt(false);
  if (impl_->more()) impl_->fail("unbalanced ')'");
}

SplitRegex::~SplitRegex() = default;
SplitRegex::SplitRegex(SplitRegex&&) noexcept = default;
SplitRegex& SplitRegex::operator=(SplitRegex&&) noexcept = default;

const std::string& SplitRegex::pattern() const { return impl_->pattern; }

bool SplitRegex::search(const SplitText& text, size_t begin, size_t end, size_t from,
                        size_t& match_begin, size_t& match_end) const {
  const Impl::Ctx x{text, begin, end, 1000000 + 256 * (end - begin)};
  for (size_t s = from; s < end; ++s) {
    size_t e = s;
    // Empty matches are not pieces: a path that ends where it started counts as a failure.
    if (impl_->match(impl_->root, x, s, [&](size_t j) {
          if (j == s) return false;
          e = j;
          return true;
        })) {
      match_begin = s;
      match_end = e;
      return true;
    }
  }
  return false;
}

void SplitRegex::split(const SplitText& text, size_t begin, size_t end,
                       std::vector<size_t>& out) const {
  size_t last = begin, mb = 0, me = 0;
  while (last < end && search(text, begin, end, last, mb, me)) {
    if (mb > last) out.push_back(mb - last);
    out.push_back(me - mb);
    last = me;
  }
  if (last < end) out.push_back(end - last);
}

SplitText SplitText::make(const std::vector<char32_t>& cps, RegexMode mode) {
  SplitText t;
  const size_t n = cps.size();
  t.cp.resize(n);
  t.cat.resize(n);
  t.space.resize(n);
  for (size_t i = 0; i < n; ++i) {
    char32_t c = cps[i];
    const bool sp = unicode::is_white_space(c);
    if (mode == RegexMode::llama_cpp && sp && c >= 0x80) c = 0x0B;
    t.cp[i] = c;
    t.space[i] = sp;
    t.cat[i] = (mode == RegexMode::llama_cpp && c == '~') ? kNoCategory
                                                          : static_cast<unsigned char>(unicode::category(c));
  }
  return t;
}

std::vector<size_t> split_pieces(const SplitText& text, const std::vector<SplitRegex>& patterns) {
  std::vector<size_t> pieces;
  if (!text.cp.empty()) pieces.push_back(text.cp.size());
  for (const SplitRegex& re : patterns) {
    std::vector<size_t> next;
    next.reserve(pieces.size() * 2);
    size_t start = 0;
    for (size_t len : pieces) {
      re.split(text, start, start + len, next);
      start += len;
    }
    pieces.swap(next);
  }
  return pieces;
}

// ---------------------------------------------------------------- named pattern sets

const char* const kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

namespace {

// llama.cpp's patterns, as its llm_tokenizer_bpe lists them. (Its GPT-2 pattern has no final
// "|\s+"; its GPT-2 code path adds it, and splitting gives the same pieces either way.)
const char* const kGpt2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
const char* const kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kPoro = " ?[^(\\s|.,!?\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C)]+";
const char* const kCjk = "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+";

struct Named {
  std::vector<const char*> names;
  std::vector<const char*> patterns;
  bool ignore_merges;
};

const std::vector<Named>& named_sets() {
  static const std::vector<Named> sets = {
      {{"default"},
       {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"},
       false},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3"}, {kLlama3}, true},
      {{"dbrx", "smaug-bpe", "chatglm-bpe"}, {kLlama3}, false},
      {{"deepseek-llm"},
       {"[\r\n]",
        "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293"
        "\u0295-\u02AF\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C"
        "\u038E-\u03A1\u03A3-\u03F5\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5"
        "\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77"
        "\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D\u1F50-\u1F57\u1F59"
        "\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-\u1FCC"
        "\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107"
        "\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139"
        "\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE"
        "\u2CF2\u2CF3\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E"
        "\uAB70-\uABBF\uFB00-\uFB06\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F"
        "\U000104B0-\U000104D3\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2"
        "\U000118A0-\U000118DF\U0001E900-\U0001E943]+",
        "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+",
        "\\s+$",
        kCjk,
        "\\p{N}+"},
       false},
      {{"deepseek-v3"},
       {"\\p{N}{1,3}", "[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+",
        "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
        " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"},
       false},
      {{"deepseek-coder"}, {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjk, "\\p{N}"}, false},
      {{"falcon"}, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"}, false},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
       {"\\p{N}", kGpt2},
       false},
      {{"gpt-2", "mpt", "olmo", "jais", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v1-en",
        "jina-v2-es", "jina-v2-de", "jina-v2-code", "roberta-bpe"},
       {kGpt2},
       false},
      {{"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez"}, {kQwen2}, false},
      {{"poro-chat", "bloom", "gpt3-finnish"}, {kPoro}, false},
      {{"viking"}, {kPoro, "\\p{N}"}, false},
      {{"tekken"},
       {"[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|"
        "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}|"
        " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
       true},
      {{"chameleon"},
       {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )",
        "\\p{N}", "[\\p{P}!-/:-@\\[-`{-~]", kGpt2},
       false},
  };
  return sets;
}

}  // namespace

bool named_pre_tokenizer(const std::string& name, std::vector<std::string>& patterns,
                         bool& ignore_merges) {
  for (const Named& s : named_sets()) {
    for (const char* n : s.names) {
      if (name != n) continue;
      patterns.assign(s.patterns.begin(), s.patterns.end());
      ignore_merges = s.ignore_merges;
      return true;
    }
  }
  return false;
}

std::string known_pre_tokenizers() {
  std::string out;
  for (const Named& s : named_sets())
    for (const char* n : s.names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

}  // namespace cibench::bpe

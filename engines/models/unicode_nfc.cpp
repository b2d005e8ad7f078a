// NFC from generated tables (unicode_nfc.inc: tools/unicode/gen_nfc.py, from Python's
// unicodedata) and the Hangul syllable arithmetic of the Unicode standard (section 3.12).
#include "engines/models/unicode_nfc.h"

#include <algorithm>
#include <iterator>

namespace cibench::unicode {
namespace {

struct Decomp {
  uint32_t cp, first, second;  // second = 0: a singleton decomposition
};
struct Compose {
  uint64_t key;  // first << 21 | second
  uint32_t composite;
};
#include "engines/models/unicode_nfc.inc"

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

void decompose(char32_t cp, std::vector<char32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  const auto it = std::lower_bound(std::begin(kDecomp), std::end(kDecomp), cp,
                                   [](const Decomp& d, char32_t c) { return d.cp < c; });
  if (it == std::end(kDecomp) || it->cp != cp) {
    out.push_back(cp);
    return;
  }
  decompose(it->first, out);
  if (it->second != 0) decompose(it->second, out);
}

// The primary composite of the pair, or 0.
char32_t compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  const uint64_t key = (static_cast<uint64_t>(a) << 21) | b;
  const auto it = std::lower_bound(std::begin(kCompose), std::end(kCompose), key,
                                   [](const Compose& c, uint64_t k) { return c.key < k; });
  return it != std::end(kCompose) && it->key == key ? it->composite : 0;
}

}  // namespace

uint8_t combining_class(char32_t cp) {
  if (cp > 0x10FFFF) return 0;
  const uint32_t key = (static_cast<uint32_t>(cp) << 8) | 0xFFu;
  const uint32_t* it = std::upper_bound(std::begin(kCccRuns), std::end(kCccRuns), key);
  return static_cast<uint8_t>(*(it - 1) & 0xFFu);
}

std::vector<char32_t> nfc(const std::vector<char32_t>& cps) {
  if (std::all_of(cps.begin(), cps.end(), [](char32_t c) { return c < 0x80; })) return cps;
  // Canonical decomposition, then canonical ordering: within each run of non-starters, a stable
  // sort by combining class.
  std::vector<char32_t> d;
  d.reserve(cps.size() + 8);
  for (char32_t c : cps) decompose(c, d);
  std::vector<uint8_t> cls(d.size());
  for (size_t i = 0; i < d.size(); ++i) cls[i] = combining_class(d[i]);
  for (size_t i = 1; i < d.size(); ++i)
    for (size_t j = i; j > 0 && cls[j] != 0 && cls[j - 1] > cls[j]; --j) {
      std::swap(d[j - 1], d[j]);
      std::swap(cls[j - 1], cls[j]);
    }
  // Canonical composition (UAX #15's reference algorithm): a character combines with the last
  // starter unless a character between them has a class of 0 or of at least its own.
  std::vector<char32_t> out;
  out.reserve(d.size());
  size_t starter = 0;
  bool have_starter = false;
  int last_class = -1;  // class of the last character kept after the starter; -1: none kept
  for (size_t i = 0; i < d.size(); ++i) {
    const char32_t c = d[i];
    const int cc = cls[i];
    if (have_starter && (last_class == -1 || last_class < cc)) {
      if (const char32_t comp = compose(out[starter], c)) {
        out[starter] = comp;
        continue;
      }
    }
    if (cc == 0) {
      starter = out.size();
      have_starter = true;
      last_class = -1;
    } else {
      last_class = cc;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace cibench::unicode

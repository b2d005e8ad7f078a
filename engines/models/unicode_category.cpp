// Unicode general categories from a generated run table, the White_Space list, UTF-8 helpers.
#include "engines/models/unicode_category.h"

#include <algorithm>
#include <iterator>

namespace cibench::unicode {
namespace {

// unicode_category.inc is generated from Python's unicodedata (the version named in its first
// line) by this script, run as `python3 gen.py > engines/models/unicode_category.inc`:
//
//   import unicodedata as ud
//   CATS = ['Cn','Lu','Ll','Lt','Lm','Lo','Mn','Mc','Me','Nd','Nl','No','Pc','Pd','Ps','Pe',
//           'Pi','Pf','Po','Sm','Sc','Sk','So','Zs','Zl','Zp','Cc','Cf','Cs','Co']
//   idx = {c: i for i, c in enumerate(CATS)}; runs = []; prev = None
//   for c in range(0x110000):
//       k = idx[ud.category(chr(c))]
//       if k != prev: runs.append((c << 5) | k); prev = k
//   (printed as a C array kCategoryRuns, eight per line, after the two comment lines)
#include "engines/models/unicode_category.inc"

}  // namespace

Category category(char32_t cp) {
  if (cp > 0x10FFFF) return Cn;
  // The last run starting at or before cp.
  const uint32_t key = (static_cast<uint32_t>(cp) << 5) | 31u;
  const uint32_t* it = std::upper_bound(std::begin(kCategoryRuns), std::end(kCategoryRuns), key);
  return static_cast<Category>(*(it - 1) & 31u);
}

uint32_t category_mask(const std::string& name) {
  static const char* const kNames[kCategoryCount] = {
      "Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps",
      "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"};
  uint32_t mask = 0;
  for (int i = 0; i < kCategoryCount; ++i) {
    const std::string n = kNames[i];
    if ((name.size() == 1 && n[0] == name[0]) || n == name) mask |= 1u << i;
  }
  return mask;
}

bool is_white_space(char32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  if (cp < 0x85) return false;
  switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::vector<char32_t> decode_utf8_lenient(const std::string& s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  const size_t n = s.size();
  auto cont = [&](size_t i) { return i < n && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80; };
  for (size_t i = 0; i < n;) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    auto b = [&](size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k]) & 0x3F); };
    if (c < 0x80) {
      out.push_back(c);
      i += 1;
    } else if ((c & 0xE0) == 0xC0 && cont(i + 1)) {
      out.push_back((static_cast<char32_t>(c & 0x1F) << 6) | b(1));
      i += 2;
    } else if ((c & 0xF0) == 0xE0 && cont(i + 1) && cont(i + 2)) {
      out.push_back((static_cast<char32_t>(c & 0x0F) << 12) | (b(1) << 6) | b(2));
      i += 3;
    } else if ((c & 0xF8) == 0xF0 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
      const char32_t cp = (static_cast<char32_t>(c & 0x07) << 18) | (b(1) << 12) | (b(2) << 6) | b(3);
      out.push_back(cp > 0x10FFFF ? 0xFFFD : cp);
      i += 4;
    } else {
      out.push_back(0xFFFD);
      i += 1;
    }
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace cibench::unicode

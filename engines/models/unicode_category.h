#pragma once
// Unicode general categories and the White_Space property, for the byte-level BPE
// pre-tokenizers (their \p{L}, \p{N}, \s ... classes), and lenient UTF-8 decoding.
#include <cstdint>
#include <string>
#include <vector>

namespace cibench::unicode {

// The 30 general categories, Cn (unassigned) first. The numbering is the generated table's.
enum Category : uint8_t {
  Cn, Lu, Ll, Lt, Lm, Lo, Mn, Mc, Me, Nd, Nl, No, Pc, Pd, Ps, Pe, Pi, Pf, Po,
  Sm, Sc, Sk, So, Zs, Zl, Zp, Cc, Cf, Cs, Co,
  kCategoryCount
};

// The general category of `cp` (Cn above U+10FFFF).
Category category(char32_t cp);

// Bit mask of the categories named by a one- or two-letter name ("L", "Lu", "N", "P" ...);
// 0 for an unknown name.
uint32_t category_mask(const std::string& name);

// The White_Space property (PropList.txt): \t \n \v \f \r, space, U+0085, U+00A0, U+1680,
// U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
bool is_white_space(char32_t cp);

// Code points of `utf8`. Each byte that does not start a well-formed sequence (a stray
// continuation byte, a lead byte without its continuation bytes) becomes U+FFFD and decoding
// resumes at the next byte, as llama.cpp's unicode_cpts_from_utf8 does.
std::vector<char32_t> decode_utf8_lenient(const std::string& utf8);

// Appends the UTF-8 form of `cp` (which must be <= U+10FFFF).
void append_utf8(std::string& out, char32_t cp);

}  // namespace cibench::unicode

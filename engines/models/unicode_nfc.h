#pragma once
// Unicode Normalization Form C (UAX #15): canonical decomposition, canonical ordering of
// combining marks, canonical composition. The normaliser Hugging Face tokenizer.json files name
// as "NFC" (Qwen2 and others).
#include <cstdint>
#include <vector>

namespace cibench::unicode {

// The canonical combining class of `cp` (0 for starters and above U+10FFFF).
uint8_t combining_class(char32_t cp);

// The NFC form of a sequence of code points. ASCII-only input is returned unchanged.
std::vector<char32_t> nfc(const std::vector<char32_t>& cps);

}  // namespace cibench::unicode

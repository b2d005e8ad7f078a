#pragma once
// llama.cpp's tokenizer test vectors (models/tokenizer-test-vectors in ../shared).
#include <sstream>
#include <string>
#include <vector>

#include "engines/core/buffer.h"
#include "test_support.h"

namespace cibench::test {

inline std::vector<std::string> split_all(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t hit; (hit = s.find(sep, start)) != std::string::npos; start = hit + sep.size())
    out.push_back(s.substr(start, hit - start));
  out.push_back(s.substr(start));
  return out;
}

struct TokenizerVector {
  std::string text;
  std::vector<int> ids;
};

// llama.cpp's test-tokenizer-0 layout: every string is followed by "\n__ggml_vocab_test__\n"
// (so the text is what lies between separator lines, without the newline before the separator,
// and the file ends with a separator); the .out file has one line of ids per string.
// `rel` is the vocabulary's path under ../shared (the .inp/.out files are beside it).
inline std::vector<TokenizerVector> read_tokenizer_vectors(const std::string& rel) {
  const std::string inp = read_file(shared_path(rel + ".inp"));
  const std::string out = read_file(shared_path(rel + ".out"));
  std::vector<std::string> texts = split_all(inp, "\n__ggml_vocab_test__\n");
  EXPECT_EQ(texts.back(), "") << "the .inp file should end with a separator line";
  texts.pop_back();
  std::vector<std::string> lines = split_all(out, "\n");
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  EXPECT_EQ(texts.size(), lines.size()) << "strings in .inp vs lines in .out";
  std::vector<TokenizerVector> v;
  for (size_t i = 0; i < texts.size() && i < lines.size(); ++i) {
    TokenizerVector x{texts[i], {}};
    std::istringstream ls(lines[i]);
    for (int id; ls >> id;) x.ids.push_back(id);
    v.push_back(std::move(x));
  }
  return v;
}

inline std::string ids_str(const std::vector<int>& ids) {
  std::string s;
  for (int id : ids) {
    if (!s.empty()) s.push_back(' ');
    s.append(std::to_string(id));
  }
  return s;
}

// `s` quoted, with newlines and tabs escaped, for failure messages.
inline std::string escaped(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    if (c == '\n') o += "\\n";
    else if (c == '\t') o += "\\t";
    else o.push_back(static_cast<char>(c));
  }
  return "\"" + o + "\"";
}

}  // namespace cibench::test

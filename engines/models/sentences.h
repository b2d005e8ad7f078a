#pragma once
// Labelled sentences for classifiers: the file format the classifier path reads everywhere
// (`cibench classify`, classifier scenarios, `cibench bert-recipes`).
#include <string>
#include <vector>

namespace cibench {

struct LabelledText {
  std::string text;
  int label = -1;  // -1: the file has no label column
};

// A TSV whose header names a `sentence` (or `text`) column and optionally `label` (GLUE SST-2),
// or plain text with one sentence per line (no labels). Empty lines are skipped. Throws
// FileError naming the file and line on a row with too few columns or a label that is not a
// class index (integer >= 0). *is_tsv (when given) says whether a header was found.
std::vector<LabelledText> read_labelled_sentences(const std::string& path, bool* is_tsv = nullptr);

}  // namespace cibench

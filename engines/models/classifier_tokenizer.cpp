#include "engines/models/classifier_tokenizer.h"

#include <filesystem>

#include "engines/core/error.h"
#include "engines/models/tokenizer.h"
#include "engines/models/wordpiece.h"

namespace cibench {

namespace fs = std::filesystem;

std::vector<int> frame_sentence(int cls, std::vector<int> pieces, int sep, int max_length) {
  CIBENCH_CHECK(max_length >= 2, "max_length ", max_length, " leaves no room for the two framing tokens");
  if (static_cast<int64_t>(pieces.size()) > max_length - 2) pieces.resize(static_cast<size_t>(max_length - 2));
  std::vector<int> ids;
  ids.reserve(pieces.size() + 2);
  ids.push_back(cls);
  ids.insert(ids.end(), pieces.begin(), pieces.end());
  ids.push_back(sep);
  return ids;
}

namespace {

class WordPieceClassifierTokenizer final : public ClassifierTokenizer {
 public:
  explicit WordPieceClassifierTokenizer(WordPieceTokenizer t) : t_(std::move(t)) {}
  std::vector<int> encode(const std::string& text, int max_length) const override {
    return t_.encode(text, max_length);
  }
  int vocab_size() const override { return t_.vocab_size(); }
  std::string kind() const override { return "wordpiece"; }

 private:
  WordPieceTokenizer t_;
};

// The id of `piece` in `v`; FileError naming `path` when absent.
int piece_id(const VocabPieces& v, const std::string& piece, const std::string& path, const std::string& family) {
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (v.tokens[i] == piece) return static_cast<int>(i);
  throw FileError(path, str("the vocabulary has no '", piece, "' token, which a ", family, " classifier frames a sentence with"));
}

// RoBERTa: the byte-level BPE of the model's tokenizer.json, framed by <s> ... </s>.
class RobertaClassifierTokenizer final : public ClassifierTokenizer {
 public:
  explicit RobertaClassifierTokenizer(const std::string& path) : t_(open_tokenizer(path)) {
    if (t_->kind() != "bpe")
      throw FileError(path, str("a RoBERTa classifier needs a byte-level BPE tokenizer.json, this is ", t_->kind()));
    const VocabPieces v = t_->pieces();
    cls_ = piece_id(v, "<s>", path, "RoBERTa");
    sep_ = piece_id(v, "</s>", path, "RoBERTa");
  }
  std::vector<int> encode(const std::string& text, int max_length) const override {
    return frame_sentence(cls_, t_->encode(text, false, false), sep_, max_length);
  }
  int vocab_size() const override { return t_->vocab_size(); }
  std::string kind() const override { return "bpe"; }

 private:
  std::unique_ptr<Tokenizer> t_;
  int cls_ = 0, sep_ = 2;
};

// XLM-R: SentencePiece pieces renumbered as fairseq's dictionary numbers them (Hugging Face's
// XLMRobertaTokenizer): <s> 0, <pad> 1, </s> 2, <unk> 3, SentencePiece piece p >= 1 at p + 1
// (its <unk>, piece 0, becomes 3), <mask> after the last piece.
class XlmrClassifierTokenizer final : public ClassifierTokenizer {
 public:
  explicit XlmrClassifierTokenizer(const std::string& path) : t_(open_tokenizer(path)) {
    if (t_->kind() != "sentencepiece")
      throw FileError(path, str("an XLM-R classifier needs a SentencePiece model, this is ", t_->kind()));
    unk_ = t_->pieces().unk_id;
  }
  std::vector<int> encode(const std::string& text, int max_length) const override {
    std::vector<int> ids = t_->encode(text, false, false);
    for (int& id : ids) id = id == unk_ ? 3 : id + 1;
    return frame_sentence(0, std::move(ids), 2, max_length);
  }
  int vocab_size() const override { return t_->vocab_size() + 2; }  // + <pad> and <mask>
  std::string kind() const override { return "xlmr-sentencepiece"; }

 private:
  std::unique_ptr<Tokenizer> t_;
  int unk_ = 0;
};

}  // namespace

std::shared_ptr<const ClassifierTokenizer> open_classifier_tokenizer(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) {
    if (fs::exists(p / "vocab.txt"))
      return std::make_shared<WordPieceClassifierTokenizer>(WordPieceTokenizer::from_hf_folder(path));
    if (fs::exists(p / "tokenizer.json"))
      return std::make_shared<RobertaClassifierTokenizer>((p / "tokenizer.json").string());
    if (fs::exists(p / "sentencepiece.bpe.model"))
      return std::make_shared<XlmrClassifierTokenizer>((p / "sentencepiece.bpe.model").string());
    throw FileError(path, "no classifier vocabulary in the folder (vocab.txt, tokenizer.json or sentencepiece.bpe.model)");
  }
  const std::string ext = p.extension().string();
  if (ext == ".json") return std::make_shared<RobertaClassifierTokenizer>(path);
  if (ext == ".model") return std::make_shared<XlmrClassifierTokenizer>(path);
  if (ext == ".gguf") return std::make_shared<WordPieceClassifierTokenizer>(WordPieceTokenizer::from_gguf(path));
  if (p.filename() == "vocab.txt" && fs::exists(p.parent_path() / "tokenizer_config.json"))
    return std::make_shared<WordPieceClassifierTokenizer>(WordPieceTokenizer::from_hf_folder(p.parent_path().string()));
  return std::make_shared<WordPieceClassifierTokenizer>(WordPieceTokenizer::from_vocab_txt(path));
}

}  // namespace cibench

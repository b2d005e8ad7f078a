#include "engines/models/classifier_tokenizer.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <tuple>
#include <utility>

#include "engines/core/buffer.h"
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

// The id of a special token named by a post-processor: its "ids" entry in `specials`
// (TemplateProcessing's special_tokens) when there is one, else the piece of that name.
int framing_id(const nlohmann::json* specials, const std::string& name, const VocabPieces& v,
               const std::string& path, const std::string& key) {
  if (specials && specials->is_object() && specials->contains(name)) {
    const nlohmann::json& e = (*specials)[name];
    if (!e.is_object() || !e.contains("ids") || !e["ids"].is_array() || e["ids"].size() != 1 ||
        !e["ids"][0].is_number_integer())
      throw FileError(path, str("post_processor.special_tokens[\"", name, "\"] must have one id, got ", e.dump()));
    const int64_t id = e["ids"][0].get<int64_t>();
    if (id < 0 || id >= static_cast<int64_t>(v.tokens.size()))
      throw FileError(path, str("post_processor.special_tokens[\"", name, "\"]: id ", id, " is outside the vocabulary"));
    return static_cast<int>(id);
  }
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (v.tokens[i] == name) return static_cast<int>(i);
  throw FileError(path, str(key, " names '", name, "', which is not a token of the vocabulary"));
}

// How a byte-level BPE classifier frames one sentence, from its tokenizer.json's post-processor:
// TemplateProcessing's single template (ModernBERT: [CLS] $A [SEP]), RobertaProcessing's or
// BertProcessing's cls and sep, or, without a post-processor, RoBERTa's <s> ... </s>.
std::pair<int, int> bpe_framing(const std::string& path, const VocabPieces& v) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw FileError(path, str("not valid JSON: ", e.what()));
  }
  std::vector<const nlohmann::json*> procs;
  if (j.is_object() && j.contains("post_processor") && j["post_processor"].is_object()) {
    const nlohmann::json& pp = j["post_processor"];
    if (pp.value("type", "") == "Sequence" && pp.contains("processors") && pp["processors"].is_array())
      for (const nlohmann::json& p : pp["processors"]) procs.push_back(&p);
    else
      procs.push_back(&pp);
  }
  for (const nlohmann::json* p : procs) {
    if (!p->is_object() || !p->contains("type") || !(*p)["type"].is_string()) continue;
    const std::string type = (*p)["type"];
    if (type == "TemplateProcessing") {
      const nlohmann::json* single = p->contains("single") ? &(*p)["single"] : nullptr;
      auto special = [&](size_t i) -> std::string {
        const nlohmann::json& e = (*single)[i];
        if (!e.is_object() || !e.contains("SpecialToken") || !e["SpecialToken"].is_object() ||
            !e["SpecialToken"].contains("id") || !e["SpecialToken"]["id"].is_string())
          return {};
        return e["SpecialToken"]["id"];
      };
      if (!single || !single->is_array() || single->size() != 3 || special(0).empty() || special(2).empty() ||
          !(*single)[1].is_object() || !(*single)[1].contains("Sequence"))
        throw FileError(path, str("post_processor.single is ", single ? single->dump() : "absent",
                                  "; a classifier frames one sentence as [special] $A [special]"));
      const nlohmann::json* specials = p->contains("special_tokens") ? &(*p)["special_tokens"] : nullptr;
      return {framing_id(specials, special(0), v, path, "post_processor.single[0]"),
              framing_id(specials, special(2), v, path, "post_processor.single[2]")};
    }
    if (type == "RobertaProcessing" || type == "BertProcessing") {
      auto pair_id = [&](const char* key) {
        const nlohmann::json* e = p->contains(key) ? &(*p)[key] : nullptr;
        if (!e || !e->is_array() || e->size() != 2 || !(*e)[0].is_string() || !(*e)[1].is_number_integer())
          throw FileError(path, str("post_processor.", key, " must be [token, id], got ", e ? e->dump() : "nothing"));
        const std::string name = (*e)[0];
        const int64_t id = (*e)[1].get<int64_t>();
        if (id < 0 || id >= static_cast<int64_t>(v.tokens.size()) || v.tokens[static_cast<size_t>(id)] != name)
          throw FileError(path, str("post_processor.", key, " = ", e->dump(), ": the vocabulary has no '", name,
                                    "' token at id ", id, ", which a classifier frames a sentence with"));
        return static_cast<int>(id);
      };
      return {pair_id("cls"), pair_id("sep")};
    }
  }
  return {piece_id(v, "<s>", path, "RoBERTa"), piece_id(v, "</s>", path, "RoBERTa")};
}

// Byte-level BPE (RoBERTa, ModernBERT): the model's tokenizer.json, framed as its post-processor
// frames one sentence.
class ByteLevelClassifierTokenizer final : public ClassifierTokenizer {
 public:
  explicit ByteLevelClassifierTokenizer(const std::string& path) : t_(open_tokenizer(path)) {
    if (t_->kind() != "bpe")
      throw FileError(path, str("a byte-level BPE classifier (RoBERTa, ModernBERT) needs a tokenizer.json, this is ",
                                t_->kind()));
    std::tie(cls_, sep_) = bpe_framing(path, t_->pieces());
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
      return std::make_shared<ByteLevelClassifierTokenizer>((p / "tokenizer.json").string());
    if (fs::exists(p / "sentencepiece.bpe.model"))
      return std::make_shared<XlmrClassifierTokenizer>((p / "sentencepiece.bpe.model").string());
    throw FileError(path, "no classifier vocabulary in the folder (vocab.txt, tokenizer.json or sentencepiece.bpe.model)");
  }
  const std::string ext = p.extension().string();
  if (ext == ".json") return std::make_shared<ByteLevelClassifierTokenizer>(path);
  if (ext == ".model") return std::make_shared<XlmrClassifierTokenizer>(path);
  if (ext == ".gguf") return std::make_shared<WordPieceClassifierTokenizer>(WordPieceTokenizer::from_gguf(path));
  if (p.filename() == "vocab.txt" && fs::exists(p.parent_path() / "tokenizer_config.json"))
    return std::make_shared<WordPieceClassifierTokenizer>(WordPieceTokenizer::from_hf_folder(p.parent_path().string()));
  return std::make_shared<WordPieceClassifierTokenizer>(WordPieceTokenizer::from_vocab_txt(path));
}

}  // namespace cibench

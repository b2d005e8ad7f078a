// SentencePiece tokenizer.model through libsentencepiece. Encoding is the library's own (it adds
// the dummy "▁" prefix itself); decoding follows the llama2.c rule shared by all kinds.
#include <sentencepiece_processor.h>

#include <cmath>

#include "engines/core/buffer.h"
#include "engines/core/error.h"
#include "engines/models/tokenizer_impl.h"

namespace cibench::tokenizer_detail {
namespace {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  SentencePieceTokenizer(const std::string& path, const std::string& proto) : path_(path) {
    const auto st = sp_.LoadFromSerializedProto(proto);
    if (!st.ok()) throw FileError(path, str("not a SentencePiece model: ", st.ToString()));
    const int n = sp_.GetPieceSize();
    if (n <= 0) throw FileError(path, "SentencePiece model has no pieces");
    for (int i = 0; i < n; ++i) {
      PieceKind k = PieceKind::text;
      if (sp_.IsControl(i)) k = PieceKind::control;
      else if (sp_.IsByte(i)) k = PieceKind::byte;
      pieces_.add(unescape_spaces(sp_.IdToPiece(i)), k);
      if (!std::isfinite(sp_.GetScore(i)))  // the unigram model ranks segmentations by score
        throw FileError(path, str("SentencePiece piece ", i, " has a non-finite score (", sp_.GetScore(i), ")"));
      texts_.push_back(sp_.IdToPiece(i));
      types_.push_back(sp_.IsControl(i) ? 3 : sp_.IsUnknown(i) ? 2 : 1);
    }
    // (User-defined pieces are the library's own business: Encode matches them.)
    specials_ = special_pieces(texts_, types_);
  }

  std::vector<int> encode(const std::string& text, bool add_bos, bool add_eos) const override {
    std::vector<int> ids;
    const auto st = sp_.Encode(text, &ids);
    if (!st.ok()) throw Error(str(path_, ": SentencePiece encode failed: ", st.ToString()));
    if (add_bos) {
      if (bos_id() < 0) throw Error(str(path_, ": SentencePiece model has no BOS piece"));
      ids.insert(ids.begin(), bos_id());
    }
    if (add_eos) {
      if (eos_id() < 0) throw Error(str(path_, ": SentencePiece model has no EOS piece"));
      ids.push_back(eos_id());
    }
    return ids;
  }

  // Each raw stretch between control pieces is encoded by the library (with its dummy prefix).
  std::vector<int> encode_segments(const std::vector<TextSegment>& segments, bool add_bos,
                                   bool add_eos) const override {
    std::string text;
    const std::vector<Fragment> frags = partition_specials(segments, specials_, texts_, text);
    std::vector<int> ids;
    if (add_bos) {
      if (bos_id() < 0) throw Error(str(path_, ": SentencePiece model has no BOS piece"));
      ids.push_back(bos_id());
    }
    for (const Fragment& f : frags) {
      if (f.token >= 0) {
        ids.push_back(f.token);
        continue;
      }
      std::vector<int> part;
      const auto st = sp_.Encode(text.substr(f.off, f.len), &part);
      if (!st.ok()) throw Error(str(path_, ": SentencePiece encode failed: ", st.ToString()));
      ids.insert(ids.end(), part.begin(), part.end());
    }
    if (add_eos) {
      if (eos_id() < 0) throw Error(str(path_, ": SentencePiece model has no EOS piece"));
      ids.push_back(eos_id());
    }
    return ids;
  }

  std::string decode(int prev, int token) const override {
    return decode_piece(pieces_, bos_id(), prev, token);
  }
  int vocab_size() const override { return sp_.GetPieceSize(); }
  int bos_id() const override { return sp_.bos_id(); }
  int eos_id() const override { return sp_.eos_id(); }
  std::string kind() const override { return "sentencepiece"; }
  VocabPieces pieces() const override {
    VocabPieces v;
    v.bos_id = sp_.bos_id();
    v.eos_id = sp_.eos_id();
    v.unk_id = sp_.unk_id();
    for (int i = 0; i < sp_.GetPieceSize(); ++i) {
      v.tokens.push_back(sp_.IdToPiece(i));
      v.scores.push_back(sp_.GetScore(i));
      int32_t type = 1;
      if (sp_.IsUnknown(i)) type = 2;
      else if (sp_.IsControl(i)) type = 3;
      else if (sp_.IsUnused(i)) type = 5;
      else if (sp_.IsByte(i)) type = 6;  // (the library does not expose user-defined pieces)
      v.types.push_back(type);
    }
    return v;
  }

 private:
  std::string path_;
  sentencepiece::SentencePieceProcessor sp_;
  PieceTable pieces_;
  std::vector<std::string> texts_;  // (vocab) piece text as the library stores it
  std::vector<int> types_;          // (vocab) 3 control, 2 unknown, 1 otherwise
  std::vector<SpecialPiece> specials_;
};

}  // namespace

std::unique_ptr<Tokenizer> open_sentencepiece(const std::string& path) {
  const std::string proto = read_file(path);
  if (proto.empty()) throw FileError(path, "SentencePiece model file is empty");
  return std::make_unique<SentencePieceTokenizer>(path, proto);
}

}  // namespace cibench::tokenizer_detail

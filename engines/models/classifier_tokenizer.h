#pragma once
// The tokenizer of a sequence classifier: text to the ids the encoder reads, framed the way its
// family frames one sentence.
//   BERT / DistilBERT   WordPiece (vocab.txt, a GGUF vocabulary)      [CLS] pieces [SEP]
//   RoBERTa             byte-level BPE (tokenizer.json)                <s> pieces </s>
//   ModernBERT          byte-level BPE (tokenizer.json)                [CLS] pieces [SEP]
//                       (either: the framing of the file's post-processor)
//   XLM-RoBERTa         SentencePiece (sentencepiece.bpe.model) with   <s> pieces </s>
//                       fairseq's ids: <s> 0, <pad> 1, </s> 2, <unk> 3, piece p at p + 1
#include <memory>
#include <string>
#include <vector>

namespace cibench {

class ClassifierTokenizer {
 public:
  virtual ~ClassifierTokenizer() = default;
  // The framed ids of `text`, truncated to at most max_length ids (>= 2) keeping the final
  // separator.
  virtual std::vector<int> encode(const std::string& text, int max_length) const = 0;
  virtual int vocab_size() const = 0;
  virtual std::string kind() const = 0;  // "wordpiece", "bpe", "xlmr-sentencepiece"
};

// Opens the classifier tokenizer at `path`: a Hugging Face folder (its vocab.txt, else
// tokenizer.json, else sentencepiece.bpe.model), a vocab.txt (with its folder's
// tokenizer_config.json when present), a .gguf vocabulary (WordPiece), a tokenizer.json (byte-level
// BPE framed by its post-processor's template, else by <s> and </s>), or a SentencePiece .model
// (XLM-R's numbering).
// Throws FileError naming the file and what is wrong.
std::shared_ptr<const ClassifierTokenizer> open_classifier_tokenizer(const std::string& path);

// Truncates `pieces` so that cls + pieces + sep fits max_length (>= 2) and frames them.
std::vector<int> frame_sentence(int cls, std::vector<int> pieces, int sep, int max_length);

}  // namespace cibench

// Fuzz target for the other readers of user files: each input is written to a scratch folder and
// read as a llama2.c tokenizer.bin, a Hugging Face tokenizer.json (byte-level BPE), a WordPiece vocab.txt (and a HF tokenizer folder), a labelled
// sentence TSV, a replay file of sample indices, a Hugging Face config.json (Llama and BERT
// folders without weights: the config is read and checked first) and a .cbq quantised model
// (which, when it loads, also runs a prefill and a step). A
// cibench::Error is the expected way to reject a bad file; any other exception, a crash, a hang
// or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "engines/core/error.h"
#include "engines/models/bert.h"
#include "engines/models/llama_config.h"
#include "engines/models/sentences.h"
#include "engines/models/tokenizer.h"
#include "engines/models/wordpiece.h"
#include "engines/quant/quantized_file.h"
#include "engines/runtime/session.h"
#include "harness/lib/traffic.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

namespace fs = std::filesystem;
using cibench::fuzz::rejecting_errors;

struct Scratch {
  fs::path dir = cibench::fuzz::scratch_dir("cibench_fuzz_text");
  Scratch() {
    fs::create_directories(dir / "llama");
    fs::create_directories(dir / "bert");
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string at(const std::string& name) const { return (dir / name).string(); }
};

Scratch& scratch() {
  static Scratch s;
  return s;
}

void write(const std::string& path, const uint8_t* data, size_t size) { cibench::fuzz::write_input(path, data, size); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Scratch& s = scratch();
  write(s.at("tok.bin"), data, size);
  rejecting_errors([&] {
    auto tok = cibench::open_tokenizer(s.at("tok.bin"), 0);
    const auto ids = tok->encode("Once upon a time, there was a little cat.", true, false);
    for (size_t i = 1; i < ids.size(); ++i) tok->decode(ids[i - 1], ids[i]);
  });
  write(s.at("tokenizer.json"), data, size);
  rejecting_errors([&] {
    auto tok = cibench::open_tokenizer(s.at("tokenizer.json"), 0);
    const auto ids = tok->encode("Once upon a time, there's 12345 na\xC3\xAFve cats!\n\n  <x>", true, true);
    for (size_t i = 1; i < ids.size(); ++i) tok->decode(ids[i - 1], ids[i]);
  });
  write(s.at("vocab.txt"), data, size);
  rejecting_errors([&] {
    const auto wp = cibench::WordPieceTokenizer::from_vocab_txt(s.at("vocab.txt"));
    wp.encode("The movie's unbelievably GOOD — naïve, 123 über-fun!", 64);
  });
  write(s.at("sentences.tsv"), data, size);
  rejecting_errors([&] { cibench::read_labelled_sentences(s.at("sentences.tsv")); });
  write(s.at("replay.txt"), data, size);
  rejecting_errors([&] { cibench::Traffic::replay(s.at("replay.txt"), 64); });
  write(s.at("llama/config.json"), data, size);
  rejecting_errors([&] { cibench::open_llama_source(s.at("llama")); });
  write(s.at("bert/config.json"), data, size);
  rejecting_errors([&] { cibench::open_bert_source(s.at("bert")); });
  write(s.at("model.cbq"), data, size);
  rejecting_errors([&] {
    // What loads must also run: one prefill and one step of the model it describes.
    const cibench::LlamaModel model = cibench::build_quantized(cibench::load_quantized(s.at("model.cbq")));
    cibench::SessionOptions so;
    so.max_context = 8;
    so.max_batch = 4;
    cibench::LlamaSession session(model, so);
    const int prompt[] = {1, 2, 3};
    session.prefill(prompt, 3);
    session.step(4);
  });
  return 0;
}

// cibench logits -m MODEL [-z TOKENIZER] [-f FORMAT] (--text TEXT | --ids 1,2,3 | --ids-file F)
//   [--top-k 5] [--npy OUT.npy] [--compare REF] [--json]: the engine's teacher-forced next-token
// log-probabilities per position, so a user can check that cibench computes their model as a
// reference implementation does before trusting its figures (docs/tasks.md, "A reference check").
// --compare reads a reference dump (.npy float32/float64 of shape positions x vocabulary, or raw
// little-endian float32 of that size: logits or log-probabilities, both are log-softmaxed here)
// and reports the max and mean absolute difference of the log-probabilities, the max of the raw
// values as given (meaningful when the dump holds logits) and the top-1 agreement.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engines/models/llama.h"
#include "engines/models/llama_config.h"
#include "engines/models/tokenizer.h"
#include "engines/runtime/session.h"
#include "harness/cli/command.h"

namespace cibench::cli {
namespace cmd_logits {

struct Args {
  std::string model, tokenizer, format = "f32", text, ids, ids_file, npy, compare;
  int top_k = 5;
  int threads = 1;
  bool json = false;
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(str(path, ": cannot read"));
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// A 2-D float array from .npy (little-endian f4 or f8, C order) or raw float32 (rows x cols
// inferred from `cols`).
struct Matrix {
  size_t rows = 0, cols = 0;
  std::vector<double> v;
};

Matrix read_matrix(const std::string& path, size_t cols) {
  const std::string b = read_bytes(path);
  Matrix m;
  if (b.size() >= 10 && b.compare(0, 6, "\x93NUMPY") == 0) {
    const int major = static_cast<unsigned char>(b[6]);
    size_t hlen = 0, off = 0;
    if (major == 1) hlen = static_cast<unsigned char>(b[8]) | static_cast<size_t>(static_cast<unsigned char>(b[9])) << 8, off = 10;
    else if (b.size() >= 12) {
      for (int i = 0; i < 4; ++i) hlen |= static_cast<size_t>(static_cast<unsigned char>(b[8 + i])) << (8 * i);
      off = 12;
    }
    if (off == 0 || off + hlen > b.size()) throw Error(str(path, ": a truncated .npy header"));
    const std::string h = b.substr(off, hlen);
    const bool f4 = h.find("'<f4'") != std::string::npos, f8 = h.find("'<f8'") != std::string::npos;
    if (!f4 && !f8) throw Error(str(path, ": .npy of dtype other than little-endian float32/float64 (header ", h, ")"));
    if (h.find("'fortran_order': True") != std::string::npos) throw Error(str(path, ": a Fortran-order .npy"));
    const size_t lp = h.find('('), rp = h.find(')');
    if (lp == std::string::npos || rp == std::string::npos) throw Error(str(path, ": no shape in the .npy header"));
    std::vector<size_t> shape;
    std::istringstream ss(h.substr(lp + 1, rp - lp - 1));
    std::string part;
    while (std::getline(ss, part, ','))
      if (part.find_first_of("0123456789") != std::string::npos) shape.push_back(std::stoull(part));
    if (shape.size() == 3 && shape[0] == 1) shape.erase(shape.begin());  // (1, n, vocab) as a batch of one
    if (shape.size() != 2) throw Error(str(path, ": a .npy of ", shape.size(), " dimensions; expected positions x vocabulary"));
    m.rows = shape[0];
    m.cols = shape[1];
    const size_t es = f4 ? 4 : 8, data = off + hlen;
    if (b.size() - data < m.rows * m.cols * es)
      throw Error(str(path, ": ", b.size() - data, " bytes of data for shape (", m.rows, ", ", m.cols, ")"));
    m.v.resize(m.rows * m.cols);
    for (size_t i = 0; i < m.v.size(); ++i) {
      if (f4) {
        float x;
        std::memcpy(&x, b.data() + data + i * 4, 4);
        m.v[i] = x;
      } else {
        std::memcpy(&m.v[i], b.data() + data + i * 8, 8);
      }
    }
    return m;
  }
  if (b.size() % (4 * cols) != 0)
    throw Error(str(path, ": ", b.size(), " bytes is not a whole number of rows of ", cols, " float32 values"));
  m.cols = cols;
  m.rows = b.size() / (4 * cols);
  m.v.resize(m.rows * cols);
  for (size_t i = 0; i < m.v.size(); ++i) {
    float x;
    std::memcpy(&x, b.data() + i * 4, 4);
    m.v[i] = x;
  }
  return m;
}

void write_npy(const std::string& path, const std::vector<float>& v, size_t rows, size_t cols) {
  std::string header = str("{'descr': '<f4', 'fortran_order': False, 'shape': (", rows, ", ", cols, "), }");
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t hl = static_cast<uint16_t>(header.size());
  const char le[2] = {static_cast<char>(hl & 0xff), static_cast<char>(hl >> 8)};
  out.write(le, 2);
  out << header;
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  if (!out) throw Error(str(path, ": cannot write"));
}

void log_softmax_row(const double* in, double* out, size_t n) {
  double mx = in[0];
  for (size_t i = 1; i < n; ++i) mx = std::max(mx, in[i]);
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += std::exp(in[i] - mx);
  const double l = std::log(s);
  for (size_t i = 0; i < n; ++i) out[i] = in[i] - mx - l;
}

std::vector<int> parse_ids(const std::string& s) {
  std::vector<int> out;
  std::istringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (part.find_first_not_of(" ") == std::string::npos) continue;
    size_t used = 0;
    const long v = std::stol(part, &used);
    out.push_back(static_cast<int>(v));
  }
  return out;
}

int run(const Args& a) {
  const LlamaSource src = open_llama_source(a.model);
  LlamaBuildOptions bo;
  bo.format = a.format;
  const LlamaModel model = build_llama(src, bo);
  const int vocab = model.config.vocab_size;
  std::unique_ptr<Tokenizer> tok;
  if (!a.tokenizer.empty()) tok = open_tokenizer(a.tokenizer, vocab);
  const int sources = !a.text.empty() + !a.ids.empty() + !a.ids_file.empty();
  if (sources != 1) throw Error("give exactly one of --text, --ids, --ids-file");
  std::vector<int> ids;
  if (!a.text.empty()) {
    if (!tok) throw Error("--text needs --tokenizer");
    ids = tok->encode(a.text, true, false);
  } else if (!a.ids.empty()) {
    try {
      ids = parse_ids(a.ids);
    } catch (const std::exception&) {
      throw Error(str("--ids '", a.ids, "': expected comma-separated token ids"));
    }
  } else {
    const std::string b = read_bytes(a.ids_file);
    if (b.size() % 4 != 0) throw Error(str(a.ids_file, ": ", b.size(), " bytes is not a whole number of int32 ids"));
    ids.resize(b.size() / 4);
    std::memcpy(ids.data(), b.data(), b.size());
  }
  if (ids.empty()) throw Error("no tokens to score");
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab) throw Error(str("token ", i, " is ", ids[i], ", outside the vocabulary of ", vocab));
  SessionOptions so;
  so.threads = a.threads;
  so.max_context = std::max(model.config.seq_len, static_cast<int>(ids.size()));
  LlamaSession s(model, so);
  const size_t n = ids.size(), V = static_cast<size_t>(vocab);
  std::vector<float> logits(n * V);
  s.forward_all(ids.data(), static_cast<int>(n), logits.data());
  std::vector<double> lp(n * V), row(V);
  for (size_t p = 0; p < n; ++p) {
    for (size_t i = 0; i < V; ++i) row[i] = logits[p * V + i];
    log_softmax_row(row.data(), lp.data() + p * V, V);
  }
  if (!a.npy.empty()) {
    std::vector<float> f(lp.begin(), lp.end());
    write_npy(a.npy, f, n, V);
  }
  nlohmann::json j;
  j["model"] = a.model;
  j["format"] = a.format;
  j["tokens"] = ids;
  auto piece = [&](int id) {
    if (!tok) return std::to_string(id);
    std::string t = tok->decode(id == tok->bos_id() ? 0 : tok->bos_id(), id);
    for (char& c : t)
      if (c == '\n') c = ' ';
    return str(id, " '", t, "'");
  };
  if (a.compare.empty() || !a.json) {
    for (size_t p = 0; p < n; ++p) {
      std::vector<int> order(V);
      for (size_t i = 0; i < V; ++i) order[i] = static_cast<int>(i);
      const size_t k = std::min<size_t>(static_cast<size_t>(std::max(0, a.top_k)), V);
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                        [&](int x, int y) { return lp[p * V + static_cast<size_t>(x)] > lp[p * V + static_cast<size_t>(y)]; });
      nlohmann::json pj{{"pos", p}, {"token", ids[p]}};
      if (p + 1 < n) pj["next_logprob"] = lp[p * V + static_cast<size_t>(ids[p + 1])];
      for (size_t r = 0; r < k; ++r) pj["top"].push_back({order[r], lp[p * V + static_cast<size_t>(order[r])]});
      if (a.json) {
        j["positions"].push_back(pj);
        continue;
      }
      std::printf("%4zu %-18s", p, piece(ids[p]).c_str());
      if (p + 1 < n) std::printf(" next %-14s %8.4f |", piece(ids[p + 1]).c_str(), lp[p * V + static_cast<size_t>(ids[p + 1])]);
      for (size_t r = 0; r < k; ++r) std::printf(" %s %.4f", piece(order[r]).c_str(), lp[p * V + static_cast<size_t>(order[r])]);
      std::printf("\n");
    }
  }
  if (!a.compare.empty()) {
    const Matrix ref = read_matrix(a.compare, V);
    if (ref.cols != V) throw Error(str(a.compare, ": ", ref.cols, " columns; the model's vocabulary is ", V));
    if (ref.rows != n) throw Error(str(a.compare, ": ", ref.rows, " positions; ", n, " tokens were scored"));
    double max_raw = 0, max_lp = 0, sum_lp = 0;
    size_t agree = 0;
    std::vector<double> rl(V);
    for (size_t p = 0; p < n; ++p) {
      log_softmax_row(ref.v.data() + p * V, rl.data(), V);
      size_t am = 0, bm = 0;
      for (size_t i = 0; i < V; ++i) {
        max_raw = std::max(max_raw, std::fabs(static_cast<double>(logits[p * V + i]) - ref.v[p * V + i]));
        const double d = std::fabs(lp[p * V + i] - rl[i]);
        max_lp = std::max(max_lp, d);
        sum_lp += d;
        if (lp[p * V + i] > lp[p * V + am]) am = i;
        if (rl[i] > rl[bm]) bm = i;
      }
      agree += am == bm;
    }
    const double mean_lp = sum_lp / static_cast<double>(n * V);
    j["compare"] = {{"reference", a.compare},   {"positions", n},       {"vocab", V},
                    {"max_abs_logprob", max_lp}, {"mean_abs_logprob", mean_lp},
                    {"max_abs_raw", max_raw},    {"top1_agreement", static_cast<double>(agree) / static_cast<double>(n)}};
    if (!a.json)
      std::printf("compare with %s (%zu positions x %zu): log-probabilities max |diff| %.3g, mean |diff| %.3g; "
                  "values as given max |diff| %.3g (logits if the dump holds logits); top-1 agreement %zu/%zu\n",
                  a.compare.c_str(), n, V, max_lp, mean_lp, max_raw, agree, n);
  }
  if (a.json) std::cout << j.dump(2) << "\n";
  return 0;
}

RegisterCommand reg{Command{
    "logits", "Per-position next-token log-probabilities (top-k or all as .npy), compared with a reference dump",
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<Args>();
      sub.add_option("-m,--model", a->model, "Model (llama2.c .bin, GGUF, Hugging Face folder, synthetic:NAME)")->required();
      sub.add_option("-z,--tokenizer", a->tokenizer, "Tokenizer (for --text and to print pieces)");
      sub.add_option("-f,--format", a->format, "Weight format")->capture_default_str();
      sub.add_option("--text", a->text, "Text to score (BOS first)");
      sub.add_option("--ids", a->ids, "Token ids to score, comma-separated");
      sub.add_option("--ids-file", a->ids_file, "Token ids to score, raw little-endian int32");
      sub.add_option("--top-k", a->top_k, "Tokens shown per position")->check(CLI::Range(0, 1000000))->capture_default_str();
      sub.add_option("-t,--threads", a->threads, "Threads")->check(CLI::Range(1, 1024))->capture_default_str();
      sub.add_option("--npy", a->npy, "Write every position's log-probabilities (positions x vocabulary, float32)");
      sub.add_option("--compare", a->compare, "Reference dump: .npy or raw float32, positions x vocabulary");
      sub.add_flag("--json", a->json, "JSON on stdout");
      return [a]() { return run(*a); };
    }}};

}  // namespace cmd_logits
}  // namespace cibench::cli

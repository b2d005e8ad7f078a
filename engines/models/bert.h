#pragma once
// BERT-family encoders for sequence classification: BERT (post-LayerNorm, GELU, absolute
// positions, token types, tanh pooler, linear classifier), DistilBERT (no token types, a
// ReLU pre-classifier instead of the pooler) and RoBERTa / XLM-RoBERTa (BERT's encoder with
// positions numbered from padding_idx + 1 and a dense + tanh + out_proj head on <s>) and
// ModernBERT (pre-LayerNorm layers, rotary positions, global attention every few layers and a
// sliding window in the others, a gated feed-forward, a dense + act + LayerNorm head on the
// [CLS] row or the mean of the tokens), loaded from Hugging Face folders
// (BertForSequenceClassification, DistilBertForSequenceClassification,
// RobertaForSequenceClassification, XLMRobertaForSequenceClassification,
// ModernBertForSequenceClassification) or built from a seed (synthetic:distilbert-base,
// synthetic:bert-base, synthetic:roberta-base, synthetic:modernbert-base, ...).
//
// The attention and feed-forward projections are WeightMatrix objects packed in any row of the
// format table; embeddings, LayerNorms, the pooler/pre-classifier and the classifier stay f32.
// A BertModel is read-only after build_bert(), so any number of BertSessions (workers) can
// share it; each session owns its thread pool and scratch.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engines/core/buffer.h"
#include "engines/core/cpu.h"
#include "engines/core/matrix.h"
#include "engines/core/observer.h"
#include "engines/kernels/kernels.h"
#include "engines/core/thread_pool.h"
#include "engines/models/llama_config.h"  // TensorSource

namespace cibench {


enum class BertArch { bert, distilbert, roberta, modernbert };
// What the head reads: the first token ([CLS]) or the mean over the sequence's tokens.
enum class BertPooling { cls, mean };
using BertActivation = Activation;  // feed-forward activation (engines/kernels/kernels.h)
const char* bert_arch_name(BertArch a);
const char* bert_activation_name(BertActivation a);
const char* bert_pooling_name(BertPooling p);

struct BertConfig {
  BertArch arch = BertArch::bert;
  int hidden = 0;           // hidden_size (DistilBERT: dim)
  int n_layers = 0;         // num_hidden_layers (n_layers)
  int n_heads = 0;          // num_attention_heads (n_heads)
  int intermediate = 0;     // intermediate_size (hidden_dim)
  int vocab_size = 0;
  int max_positions = 0;    // max_position_embeddings: rows of the position table
  // Token t reads position row t + position_offset: 0 for BERT/DistilBERT; RoBERTa and XLM-R
  // number the positions of real tokens from padding_idx + 1 (fairseq's convention), so 2 there.
  int position_offset = 0;
  int type_vocab_size = 0;  // token types (0 for DistilBERT)
  double layer_norm_eps = 1e-12;  // binary64 as written in config.json: the fast path rounds it to float
  BertActivation activation = BertActivation::gelu;
  int num_labels = 0;
  std::vector<std::string> labels;  // id2label, num_labels names
  int pad_token_id = 0;

  // ModernBERT only. Layer l attends globally when l % global_every == 0, otherwise to the keys
  // within local_window / 2 positions on either side (local_attention // 2 in Hugging Face's
  // sliding-window mask). Rotary positions (rotate-half) with rope_theta_global on global
  // layers and rope_theta_local on the others. Biases exist only where the flags say so
  // (attention_bias: Wqkv, Wo; mlp_bias: Wi, Wo; norm_bias: every LayerNorm; head_dense_bias:
  // head.dense, Hugging Face's classifier_bias); the classifier always has one.
  int global_every = 0;
  int local_window = 0;
  double rope_theta_global = 0, rope_theta_local = 0;
  bool attention_bias = true, mlp_bias = true, norm_bias = true, head_dense_bias = true;
  BertActivation head_activation = BertActivation::gelu;  // classifier_activation
  BertPooling pooling = BertPooling::cls;

  bool modern() const { return arch == BertArch::modernbert; }
  bool global_layer(int l) const { return !modern() || l % global_every == 0; }
  int head_dim() const { return hidden / n_heads; }
  int max_length() const { return max_positions - position_offset; }  // the longest sequence
  int64_t parameter_count() const;
  // Throws FileError(origin, ...) when the shape is impossible.
  void validate(const std::string& origin) const;
};

// Canonical tensor names (rows x cols; a vector is one row):
//   embeddings.word [vocab, hidden]   embeddings.position [max_positions, hidden]
//   embeddings.token_type [type_vocab_size, hidden] (BERT only)
//   embeddings.norm.weight / .bias [hidden]
//   layers.{i}.query / key / value / attn_out .weight [hidden, hidden], .bias [hidden]
//   layers.{i}.attn_norm.weight / .bias [hidden]
//   layers.{i}.ffn_in.weight [intermediate, hidden], .bias [intermediate]
//   layers.{i}.ffn_out.weight [hidden, intermediate], .bias [hidden]
//   layers.{i}.ffn_norm.weight / .bias [hidden]
//   head.dense.weight [hidden, hidden], .bias [hidden]  (BERT pooler, DistilBERT pre_classifier,
//                                                        RoBERTa classifier.dense)
//   head.classifier.weight [num_labels, hidden], .bias [num_labels]
// ModernBERT (pre-LayerNorm): no position or token-type table; layers.{i}.attn_norm is the
// LayerNorm before attention (absent in layer 0, where it is the identity) and ffn_norm the one
// before the feed-forward; query/key/value are the row blocks of the fused Wqkv;
//   layers.{i}.ffn_in.weight [2 * intermediate, hidden] (input rows, then gate rows), .bias
//   final_norm.weight / .bias [hidden]   head.norm.weight / .bias [hidden]
// and biases only where the config's flags put them (bert_has_tensor).
// Optional (written by the quantisation recipes, never by a Hugging Face folder):
//   layers.{i}.qkv_in_norm.weight / .bias [hidden]  the LayerNorm parameters that produce the
//       query/key/value input of layer i (the embedding LayerNorm's output for i = 0, layer i-1's
//       ffn_norm output otherwise) when it differs from the residual stream: channel scales
//       folded into gamma AND beta. Post-LN encoders add the LayerNorm output itself to the next
//       residual, so the fold cannot replace the residual's gamma/beta; the LayerNorm writes a
//       second output with these parameters that only the projections read.
//   layers.{i}.ffn_in_norm.weight / .bias [hidden]  the same for the ffn_in input (attn_norm).
struct BertSource {
  BertConfig config;
  std::string origin;        // folder or synthetic:NAME@seed
  std::string container;     // "hf-safetensors" or "synthetic"
  std::string content_hash;  // of config.json + weights, or the preset and seed
  std::map<std::string, TensorSource> tensors;
  std::map<std::string, std::string> source_names;  // canonical -> name in the file
  std::string weights_path;                         // the safetensors file (empty if synthetic)
  std::shared_ptr<const void> keepalive;

  const TensorSource& tensor(const std::string& name) const;  // throws FileError naming origin
};

// Opens a Hugging Face folder (or its config.json / model.safetensors) or "synthetic:NAME[@seed]".
// Every tensor is checked against the config; a missing tensor or a shape the config does not
// imply is a FileError naming the weights file and the tensor.
BertSource open_bert_source(const std::string& spec);
// The shape ({rows, cols}, or {n} for a vector) a tensor of this name must have under `c`
// (engine names: "embeddings.word", "layers.0.query.weight", ...). Loaders and build_bert check it.
std::vector<int64_t> bert_tensor_shape(const BertConfig& c, const std::string& name);
// Whether the architecture has this (canonical) tensor under `c`: ModernBERT's biases follow
// its flags, its layer 0 has no attn_norm. Absent biases read as zeros.
bool bert_has_tensor(const BertConfig& c, const std::string& name);

struct BertPreset {
  const char* name;
  const char* description;
  BertConfig config;
};
const std::vector<BertPreset>& bert_presets();
bool is_bert_spec(const std::string& spec);  // a synthetic BERT name, or an HF BERT folder

// Which format each tensor class is packed in: "attention" (query/key/value/attn_out) and
// "ffn" (ffn_in/ffn_out). Everything else stays f32.
struct BertBuildOptions {
  std::string format = "f32";
  std::map<std::string, std::string> class_format;
  // Magnitude pruning of the projections before packing (per row, in the pattern the format
  // wants: see engines/core/prune.h); 0 = none.
  double sparsity = 0.0;

  const std::string& format_for(const std::string& tensor_class) const;
  std::string describe() const;
};

struct BertLayer {
  WeightMatrix wqkv;               // (3 * hidden, hidden): query rows, then key, then value
  std::vector<float> bqkv;         // (3 * hidden)
  WeightMatrix wo;                 // (hidden, hidden)
  std::vector<float> bo;           // (hidden)
  std::vector<float> attn_norm_w;  // (hidden)
  std::vector<float> attn_norm_b;  // (hidden)
  WeightMatrix w_in;               // (intermediate, hidden)
  std::vector<float> b_in;         // (intermediate)
  WeightMatrix w_out;              // (hidden, intermediate)
  std::vector<float> b_out;        // (hidden)
  std::vector<float> ffn_norm_w;   // (hidden)
  std::vector<float> ffn_norm_b;   // (hidden)
  // The second LayerNorm output read by wqkv / w_in when channel scales were folded
  // (qkv_in_norm / ffn_in_norm tensors); empty: the projections read the residual stream.
  std::vector<float> qkv_in_norm_w, qkv_in_norm_b;  // (hidden)
  std::vector<float> ffn_in_norm_w, ffn_in_norm_b;  // (hidden)
};

struct BertModel {
  BertConfig config;
  std::string origin;
  std::string container;
  std::string content_hash;
  BertBuildOptions build;
  std::vector<float> word_embeddings;      // (vocab, hidden)
  std::vector<float> position_embeddings;  // (max_positions, hidden)
  std::vector<float> type_embeddings;      // (type_vocab_size, hidden), empty for DistilBERT
  std::vector<float> emb_norm_w, emb_norm_b;  // (hidden)
  std::vector<BertLayer> layers;
  std::vector<float> final_norm_w, final_norm_b;  // (hidden), ModernBERT only
  std::vector<float> head_norm_w, head_norm_b;    // (hidden), ModernBERT only
  WeightMatrix head_dense;                 // (hidden, hidden), f32
  std::vector<float> head_dense_b;         // (hidden)
  WeightMatrix classifier;                 // (num_labels, hidden), f32
  std::vector<float> classifier_b;         // (num_labels)

  size_t weight_bytes() const;       // everything as stored
  size_t projection_bytes() const;   // the packed attention + feed-forward matrices
  size_t repacked_bytes() const;     // laid out again for the kernels so far (LlamaModel::repacked_bytes)
};

BertModel build_bert(const BertSource& src, const BertBuildOptions& opts = {});

struct BertSessionOptions {
  int threads = 1;
  bool pin_threads = false;
  int max_length = 0;  // longest sequence (0 = the model's max_length())
  int max_batch = 1;   // most sequences in one padded batch
  int isa = -1;        // -1 = active_isa(); otherwise an Isa value
  // Calibration: sees the rows entering each projection, named "layers.{i}.query" (the q/k/v
  // input, read once for the three), "layers.{i}.attn_out", "layers.{i}.ffn_in",
  // "layers.{i}.ffn_out" (after the activation; ModernBERT: act(input) * gate). In the last layer
  // only the [CLS] rows reach attn_out/ffn_in/ffn_out (all rows under ModernBERT's mean
  // pooling). Padded rows of a masked batch are included, so calibrate with unpadded sequences.
  // Not owned; nullptr in timed runs.
  ActivationObserver* observer = nullptr;
};

// Runs the encoder for one sequence at its own length (dynamic shape) or for a padded batch
// [batch, seq_len] with an attention mask. Scratch is sized once for max_batch * max_length
// tokens; after the first call nothing is allocated. Sessions never time themselves.
class BertSession {
 public:
  BertSession(const BertModel& model, const BertSessionOptions& opts);
  ~BertSession();
  BertSession(const BertSession&) = delete;
  BertSession& operator=(const BertSession&) = delete;

  // Logits (num_labels) of one sequence of n ids ([CLS] ... [SEP]); token types 0 when
  // `token_types` is null. Valid until the next call.
  const float* classify(const int* ids, int n, const int* token_types = nullptr);
  // A padded batch: ids (batch, seq_len) row-major; mask (batch, seq_len) with 1 for tokens and
  // 0 for padding (null: no padding); writes logits (batch, num_labels).
  void classify_batch(const int* ids, const uint8_t* mask, int batch, int seq_len, float* logits,
                      const int* token_types = nullptr);

  const BertModel& model() const { return model_; }
  const BertSessionOptions& options() const { return opts_; }
  Isa isa() const { return isa_; }
  int max_length() const { return max_length_; }
  size_t scratch_bytes() const;

 private:
  void forward(const int* ids, const uint8_t* mask, const int* token_types, int batch,
               int seq_len, float* logits);
  // ModernBERT's pre-LayerNorm pass.
  void forward_modern(const int* ids, const uint8_t* mask, int batch, int seq_len, float* logits);
  // out (m rows of w.rows) = act(in W^T + bias), in rows w.cols apart.
  void matmul_bias_act(const WeightMatrix& w, const float* in, int64_t m, float* out, const float* bias,
                       Activation act);

  const BertModel& model_;
  BertSessionOptions opts_;
  Isa isa_;
  int max_length_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<MatmulRunner> mm_;
  // Scratch for max_batch * max_length rows.
  AlignedBuffer x_;       // (rows, hidden) the residual stream
  AlignedBuffer qkv_;     // (rows, 3 * hidden)
  AlignedBuffer ctx_;     // (rows, hidden) attention output before attn_out
  AlignedBuffer proj_;    // (rows, hidden) a projection's result
  AlignedBuffer ffn_;     // (rows, intermediate)
  AlignedBuffer xin_;     // (rows, hidden) the folded LayerNorm output (empty when no layer has one)
  AlignedBuffer scores_;  // (threads, max_length) attention scores per thread
  AlignedBuffer cls_;     // (max_batch, hidden) x 2: [CLS] rows of the last layer / the head
  AlignedBuffer logits_;  // (max_batch, num_labels)
  // ModernBERT: cos / sin of the rotary angles, (max_length, head_dim / 2) per table, global
  // layers' theta then local layers'.
  std::vector<float> rope_cos_[2], rope_sin_[2];
};

// The readable reference forward pass (plain scalar arithmetic, one sequence, no threads, no
// kernels table, no packed formats): the oracle the sessions are tested against. Read it top to
// bottom in bert_reference.cpp. BertReference computes in binary32 with sequential sums (what a
// straightforward FP32 implementation computes); BertReference64 in binary64 throughout (the
// exact value to ~1e-13 relative), so tests can measure how far a binary32 evaluation is from it.
template <typename Real>
class BertReferenceT {
 public:
  explicit BertReferenceT(const BertSource& src);
  // Logits of one sequence. `mask` (same length, 1 = token, 0 = padding) may be empty;
  // `token_types` may be empty (all 0).
  std::vector<Real> forward(const std::vector<int>& ids, const std::vector<uint8_t>& mask = {},
                            const std::vector<int>& token_types = {}) const;
  const BertConfig& config() const { return c_; }

 private:
  std::vector<Real> forward_modern(const std::vector<int>& ids, const std::vector<uint8_t>& mask) const;

  BertConfig c_;
  std::vector<Real> word, position, token_type;  // (vocab | positions | types, hidden)
  std::vector<Real> emb_norm_w, emb_norm_b;      // (hidden)
  struct Layer {
    std::vector<Real> wq, wk, wv, wo;            // (hidden, hidden) rows = outputs
    std::vector<Real> bq, bk, bv, bo;            // (hidden)
    std::vector<Real> attn_norm_w, attn_norm_b;  // (hidden)
    std::vector<Real> w_in, b_in;                // (intermediate, hidden), (intermediate)
    std::vector<Real> w_out, b_out;              // (hidden, intermediate), (hidden)
    std::vector<Real> ffn_norm_w, ffn_norm_b;    // (hidden)
  };
  std::vector<Layer> layers;
  std::vector<Real> head_w, head_b;              // (hidden, hidden), (hidden)
  std::vector<Real> cls_w, cls_b;                // (num_labels, hidden), (num_labels)
  std::vector<Real> final_norm_w, final_norm_b, head_norm_w, head_norm_b;  // ModernBERT
};
extern template class BertReferenceT<float>;
extern template class BertReferenceT<double>;
using BertReference = BertReferenceT<float>;
using BertReference64 = BertReferenceT<double>;

}  // namespace cibench

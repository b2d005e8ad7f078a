#pragma once
// Quantised model files (.cbq), written by `cibench quantize`: the packed projections of a recipe's
// output in their format's own bytes, the f32 tensors (embeddings, norms, an untied head), and
// metadata naming the recipe, its parameters, the calibration data (slice, seed, hash) and the
// content hash of the FP32 source model. Layout (little-endian):
//
//   "CIBQUANT"  u32 version (1)  u32 0  u64 header_bytes  header (JSON, UTF-8)
//   zero padding to a multiple of 64, then the payload: each tensor at its header offset
//   (relative to the payload start, 64-byte aligned), f32 values or the packed matrix bytes as
//   WeightMatrix stores them (fixed rows back to back; variable-size rows behind their offset
//   table, see engines/core/matrix.h).
//
// The header holds "cibench_quantized": 1, "recipe", "recipe_spec", "params", "format",
// "build" (format per tensor class), "source" {content_hash, origin, container}, "calibration"
// {slice, docs, text_hash, samples, seq_len, seed, token_hash}, "config" (the LlamaConfig),
// "tensors" [{name, kind: "f32"|"packed", format, rows, cols, offset, bytes}] and
// "payload_hash" (FNV-1a 64 of the payload).
#include <map>
#include <string>

#include "engines/core/matrix.h"
#include "engines/models/llama.h"
#include "engines/models/llama_config.h"
#include "engines/quant/calibration.h"
#include "engines/quant/recipe.h"

namespace cibench {

struct QuantizedMeta {
  std::string recipe;       // "gptq"
  std::string recipe_spec;  // "gptq format=int4_g32 damp=0.01 block=128 act_order=0"
  std::map<std::string, double> params;  // every parameter of the recipe, defaults included
  double sparsity = 0;
  std::string format;       // target format of the projections
  LlamaBuildOptions build;  // how the model is built from the file
  std::string source_hash;  // content_hash of the FP32 source model
  std::string source_origin;
  std::string source_container;
  // Calibration record ("" / 0 when the recipe used none).
  std::string calib_slice;  // "FILE:A-B"
  int64_t calib_docs = 0;
  std::string calib_text_hash;
  int calib_samples = 0;
  int calib_seq_len = 0;
  uint64_t calib_seed = 0;
  std::string calib_hash;   // hash of the calibration token windows
  std::string eval_slice;   // the evaluation slice checked disjoint at quantisation time ("" none)
};

struct QuantizedModelFile {
  std::string path;
  QuantizedMeta meta;
  LlamaSource source;  // every tensor as f32 (packed ones unpacked: exactly on their grid)
  std::map<std::string, WeightMatrix> packed;  // the stored packed matrices
};

// The metadata of a recipe's output: recipe, parameters, source hash, calibration record.
QuantizedMeta quantized_meta(const RecipeOutput& out, const CalibrationSet* calib,
                             const std::string& eval_slice);

// Writes `source` (projections packed in meta.format, everything else f32) with `meta`.
// Throws FileError naming the file on I/O failure.
void write_quantized(const std::string& path, const LlamaSource& source, const QuantizedMeta& meta);

// Reads and validates a file. When `expected_source_hash` is not empty it must equal the file's
// source hash, else FileError naming the file and both hashes.
QuantizedModelFile load_quantized(const std::string& path,
                                  const std::string& expected_source_hash = "");

// Builds the model (the build options of the file) and checks that every projection packs to
// exactly the stored bytes (FileError otherwise).
LlamaModel build_quantized(const QuantizedModelFile& f);

// True when `path` starts with the .cbq magic.
bool is_quantized_file(const std::string& path);

}  // namespace cibench

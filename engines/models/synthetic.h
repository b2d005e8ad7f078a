#pragma once
// Synthetic Llama-shaped models (no files): see synthetic.cpp.
#include <string>
#include <vector>

#include "engines/models/llama_config.h"

namespace cibench {

struct SyntheticPreset {
  const char* name;
  const char* description;
  LlamaConfig config;
};

const std::vector<SyntheticPreset>& synthetic_presets();
// "synthetic:NAME[@seed]" (the prefix is optional). Throws Error for unknown names.
LlamaSource synthetic_llama_source(const std::string& spec);

}  // namespace cibench

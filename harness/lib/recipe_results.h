#pragma once
// What `cibench recipes` (Llama) and `cibench bert-recipes` (BERT classifiers) share: the
// variant list they take (RECIPE:FORMAT[:NAME=VALUE...], comma-separated) and the columns a
// recipe's result is stored under with --db (harness/lib/run_record.h).
#include <string>
#include <vector>

#include "engines/quant/recipe.h"
#include "harness/lib/store.h"

namespace cibench {

// Comma-separated items, empty ones dropped.
std::vector<std::string> split_list(const std::string& s);
// Comma-separated numbers; throws Error naming `what` and the item that is not one.
std::vector<double> parse_number_list(const std::string& s, const char* what);
// Comma-separated variants, each RecipeSpec::parse_variant at `sparsity`.
std::vector<RecipeSpec> parse_variant_list(const std::string& s, double sparsity);

// format, sparsity, recipe, recipe_params of a variants row. Pruning alone (prune:f32) is stored
// as it is in a scenario: no recipe, the sparsity.
Fields recipe_fields(const RecipeSpec& spec);

// The label of a stored row: "gptq int4_g32", "prune f32_sparse sp0.8", "rtn int8 sp0.5".
std::string recipe_label(const RecipeSpec& spec);

}  // namespace cibench

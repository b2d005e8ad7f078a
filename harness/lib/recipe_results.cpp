#include "harness/lib/recipe_results.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "engines/core/error.h"

namespace cibench {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string v;
  while (std::getline(ss, v, ','))
    if (!v.empty()) out.push_back(v);
  return out;
}

std::vector<double> parse_number_list(const std::string& s, const char* what) {
  std::vector<double> out;
  for (const std::string& p : split_list(s)) {
    try {
      size_t used = 0;
      out.push_back(std::stod(p, &used));
      if (used != p.size()) throw std::invalid_argument("trailing characters");
    } catch (const std::exception&) {
      throw Error(str(what, ": '", p, "' is not a number"));
    }
  }
  return out;
}

std::vector<RecipeSpec> parse_variant_list(const std::string& s, double sparsity) {
  std::vector<RecipeSpec> out;
  for (const std::string& v : split_list(s)) out.push_back(RecipeSpec::parse_variant(v, sparsity));
  return out;
}

Fields recipe_fields(const RecipeSpec& spec) {
  const bool none = spec.prune_only();
  return {{"format", spec.format},
          {"sparsity", spec.sparsity},
          {"recipe", none ? sql_null() : SqlValue(spec.recipe)},
          {"recipe_params", none ? sql_null() : SqlValue(nlohmann::json(spec.all_params()).dump())}};
}

std::string recipe_label(const RecipeSpec& spec) {
  std::string l = str(spec.prune_only() ? "prune" : spec.recipe, " ", spec.format);
  if (spec.sparsity > 0) l += str(" sp", spec.sparsity);
  return l;
}

}  // namespace cibench
